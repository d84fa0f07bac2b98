/* train_local.h - a worker's local SGD steps on its own copy between synchronisations, their delta and ADSP's commit timer. */
#ifndef MLF_TRAIN_LOCAL_H
#define MLF_TRAIN_LOCAL_H

#include <stddef.h>
#include <stdint.h>

#include "idx.h"
#include "mlp.h"
#include "train_straggle.h"

/**
 * struct train_local - what a worker's local SGD steps need, and what they count. ESync
 * (esync.txt Alg. 1 lines 5-12), fixed-rate local SGD, ADSP (adsp-aaai2020 Alg. 2) and Hop
 * (hop-asplos2019 Fig. 7) train on a copy of the model between synchronisations, then push the
 * accumulated delta (train_local_delta()).
 *
 * Settings, set by the caller: @shape; @shard, the worker's examples; @st, the C1-C3 straggler
 * draws; @rng; @batch, examples per mini-batch; @lr, the learning rate; @compute_min, seconds a
 * gradient takes at least (the emulated accelerator, train_compute_pad()); @speed >= 1 and
 * @speed_at, a deterministic straggler (every step @speed times slower from @speed_at seconds
 * after @t0, the CLOCK_REALTIME second the worker started; @speed 1 = off); scratch @x
 * (@batch x 784 floats), @y (@batch labels) and @u (@n floats, the gradient); @n, model floats.
 *
 * @wait (NULL: the emulated compute is slept): waits for the end of the emulated compute
 * instead, @wait(@wait_ctx, until) with until in CLOCK_REALTIME seconds; it returns 1 when the
 * step is to be aborted (ESync's non-blocking mode: a READY arrived, esync.txt §4.2), 0 at
 * until, or a negative errno, which the step keeps in @wait_err (0: none).
 *
 * Counters, zero at the start: @steps and @busy (seconds) of the applied steps; @straggled,
 * steps slowed by a straggler; @loss, the last mini-batch's mean cross-entropy (nats);
 * @aborted, whether the last step was aborted; @n_aborted and @aborted_s (seconds) of aborted
 * steps, which count in neither @steps nor @busy.
 */
struct train_local {
	const struct mlp_shape *shape;
	const struct idx_dataset *shard;
	struct train_straggle *st;
	uint64_t *rng;
	int batch;
	double lr, compute_min, speed, speed_at, t0;
	float *x, *u;
	uint8_t *y;
	size_t n;
	int (*wait)(void *ctx, double until);
	void *wait_ctx;
	long steps, straggled, n_aborted;
	double busy, loss, aborted_s;
	int aborted, wait_err;
};

/**
 * train_local_slowdown - the slowdown factor (>= 1) of the next step: the straggler setting's
 * draw (C1-C3, train_straggle_next()) times @L->speed once @L->speed_at seconds have passed
 * since @L->t0.
 */
double train_local_slowdown(const struct train_local *L);

/**
 * train_local_gradient - the mean gradient of the model @w (@L->n floats) over @L->batch examples
 * drawn from @L->shard with @L->rng, into @L->u (scratch @L->x, @L->y); no emulated compute, no
 * counter changed (an MLfabric-A / Async worker computes it on a thread of its own). Returns the
 * mini-batch's mean cross-entropy (nats), or -1 without memory.
 */
double train_local_gradient(const struct train_local *L, const float *w);

/**
 * train_local_step - one local SGD step on the copy @wr (@L->n floats): a mini-batch gradient
 * (padded to @L->compute_min and slowed by train_local_slowdown()), then wr += -lr x gradient
 * (MLfabric eq. 1 on the copy). With @L->wait set, an abort during the emulated compute leaves
 * @wr as it was and sets @L->aborted; a wait error is kept in @L->wait_err (the step is then
 * applied). Returns the seconds the step took (aborted or not), or -1 without memory for the
 * gradient (@wr unchanged).
 */
double train_local_step(struct train_local *L, float *wr);

/**
 * train_local_delta - the accumulated update of a worker's local steps: @delta = @scale x
 * (@copy - @w), @n floats each; @delta may be @copy. @scale weights it as the paper says
 * (ESync: epsilon / P, esync.txt Alg. 1 line 20; ADSP: the global learning rate, 1/M in
 * adsp-aaai2020 §5.1; Hop: 1, the gradient steps only). Returns the L2 norm of @delta.
 */
double train_local_delta(const float *copy, const float *w, double scale, float *delta, size_t n);

/**
 * train_adsp_commit_due - ADSP's commit timer (adsp-aaai2020 Alg. 2 lines 4 and 14): with
 * @delta commits (ΔC_i) to make in the check period @period_s (Γ) that began when the commit
 * rate arrived at @t_rate (CLOCK_REALTIME s), and commits taking @o_s seconds (O_i: push and
 * model pull), the @j-th commit (1-based) is due at t_rate + j x Γ / ΔC_i - O_i (not before
 * @t_rate): the timer of Γ / ΔC_i - O_i, restarted after each commit that itself took O_i.
 * Returns that time, or INFINITY when @j > @delta (this period's commits are done) or
 * @delta <= 0.
 */
double train_adsp_commit_due(double t_rate, int64_t j, int64_t delta, double period_s, double o_s);

#endif
