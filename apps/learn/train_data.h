/* train_data.h - the training data: shards of Fashion-MNIST (slices or by label) and mini-batch sampling. */
#ifndef MLF_TRAIN_DATA_H
#define MLF_TRAIN_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "idx.h"

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
 * train_load_shard_by_label - a non-i.i.d. shard (esync.txt Fig. 3 non-i.i.d.; docs/experiments.md, key data_split): of the
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

#endif
