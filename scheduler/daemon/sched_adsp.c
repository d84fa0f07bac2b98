/* sched_adsp.c - ADSP's commit-rate control (adsp-aaai2020 §3-§4.2, Alg. 1): check periods,
 * ΔC_i = C_target - c_i, and the online search of the commit rate by interleaved trials. */
#include "sched_adsp.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#define ADSP_MAX_R 4096     /* commits per check period: far above any useful rate */

int adsp_init(struct adsp *a, const struct adsp_cfg *cfg, double now)
{
	if (!(cfg->gamma_s > 0) || !(cfg->eval_s >= cfg->gamma_s) || !(cfg->epoch_s >= 0) ||
	    cfg->fixed_r < 0 || cfg->fixed_r > ADSP_MAX_R || cfg->max_lag_r < 1)
		return -EINVAL;
	memset(a, 0, sizeof(*a));
	a->cfg = *cfg;
	a->next_check = now;
	a->r = a->r_a = cfg->fixed_r > 0 ? cfg->fixed_r : 1;
	a->r_b = 2 * a->r_a;
	a->phase = cfg->fixed_r > 0 ? ADSP_FIXED : ADSP_EVAL_A;
	return 0;
}

double adsp_speed(const struct adsp_point *p, int n, double t_from, double *se)
{
	double st = 0, sy = 0, stt = 0, sty = 0, syy = 0;
	int m = 0;

	*se = INFINITY;
	for (int i = 0; i < n; i++) {
		if (!(p[i].t >= t_from))
			continue;
		double t = p[i].t - t_from, y = 1 / p[i].loss;
		st += t;
		sy += y;
		stt += t * t;
		sty += t * y;
		syy += y * y;
		m++;
	}
	double sxx = stt - st * st / (m ? m : 1);
	if (m < 2 || !(sxx > 1e-9 * stt))
		return NAN;
	double k = (sty - st * sy / m) / sxx;
	if (m > 2) {
		double sse = syy - sy * sy / m - k * k * sxx; /* residual sum of squares */
		*se = sqrt(fmax(sse, 0) / (m - 2) / sxx);
	}
	return k;
}

int adsp_compare(const double *t, const double *v, const double *se, int n, double *va, double *vb)
{
	double la = 0, lb = 0, worst = INFINITY;
	int m = 0;

	*va = *vb = 0;
	if (n < 3 || n % 2 == 0)
		return -1;
	for (int i = 0; i < n; i++)
		if (!isfinite(t[i]) || !(v[i] > 0) || !isfinite(v[i]) || !(se[i] >= 0))
			return -1; /* no speed, or a window where the loss did not fall: no evidence */
	for (int i = 1; i < n; i += 2) {
		/* r_a's speed at window i: interpolated in log between its neighbours, exact when the
		 * trend slows every second by the same factor */
		double w = (t[i] - t[i - 1]) / (t[i + 1] - t[i - 1]);
		if (!(w > 0 && w < 1))
			return -1;
		double lai = (1 - w) * log(v[i - 1]) + w * log(v[i + 1]);
		/* the error of the log ratio from the windows' slope errors (relative errors) */
		double e0 = (1 - w) * se[i - 1] / v[i - 1], e2 = w * se[i + 1] / v[i + 1], e1 = se[i] / v[i];
		double err = sqrt(e0 * e0 + e1 * e1 + e2 * e2);
		worst = fmin(worst, log(v[i]) - lai - ADSP_SE_K * err);
		la += lai;
		lb += log(v[i]);
		m++;
	}
	*va = exp(la / m);
	*vb = exp(lb / m);
	return worst > log(1 + ADSP_MIN_GAIN);
}

int64_t adsp_delta(const struct adsp *a, int64_t c_i)
{
	int64_t d = a->c_target - c_i, cap = (int64_t)a->cfg.max_lag_r * a->r;

	return d < 0 ? 0 : d > cap ? cap : d;
}

void adsp_loss(struct adsp *a, double t, double loss)
{
	if (!(isfinite(t) && isfinite(loss) && loss > 0))
		return;
	if (a->n_b == ADSP_MAX_LOSS) {
		memmove(a->b, a->b + 1, sizeof(a->b[0]) * (ADSP_MAX_LOSS - 1));
		a->n_b--;
	}
	a->b[a->n_b++] = (struct adsp_point){ t, loss };
}

/* A comparison of r_a against r_b = 2 r_a starts with a window of r_a at @now. */
static void start_comparison(struct adsp *a, int r_a, double now)
{
	a->r = a->r_a = r_a;
	a->r_b = 2 * r_a <= ADSP_MAX_R ? 2 * r_a : ADSP_MAX_R;
	a->phase = a->r_b > r_a ? ADSP_EVAL_A : ADSP_FIXED;
	a->n_win = 0;
	a->n_b = 0;
	a->t_window = now;
}

/* The trial window that ran until @now is done: its speed is kept, the other rate runs next,
 * or after ADSP_TRIALS windows the comparison decides. */
static void end_window(struct adsp *a, double now)
{
	a->win_t[a->n_win] = (a->t_window + now) / 2;
	a->win_v[a->n_win] = adsp_speed(a->b, a->n_b, a->t_window, &a->win_se[a->n_win]);
	a->win_n[a->n_win] = 0;
	for (int i = 0; i < a->n_b; i++)
		a->win_n[a->n_win] += a->b[i].t >= a->t_window;
	a->n_win++;
	a->n_b = 0;
	a->t_window = now;
	if (a->n_win < ADSP_TRIALS) {
		a->phase = a->n_win % 2 ? ADSP_EVAL_B : ADSP_EVAL_A;
		a->r = a->n_win % 2 ? a->r_b : a->r_a;
		return;
	}
	double va, vb;
	int verdict = adsp_compare(a->win_t, a->win_v, a->win_se, a->n_win, &va, &vb);
	if (verdict < 0 && a->retries < ADSP_RETRIES) {
		/* no evidence (e.g. no commit yet in the first window of a long check period): the
		 * same comparison again */
		a->retries++;
		start_comparison(a, a->r_a, now);
		return;
	}
	a->decisions++;
	a->retries = 0;
	a->last_ra = a->r_a;
	a->last_rb = a->r_b;
	a->last_r1 = va;
	a->last_r2 = vb;
	if (verdict > 0) {
		start_comparison(a, a->r_b, now);
	} else {
		a->r = a->r_a;
		a->phase = ADSP_FIXED;
	}
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
		a->t_epoch = now;
		a->retries = 0;
		start_comparison(a, 1, now);
		if (a->c_target < c_max)
			a->c_target = c_max;
		decided = 1;
	} else if (a->phase != ADSP_FIXED && ran >= a->cfg.eval_s) {
		int r_before = a->r;
		end_window(a, now);
		decided = a->r != r_before || a->phase == ADSP_FIXED;
	}
	a->check++;
	a->c_target += a->r;
	a->next_check += a->cfg.gamma_s;
	if (a->next_check <= now) /* a stalled loop: do not replay the missed checkpoints */
		a->next_check = now + a->cfg.gamma_s;
	return decided;
}
