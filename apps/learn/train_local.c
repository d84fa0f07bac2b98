/* train_local.c - a worker's local SGD steps on its own copy between synchronisations, their delta and ADSP's commit timer. */
#include "train_local.h"

#include "clock.h"
#include "train_data.h"
#include "vec.h"

#include <math.h>

double train_adsp_commit_due(double t_rate, int64_t j, int64_t delta, double period_s, double o_s)
{
	if (delta <= 0 || j < 1 || j > delta)
		return INFINITY;
	double due = t_rate + (double)j * period_s / (double)delta - (o_s > 0 ? o_s : 0);
	return due > t_rate ? due : t_rate;
}

double train_local_slowdown(const struct train_local *L)
{
	double f = train_straggle_next(L->st);

	return clock_real_s() - L->t0 >= L->speed_at ? f * L->speed : f;
}

double train_local_gradient(const struct train_local *L, const float *w)
{
	train_sample_batch(L->shard, 0, L->shard->n, L->batch, L->rng, L->x, L->y);
	return mlp_grad(L->shape, w, L->x, L->y, L->batch, L->u);
}

double train_local_step(struct train_local *L, float *wr)
{
	double ts = clock_real_s();

	L->aborted = 0;
	L->wait_err = 0;
	L->loss = train_local_gradient(L, wr);
	if (L->loss < 0)
		return -1;
	/* the emulated compute: compute_min (slept now, or with a wait part of it below), then the
	 * slowdown */
	double elapsed = clock_real_s() - ts;
	double compute_s = L->wait ? (elapsed > L->compute_min ? elapsed : L->compute_min)
				   : train_compute_pad(ts, L->compute_min);
	double factor = train_local_slowdown(L);
	L->straggled += factor > 1;
	if (L->wait) {
		int w = L->wait(L->wait_ctx, ts + compute_s * factor);
		L->wait_err = w < 0 ? w : 0;
		if (w == 1) {
			double took = clock_real_s() - ts;
			L->aborted = 1;
			L->n_aborted++;
			L->aborted_s += took;
			return took;
		}
	} else
		train_straggle_sleep(compute_s, factor);
	vec_scale_f32(L->u, (float)-L->lr, L->n);
	vec_add_f32(wr, L->u, L->n);
	double took = clock_real_s() - ts;
	L->busy += took;
	L->steps++;
	return took;
}

double train_local_delta(const float *copy, const float *w, double scale, float *delta, size_t n)
{
	for (size_t j = 0; j < n; j++)
		delta[j] = (copy[j] - w[j]) * (float)scale;
	return vec_norm2_f32(delta, n);
}
