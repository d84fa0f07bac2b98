/* sched_policy.h - the synchronization policies of the scheduler daemon behind one ops table
 * (docs/architecture.md "Scheduler policies"): the core calls hooks, the policies decide. */
#ifndef MLF_SCHED_POLICY_H
#define MLF_SCHED_POLICY_H

#include <stddef.h>

#include <jansson.h>

#include "plan.h"
#include "sched_adsp.h"
#include "sched_policy_ssp.h"

struct sched;
struct sched_config;
struct sched_update;

#define SCHED_POLICY_MAX 8 /* policies running at once (one planning policy and the others) */

/**
 * struct sched_policy_ops - one synchronization policy (docs/scheduler.md "Policies"). The core
 * (messages, batches, the poll loop) calls the hooks of every running policy at its events, in
 * the order sched_policy_choose put them; it never names a policy. Every hook is optional:
 * NULL is a no-op (for the two with a result, NULL means "no objection" / "not mine", see each
 * field). @data is the policy's own state, made by @init (NULL when it has none, or when a
 * message of a policy that does not run is routed to it: see @on_msg). Times are
 * CLOCK_REALTIME seconds unless a field says otherwise.
 */
struct sched_policy_ops {
	/** System name of the policy ("mlfabric-a", "ssp", ...; docs/experiments.md names). */
	const char *name;

	/**
	 * Plan mode of a planning policy (the one that implements @select_updates): PLAN_MLFABRIC_S
	 * plans one iteration's updates without ordering or dropping (§6), PLAN_MLFABRIC_A orders
	 * them under the delay bound (§5). Read from the first running policy only.
	 */
	enum plan_mode plan_mode;

	/**
	 * Application message types this policy answers (NULL-terminated; NULL: none). They are
	 * part of the control protocol whether or not the policy runs (docs/control.md), so
	 * the core accepts them always and routes them to @on_msg.
	 */
	const char *const *msg_types;

	/**
	 * init - the policy starts (daemon creation, or a server registration that chose it):
	 * make its state into *@data. Returns 0, or -errno with @err (@len bytes) saying why;
	 * the daemon then does not start.
	 */
	int (*init)(struct sched *s, void **data, char *err, size_t len);

	/** fini - the policy stops (daemon freed, or not chosen any more): free @data. */
	void (*fini)(struct sched *s, void *data);

	/**
	 * on_register - application role @role (enum sched_role bit) registered on host @h and
	 * got `registered` (the reply is queued before this hook's own messages).
	 */
	void (*on_register)(struct sched *s, void *data, int h, unsigned role);

	/**
	 * pull_ready - may worker host @h's ready pull (its model for the next iteration) be
	 * planned now? 1 yes, 0 it waits for a later batch. NULL: yes. A pull is planned only
	 * when every running policy says yes.
	 */
	int (*pull_ready)(const struct sched *s, const void *data, int h);

	/**
	 * select_updates - before a plan: pick the pending updates of the next batch (indexes
	 * into s->upd, at most @max, into @sel). Returns how many (0: nothing to plan yet). Only
	 * the first running policy that implements it (the planning policy) is asked.
	 */
	int (*select_updates)(struct sched *s, void *data, double now, int *sel, int max);

	/**
	 * planned - after a batch was planned and commanded: @sel[0..n) are the updates it took
	 * (those the plan dropped are in state SCHED_UPD_DROPPED).
	 */
	void (*planned)(struct sched *s, void *data, double now, const int *sel, int n);

	/**
	 * part_lost - @parts planned parts of update @u (an update, or the aggregate it went
	 * in) will not reach server @k (shard k of a sharded model, §10.2; 0: the server): the
	 * policy adjusts what that server waits for (MLfabric-S: its iteration's `sync_step`).
	 */
	void (*part_lost)(struct sched *s, void *data, const struct sched_update *u, int k,
			  int parts);

	/**
	 * on_msg - an application message of a type in @msg_types from app @app on host @h.
	 * Returns 0 (handled; the policy answers through sched_to_app itself), or -errno with
	 * @err (@len bytes) for the error reply the core sends. Called with @data NULL when the
	 * policy does not run: it checks the message and answers as the protocol says, without
	 * acting on it.
	 */
	int (*on_msg)(struct sched *s, void *data, int h, const char *app, const char *type,
		      json_t *m, double now, char *err, size_t len);

	/**
	 * next_deadline - when the policy's timer next wants @on_tick (CLOCK_REALTIME s; a
	 * very large value: never). NULL: the policy has no timer.
	 */
	double (*next_deadline)(const struct sched *s, const void *data);

	/** on_tick - the poll loop passed @next_deadline: the policy's timer work at @now. */
	void (*on_tick)(struct sched *s, void *data, double now);

