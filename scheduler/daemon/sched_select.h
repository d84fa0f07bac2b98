/* sched_select.h - which ready pulls a batch answers: fresh pulls (docs/scheduler.md "Fresh
 * pulls") and pulls held for a distribution tree (§10.3); the updates a batch takes are the
 * planning policy's choice (sched_policy.h). */
#ifndef MLF_SCHED_SELECT_H
#define MLF_SCHED_SELECT_H

#include "plan.h"
#include "sched_state.h"

/* Longest a ready pull is held for a distribution tree (§10.3) after its arrival, seconds: the
 * bound on the cost-model rule of sched_select_hold_pulls. */
#define SCHED_PULL_HOLD_MAX_S 1.0

/* Longest a pull waits for its update to be planned (a pending update the batches do not take,
 * e.g. while the replica catches up), seconds after the pull's arrival; then it is answered
 * with the model as it stands (docs/scheduler.md "Fresh pulls"). */
#define SCHED_PULL_FRESH_WAIT_MAX_S 1.0

/**
 * The update a fresh pull waits for (docs/scheduler.md "Fresh pulls"), one per entry of
 * sched.pulls: the copy answering the pull starts once the server reached @v, planned at @t.
 */
struct sched_fresh {
	int upd;   /* index into the batch's selected updates of the update it waits for, planned
		    * in this batch (its commit decides @v and @t once planned); -1: none */
	int64_t v; /* server version the copy must include (-1: none: the model as it stands) */
	double t;  /* plan time (seconds since sched.t0) that version is planned to be reached */
};

/**
 * sched_select_fresh - the waits of the @n_psel answerable pulls @psel (indexes into s->pulls)
 * for the updates they name (`after`, docs/scheduler.md "Fresh pulls"), in @fr (indexed like
 * s->pulls, s->n_pulls entries). The update planned in an earlier batch and not committed yet:
 * its planned commit (version and time). Pending and among the batch's @n_sel selected updates
 * @sel: fr.upd (planned with it, after it). Pending and not selected: the pull waits for a later
 * batch (taken out of @psel), at most SCHED_PULL_FRESH_WAIT_MAX_S after its arrival (@now:
 * CLOCK_REALTIME seconds). Dropped, lost, committed or unknown: no wait. Sharded (§10.2): a pull
 * whose update is pending waits for a later batch (the copies of a batch carry the version
 * ordered before it, which then includes the update), with the same bound. Only in plan mode
 * PLAN_MLFABRIC_A (a PLAN_MLFABRIC_S pull waits for its min_version). Returns the new count of
 * @psel.
 */
int sched_select_fresh(const struct sched *s, double now, const int *sel, int n_sel, int *psel,
		       int n_psel, struct sched_fresh *fr);

/**
 * sched_select_lost - planned update @u of @s will not be committed (its transfer failed, the
 * server registered again): the server's versions planned at or after its commit come one
 * earlier, so the pulls naming those updates wait for versions the server reaches (the
 * updates' v_commit, docs/scheduler.md "Fresh pulls"). An unsharded model only. Cannot fail.
 */
void sched_select_lost(struct sched *s, const struct sched_update *u);

/**
 * sched_select_commit - the commit of update @i of batch @p at the server @srv: sets *@v (the
 * server's version after it) and *@t (its plan time). For an aggregated update: the aggregate's
 * commit. Returns 0, or -ENOENT when the plan commits it nowhere at @srv (dropped).
 */
int sched_select_commit(const struct plan *p, int srv, int i, int64_t *v, double *t);

/**
 * sched_select_may_hold - whether the @n_psel answerable pulls @psel may be held for a tree
 * (§10.3), before the cost comparison: distributors on, an unsharded model, the server's uplink
 * reserved by copies commanded earlier past this plan's start, now + the lead (its end in
 * *@t_free, plan time), and no pull older than SCHED_PULL_HOLD_MAX_S. @now: CLOCK_REALTIME
 * seconds. Returns 1 or 0.
 */
int sched_select_may_hold(const struct sched *s, double now, const int *psel, int n_psel,
			  double *t_free);

/**
 * sched_select_pulls_end - when plan @p answers the last of the @n_pulls pulls of its batch
 * @b (the latest end of the copies reaching the pullers), plan time; INFINITY when one is not
 * answered. The cost of a choice in the hold rule (docs/scheduler.md "Distribution trees").
 */
double sched_select_pulls_end(const struct plan_batch *b, const struct plan *p);

#endif
