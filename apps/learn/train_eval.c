/* train_eval.c - a model's test accuracy and loss. */
#include "train_eval.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Inner product with four partial sums (lets the compiler keep four lanes busy). */
static float train_dot(const float *a, const float *b, int n)
{
	float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
	int i;

	for (i = 0; i + 4 <= n; i += 4) {
		s0 += a[i] * b[i];
		s1 += a[i + 1] * b[i + 1];
		s2 += a[i + 2] * b[i + 2];
		s3 += a[i + 3] * b[i + 3];
	}
	for (; i < n; i++)
		s0 += a[i] * b[i];
	return (s0 + s1) + (s2 + s3);
}

int train_eval(const struct mlp_shape *s, const float *w, const struct idx_dataset *d, size_t k,
	       double *accuracy, double *loss)
{
	int width = 0, L = s->n_layers;
	size_t correct = 0, px = (size_t)d->rows * d->cols;
	double nll = 0;
	float *a, *z;

	if (k == 0 || k > d->n)
		k = d->n;
	for (int l = 0; l <= L; l++)
		width = s->sizes[l] > width ? s->sizes[l] : width;
	a = malloc(sizeof(float) * (size_t)width);
	z = malloc(sizeof(float) * (size_t)width);
	if (!a || !z) {
		free(a);
		free(z);
		return -ENOMEM;
	}
	for (size_t e = 0; e < k; e++) {
		const float *wl = w;
		int nout = s->sizes[L], best = 0;
		double mx, sum = 0;

		memcpy(a, d->pixels + e * px, sizeof(float) * (size_t)s->sizes[0]);
		for (int l = 1; l <= L; l++) {
			int in = s->sizes[l - 1], out = s->sizes[l];
			const float *bias = wl + (size_t)out * in;
			for (int o = 0; o < out; o++) {
				float v = train_dot(wl + (size_t)o * in, a, in) + bias[o];
				z[o] = (l < L && v < 0) ? 0 : v;
			}
			wl += (size_t)out * in + out;
			memcpy(a, z, sizeof(float) * (size_t)out);
		}
		for (int o = 1; o < nout; o++)
			best = a[o] > a[best] ? o : best;
		mx = a[best];
		for (int o = 0; o < nout; o++)
			sum += exp((double)a[o] - mx);
		/* -log softmax(label) = log sum exp(a - max) - (a_label - max) */
		nll += log(sum) - ((double)a[d->labels[e]] - mx);
		correct += best == d->labels[e];
	}
	free(a);
	free(z);
	*accuracy = k ? (double)correct / (double)k : 0;
	*loss = k ? nll / (double)k : 0;
	return 0;
}
