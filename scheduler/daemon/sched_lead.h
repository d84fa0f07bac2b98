/* sched_lead.h - the lead of a plan: the measured command latency, bounded (docs/scheduler.md "The lead"). */
#ifndef MLF_SCHED_LEAD_H
#define MLF_SCHED_LEAD_H

#define SCHED_LEAD_FLOOR_S 0.001  /* the lead is never below this, s (nor above --lead-ms) */
#define SCHED_LEAD_Q 0.99         /* the quantile of the command latency the lead tracks */
#define SCHED_LEAD_GAIN 0.5       /* step of the tracker in log(lead): a late transfer multiplies
				   * the lead by exp(GAIN x Q), an on-time one by exp(-GAIN x (1 - Q)) */
#define SCHED_LEAD_SLACK_S 0.001  /* a transfer ending later than its planned end by more than
				   * this ... */
#define SCHED_LEAD_SLACK_FRAC 0.1 /* ... plus this fraction of its planned duration started late */

struct sched;

/**
 * The lead tracker (docs/scheduler.md "The lead"). A `done` carries the transfer's actual end
 * (`t`) and optionally its actual start (`t_start`), so a sample says only whether the command
 * reached the sender later than the planned start (the transfer started, or without `t_start`
 * ended, late) or not: censored samples of the command latency.
 * The tracker is a stochastic-approximation quantile estimator on them (in log(lead)): at the
 * fixed point a fraction 1 - SCHED_LEAD_Q of the transfers start late, i.e. the lead is the p99
 * of the command-to-start latency. A late transfer raises the lead only when it was planned after
 * the last raise (the transfers of one late batch are late together: one raise, not one per
 * transfer). Times are plan times (seconds since sched.t0).
 */
struct sched_lead {
	double lead_s;      /* the lead now, in [floor_s, cap_s] */
	double floor_s;     /* min(SCHED_LEAD_FLOOR_S, cap_s) */
	double cap_s;       /* --lead-ms / 1000: the initial value and the largest */
	double raised_s;    /* plan time of the last raise: later starts count for the next one */
	unsigned long n_late, n_on_time; /* samples so far */
};

/** sched_lead_init - a tracker starting at @cap_s (the cap, --lead-ms / 1000; >= 0). */
void sched_lead_init(struct sched_lead *l, double cap_s);

/**
 * sched_lead_sample - one transfer's `done`: planned start @start_s and end @end_s, its actual
 * end @actual_s and the plan time @now_s of the report (plan times, s). Late when @actual_s -
 * @end_s > SCHED_LEAD_SLACK_S + SCHED_LEAD_SLACK_FRAC x (@end_s - @start_s). Returns the new lead.
 */
double sched_lead_sample(struct sched_lead *l, double start_s, double end_s, double actual_s,
			 double now_s);

/**
 * sched_lead_sample_start - one transfer's `done` that carries its actual start @actual_s
 * (`t_start`): planned start @start_s, report at @now_s (plan times, s). Late when @actual_s -
 * @start_s > SCHED_LEAD_SLACK_S (a slow wire then does not count). Returns the new lead.
 */
double sched_lead_sample_start(struct sched_lead *l, double start_s, double actual_s,
			       double now_s);

/** sched_lead_s - the lead of the next plan of @s, s: its tracker's value. */
double sched_lead_s(const struct sched *s);

/**
 * sched_lead_done - a successful `done` of transfer s->xfers[@xi] ending at CLOCK_REALTIME
 * @t_end (the message's `t`; 0 when absent) and started at @t_start (`t_start`, optional: 0
 * when absent, then the end is used) heard at @now: one sample of @s's tracker when its start
 * follows only its command: a worker's update copy between two hosts (an aggregate or a
 * forward waits for its inputs, a model copy may wait for the server's commits), counted once
 * per transfer even when the server's commit came first (sched_xfer.sent).
 */
void sched_lead_done(struct sched *s, int xi, double t_end, double t_start, double now);

#endif
