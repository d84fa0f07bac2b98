/* pacer.c - byte-credit pacing: credit grows with the scheduled rate, each frame spends its size. */
#include "pacer.h"

#include <errno.h>
#include <math.h>
#include <string.h>

int pacer_bad_step(const struct pacer_step *steps, int n)
{
	for (int i = 0; i < n; i++)
		if (!(steps[i].gbps >= 0) || isinf(steps[i].gbps) || (i && steps[i].at_ns <= steps[i - 1].at_ns))
			return i;
	return -1;
}

int pacer_init(struct pacer *p, uint64_t start, double hz, const struct pacer_step *steps, int n,
	       double burst_s, double min_burst)
{
	memset(p, 0, sizeof(*p));
	if (n < 0 || n > PACER_MAX_STEPS || !(hz > 0) || pacer_bad_step(steps, n) >= 0)
		return -EINVAL;
	for (int i = 0; i < n; i++) {
		p->step_at[i] = start + (uint64_t)((double)steps[i].at_ns * hz / 1e9);
		p->step_bpt[i] = steps[i].gbps * 1e9 / 8.0 / hz;
	}
	p->start = start;
	p->last = start;
	p->n_steps = n;
	p->cur = -1; /* before the first step: rate 0 */
	p->burst_ticks = burst_s * hz;
	p->min_burst = min_burst;
	p->scale = 1.0;
	return 0;
}

/* bytes per tick of step @i at the current scale (0 before the first step) */
static double rate_of(const struct pacer *p, int i)
{
	return i < 0 ? 0.0 : p->step_bpt[i] * p->scale;
}

void pacer_advance(struct pacer *p, uint64_t now)
{
	double cap;

	if (now > p->now)
		p->now = now;
	if (p->n_steps == 0 || now <= p->last)
		return;
	/* integrate the step function over [last, now] */
	while (p->cur + 1 < p->n_steps && p->step_at[p->cur + 1] <= now) {
		uint64_t edge = p->step_at[p->cur + 1];
		if (edge > p->last) {
			p->credit += rate_of(p, p->cur) * (double)(edge - p->last);
			p->last = edge;
		}
		p->cur++;
	}
	p->credit += rate_of(p, p->cur) * (double)(now - p->last);
	p->last = now;
	cap = rate_of(p, p->cur) * p->burst_ticks;
	if (cap < p->min_burst)
		cap = p->min_burst;
	if (p->credit > cap)
		p->credit = cap;
}

int pacer_allow(struct pacer *p, double bytes)
{
	if (p->now < p->start)
		return 0;
	if (p->n_steps == 0)
		return 1;
	if (p->credit < bytes)
		return 0;
	p->credit -= bytes;
	return 1;
}

uint64_t pacer_wait_ticks(const struct pacer *p, double bytes)
{
	double need = bytes - p->credit;
	uint64_t t = p->last > p->now ? p->last : p->now;
	int i = p->cur;

	if (p->now < p->start)
		return p->start - p->now;
	if (p->n_steps == 0 || need <= 0)
		return 0;
	for (;;) {
		double r = rate_of(p, i);
		uint64_t end = i + 1 < p->n_steps ? p->step_at[i + 1] : UINT64_MAX;

		if (end < t)
			end = t;
		if (r > 0) {
			double dt = ceil(need / r);
			if (end == UINT64_MAX || (double)t + dt <= (double)end)
				return t - p->now + (uint64_t)dt;
			need -= r * (double)(end - t);
		}
		if (end == UINT64_MAX)
			return UINT64_MAX;
		t = end;
		i++;
	}
}

int pacer_on_loss(struct pacer *p, uint64_t now, uint64_t rtt_ticks)
{
	if (p->n_steps == 0 || (p->cuts && now - p->cut_at < rtt_ticks))
		return 0;
	pacer_advance(p, now);
	p->scale = p->scale / 2 > PACER_MIN_SCALE ? p->scale / 2 : PACER_MIN_SCALE;
	p->cut_at = p->grow_at = now;
	p->cuts++;
	return 1;
}

void pacer_on_progress(struct pacer *p, uint64_t now, uint64_t rtt_ticks)
{
	if (p->n_steps == 0 || p->scale >= 1.0 || now - p->cut_at < rtt_ticks ||
	    now - p->grow_at < rtt_ticks)
		return;
	pacer_advance(p, now);
	p->scale = p->scale + PACER_AI_STEP < 1.0 ? p->scale + PACER_AI_STEP : 1.0;
	p->grow_at = now;
}

double pacer_gbps_at(const struct pacer *p, uint64_t now, double hz)
{
	double g = 0;

	if (p->n_steps == 0)
		return now >= p->start ? -1.0 : 0.0;
	for (int i = 0; i < p->n_steps && p->step_at[i] <= now; i++)
		g = p->step_bpt[i] * hz * 8.0 / 1e9;
	return g;
}

void pacer_refund(struct pacer *p, double bytes)
{
	if (p->n_steps > 0)
		p->credit += bytes;
}

void pacer_restart(struct pacer *p, uint64_t start)
{
	int64_t d = (int64_t)(start - p->start);

	for (int i = 0; i < p->n_steps; i++)
		p->step_at[i] = (uint64_t)((int64_t)p->step_at[i] + d);
	p->start = start;
	p->last = start;
	p->now = start;
	p->cur = -1;
	p->credit = p->min_burst / 2; /* the first frame leaves at the start, not one frame later */
}
