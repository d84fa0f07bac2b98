/* train_model.h - the model a parameter server (or an RR-Sync rank) holds: init, apply (paper eq. 2), state, checkpoints. */
#ifndef MLF_TRAIN_MODEL_H
#define MLF_TRAIN_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "mlp.h"

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
 * flattened parameters, docs/api.md "Initial model") of @n floats copied from @w, with w_prev = w (no
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

#endif
