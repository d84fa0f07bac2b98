/* hop.c - Hop's queue-based synchronization (hop-asplos2019 §4.2-§5): see hop.h. */
#include "hop.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int hop_init(struct hop *h, const struct hop_cfg *cfg, const int *in, int n_in, const int *out,
	     int n_out, size_t n)
{
	memset(h, 0, sizeof(*h));
	if (n_in < 1 || n_out < 0 || n == 0 || cfg->backups < 0 || cfg->backups >= n_in ||
	    cfg->staleness < 0 || cfg->max_ig < 0 || cfg->max_jump < 0 ||
	    (cfg->max_jump > 0 && (cfg->max_ig == 0 || cfg->jump_behind < 1)))
		return -EINVAL;
	h->in = calloc((size_t)n_in, sizeof(*h->in));
	h->out = calloc((size_t)(n_out ? n_out : 1), sizeof(*h->out));
	if (!h->in || !h->out) {
		free(h->in);
		free(h->out);
		return -ENOMEM;
	}
	h->cfg = *cfg;
	h->n = n;
	h->n_in = n_in;
	h->n_out = n_out;
	for (int i = 0; i < n_in; i++)
		h->in[i] = (struct hop_in){ .host = in[i], .iter = -1 };
	for (int i = 0; i < n_out; i++)
		h->out[i] = (struct hop_out){ .host = out[i], .tokens = cfg->max_ig };
	return 0;
}

void hop_free(struct hop *h)
{
	for (int i = 0; h->in && i < h->n_in; i++)
		free(h->in[i].w);
	free(h->in);
	free(h->out);
	memset(h, 0, sizeof(*h));
}

int hop_on_params(struct hop *h, int from, int64_t iter, float *w, size_t n)
{
	for (int i = 0; i < h->n_in; i++) {
		if (h->in[i].host != from)
			continue;
		if (n != h->n)
			return -EINVAL;
		if (iter > h->in[i].iter) {
			free(h->in[i].w);
			h->in[i] = (struct hop_in){ .host = from, .iter = iter, .w = w, .fresh = 1 };
		} else {
			free(w); /* older than the one held: its information is in the newer one */
		}
		return 0;
	}
	return -EINVAL;
}

int hop_on_tokens(struct hop *h, int from, int64_t count)
{
	for (int i = 0; i < h->n_out; i++)
		if (h->out[i].host == from && count > 0) {
			h->out[i].tokens += count;
			return 0;
		}
	return -EINVAL;
}

static int satisfactory(const struct hop *h, const struct hop_in *u)
{
	return u->w && u->iter >= h->k - h->cfg.staleness && (h->cfg.staleness > 0 || u->fresh);
}

int hop_can_reduce(const struct hop *h)
{
	int ok = 0;

	for (int i = 0; i < h->n_in; i++)
		ok += satisfactory(h, &h->in[i]);
	return ok >= h->n_in - h->cfg.backups;
}

int hop_missing(const struct hop *h)
{
	for (int i = 0; i < h->n_in; i++)
		if (!satisfactory(h, &h->in[i]))
			return h->in[i].host;
	return -1;
}

int hop_reduce(struct hop *h, float *x)
{
	int64_t lo = h->k - h->cfg.staleness;
	double total = h->cfg.staleness + 1;
	int used = 0;

	for (int i = 0; i < h->n_in; i++) {
		struct hop_in *u = &h->in[i];
		if (!u->w || !u->fresh || u->iter < lo)
			continue;
		double wt = (double)((u->iter < h->k ? u->iter : h->k) - lo + 1);
		/* running weighted mean: x += (u - x) * wt / (total + wt) */
		float a = (float)(wt / (total + wt));
		for (size_t j = 0; j < h->n; j++)
			x[j] += (u->w[j] - x[j]) * a;
		total += wt;
		u->fresh = 0;
		used++;
	}
	h->reduced_with += used;
	return used;
}

int hop_can_advance(const struct hop *h)
{
	if (h->cfg.max_ig == 0)
		return 1;
	for (int i = 0; i < h->n_out; i++)
		if (h->out[i].tokens < 1)
			return 0;
	return 1;
}

void hop_advance(struct hop *h)
{
	if (h->cfg.max_ig > 0)
		for (int i = 0; i < h->n_out; i++)
			h->out[i].tokens--;
	h->k++;
}

int64_t hop_jump(const struct hop *h)
{
	int64_t behind = INT64_MAX;

	if (h->cfg.max_jump == 0 || h->n_out == 0)
		return 0;
	for (int i = 0; i < h->n_out; i++)
		if (h->out[i].tokens - h->cfg.max_ig < behind)
			behind = h->out[i].tokens - h->cfg.max_ig;
	if (behind < h->cfg.jump_behind)
		return 0;
	return behind < h->cfg.max_jump ? behind : h->cfg.max_jump;
}

void hop_skip(struct hop *h, int64_t j)
{
	for (int i = 0; i < h->n_out; i++)
		h->out[i].tokens -= j;
	h->k += j;
	h->jumped += j;
}
