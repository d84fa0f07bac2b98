/* sched_select.c - whether the ready pulls wait for the next batch (§10.3 held pulls). */
#include "sched_select.h"

#include "sched_lead.h"


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
	double now_plan = now - s->t0 + sched_lead_s(s), until = 0;

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
