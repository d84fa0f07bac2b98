/* sched_policy_ssp.c - stale-synchronous parallel (--ssp S) and adaptive SSP (--asp;
 * asp-ieee-access2018 §III): a worker's pull waits while it is too far ahead of the slowest
 * live worker (docs/scheduler.md "Stale-synchronous parallel"). */
#include "sched_policy_ssp.h"

#include <math.h>
#include <stdint.h>

#include "log.h"
#include "sched_policy.h"
#include "sched_state.h"

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
	if (s->cfg.asp && s->cfg.ssp_s >= 0) {
		/* every change of the threshold in force is logged with the rate ratio it follows,
		 * so a run's lead can be checked against the threshold of its time
		 * (tests/integration/apps_ssp.sh) */
		double alpha;
		int thr = sched_ssp_threshold(s, &alpha);
		if (thr + 1 != s->asp_thr_logged) {
			s->asp_thr_logged = thr + 1;
			log_info("asp: threshold %d (alpha %.2f)", thr, alpha);
		}
	}
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

/*
 * The gate (asp-ieee-access2018 §III, SSP with staleness threshold S): 1 when worker host @h may
 * get the model for its next iteration, i.e. its iteration clock (updates it announced,
 * sched_host.n_pushed) is at most the threshold ahead of the slowest live host that runs a
 * worker; 0 while it must wait. Hosts that died (not alive) do not hold the others back.
 */
static int pull_ready(const struct sched *s, const void *data, int h)
{
	uint64_t slowest = UINT64_MAX;
	int thr = sched_ssp_threshold(s, NULL);

	(void)data;
	if (thr < 0)
		return 1;
	for (int j = 0; j < s->cl.n_hosts; j++)
		if ((s->hosts[j].apps & SCHED_ROLE_WORKER) && s->hosts[j].alive && s->hosts[j].n_pushed < slowest)
			slowest = s->hosts[j].n_pushed;
	return slowest == UINT64_MAX || s->hosts[h].n_pushed <= slowest + (uint64_t)thr;
}

/* For mlf-top: the threshold in force, and with --asp the rate ratio alpha it follows. */
static void ssp_status(const struct sched *s, const void *data, json_t *o, double now)
{
	double alpha;
	int thr = sched_ssp_threshold(s, &alpha);

	json_object_set_new(o, "threshold", json_integer(thr));
	if (s->cfg.asp)
		json_object_set_new(o, "alpha", json_real(alpha));
}

const struct sched_policy_ops sched_policy_ssp = {
	.name = "ssp",
	.pull_ready = pull_ready,
	.status = ssp_status,
};
