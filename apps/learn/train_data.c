/* train_data.c - the training data: shards of Fashion-MNIST (slices or by label) and mini-batch sampling. */
#include "train_data.h"

#include "train_straggle.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int train_shard_parse(const char *spec, int *i, int *n)
{
	char *end;
	long a = strtol(spec, &end, 10), b;

	if (end == spec || *end != '/')
		return -EINVAL;
	spec = end + 1;
	b = strtol(spec, &end, 10);
	if (end == spec || *end || b < 1 || b > 1 << 20 || a < 0 || a >= b)
		return -EINVAL;
	*i = (int)a;
	*n = (int)b;
	return 0;
}

void train_shard_range(size_t total, int i, int n, size_t *begin, size_t *end)
{
	*begin = total * (size_t)i / (size_t)n;
	*end = total * (size_t)(i + 1) / (size_t)n;
}

int train_load(const char *dir, int test, size_t limit, struct idx_dataset *out, char *err, size_t errlen)
{
	const char *stem = test ? "t10k" : "train";
	char ip[4096], lp[4096];

	snprintf(ip, sizeof(ip), "%s/%s-images-idx3-ubyte.gz", dir, stem);
	snprintf(lp, sizeof(lp), "%s/%s-labels-idx1-ubyte.gz", dir, stem);
	return idx_load_dataset(ip, lp, limit, out, err, errlen);
}

int train_load_shard(const char *dir, size_t total, int i, int n, struct idx_dataset *out,
		     char *err, size_t errlen)
{
	size_t b, e, px;
	int rc;

	if (n < 1 || i < 0 || i >= n || total == 0) {
		snprintf(err, errlen, "bad shard %d/%d of %zu images", i, n, total);
		return -EINVAL;
	}
	train_shard_range(total, i, n, &b, &e);
	rc = train_load(dir, 0, e, out, err, errlen);
	if (rc)
		return rc;
	if (out->n < e) {
		snprintf(err, errlen, "%s holds %zu training images, fewer than the %zu asked for", dir,
			 out->n, total);
		idx_free(out);
		return -EINVAL;
	}
	px = (size_t)out->rows * out->cols;
	memmove(out->pixels, out->pixels + b * px, (e - b) * px * sizeof(float));
	memmove(out->labels, out->labels + b, e - b);
	out->n = e - b;
	return 0;
}

int train_load_shard_by_label(const char *dir, size_t total, int i, int n, struct idx_dataset *out,
			      char *err, size_t errlen)
{
	size_t px, k = 0;
	int rc;

	if (n < 1 || n > 10 || i < 0 || i >= n || total == 0) {
		snprintf(err, errlen, "bad label shard %d/%d of %zu images (1 to 10 shards)", i, n, total);
		return -EINVAL;
	}
	rc = train_load(dir, 0, total, out, err, errlen);
	if (rc)
		return rc;
	if (out->n < total) {
		snprintf(err, errlen, "%s holds %zu training images, fewer than the %zu asked for", dir,
			 out->n, total);
		idx_free(out);
		return -EINVAL;
	}
	px = (size_t)out->rows * out->cols;
	for (size_t j = 0; j < out->n; j++)
		if (out->labels[j] % n == i) {
			if (k != j) {
				memmove(out->pixels + k * px, out->pixels + j * px, px * sizeof(float));
				out->labels[k] = out->labels[j];
			}
			k++;
		}
	out->n = k;
	return 0;
}

void train_sample_batch(const struct idx_dataset *d, size_t begin, size_t end, int batch,
			uint64_t *rng, float *x, uint8_t *y)
{
	size_t px = (size_t)d->rows * d->cols, span = end - begin;

	for (int r = 0; r < batch; r++) {
		size_t k = begin + (size_t)(train_rng_next(rng) % span);
		memcpy(x + (size_t)r * px, d->pixels + k * px, px * sizeof(float));
		y[r] = d->labels[k];
	}
}