	/**
	 * status - add the policy's state for a status viewer (tools/mlf-top) to @o, the
	 * policy's object under "policies" in the `status` reply (docs/scheduler.md
	 * "Policies"). NULL: the object stays empty.
	 */
	void (*status)(const struct sched *s, const void *data, json_t *o, double now);
};

/** The policies (each defined in its sched_policy_<name>.c; docs/scheduler.md "Policies"). */
extern const struct sched_policy_ops sched_policy_mlfabric_a; /* MLfabric-A, §5 */
extern const struct sched_policy_ops sched_policy_mlfabric_s; /* MLfabric-S, §6 */
extern const struct sched_policy_ops sched_policy_ssp;        /* SSP / ASP gate (--ssp, --asp) */
extern const struct sched_policy_ops sched_policy_esync;      /* ESync's State Server */
extern const struct sched_policy_ops sched_policy_adsp;       /* ADSP's commit rates (--adsp) */

/** The running policies of one daemon (struct sched.pol), in hook order. */
struct sched_policy_set {
	int n;
	const struct sched_policy_ops *ops[SCHED_POLICY_MAX];
	void *data[SCHED_POLICY_MAX];
};

/** sched_policy_defaults - the policies' option defaults in @cfg (no SSP, no ADSP). */
void sched_policy_defaults(struct sched_config *cfg);

/**
 * sched_policy_choose - the one place that decides which policies run: the planning policy
 * from the server's registered mode ("mlfabric-s" or "mlfabric-a"), SSP/ASP with
 * --ssp, ADSP with --adsp, and ESync's State Server always (a worker opts in with mlf-worker
 * --system esync). Called at daemon creation and after every server registration: policies that
 * keep running keep their state, new ones are initialised, dropped ones finished. Returns 0,
 * or the -errno of a policy's init with @err set (the set is then left as it was).
 */
int sched_policy_choose(struct sched *s, char *err, size_t len);

/** sched_policy_free - finish every running policy (daemon teardown). */
void sched_policy_free(struct sched *s);

/** sched_policy_on_register - the on_register hooks (see struct sched_policy_ops). */
void sched_policy_on_register(struct sched *s, int h, unsigned role);

/**
 * sched_policy_on_update - worker host @h announced an update at @now: the workers'
 * iteration clock advances (sched_ssp_count; SSP's gate, ASP's rates and ADSP's commit counts
 * all read it, so it runs whatever the policies).
 */
void sched_policy_on_update(struct sched *s, int h, double now);

/** sched_policy_pull_ready - 1 when every running policy lets host @h's pull be planned. */
int sched_policy_pull_ready(const struct sched *s, int h);

/**
 * sched_policy_pull_planned - worker host @h's pull was planned (its model is on its way) at
 * @now: its next iteration starts (sched_host.t_pull_planned, read by the iteration clock).
 */
void sched_policy_pull_planned(struct sched *s, int h, double now);

/**
 * sched_policy_part_lost - @parts planned parts of update @u will not reach server @k (shard
 * k, 0: the server): told to every running policy with a part_lost hook.
 */
void sched_policy_part_lost(struct sched *s, const struct sched_update *u, int k, int parts);

/** sched_policy_plan_mode - the plan mode of the planning policy (PLAN_MLFABRIC_A when none). */
enum plan_mode sched_policy_plan_mode(const struct sched *s);

/**
 * sched_policy_select_updates - the planning policy's select_updates (sched_policy_choose
 * always chooses one; without one, none). Returns how many indexes it put in @sel.
 */
int sched_policy_select_updates(struct sched *s, double now, int *sel, int max);

/** sched_policy_planned - the planned hooks (see struct sched_policy_ops). */
void sched_policy_planned(struct sched *s, double now, const int *sel, int n);

/** sched_policy_owns_msg - 1 when application message type @type belongs to a policy. */
int sched_policy_owns_msg(const char *type);

/**
 * sched_policy_on_msg - route message @m of a policy's type @type (sched_policy_owns_msg) to
 * its policy's on_msg (data NULL when that policy does not run). Returns its result: 0, or
 * -errno with @err for the error reply.
 */
int sched_policy_on_msg(struct sched *s, int h, const char *app, const char *type, json_t *m,
			double now, char *err, size_t len);

/** sched_policy_tick - at @now, the on_tick of every running policy whose deadline passed. */
void sched_policy_tick(struct sched *s, double now);

/**
 * sched_policy_status - the "policies" object of a `status` reply: one member per running
 * policy, in hook order, its name -> the fields of its status hook ({} without one). NULL
 * when out of memory.
 */
json_t *sched_policy_status(const struct sched *s, double now);

#endif
