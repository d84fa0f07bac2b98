/* fifo.c - FIFO fair-share baseline: event-driven max-min fair sharing over time-varying links. */
#include "fifo.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/*
 * Event-driven fluid simulation. Between two events (a transfer starts or ends, a capacity
 * changes) every rate is constant and given by water-filling: repeatedly take the link whose
 * remaining capacity divided by its unfrozen transfers is smallest, give that share to each of
 * them, freeze them and subtract their rate from their other link.
 */

struct flow {
	int update;
	int link[2];        /* worker uplink, server downlink: index host * 2 + dir */
	double start_s;
	double left;        /* bytes still to send */
	double rate;        /* bytes/s in the current interval */
	int state;          /* 0 waiting, 1 active, 2 done */
	int frozen;
};

struct link_cap {
	double cap;         /* bytes/s now */
	double rem;         /* water-filling: capacity not yet handed out */
	int users;          /* water-filling: unfrozen active flows */
};

static double bps(double gbps)
{
	return gbps * 1e9 / 8.0;
}

/* Capacity (bytes/s) of link @l at time @t: initial value, then the last change at or before t. */
static double capacity_at(const struct plan_batch *b, int l, double t)
{
	int h = l / 2;
	enum plan_link_dir dir = (enum plan_link_dir)(l % 2);
	double cap = dir == PLAN_UP ? b->hosts[h].up_gbps : b->hosts[h].down_gbps, at = -INFINITY;

	for (int i = 0; i < b->n_changes; i++) {
		const struct plan_capacity_change *c = &b->changes[i];

		if (c->host == h && c->dir == dir && c->at_s <= t && c->at_s >= at) {
			at = c->at_s;
			cap = c->gbps;
		}
	}
	return bps(cap);
}

static void water_fill(struct flow *f, int nf, struct link_cap *lk, int nl)
{
	int left = 0;

	for (int l = 0; l < nl; l++) {
		lk[l].rem = lk[l].cap;
		lk[l].users = 0;
	}
	for (int i = 0; i < nf; i++) {
		f[i].rate = 0;
		f[i].frozen = f[i].state != 1;
		if (f[i].state == 1) {
			lk[f[i].link[0]].users++;
			lk[f[i].link[1]].users++;
			left++;
		}
	}
	while (left > 0) {
		int best = -1;
		double share = INFINITY;

		for (int l = 0; l < nl; l++)
			if (lk[l].users > 0 && lk[l].rem / lk[l].users < share) {
				share = lk[l].rem / lk[l].users;
				best = l;
			}
		if (share < 0)
			share = 0;
		for (int i = 0; i < nf; i++) {
			if (f[i].frozen || (f[i].link[0] != best && f[i].link[1] != best))
				continue;
			f[i].rate = share;
			f[i].frozen = 1;
			left--;
			for (int k = 0; k < 2; k++) {
				lk[f[i].link[k]].rem -= share;
				lk[f[i].link[k]].users--;
			}
		}
	}
}

/* Earliest capacity change strictly after @t, or INFINITY. */
static double next_change(const struct plan_batch *b, double t)
{
	double next = INFINITY;

	for (int i = 0; i < b->n_changes; i++)
		if (b->changes[i].at_s > t && b->changes[i].at_s < next)
			next = b->changes[i].at_s;
	return next;
}

