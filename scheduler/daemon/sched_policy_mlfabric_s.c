/* sched_policy_mlfabric_s.c - MLfabric-S (§6; docs/scheduler.md "MLfabric-S"): a batch takes
 * the ready updates of the current iteration, one per worker; an iteration ends when n_workers
 * are planned, or at --sync-timeout with fewer (server mode "mlfabric-s"). */
#include "sched_policy.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "sched_shard.h"
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

/* The ring slot of iteration @it, NULL once it is too old to be remembered. */
static struct sched_sync_it *sync_it(struct sched *s, int64_t it)
{
	struct sched_sync_it *r = &s->sync.ring[it % SCHED_SYNC_RING];

	return it >= 0 && it <= s->sync.iter && r->iter == it ? r : NULL;
}

/*
 * Tell server @k the size of iteration @r (`sync_step`: start version, parts it will get).
 * None when every part of it was lost there: the server waits for nothing at that version
 * (the library refuses a size of 0) and the next iteration starts from the same one.
 */
static void sync_step_to(struct sched *s, int k, const struct sched_sync_it *r)
{
	int h = s->server.n_shards ? s->server.shard[k].host : s->server.host;

	if (h >= 0 && r->parts - r->lost[k] > 0)
		sched_to_app(s, "server", h, json_pack("{s:s, s:I, s:i}", "type", "sync_step",
			     "version", (json_int_t)sched_shard_sync_start(s, k, r), "parts",
			     r->parts - r->lost[k]));
}

/* 1 when server @k lost parts of a remembered iteration: a `sync_step` it got for a version
 * later iterations now start from may be stale, so each closed iteration names its size. */
static int sync_had_loss(const struct sched *s, int k)
{
	for (int j = 0; j < SCHED_SYNC_RING; j++)
		if (s->sync.ring[j].lost[k])
			return 1;
	return 0;
}

/*
 * The iteration from (group) version @start ended at @end, short of n_workers parts (a sync
 * timeout, lost parts): the pulls of its workers wait for its end. mlf_push_get of libraries
 * before 2026-11-28 asks for the update's version + the workers (the cluster's worker hosts), a
 * version only the next iteration's parts would bring, and every such worker waits in that get:
 * so a pull's min_version in (@end, @start + workers] becomes @end. (The library now asks for
 * the update's version + 1, lib/mlfabric/fabric_worker.c mlf_push_get: then no pull is moved,
 * except after an iteration that ended where it started.)
 */
static void pulls_to_iteration_end(struct sched *s, int64_t start, int64_t end)
{
	int workers = s->server.n_workers, hosts = 0, n = 0;

	for (int h = 0; h < s->cl.n_hosts; h++)
		hosts += !!(s->cl.hosts[h].roles & CLUSTER_ROLE_WORKER);
	if (hosts > workers)
		workers = hosts;
	for (int i = 0; i < s->n_pulls; i++)
		if (s->pulls[i].min_version > end && s->pulls[i].min_version <= start + workers) {
			s->pulls[i].min_version = end;
			n++;
		}
	if (n)
		log_info("MLfabric-S: the iteration from version %" PRId64 " ended at %" PRId64 ": %d pull(s) "
			 "wait for that version", start, end, n);
}

/*
 * End the MLfabric-S iteration after its s->sync.n planned updates. A server (every shard
 * server of a sharded model, §10.2) that gets fewer than n_workers parts of it (--sync-timeout,
 * a batch of --sync-batching all that went without some, parts lost: sched_sync_lost), or that
 * lost parts of a remembered iteration, is told its size by `sync_step` (start version and parts), so it applies what it has as the
 * iteration's step (docs/control.md); so is the replica when fewer were planned. The next
 * iteration starts from the version after it.
 */
static void sync_close(struct sched *s)
{
	struct sched_sync_it *r = sync_it(s, s->sync.iter);
	int n_srv = s->server.n_shards > 0 ? s->server.n_shards : 1;

	for (int k = 0; r && s->sync.n > 0 && k < n_srv; k++)
		if (r->parts - r->lost[k] < s->server.n_workers || sync_had_loss(s, k))
			sync_step_to(s, k, r);
	if (s->sync.n > 0 && s->sync.n < s->server.n_workers && s->repl.host >= 0)
		sched_to_app(s, "replica", s->repl.host, json_pack("{s:s, s:I, s:i}", "type",
			     "sync_step", "version", (json_int_t)s->sync.v, "parts", s->sync.n));
	int64_t start = s->sync.v;
	s->sync.v += s->sync.n - (r && !s->server.n_shards ? r->lost[0] : 0);
	pulls_to_iteration_end(s, start, s->sync.v);
	s->sync.n = 0;
	s->sync.since = 0;
	s->sync.iter++;
	if (s->sync.in)
		memset(s->sync.in, 0, (size_t)s->cl.n_hosts);
}

