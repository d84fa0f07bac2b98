/* train.h - shared training pieces of the applications: server apply (paper eq. 2), stragglers, shards, evaluation, records. */
#ifndef MLF_TRAIN_H
#define MLF_TRAIN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "idx.h"
#include "mlp.h"

/* ---- the model a parameter server (or an RR-Sync rank) holds ---------------------------- */

/**
 * A model with momentum state (paper §2, eq. 2): @w is w_t, @w_prev is w_{t-1}, both @n
 * float32 values (mlp.h layout); @gamma is the momentum in [0, 1); @version counts the worker
 * updates applied so far (an aggregate of m updates counts m).
 */
struct train_model {
	size_t n;
	float *w, *w_prev;
	double gamma;
	int64_t version;
};

/**
 * train_model_init - allocate a model of shape @s, He-initialised from @seed (mlp_init), with
 * w_prev = w (no momentum at the first step), version 0.
 * Returns 0, -EINVAL (@gamma outside [0, 1)), -ENOMEM.
 */
int train_model_init(struct train_model *m, const struct mlp_shape *s, uint64_t seed, double gamma);

/**
 * train_model_init_flat - a flat model (no MLP shape: any vector, e.g. a PyTorch model's
 * flattened parameters, contract B of issue 13) of @n floats copied from @w, with w_prev = w (no
 * momentum at the first step) and version @version; train_apply, train_state_get/set and the
 * checkpoints work on it as on an MLP's. Returns 0, -EINVAL (@n 0, @gamma outside [0, 1)), -ENOMEM.
 */
int train_model_init_flat(struct train_model *m, const float *w, size_t n, int64_t version, double gamma);

/**
 * train_f32_read - read the raw little-endian float32 file @path (mlf-ps --init-file) into a
 * malloc'ed *@w of *@n floats (the caller frees it). Returns 0, or -errno with @err naming the
 * path: -ENOENT / -EACCES (cannot open), -EINVAL (empty, size not a multiple of 4 bytes),
 * -EIO (read error), -ENOMEM.
 */
int train_f32_read(const char *path, float **w, size_t *n, char *err, size_t errlen);

/** train_model_free - release a model; safe on a zeroed struct. */
void train_model_free(struct train_model *m);

/**
 * train_init_weights - replace the weights of model @m (w and w_prev: no momentum at the first
 * step; the version is kept) with the raw little-endian float32 file @path, which must hold
 * exactly m->n floats: a pre-trained model to start from, as the paper's Table 2 runs do (§7:
 * "we start with a pre-trained model"); `bench-sgd-delay --pretrain G --save-model F` writes one.
 * Returns 0, train_f32_read's errors, or -EINVAL when the file holds another number of floats;
 * @err names the path and, for a size mismatch, both counts.
 */
int train_init_weights(struct train_model *m, const char *path, char *err, size_t errlen);

/**
 * train_apply - the server's apply of paper eq. 2: w_{t+1} = w_t + u + gamma (w_t - w_{t-1}),
 * where @u (m->n floats) is a worker update u = -lr * gradient (eq. 1) or the sum of @parts
 * updates (an aggregate, applied as one step with the sum). Advances the version by @parts
 * (>= 1) and returns the new version.
 */
int64_t train_apply(struct train_model *m, const float *u, int64_t parts);

/**
 * train_state_get - the training state of @m for replication (docs/replication.md): copy w_t
 * into @w and the momentum history h_t = w_t - w_{t-1} into @h (m->n floats each). With eq. 2
 * written as h_{t+1} = gamma h_t + u, w_{t+1} = w_t + h_{t+1}, h is in the same units as an
 * update u = -lr * gradient and as the model difference the replication planner bounds.
 * Returns the model version.
 */
int64_t train_state_get(const struct train_model *m, float *w, float *h);

/**
 * train_state_set - install state @w, @h (m->n floats each) at @version: w_t = @w,
 * w_{t-1} = @w - @h (a replica's catch-up, a restore from a checkpoint).
 */
void train_state_set(struct train_model *m, const float *w, const float *h, int64_t version);

/** train_history_norm - ||h_t||_2 = ||w_t - w_{t-1}||_2, the momentum history's norm (eq. 2). */
double train_history_norm(const struct train_model *m);

#define TRAIN_CKPT_MAGIC 0x434b4c4du /* "MLKC": a checkpoint file */

/**
 * train_checkpoint_write - write model @m to @path as a checkpoint: uint32 magic
 * TRAIN_CKPT_MAGIC, uint32 0, int64 version, uint64 n, n float32 of w, n float32 of h
 * (little endian), through a temporary file that is fsync'ed and renamed (a crash leaves the
 * previous checkpoint). Blocking. Returns 0, or -errno with @err naming the path.
 */
int train_checkpoint_write(const struct train_model *m, const char *path, char *err, size_t errlen);

/**
 * train_checkpoint_read - load the checkpoint @path into @m (same n) with train_state_set.
 * Returns 0, -ENOENT / -EACCES (cannot open), -EBADMSG (bad magic, n differs from the model's,
 * truncated), with @err naming the path and the problem.
 */
int train_checkpoint_read(struct train_model *m, const char *path, char *err, size_t errlen);

/* ---- stragglers (paper §7, compute settings C1..C3) ------------------------------------- */

