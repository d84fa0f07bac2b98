/* sched_capest.c - capacity estimate of one host link from measured transfers (MLfabric §3, §4; sched_capest.h). */
#include "sched_capest.h"

#include <math.h>

void capest_init(struct capest *e, double max_gbps)
{
	*e = (struct capest){ .max_gbps = max_gbps, .est_gbps = max_gbps };
}

void capest_set_max(struct capest *e, double max_gbps)
{
	if (!(max_gbps > 0) || max_gbps == e->max_gbps)
		return;
	if (e->est_gbps >= e->max_gbps || e->est_gbps > max_gbps)
		e->est_gbps = max_gbps;
	e->max_gbps = max_gbps;
	if (e->est_gbps < CAPEST_FLOOR * max_gbps)
		e->est_gbps = CAPEST_FLOOR * max_gbps;
}

static int bad(double x)
{
	return !isfinite(x) || x < 0;
}

int capest_feed(struct capest *e, enum capest_dir dir, const struct capest_obs *o)
{
	double cmd = o->cmd_gbps < 0 ? e->max_gbps : o->cmd_gbps;
	int signal, shortfall;

	if (!(o->period_s > 0) || bad(o->active_s) || bad(o->gbps) || !isfinite(o->cmd_gbps) ||
	    bad(o->loss) || bad(o->rtt_ms))
		return 0;
	if (o->active_s < CAPEST_MIN_ACTIVE * o->period_s || !(cmd > 0))
		return 0; /* no evidence either way */
	signal = o->loss >= CAPEST_LOSS ||
		 (o->rtt_ms > 0 && e->rtt_base_ms > 0 && o->rtt_ms > CAPEST_RTT_GROWTH * e->rtt_base_ms &&
		  o->rtt_ms - e->rtt_base_ms > CAPEST_RTT_MIN_MS);
	if (o->rtt_ms > 0 && (e->rtt_base_ms == 0 || o->rtt_ms < e->rtt_base_ms))
		e->rtt_base_ms = o->rtt_ms;
	shortfall = o->gbps < CAPEST_SHORT * cmd && (dir == CAPEST_DOWN ? signal : !signal);
	if (shortfall) {
		e->n_ok = 0;
		e->n_short++;
		e->short_sum += o->gbps;
		if (e->n_short < CAPEST_SUSTAIN)
			return 0;
		double to = e->short_sum / e->n_short, floor = CAPEST_FLOOR * e->max_gbps;
		e->n_short = 0;
		e->short_sum = 0;
		if (to < floor)
			to = floor;
		if (to >= e->est_gbps)
			return 0;
		e->est_gbps = to;
		e->backoffs++;
		return -1;
	}
	e->n_short = 0;
	e->short_sum = 0;
	if (o->gbps >= CAPEST_OK * cmd && o->loss < CAPEST_LOSS && cmd >= CAPEST_PROBE_USE * e->est_gbps) {
		if (++e->n_ok < CAPEST_PROBE_N || e->est_gbps >= e->max_gbps)
			return 0;
		e->n_ok = 0;
		e->est_gbps *= CAPEST_PROBE_MUL;
		if (e->est_gbps > e->max_gbps)
			e->est_gbps = e->max_gbps;
		e->probes++;
		return 1;
	}
	e->n_ok = 0;
	return 0;
}
