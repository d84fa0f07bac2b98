/* sched_policy_mlfabric_s.c - MLfabric-S (§6; docs/scheduler.md "MLfabric-S"): a batch takes
 * the ready updates of the current iteration, one per worker; an iteration ends when n_workers
 * are planned, or at --sync-timeout with fewer (server mode "mlfabric-s"). */
#include "sched_policy.h"

#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "sched_state.h"

/*
 * The registered workers (hosts with a worker application) for which @have (cl.n_hosts flags)
 * is 0, comma-separated into @out; returns how many workers are registered.
 */
static int sync_missing(const struct sched *s, const unsigned char *have, char *out, size_t cap)
{
	int registered = 0;

	out[0] = '\0';
	for (int h = 0; h < s->cl.n_hosts; h++) {
		if (!(s->hosts[h].apps & SCHED_ROLE_WORKER))
			continue;
		registered++;
		if (!have[h] && strlen(out) + CLUSTER_NAME_MAX + 2 < cap) {
			strcat(out, out[0] ? "," : "");
			strcat(out, s->cl.hosts[h].name);
		}
	}
	return registered;
}

/* The straggler warning (--sync-timeout): who is missing after @waited seconds. */
static void sync_warn(const struct sched *s, double waited, int have, const unsigned char *flags)
{
	char missing[512];
	int registered = sync_missing(s, flags, missing, sizeof(missing));

	log_warn("sync batch: waited %.1f s for %d of %d workers; missing: %s%s", waited,
		 s->server.n_workers - have, s->server.n_workers, missing[0] ? missing : "-",
		 registered < s->server.n_workers ? " (and workers never registered)" : "");
}

/* The per-host flags of the iteration (allocated once); NULL when out of memory. */
static unsigned char *sync_flags(struct sched *s)
{
	if (!s->sync.in)
		s->sync.in = calloc((size_t)s->cl.n_hosts + 1, 1);
	return s->sync.in;
}

/*
 * End the MLfabric-S iteration after its s->sync.n planned updates. Fewer than n_workers
 * (--sync-timeout, or a batch of --sync-batching all that went without some): the server
 * (every shard server of a sharded model, §10.2) and the replica get `sync_step` with the
 * iteration's start version and size, so they apply what they have as the iteration's step
 * (docs/control.md). The next iteration starts from the version after it.
 */
static void sync_close(struct sched *s)
{
	if (s->sync.n > 0 && s->sync.n < s->server.n_workers) {
		/* sharded servers (§10.2): every shard server steps its slice of the iteration,
		 * which starts at its own version (the group's less the legs it skipped) */
		int sharded = s->server.n_shards > 0, n_srv = sharded ? s->server.n_shards : 1;
		for (int k = 0; k < n_srv; k++) {
			int h = sharded ? s->server.shard[k].host : s->server.host;
			int64_t lag = sharded ? s->server.shard[k].lag : 0;
			if (h >= 0)
				sched_to_app(s, "server", h, json_pack("{s:s, s:I, s:i}", "type",
					     "sync_step", "version", (json_int_t)(s->sync.v - lag),
					     "parts", s->sync.n));
		}
		if (s->repl.host >= 0)
			sched_to_app(s, "replica", s->repl.host, json_pack("{s:s, s:I, s:i}",
				     "type", "sync_step", "version", (json_int_t)s->sync.v, "parts",
				     s->sync.n));
	}
	s->sync.v += s->sync.n;
	s->sync.n = 0;
	s->sync.since = 0;
	if (s->sync.in)
		memset(s->sync.in, 0, (size_t)s->cl.n_hosts);
}

/*
 * MLfabric-S bookkeeping after a planned batch: those of the @n updates @sel the plan did not
 * drop are the iteration's; it ends when n_workers are planned (--sync-batching all: with
 * every batch).
 */
