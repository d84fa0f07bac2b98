/* mlp.c - forward and backward passes of a dense ReLU network, batch-major, with vec.h kernels. */
#include "mlp.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vec.h"

int mlp_shape_parse(const char *spec, struct mlp_shape *out)
{
	const char *p = spec;
	int n = 0;

	memset(out, 0, sizeof(*out));
	while (*p) {
		char *end;
		long v = strtol(p, &end, 10);
		if (end == p || v <= 0 || v > (1 << 20) || n > MLP_MAX_LAYERS)
			return -EINVAL;
		out->sizes[n++] = (int)v;
		p = end;
		if (*p == ',')
			p++;
		else if (*p)
			return -EINVAL;
	}
	if (n < 2)
		return -EINVAL;
	out->n_layers = n - 1;
	return 0;
}

size_t mlp_param_count(const struct mlp_shape *s)
{
	size_t n = 0;

	for (int l = 1; l <= s->n_layers; l++)
		n += (size_t)s->sizes[l] * s->sizes[l - 1] + s->sizes[l];
	return n;
}

/* splitmix64: a small, good, deterministic generator for initialisation. */
static uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static double uniform01(uint64_t *state)
{
	return (double)(splitmix64(state) >> 11) * (1.0 / 9007199254740992.0);
}

void mlp_init(const struct mlp_shape *s, uint64_t seed, float *w)
{
	uint64_t st = seed;

	for (int l = 1; l <= s->n_layers; l++) {
		size_t nw = (size_t)s->sizes[l] * s->sizes[l - 1];
		double sd = sqrt(2.0 / s->sizes[l - 1]);
		for (size_t i = 0; i < nw; i++) {
			/* Box-Muller normal sample */
			double u1 = uniform01(&st), u2 = uniform01(&st);
			w[i] = (float)(sd * sqrt(-2.0 * log(u1 + 1e-300)) * cos(2 * M_PI * u2));
		}
		memset(w + nw, 0, sizeof(float) * (size_t)s->sizes[l]);
		w += nw + s->sizes[l];
	}
}