/** A straggler process: each iteration is slowed down by @factor with probability @rate. */
struct train_straggle {
	double rate;     /* probability per iteration, 0..1 */
	double factor;   /* slowdown factor s >= 1: the iteration takes s x its compute time */
	uint64_t state;  /* generator state (deterministic per seed) */
};

/**
 * train_straggle_parse - "R,S" (e.g. "0.1,2"), "C1" (0.10, 2), "C2" (0.10, 4), "C3" (0.04, 2),
 * or "none" (0, 1), seeded with @seed. Returns 0, or -EINVAL when R is outside [0, 1] or S < 1.
 */
int train_straggle_parse(const char *spec, uint64_t seed, struct train_straggle *st);

/**
 * train_straggle_next - draw this iteration's slowdown: returns @st->factor with probability
 * @st->rate, else 1. The sequence depends only on the seed.
 */
double train_straggle_next(struct train_straggle *st);

/**
 * train_straggle_sleep - sleep (factor - 1) x @compute_s seconds (the straggler's extra time).
 * Returns the seconds slept.
 */
double train_straggle_sleep(double compute_s, double factor);

/**
 * train_compute_pad - emulate an accelerator whose gradient computation takes at least
 * @min_s seconds (the paper's workers are GPUs; ours compute on shared CPU cores): sleep until
 * @t_start + @min_s (CLOCK_REALTIME seconds, clock_real_s()). Returns the iteration's compute
 * time, max(elapsed, @min_s) seconds; @min_s <= 0 only measures.
 */
double train_compute_pad(double t_start, double min_s);

/* ---- local SGD steps on a worker's own copy (issue 12) ------------------------------------ */

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

/* ---- data: shards, mini-batches, evaluation --------------------------------------------- */

/** train_shard_parse - parse "I/N" (0 <= I < N). Returns 0 or -EINVAL. */
int train_shard_parse(const char *spec, int *i, int *n);

/**
 * train_shard_range - worker @i of @n trains on examples [*begin, *end) of @total: contiguous
 * shards, sizes differing by at most one, covering every example exactly once.
 */
void train_shard_range(size_t total, int i, int n, size_t *begin, size_t *end);

/**
 * train_load - load Fashion-MNIST's training (@test = 0) or test (@test = 1) set from @dir
 * (gzip IDX files as Debian ships them), at most @limit examples (0 = all).
 * Returns 0 or idx_load_dataset's errors, with @err naming the file.
 */
int train_load(const char *dir, int test, size_t limit, struct idx_dataset *out, char *err, size_t errlen);

/**
 * train_load_shard - load shard @i of @n (train_shard_range) of the first @total Fashion-MNIST
 * training images from @dir; only the shard stays in memory (out->n = its size).
 * Returns 0, -EINVAL (@total larger than the set, bad shard), or train_load's errors.
 */
int train_load_shard(const char *dir, size_t total, int i, int n, struct idx_dataset *out,
		     char *err, size_t errlen);

/**
 * train_load_shard_by_label - a non-i.i.d. shard (issue 12, esync.txt Fig. 3 non-i.i.d.): of the
 * first @total training images in @dir, those whose label l has l % @n == @i (for 4 workers:
 * {0,4,8}, {1,5,9}, {2,6}, {3,7}), so the shards are disjoint, cover the set, and each holds
 * only its own classes. @n at most 10 (every shard gets a class).
 * Returns 0, -EINVAL (bad shard, @n > 10, @total larger than the set), or train_load's errors.
 */
int train_load_shard_by_label(const char *dir, size_t total, int i, int n, struct idx_dataset *out,
			      char *err, size_t errlen);

/**
 * train_sample_batch - draw @batch examples uniformly (with replacement) from [@begin, @end) of
 * @d into @x (batch x pixels floats) and @y (batch labels), advancing the generator @rng.
 */
void train_sample_batch(const struct idx_dataset *d, size_t begin, size_t end, int batch,
			uint64_t *rng, float *x, uint8_t *y);

/**
 * train_eval - test accuracy (fraction 0..1) and mean cross-entropy loss (nats) of model @w on
 * the first @k examples of @d (all when @k = 0 or larger than the set).
 * Returns 0, or -ENOMEM when scratch memory cannot be allocated.
 */
int train_eval(const struct mlp_shape *s, const float *w, const struct idx_dataset *d, size_t k,
	       double *accuracy, double *loss);

/* ---- records (docs/fabric.md: JSON lines, flushed per line) ----------------------------- */

/**
 * train_rec_open - open (truncate) @dir/@name for JSON-lines records, creating @dir.
 * Returns the stream, or NULL with @err naming the path and the reason.
 */
FILE *train_rec_open(const char *dir, const char *name, char *err, size_t errlen);

/**
 * train_rec_line - write @obj (a reference that is stolen) as one compact JSON line to @f and
 * flush it. @f NULL: only releases @obj. Returns 0, or -EIO when the write failed.
 */
int train_rec_line(FILE *f, json_t *obj);

/**
 * train_rec_file - write @obj (stolen) as the whole file @dir/@name (e.g. server.json), indented.
 * Returns 0, or -EIO with @err naming the path.
 */
int train_rec_file(const char *dir, const char *name, json_t *obj, char *err, size_t errlen);

#endif
