/* sched_gather.c - updates held while their path is busy, planned together when it frees (§5.2). */
#include "sched_gather.h"

#include <stdlib.h>

#include "sched_arrival.h"
#include "sched_lead.h"
#include "sched_policy.h"
#include "sched_xfer.h"

double sched_gather_free_at(const struct sched *s, int host, int up, double cap, double from_s)
{
	double need = SCHED_GATHER_FREE_FRAC * cap, *bp, at = from_s;
	int n_bp;

	if (cap <= 0 || cap - sched_xfer_link_rate(s, host, up, from_s) >= need)
		return from_s; /* free, or down for good: holding would not help */
	/* the residual changes only where a reservation on the link changes its rate or ends */
	n_bp = sched_xfer_link_breaks(s, host, up, from_s, &bp);
	for (int b = 0; b < n_bp; b++) {
		at = bp[b];
		if (cap - sched_xfer_link_rate(s, host, up, at) >= need)
			break;
	}
	free(bp);
	return at; /* out of memory: from_s, nothing held */
}

/* One link's free time, computed once per call of sched_gather_hold (cache[] < 0: not yet). */
static double link_free(const struct sched *s, const double *gbps, double *cache, int host, int up,
			double from_s)
{
	double *c = &cache[2 * host + up];

	if (*c < 0)
		*c = sched_gather_free_at(s, host, up, gbps[2 * host + up] * s->cfg.headroom, from_s);
	return *c;
}

int sched_gather_hold(struct sched *s, double now, const double *gbps, int *sel, int n)
{
	int n_h = s->cl.n_hosts, srv = s->server.host, kept = 0;
	double lead = sched_lead_s(s), now_s = now - s->t0 + lead, next = 0;
	double *cache;

	if (n == 0 || srv < 0 || sched_policy_plan_mode(s) != PLAN_MLFABRIC_A)
		return n;
	cache = malloc(sizeof(double) * 2 * (size_t)n_h);
	if (!cache)
		return n; /* out of memory: nothing held, as before the rule */
	for (int i = 0; i < 2 * n_h; i++)
		cache[i] = -1;
	for (int k = 0; k < n; k++) {
		const struct sched_update *u = &s->upd[sel[k]];
		double t_free = link_free(s, gbps, cache, u->worker, 1, now_s), t_srv = 0;
		/* a sharded update starts with the first leg whose shard's downlink is free */
		for (int j = 0; j < (s->server.n_shards > 0 ? s->server.n_shards : 1); j++) {
			int h = s->server.n_shards > 0 ? s->server.shard[j].host : srv;
			double t = h >= 0 ? link_free(s, gbps, cache, h, 0, now_s) : now_s;
			if (j == 0 || t < t_srv)
				t_srv = t;
		}
		if (t_srv > t_free)
			t_free = t_srv;
		/* planned at the release, its transfer starts a lead later: when the path frees */
		double release = s->t0 + t_free - lead, latest = u->t_arrival + s->cfg.batch_s;
		if (release > latest)
			release = latest;
		release -= s->cfg.replan_s; /* the loop plans a replan interval after an arrival */
		if (t_free <= now_s || release <= now) {
			sel[kept++] = sel[k];
			continue;
		}
		if (next == 0 || release < next)
			next = release;
	}
	free(cache);
	if (next > 0)
		sched_arrival_note(s, next);
	return kept;
}