/*
 * @parts planned parts of @u's iteration (sched_update.sync_it; too old: nothing) will not
 * reach server @k. While it is open, its close tells the server its size; once closed, the
 * server gets `sync_step` for it and each later closed one (their start versions move down),
 * so it steps without the lost parts.
 */
static void sync_part_lost(struct sched *s, void *data, const struct sched_update *u, int k,
			   int parts)
{
	struct sched_sync_it *r = u->sync_it > 0 ? sync_it(s, u->sync_it - 1) : NULL;

	(void)data;
	if (!r || k < 0 || k >= SCHED_MAX_SHARDS || parts <= 0)
		return;
	r->lost[k] += parts;
	if (!s->server.n_shards) /* the later iterations start that much lower */
		for (int64_t j = r->iter + 1; j <= s->sync.iter; j++) {
			struct sched_sync_it *q = sync_it(s, j);
			if (q)
				q->v -= parts;
		}
	log_warn("MLfabric-S iteration %" PRId64 ": %d part(s) lost at server %d; it gets %d of %d",
		 r->iter, parts, k, r->parts - r->lost[k], r->parts);
	if (r->iter == s->sync.iter)
		return; /* still open: its sync_close tells the size */
	if (!s->server.n_shards) { /* the iteration ends that much lower (shards: their lag) */
		s->sync.v -= parts;
		pulls_to_iteration_end(s, r->v, r->v + r->parts - r->lost[0]);
	}
	for (int64_t j = r->iter; j < s->sync.iter; j++) {
		struct sched_sync_it *q = sync_it(s, j);
		if (q)
			sync_step_to(s, k, q);
	}
}

/*
 * A server (shard k of a sharded model; 0: the one server) registered again at @h, e.g. its
 * host was taken for dead and its dataplane reconnected: the `sync_step`s sent while it was
 * away never reached it, so a partial iteration it holds (the rest of its parts lost) would wait
 * for ever. Once it lost parts of a remembered iteration, it gets the size of every remembered
 * closed iteration it has not passed (a start below its version is already done: not sent);
 * the open one's close tells its own. sched_shard_register refused a shard further behind.
 */
static void server_back(struct sched *s, void *data, int h, unsigned role)
{
	int k = s->server.n_shards ? sched_shard_of(s, h) : h == s->server.host ? 0 : -1;
	int64_t version;
	int n = 0;

	(void)data;
	if (!(role & SCHED_ROLE_SERVER) || k < 0 || !s->server.sync || !sync_had_loss(s, k))
		return;
	version = s->server.n_shards ? s->server.shard[k].version : s->server.version;
	for (int64_t j = s->sync.iter - SCHED_SYNC_RING < 0 ? 0 : s->sync.iter - SCHED_SYNC_RING;
	     j < s->sync.iter; j++) {
		struct sched_sync_it *r = sync_it(s, j);
		if (r && r->parts > 0 && sched_shard_sync_start(s, k, r) >= version) {
			sync_step_to(s, k, r);
			n++;
		}
	}
	if (n)
		log_info("MLfabric-S: server %d at %s registered again at version %" PRId64 ": the sizes "
			 "of %d iteration(s) that lost parts there sent again", k, s->cl.hosts[h].name,
			 version, n);
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
	struct sched_sync_it *r = &s->sync.ring[s->sync.iter % SCHED_SYNC_RING];
	if (s->sync.n == 0 || r->iter != s->sync.iter)
		*r = (struct sched_sync_it){ .iter = s->sync.iter, .v = s->sync.v };
	r->parts += planned;
	for (int k = 0; k < n; k++)
		if (s->upd[sel[k]].state == SCHED_UPD_PLANNED)
			s->upd[sel[k]].sync_it = s->sync.iter + 1;
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
	.on_register = server_back,
	.planned = iteration_planned,
	.part_lost = sync_part_lost,
	.status = iteration_status,
};
