/* sched_adsp.c - ADSP's commit-rate control (adsp-aaai2020 §3-§4.2, Alg. 1): check periods,
 * ΔC_i = C_target - c_i, and the online search of the commit rate by the loss-decrease reward. */
#include "sched_adsp.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#define ADSP_MAX_R 4096     /* commits per check period: far above any useful rate */
#define ADSP_FIT_GRID 256   /* values of a3 tried in [0, min loss) */

int adsp_init(struct adsp *a, const struct adsp_cfg *cfg, double now)
{
	if (!(cfg->gamma_s > 0) || !(cfg->eval_s >= cfg->gamma_s) || !(cfg->epoch_s >= 0) ||
	    cfg->fixed_r < 0 || cfg->fixed_r > ADSP_MAX_R || cfg->max_lag_r < 1)
		return -EINVAL;
	memset(a, 0, sizeof(*a));
	a->cfg = *cfg;
	a->next_check = now;
	a->r = a->r_a = cfg->fixed_r > 0 ? cfg->fixed_r : 1;
	a->phase = cfg->fixed_r > 0 ? ADSP_FIXED : ADSP_EVAL_A;
	return 0;
}

int adsp_fit(const struct adsp_point *p, int n, double *k, double *a2, double *a3)
{
	double lmin = INFINITY, tmin = INFINITY, tmax = -INFINITY, best = INFINITY;

	if (n < 3)
		return -1;
	for (int i = 0; i < n; i++) {
		if (!isfinite(p[i].t) || !isfinite(p[i].loss) || !(p[i].loss > 0))
			return -1;
		lmin = fmin(lmin, p[i].loss);
		tmin = fmin(tmin, p[i].t);
		tmax = fmax(tmax, p[i].t);
	}
	if (!(tmax > tmin))
		return -1;
	for (int g = 0; g < ADSP_FIT_GRID; g++) {
		double c = lmin * g / ADSP_FIT_GRID, st = 0, sy = 0, stt = 0, sty = 0, sse = 0;
		/* 1 / (l - c) = k t + b is linear: least squares for k and b */
		for (int i = 0; i < n; i++) {
			double y = 1 / (p[i].loss - c);
			st += p[i].t;
			sy += y;
			stt += p[i].t * p[i].t;
			sty += p[i].t * y;
		}
		double den = n * stt - st * st;
		if (!(fabs(den) > 0))
			continue;
		double kk = (n * sty - st * sy) / den, b = (sy - kk * st) / n;
		for (int i = 0; i < n && sse < best; i++) {
			double d = kk * p[i].t + b;
			double e = d > 0 ? 1 / d + c - p[i].loss : INFINITY;
			sse += e * e;
		}
		if (sse < best && isfinite(kk) && isfinite(b)) {
			best = sse;
			*k = kk;
			*a2 = b;
			*a3 = c;
		}
	}
	return isfinite(best) ? 0 : -1;
}

double adsp_reward(const struct adsp_point *p, int n, double t_origin, double goal)
{
	struct adsp_point q[ADSP_MAX_LOSS];
	double k, a2, a3;

	if (n > ADSP_MAX_LOSS)
		n = ADSP_MAX_LOSS;
	for (int i = 0; i < n; i++)
		q[i] = (struct adsp_point){ .t = p[i].t - t_origin, .loss = p[i].loss };
	if (adsp_fit(q, n, &k, &a2, &a3) || !(k > 0) || !(goal > a3))
		return 0;
	double t_goal = (1 / (goal - a3) - a2) / k; /* when l(t) = goal */
	/* a goal already passed (t_goal <= 0) is reached "at once": the fastest there is */
	return t_goal > 1e-9 ? 1 / t_goal : 1e9;
}

int64_t adsp_delta(const struct adsp *a, int64_t c_i)
{
	int64_t d = a->c_target - c_i, cap = (int64_t)a->cfg.max_lag_r * a->r;

	return d < 0 ? 0 : d > cap ? cap : d;
}

static void push_point(struct adsp_point *v, int *n, struct adsp_point x)
{
	if (*n == ADSP_MAX_LOSS) {
		memmove(v, v + 1, sizeof(*v) * (ADSP_MAX_LOSS - 1));
		(*n)--;
	}
	v[(*n)++] = x;
}

void adsp_loss(struct adsp *a, double t, double loss)
{
	if (isfinite(t) && isfinite(loss) && loss > 0)
		push_point(a->b, &a->n_b, (struct adsp_point){ t, loss });
}

static double min_loss(const struct adsp_point *p, int n, double m)
{
	for (int i = 0; i < n; i++)
		m = fmin(m, p[i].loss);
	return m;
}

/* The current window becomes window A (the rate it ran is the one to beat); a new one starts. */
static void next_window(struct adsp *a, double now)
{
	memcpy(a->a, a->b, sizeof(a->b[0]) * (size_t)a->n_b);
	a->n_a = a->n_b;
	a->n_b = 0;
	a->t_window = now;
}

int adsp_checkpoint(struct adsp *a, double now, int64_t c_max)
{
	int decided = 0;
	double ran = now - a->t_window + 1e-6; /* checkpoints may come a little early or late */

	if (!a->started) {
		a->started = 1;
		a->t_epoch = a->t_window = now;
		a->c_target = c_max;
		a->n_b = 0; /* losses of the untrained model before any worker: not the rate's */
	} else if (a->cfg.fixed_r == 0 && a->cfg.epoch_s > 0 && now - a->t_epoch >= a->cfg.epoch_s) {
		/* Alg. 1 lines 2-3: a new epoch searches again from the smallest rate */
		a->t_epoch = a->t_window = now;
		a->r = a->r_a = 1;
		a->phase = ADSP_EVAL_A;
		a->n_a = a->n_b = 0;
		if (a->c_target < c_max)
			a->c_target = c_max;
		decided = 1;
	} else if (a->phase == ADSP_EVAL_A && ran >= a->cfg.eval_s) {
		/* r1 = ONLINEEVALUATE(r_a) is measured: now run r_a + 1 (line 10) */
		next_window(a, now);
		a->r = a->r_a + 1;
		a->phase = ADSP_EVAL_B;
		decided = 1;
	} else if (a->phase == ADSP_EVAL_B && ran >= a->cfg.eval_s) {
		/* lines 11-15: the same goal loss for both windows, times from the epoch start */
		double goal = ADSP_GOAL_FRAC * min_loss(a->b, a->n_b, min_loss(a->a, a->n_a, INFINITY));
		a->last_r1 = adsp_reward(a->a, a->n_a, a->t_epoch, goal);
		a->last_r2 = adsp_reward(a->b, a->n_b, a->t_epoch, goal);
		a->decisions++;
		if (a->last_r2 > a->last_r1 && a->r_a + 2 <= ADSP_MAX_R) {
			/* line 12: r_a + 1 is better; its window is the next comparison's r1 */
			a->r_a++;
			next_window(a, now);
			a->r = a->r_a + 1;
		} else {
			a->r = a->r_a;
			a->phase = ADSP_FIXED;
		}
		decided = 1;
	}
	a->check++;
	a->c_target += a->r;
	a->next_check += a->cfg.gamma_s;
	if (a->next_check <= now) /* a stalled loop: do not replay the missed checkpoints */
		a->next_check = now + a->cfg.gamma_s;
	return decided;
}
