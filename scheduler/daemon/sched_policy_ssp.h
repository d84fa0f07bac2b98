/* sched_policy_ssp.h - stale-synchronous parallel and adaptive SSP (asp-ieee-access2018 §III):
 * the workers' iteration clock and the staleness threshold in force (docs/scheduler.md
 * "Stale-synchronous parallel"). */
#ifndef MLF_SCHED_POLICY_SSP_H
#define MLF_SCHED_POLICY_SSP_H

struct sched;

#define SCHED_ASP_ALPHA0 1.5 /* ASP: rates within this ratio count as "similar" (alpha ~ 1) */

/**
 * sched_ssp_count - worker host @h announced an update at @now (CLOCK_REALTIME s): one more
 * iteration on its clock (sched_host.n_pushed), and a sample of its working iteration rate
 * (sched_host.iter_rate, ASP's load signal): 1 / the time since its model was sent or its last
 * update, whichever is later, so waits at the gate do not make a throttled fast worker look
 * slow. Run for every update by sched_policy_on_update.
 */
void sched_ssp_count(struct sched *s, int h, double now);

/**
 * sched_ssp_threshold - the staleness threshold in iterations in force: --ssp S as given, or
 * with --asp (asp-ieee-access2018 §III.C, eq. 4) alpha = fastest / slowest iteration rate of
 * the live workers; alpha < SCHED_ASP_ALPHA0 (similar workers): the weak threshold --asp-weak W;
 * otherwise min(S, ceil(alpha)): the more the workers differ, the more staleness is allowed.
 * @alpha (may be NULL) receives alpha (1 before every worker has a rate). -1 when off.
 */
int sched_ssp_threshold(const struct sched *s, double *alpha);

#endif
