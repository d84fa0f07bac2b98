/* sched_select.c - which pending updates and pulls a batch takes (§5.1 batching, §6 MLfabric-S, §10.3 held pulls). */
#include "sched_select.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "sched_xfer.h"

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
void sched_select_planned(struct sched *s, double now, const int *sel, int n)
{
	unsigned char *in = sync_flags(s);

	int planned = 0;

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

/* Pick the updates of this batch (indexes into s->upd). Returns how many, or 0 to wait. */
int sched_select_updates(struct sched *s, double now, int *sel, int max)
{
	int n = 0;

	if (!s->server.sync) {
		for (int i = 0; i < s->n_upd && n < max; i++)
			if (s->upd[i].state == SCHED_UPD_PENDING)
				sel[n++] = i;
		return n;
	}
	return s->cfg.sync_all ? select_sync_all(s, now, sel, max) :
				 select_sync_eager(s, now, sel, max);
}

/*
 * Whether the ready pulls (@psel) wait for a later batch. With distributors (§10.3), while the
 * server's uplink is reserved past the next batch by copies commanded earlier, a copy planned
 * now would only queue behind them; held until the uplink frees, the pulls that gathered
 * meanwhile are planned together, one server copy feeding a distribution tree, instead of one
 * server copy per batch of one pull. A pull is never held more than SCHED_PULL_HOLD_S after
 * its arrival (@now: CLOCK_REALTIME seconds).
 */
int sched_select_hold_pulls(const struct sched *s, double now, const int *psel, int n_psel)
{
	double now_plan = now - s->t0 + s->cfg.lead_s, until = 0;

	if (s->cfg.distributors == 0 || s->server.n_shards) /* no trees for a sharded model */
		return 0;
	for (int i = 0; i < s->n_xfers; i++) {
		const struct sched_xfer *x = &s->xfers[i];
		if (!x->done && x->src == s->server.host && x->dst != x->src && x->end > until)
			until = x->end;
	}
	if (until <= now_plan + s->cfg.batch_s)
		return 0;
	for (int k = 0; k < n_psel; k++)
		if (now - s->pulls[psel[k]].t_arrival >= SCHED_PULL_HOLD_S)
			return 0;
	return 1;
}

void sched_ssp_count(struct sched *s, int h, double now)
{
	struct sched_host *x = &s->hosts[h];

	x->n_pushed++;
	/* the iteration began when its model was sent (after any wait at the gate), or at its last
	 * update when it did not pull (sync mode's first model, a worker that skips pulls) */
	double from = x->t_pull_planned > x->t_last_push ? x->t_pull_planned : x->t_last_push;
	if (x->t_last_push > 0 && now > from) {
		double r = 1.0 / (now - from);
		x->iter_rate = x->iter_rate > 0 ? 0.8 * x->iter_rate + 0.2 * r : r;
	}
	x->t_last_push = now;
}

int sched_ssp_threshold(const struct sched *s, double *alpha)
{
	double lo = 0, hi = 0, a = 1;

	if (alpha)
		*alpha = 1;
	if (s->cfg.ssp_s < 0 || !s->cfg.asp)
		return s->cfg.ssp_s;
	for (int j = 0; j < s->cl.n_hosts; j++) {
		const struct sched_host *x = &s->hosts[j];
		if (!(x->apps & SCHED_ROLE_WORKER) || !x->alive)
			continue;
		if (!(x->iter_rate > 0))
			return s->cfg.asp_w; /* a worker without a rate yet: no signal, the weak threshold */
		lo = lo == 0 || x->iter_rate < lo ? x->iter_rate : lo;
		hi = x->iter_rate > hi ? x->iter_rate : hi;
	}
	a = lo > 0 ? hi / lo : 1;
	if (alpha)
		*alpha = a;
	if (a < SCHED_ASP_ALPHA0)
		return s->cfg.asp_w;
	return a >= s->cfg.ssp_s ? s->cfg.ssp_s : (int)ceil(a);
}

int sched_ssp_allows(const struct sched *s, int h)
{
	uint64_t slowest = UINT64_MAX;
	int thr = sched_ssp_threshold(s, NULL);

	if (thr < 0)
		return 1;
	for (int j = 0; j < s->cl.n_hosts; j++)
		if ((s->hosts[j].apps & SCHED_ROLE_WORKER) && s->hosts[j].alive && s->hosts[j].n_pushed < slowest)
			slowest = s->hosts[j].n_pushed;
	return slowest == UINT64_MAX || s->hosts[h].n_pushed <= slowest + (uint64_t)thr;
}
