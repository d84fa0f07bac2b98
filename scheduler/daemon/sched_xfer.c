/* sched_xfer.c - the scheduler's table of commanded transfers and their reserved rate profiles. */
#include "sched_xfer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "arr.h"
#include "sched_rec.h"

int sched_xfer_add(struct sched *s, const struct sched_xfer *proto, const struct plan_transfer *t,
		   double now_s)
{
	struct plan_rate_step *steps = NULL;

	if (arr_grow((void **)&s->xfers, &s->cap_xfers, s->n_xfers + 1, sizeof(*s->xfers)))
		return -ENOMEM;
	if (t && t->n_rate > 0) {
		steps = malloc(sizeof(*steps) * (size_t)t->n_rate);
		if (!steps)
			return -ENOMEM;
		memcpy(steps, t->rate, sizeof(*steps) * (size_t)t->n_rate);
	}
	sched_index_put(&s->xfer_ix, proto->xfer, s->n_xfers); /* a failure leaves it stale */
	struct sched_xfer *x = &s->xfers[s->n_xfers++];
	*x = (struct sched_xfer){ .xfer = proto->xfer, .what = proto->what, .id = proto->id,
		.src = proto->src, .dst = proto->dst, .chan = proto->chan, .bytes = proto->bytes,
		.replica = proto->replica, .from_xfer = proto->from_xfer, .n_fwd = proto->n_fwd,
		.start = t ? t->start_s : now_s,
		.end = t ? t->end_s : now_s, .n_steps = steps ? t->n_rate : 0, .steps = steps };
	sched_rec_transfer(s, x);
	return 0;
}

int sched_xfer_find(const struct sched *s, uint64_t xfer)
{
	if (sched_index_usable(&s->xfer_ix))
		return sched_index_get(&s->xfer_ix, xfer);
	for (int i = s->n_xfers - 1; i >= 0; i--)
		if (s->xfers[i].xfer == xfer)
			return i;
	return -1;
}

void sched_xfer_done(struct sched *s, uint64_t xfer)
{
	int xi = sched_xfer_find(s, xfer);

	if (xi >= 0)
		s->xfers[xi].done = 1;
}

uint64_t sched_xfer_fresh(struct sched *s)
{
	return SCHED_XFER_FRESH | ++s->xfer_counter;
}

double sched_xfer_rate_at(const struct sched_xfer *x, double t)
{
	double g = 0.0;

	if (t < x->start || t >= x->end)
		return 0.0;
	for (int i = 0; i < x->n_steps && x->steps[i].from_s <= t; i++)
		g = x->steps[i].gbps;
	return g;
}

int sched_xfer_on_link(const struct sched_xfer *x, int host, int up)
{
	return !x->done && x->src != x->dst && (up ? x->src == host : x->dst == host);
}

double sched_xfer_link_rate(const struct sched *s, int host, int up, double t)
{
	double g = 0;

	for (int i = 0; i < s->n_xfers; i++)
		if (sched_xfer_on_link(&s->xfers[i], host, up))
			g += sched_xfer_rate_at(&s->xfers[i], t);
	return g;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int sched_xfer_link_breaks(const struct sched *s, int host, int up, double from_s, double **bp)
{
	int n = 0, cap = 0, k = 0;

	*bp = NULL;
	for (int i = 0; i < s->n_xfers; i++) {
		const struct sched_xfer *x = &s->xfers[i];
		if (!sched_xfer_on_link(x, host, up) || x->end <= from_s)
			continue;
		for (int j = 0; j <= x->n_steps; j++) {
			double t = j < x->n_steps ? x->steps[j].from_s : x->end;
			if (t <= from_s)
				continue;
			if (arr_grow((void **)bp, &cap, n + 1, sizeof(**bp))) {
				free(*bp);
				*bp = NULL;
				return -ENOMEM;
			}
			(*bp)[n++] = t;
		}
	}
	if (n > 1)
		qsort(*bp, (size_t)n, sizeof(**bp), cmp_double);
	for (int i = 0; i < n; i++)
		if (i == 0 || (*bp)[i] != (*bp)[k - 1])
			(*bp)[k++] = (*bp)[i];
	return k;
}

void sched_xfer_compact(struct sched *s, double now_plan)
{
	double keep = s->cfg.xfer_keep_s > 0 ? s->cfg.xfer_keep_s : SCHED_XFER_KEEP_S;
	int k = 0;

	for (int i = 0; i < s->n_xfers; i++) {
		struct sched_xfer *x = &s->xfers[i];
		if (x->end + keep < now_plan) {
			free(x->steps);
			continue;
		}
		s->xfers[k++] = *x;
	}
	if (k != s->n_xfers || !sched_index_usable(&s->xfer_ix)) {
		sched_index_clear(&s->xfer_ix);
		for (int i = 0; i < k; i++)
			sched_index_put(&s->xfer_ix, s->xfers[i].xfer, i);
	}
	s->n_xfers = k;
}

void sched_xfer_free(struct sched *s)
{
	for (int i = 0; i < s->n_xfers; i++)
		free(s->xfers[i].steps);
	free(s->xfers);
	sched_index_free(&s->xfer_ix);
	s->xfers = NULL;
	s->n_xfers = s->cap_xfers = 0;
}