static float dot(const float *a, const float *b, int n)
{
	float acc[8] = { 0 };
	int i = 0;

	for (; i + 8 <= n; i += 8)
		for (int k = 0; k < 8; k++)
			acc[k] += a[i + k] * b[i + k];
	for (; i < n; i++)
		acc[0] += a[i] * b[i];
	return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

/* Activations of every layer for a batch: act[l] is batch x sizes[l]; act[0] aliases x. */
struct mlp_acts {
	float *act[MLP_MAX_LAYERS + 1];
	float *buf;
};

static int forward(const struct mlp_shape *s, const float *w, const float *x, int batch,
		   struct mlp_acts *a)
{
	size_t total = 0;
	float *p;

	for (int l = 1; l <= s->n_layers; l++)
		total += (size_t)batch * s->sizes[l];
	a->buf = malloc(total * sizeof(float));
	if (!a->buf)
		return -ENOMEM;
	a->act[0] = (float *)x;
	p = a->buf;
	for (int l = 1; l <= s->n_layers; l++) {
		int in = s->sizes[l - 1], out = s->sizes[l];
		const float *W = w, *b = w + (size_t)out * in;
		a->act[l] = p;
		for (int r = 0; r < batch; r++) {
			const float *ar = a->act[l - 1] + (size_t)r * in;
			float *zr = p + (size_t)r * out;
			for (int o = 0; o < out; o++) {
				float z = dot(W + (size_t)o * in, ar, in) + b[o];
				zr[o] = (l < s->n_layers && z < 0) ? 0 : z;
			}
			if (l == s->n_layers) { /* softmax, numerically stable */
				float m = zr[0], sum = 0;
				for (int o = 1; o < out; o++)
					m = zr[o] > m ? zr[o] : m;
				for (int o = 0; o < out; o++)
					sum += (zr[o] = expf(zr[o] - m));
				for (int o = 0; o < out; o++)
					zr[o] /= sum;
			}
		}
		w += (size_t)out * in + out;
		p += (size_t)batch * out;
	}
	return 0;
}

double mlp_grad(const struct mlp_shape *s, const float *w, const float *x, const uint8_t *y,
		int batch, float *grad)
{
	struct mlp_acts a;
	const float *wl[MLP_MAX_LAYERS + 1];
	float *gl[MLP_MAX_LAYERS + 1];
	float *delta, *prev;
	int maxw = 0, L = s->n_layers, nout = s->sizes[L];
	double loss = 0;
	size_t off = 0;

	if (forward(s, w, x, batch, &a))
		return -1;
	for (int l = 1; l <= L; l++) {
		wl[l] = w + off;
		gl[l] = grad + off;
		off += (size_t)s->sizes[l] * s->sizes[l - 1] + s->sizes[l];
		maxw = s->sizes[l] > maxw ? s->sizes[l] : maxw;
	}
	memset(grad, 0, off * sizeof(float));
	delta = malloc(sizeof(float) * (size_t)batch * maxw);
	prev = malloc(sizeof(float) * (size_t)batch * maxw);
	if (!delta || !prev) {
		free(delta);
		free(prev);
		free(a.buf);
		return -1;
	}
	/* dL/dz at the output: (softmax - onehot) / batch */
	for (int r = 0; r < batch; r++) {
		const float *pr = a.act[L] + (size_t)r * nout;
		loss -= log(pr[y[r]] > 1e-30f ? pr[y[r]] : 1e-30f);
		for (int o = 0; o < nout; o++)
			delta[(size_t)r * nout + o] = (pr[o] - (o == y[r])) / batch;
	}
	for (int l = L; l >= 1; l--) {
		int in = s->sizes[l - 1], out = s->sizes[l];
		float *gW = gl[l], *gb = gl[l] + (size_t)out * in;
		for (int r = 0; r < batch; r++) {
			const float *ar = a.act[l - 1] + (size_t)r * in;
			const float *dr = delta + (size_t)r * out;
			for (int o = 0; o < out; o++) {
				if (dr[o] != 0)
					vec_axpy_f32(gW + (size_t)o * in, dr[o], ar, (size_t)in);
				gb[o] += dr[o];
			}
		}
		if (l == 1)
			break;
		memset(prev, 0, sizeof(float) * (size_t)batch * in);
		for (int r = 0; r < batch; r++) {
			const float *dr = delta + (size_t)r * out;
			float *pr = prev + (size_t)r * in;
			const float *ar = a.act[l - 1] + (size_t)r * in;
			for (int o = 0; o < out; o++)
				if (dr[o] != 0)
					vec_axpy_f32(pr, dr[o], wl[l] + (size_t)o * in, (size_t)in);
			for (int i = 0; i < in; i++) /* ReLU derivative: zero where the unit was off */
				if (ar[i] <= 0)
					pr[i] = 0;
		}
		{
			float *t = delta;
			delta = prev;
			prev = t;
		}
	}
	free(delta);
	free(prev);
	free(a.buf);
	return loss / batch;
}

double mlp_accuracy(const struct mlp_shape *s, const float *w, const float *x, const uint8_t *y, size_t n)
{
	const int chunk = 256, nout = s->sizes[s->n_layers];
	size_t correct = 0;

	for (size_t start = 0; start < n; start += chunk) {
		int b = (int)(n - start < (size_t)chunk ? n - start : (size_t)chunk);
		struct mlp_acts a;
		if (forward(s, w, x + start * s->sizes[0], b, &a))
			return -1;
		for (int r = 0; r < b; r++) {
			const float *pr = a.act[s->n_layers] + (size_t)r * nout;
			int best = 0;
			for (int o = 1; o < nout; o++)
				best = pr[o] > pr[best] ? o : best;
			correct += best == y[start + r];
		}
		free(a.buf);
	}
	return n ? (double)correct / n : 0;
}
