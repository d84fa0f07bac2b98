/* sched_lead.c - the lead of a plan: a p99 tracker of the command latency from `done` reports. */
#include "sched_lead.h"

#include <math.h>

#include "sched_rec.h"
#include "sched_state.h"

void sched_lead_init(struct sched_lead *l, double cap_s)
{
	*l = (struct sched_lead){ .lead_s = cap_s, .cap_s = cap_s,
		.floor_s = cap_s < SCHED_LEAD_FLOOR_S ? cap_s : SCHED_LEAD_FLOOR_S, .raised_s = -1 };
}

/* One sample: the transfer planned to start at @start_s started @late or not. */
static double note(struct sched_lead *l, int late, double start_s, double now_s)
{
	if (late) {
		l->n_late++;
		if (start_s <= l->raised_s)
			return l->lead_s; /* planned before the last raise: already answered */
		l->lead_s *= exp(SCHED_LEAD_GAIN * SCHED_LEAD_Q);
		l->raised_s = now_s;
	} else {
		l->n_on_time++;
		l->lead_s *= exp(-SCHED_LEAD_GAIN * (1.0 - SCHED_LEAD_Q));
	}
	if (l->lead_s > l->cap_s)
		l->lead_s = l->cap_s;
	if (l->lead_s < l->floor_s)
		l->lead_s = l->floor_s;
	return l->lead_s;
}

double sched_lead_sample(struct sched_lead *l, double start_s, double end_s, double actual_s,
			 double now_s)
{
	double dur = end_s > start_s ? end_s - start_s : 0;

	return note(l, actual_s - end_s > SCHED_LEAD_SLACK_S + SCHED_LEAD_SLACK_FRAC * dur,
		    start_s, now_s);
}

double sched_lead_sample_start(struct sched_lead *l, double start_s, double actual_s,
			       double now_s)
{
	return note(l, actual_s - start_s > SCHED_LEAD_SLACK_S, start_s, now_s);
}

double sched_lead_s(const struct sched *s)
{
	return s->lead.lead_s;
}

/*
 * Transfer s->xfers[@xi] started at @t_start (scheduler clock, s; the sender's first frame): its
 * start error against the plan, recorded (starts.jsonl: host, planned and actual start, error in
 * ms; docs/control.md "Clocks") and counted in the sender's statistics (status).
 */
static void start_error(struct sched *s, int xi, double t_start)
{
	const struct sched_xfer *x = &s->xfers[xi];
	struct sched_host *sh = &s->hosts[x->src];
	double planned = s->t0 + x->start, e = t_start - planned;

	sh->n_starts++;
	sh->start_err_sum_s += fabs(e);
	if (fabs(e) > sh->start_err_max_s)
		sh->start_err_max_s = fabs(e);
	sched_rec_put(s->rec_starts, json_pack("{s:I, s:s, s:f, s:f, s:f}", "xfer",
		      (json_int_t)x->xfer, "host", s->cl.hosts[x->src].name, "planned", planned,
		      "actual", t_start, "err_ms", sched_rec_ms(e)));
}

void sched_lead_done(struct sched *s, int xi, double t_end, double t_start, double now)
{
	const struct sched_xfer *x = &s->xfers[xi];

	if (x->sent || x->src == x->dst || x->end <= x->start || !(t_end > 0) ||
	    x->what != SCHED_WHAT_UPDATE)
		return;
	if (t_start > 0) {
		start_error(s, xi, t_start);
		sched_lead_sample_start(&s->lead, x->start, t_start - s->t0, now - s->t0);
	}
	else
		sched_lead_sample(&s->lead, x->start, x->end, t_end - s->t0, now - s->t0);
}