static void iteration_planned(struct sched *s, void *data, double now, const int *sel, int n)
{
	unsigned char *in = sync_flags(s);
	int planned = 0;

	(void)data;

	for (int k = 0; k < n; k++) {
		if (s->upd[sel[k]].state != SCHED_UPD_PLANNED)
			continue; /* dropped: no capacity towards the server */
		if (in)
			in[s->upd[sel[k]].worker] = 1;
		planned++;
	}
	if (planned == 0)
		return;
	s->sync.n += planned;
	if (s->sync.since == 0)
		s->sync.since = now;
	if (s->cfg.sync_all || s->sync.n >= s->server.n_workers)
		sync_close(s);
}

/*
 * MLfabric-S, --sync-batching all: one update per worker (its oldest), once every worker has
 * one ready, or after --sync-timeout with the ones present (the missing ones named).
 */
static int select_sync_all(struct sched *s, double now, int *sel, int max)
{
	unsigned char *have = calloc((size_t)s->cl.n_hosts + 1, 1);
	int n = 0;

	if (!have) {
		log_err("sync batch: out of memory selecting updates");
		return 0;
	}
	for (int h = 0; h < s->cl.n_hosts; h++)
		for (int i = 0; i < s->n_upd; i++)
			if (s->upd[i].state == SCHED_UPD_PENDING && s->upd[i].worker == h) {
				if (n < max) {
					sel[n++] = i;
					have[h] = 1;
				}
				break;
			}
	if (n == 0) {
		s->sync_wait_since = 0;
	} else if (n < s->server.n_workers) {
		if (s->sync_wait_since == 0)
			s->sync_wait_since = now;
		if (now - s->sync_wait_since < s->cfg.sync_timeout_s)
			n = 0;
		else
			sync_warn(s, now - s->sync_wait_since, n, have);
	}
	free(have);
	return n;
}

/*
 * MLfabric-S, eager (§6, the default): "the workers' updates for an iteration are batched
 * when they become ready": every tick plans the updates of the current iteration that are
 * ready, one per worker (its oldest) whose update of this iteration is not planned yet,
 * computed from a version before the iteration's end (s->sync.v + n_workers: an update of
 * the next iteration waits for it). After --sync-timeout without the missing workers the
 * iteration ends without them (sync_close, the missing ones named); a late update then counts
 * in the next iteration.
 */
static int select_sync_eager(struct sched *s, double now, int *sel, int max)
{
	unsigned char *in = sync_flags(s);
	int n = 0;

	if (!in) {
		log_err("sync batch: out of memory selecting updates");
		return 0;
	}
	if (s->sync.n > 0 && now - s->sync.since >= s->cfg.sync_timeout_s) {
		sync_warn(s, now - s->sync.since, s->sync.n, in);
		sync_close(s);
	}
	int64_t end = s->sync.v + s->server.n_workers;
	for (int h = 0; h < s->cl.n_hosts && n < max; h++) {
		if (in[h])
			continue;
		for (int i = 0; i < s->n_upd; i++)
			if (s->upd[i].state == SCHED_UPD_PENDING && s->upd[i].worker == h) {
				if (s->upd[i].version < end)
					sel[n++] = i;
				break;
			}
	}
	return n;
}

/* --sync-batching all or eager (the default). */
static int select_sync(struct sched *s, void *data, double now, int *sel, int max)
{
	(void)data;
	return s->cfg.sync_all ? select_sync_all(s, now, sel, max) :
				 select_sync_eager(s, now, sel, max);
}

/* For mlf-top: the iteration being planned (start version, updates planned so far). */
static void iteration_status(const struct sched *s, const void *data, json_t *o, double now)
{
	json_object_set_new(o, "iteration_version", json_integer((json_int_t)s->sync.v));
	json_object_set_new(o, "planned", json_integer(s->sync.n));
	json_object_set_new(o, "waiting_s", json_real(s->sync.since > 0 ? now - s->sync.since : 0));
}

const struct sched_policy_ops sched_policy_mlfabric_s = {
	.name = "mlfabric-s",
	.plan_mode = PLAN_MLFABRIC_S,
	.select_updates = select_sync,
	.planned = iteration_planned,
	.status = iteration_status,
};