static int run(const struct plan_batch *b, struct flow *f, int nf, struct fifo_result *r)
{
	int nl = b->n_hosts * 2, done = 0;
	struct link_cap *lk = calloc((size_t)nl, sizeof(*lk));
	double t = b->now_s;

	if (!lk)
		return -ENOMEM;
	while (done < nf) {
		double next = next_change(b, t);

		for (int i = 0; i < nf; i++) {
			if (f[i].state == 0 && f[i].start_s <= t)
				f[i].state = 1;
			if (f[i].state == 0 && f[i].start_s < next)
				next = f[i].start_s;
		}
		for (int l = 0; l < nl; l++)
			lk[l].cap = capacity_at(b, l, t);
		water_fill(f, nf, lk, nl);
		for (int i = 0; i < nf; i++)
			if (f[i].state == 1 && f[i].rate > 0 && t + f[i].left / f[i].rate < next)
				next = t + f[i].left / f[i].rate;
		if (next == INFINITY)
			break; /* the rest waits on links that stay at 0 Gbit/s */
		for (int i = 0; i < nf; i++) {
			double *c = &r->commit_s[f[i].update];

			if (f[i].state != 1)
				continue;
			f[i].left -= f[i].rate * (next - t);
			/* Finished up to rounding: less than a millionth of a byte per byte left. */
			if (f[i].left <= 1e-6 * (1 + f[i].rate * (next - t))) {
				f[i].state = 2;
				done++;
				if (isnan(*c) || *c < next)
					*c = next;
			}
		}
		t = next;
	}
	for (int i = 0; i < nf; i++)
		if (f[i].state != 2)
			r->commit_s[f[i].update] = INFINITY;
	free(lk);
	return 0;
}

static const struct fifo_result *sort_ctx;

static int by_commit(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	double cx = sort_ctx->commit_s[x], cy = sort_ctx->commit_s[y];

	if (cx != cy)
		return cx < cy ? -1 : 1;
	return x - y;
}

int fifo_simulate(const struct plan_batch *b, struct fifo_result *r)
{
	struct flow *f;
	int nf = 0, rc;
	double sum = 0;
	int64_t version;

	memset(r, 0, sizeof(*r));
	r->n_updates = b->n_updates;
	r->commit_s = calloc((size_t)b->n_updates + 1, sizeof(double));
	r->order = calloc((size_t)b->n_updates + 1, sizeof(int));
	f = calloc((size_t)b->n_updates * (size_t)(b->n_servers > 0 ? b->n_servers : 1) + 1,
		   sizeof(*f));
	if (!r->commit_s || !r->order || !f) {
		free(f);
		fifo_result_free(r);
		return -ENOMEM;
	}
	for (int u = 0; u < b->n_updates; u++) {
		const struct plan_update *up = &b->updates[u];
		int shards = up->n_shards > 0 ? up->n_shards : 1;

		r->commit_s[u] = NAN;
		if (up->replica_only)
			continue;
		for (int k = 0; k < shards; k++) {
			int srv = up->n_shards > 0 ? up->shards[k].server : 0;

			if (srv < 0 || srv >= b->n_servers || up->worker < 0 ||
			    up->worker >= b->n_hosts) {
				free(f);
				fifo_result_free(r);
				return -EINVAL;
			}
			f[nf] = (struct flow){
				.update = u,
				.link = { up->worker * 2 + PLAN_UP, b->servers[srv] * 2 + PLAN_DOWN },
				.start_s = up->ready_s > b->now_s ? up->ready_s : b->now_s,
				.left = (double)(up->n_shards > 0 ? up->shards[k].bytes : up->bytes),
			};
			nf++;
		}
		r->order[r->n_order++] = u;
	}
	rc = run(b, f, nf, r);
	free(f);
	if (rc) {
		fifo_result_free(r);
		return rc;
	}
	sort_ctx = r;
	qsort(r->order, (size_t)r->n_order, sizeof(int), by_commit);
	version = b->v_init;
	for (int i = 0; i < r->n_order; i++) {
		int u = r->order[i];

		sum += r->commit_s[u] - b->now_s;
		if (b->mode == PLAN_MLFABRIC_A && version - b->updates[u].version > b->tau_max)
			r->delay_violations++;
		version++;
	}
	r->mean_commit_s = r->n_order ? sum / r->n_order : 0;
	return 0;
}

void fifo_result_free(struct fifo_result *r)
{
	free(r->commit_s);
	free(r->order);
	memset(r, 0, sizeof(*r));
}
