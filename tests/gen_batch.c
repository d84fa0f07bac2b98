/* gen_batch.c - seeded random batch generator (paper §7.4 workload, sync/sharded/pull variants). */
#include "gen_batch.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planio.h"

/* splitmix64: tiny, fast, and good enough to draw test workloads reproducibly. */
static uint64_t next_u64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform double in [lo, hi), rounded to a multiple of @quantum so it prints exactly. */
static double uniform(uint64_t *s, double lo, double hi, double quantum)
{
	double x = lo + (hi - lo) * ((next_u64(s) >> 11) * 0x1.0p-53);

	return round(x / quantum) * quantum;
}

/* Uniform integer in [lo, hi]. */
static int64_t uniform_int(uint64_t *s, int64_t lo, int64_t hi)
{
	return lo + (int64_t)(next_u64(s) % (uint64_t)(hi - lo + 1));
}

void gen_params_default(struct gen_params *p, int n_updates, uint64_t seed)
{
	int workers = n_updates / 2 > 2 ? n_updates / 2 : 2;

	memset(p, 0, sizeof(*p));
	p->n_updates = n_updates;
	p->mode = PLAN_MLFABRIC_A;
	p->n_servers = 1;
	p->n_aggregators = workers / 2 < 4 ? workers / 2 : 4;
	p->with_replica = 1;
	p->n_replica_aggregators = workers - p->n_aggregators < 2 ? workers - p->n_aggregators : 2;
	p->n_capacity_changes = 3;
	p->div_max = -1.0;
	p->min_gbps = 1.0;
	p->max_gbps = 10.0;
	p->gbps_step = 0.001;
	p->min_bytes = 1000000;
	p->max_bytes = 20000000;
	p->late_fraction = 1.0;
	p->max_ready_s = 0.01;
	p->tau_max = 30;
	p->v_init = 1000;
	p->seed = seed;
}

void gen_params_paper(struct gen_params *p, int n_updates, uint64_t seed)
{
	gen_params_default(p, n_updates, seed);
	p->n_capacity_changes = 0;
	p->div_max = 2.0;
	p->gbps_step = 1.0;
	p->server_gbps = 10.0;
	p->max_bytes = 64000000;
	p->late_fraction = 0.25;
	p->max_ready_s = 0.05;
	p->tau_max = n_updates;
}

void gen_params_variant(struct gen_params *p, enum gen_variant v)
{
	int workers = p->n_updates / 2 > 2 ? p->n_updates / 2 : 2;

	p->mode = v == GEN_SYNC ? PLAN_MLFABRIC_S : PLAN_MLFABRIC_A;
	p->n_servers = v == GEN_SHARDED || v == GEN_SHARDED_PULLS ? 3 : 1;
	p->n_pulls = v == GEN_PULLS || v == GEN_SHARDED_PULLS ? workers / 2 + 1 : 0;
	p->n_distributors = v == GEN_PULLS ? 2 : 0;
}

/* A link capacity: Uniform(lo, hi) rounded to @p's gbps_step, at least one step. */
static double capacity(uint64_t *s, const struct gen_params *p, double lo, double hi)
{
	double g = uniform(s, lo, hi, p->gbps_step);

	return g < p->gbps_step ? p->gbps_step : g;
}

/* A server or replica link: server_gbps, or Uniform(max/2, max). */
static double server_capacity(uint64_t *s, const struct gen_params *p)
{
	return p->server_gbps > 0 ? p->server_gbps : capacity(s, p, p->max_gbps / 2, p->max_gbps);
}

static int add_host(struct plan_batch *b, const char *name, double up, double down)
{
	struct plan_host *h = &b->hosts[b->n_hosts];

	snprintf(h->name, sizeof(h->name), "%s", name);
	h->up_gbps = up;
	h->down_gbps = down;
	return b->n_hosts++;
}

static int *pick(const int *perm, int *next, int n)
{
	int *a = calloc((size_t)(n > 0 ? n : 1), sizeof(int));

	for (int i = 0; a && i < n; i++)
		a[i] = perm[(*next)++];
	return a;
}

int gen_batch(const struct gen_params *p, struct plan_batch *b)
{
	uint64_t s = p->seed * 0x2545f4914f6cdd1dull + 1;
	int n = p->n_updates, sync = p->mode == PLAN_MLFABRIC_S;
	int workers = sync ? n : (n / 2 > 2 ? n / 2 : 2);
	int n_servers = p->n_servers;
	int replica = p->with_replica;
	int n_ro = replica ? p->n_replica_only : 0;
	int total = n + n_ro, next = 0, *perm, n_agg, n_ragg;
	char name[PLAN_NAME_MAX];

	memset(b, 0, sizeof(*b));
	if (n < 1 || p->min_gbps > p->max_gbps || p->min_gbps <= 0 || !(p->gbps_step > 0) ||
	    p->server_gbps < 0 || p->min_bytes > p->max_bytes || p->min_bytes == 0 ||
	    p->n_aggregators < 0 || p->n_replica_aggregators < 0 || p->n_replica_only < 0 ||
	    p->n_capacity_changes < 0 || p->n_pulls < 0 || p->n_distributors < 0 ||
	    n_servers < 1 || n_servers > GEN_MAX_SERVERS)
		return -EINVAL;
	/* Roles are distinct workers: fewer when the batch has few workers (e.g. small sync). */
	n_agg = p->n_aggregators < workers ? p->n_aggregators : workers;
	n_ragg = p->n_replica_aggregators < workers - n_agg ? p->n_replica_aggregators
							    : workers - n_agg;
	b->mode = sync ? PLAN_MLFABRIC_S : PLAN_MLFABRIC_A;
	b->hosts = calloc((size_t)(workers + n_servers + 1), sizeof(*b->hosts));
	b->servers = calloc((size_t)n_servers, sizeof(int));
	b->updates = calloc((size_t)total, sizeof(*b->updates));
	b->changes = calloc((size_t)(p->n_capacity_changes + 1), sizeof(*b->changes));
	perm = calloc((size_t)workers, sizeof(int));
	if (!b->hosts || !b->servers || !b->updates || !b->changes || !perm)
		goto nomem;

	for (int w = 0; w < workers; w++) {
		snprintf(name, sizeof(name), "w%d", w);
		add_host(b, name, capacity(&s, p, p->min_gbps, p->max_gbps),
			 capacity(&s, p, p->min_gbps, p->max_gbps));
	}
	for (int i = 0; i < n_servers; i++) {
		if (n_servers == 1)
			snprintf(name, sizeof(name), "ps");
		else
			snprintf(name, sizeof(name), "ps%d", i);
		b->servers[i] = add_host(b, name, server_capacity(&s, p), server_capacity(&s, p));
	}
	b->n_servers = n_servers;
	b->replica = -1;
	if (replica)
		b->replica = add_host(b, "rep", server_capacity(&s, p), server_capacity(&s, p));

	/* Roles on distinct workers drawn by a seeded shuffle. */
	for (int w = 0; w < workers; w++)
		perm[w] = w;
	for (int w = workers - 1; w > 0; w--) {
		int j = (int)uniform_int(&s, 0, w), t = perm[w];

		perm[w] = perm[j];
		perm[j] = t;
	}
	b->n_aggregators = n_agg;
	b->aggregators = pick(perm, &next, b->n_aggregators);
	if (replica) {
		b->n_replica_aggregators = n_ragg;
		b->replica_aggregators = pick(perm, &next, b->n_replica_aggregators);
	}
	if (!b->aggregators || (replica && !b->replica_aggregators))
		goto nomem;

	for (int i = 0; i < p->n_capacity_changes; i++) {
		struct plan_capacity_change *c = &b->changes[b->n_changes++];

		c->host = (int)uniform_int(&s, 0, b->n_hosts - 1);
		c->dir = (enum plan_link_dir)uniform_int(&s, 0, 1);
		c->at_s = uniform(&s, 0.0, 0.5, 1e-6);
		c->gbps = capacity(&s, p, p->min_gbps, p->max_gbps);
	}

	b->tau_max = p->tau_max;
	b->v_init = p->v_init;
	b->momentum = 0.9;
	if (replica) {
		/* Sometimes tight (0 = replica must keep up), usually loose enough to punt. */
		if (p->div_max >= 0)
			b->div_max = p->div_max;
		else
			b->div_max = uniform_int(&s, 0, 4) == 0 ? 0.0 : uniform(&s, 0.5, 5.0, 0.001);
		b->history_norm = uniform(&s, 0.0, 1.0, 0.001);
		b->replica_lag = n_ro;
	}
	for (int i = 0; i < total; i++) {
		struct plan_update *u = &b->updates[i];
		int64_t dl = uniform_int(&s, 1, 2 * (int64_t)n);

		snprintf(u->id, sizeof(u->id), "%s%d", i < n ? "u" : "r", i < n ? i : i - n);
		u->worker = i % workers;
		u->version = sync ? p->v_init : dl - p->tau_max + p->v_init;
		u->norm = uniform(&s, 0.01, 1.0, 0.001);
		if (p->late_fraction >= 1.0 || uniform(&s, 0.0, 1.0, 1e-9) < p->late_fraction)
			u->ready_s = uniform(&s, 0.0, p->max_ready_s, 1e-6);
		u->replica_only = i >= n;
		if (n_servers == 1) {
			u->bytes = (uint64_t)uniform_int(&s, (int64_t)p->min_bytes,
							 (int64_t)p->max_bytes);
		} else {
			u->shards = calloc((size_t)n_servers, sizeof(*u->shards));
			if (!u->shards)
				goto nomem;
			u->n_shards = n_servers;
			for (int k = 0; k < n_servers; k++) {
				u->shards[k].server = k;
				u->shards[k].bytes = (uint64_t)uniform_int(&s,
					(int64_t)p->min_bytes, (int64_t)p->max_bytes) / n_servers + 1;
				u->bytes += u->shards[k].bytes;
			}
		}
		b->n_updates = i + 1;
	}

	if (p->n_pulls > 0) {
		/* A sharded model: one pull entry per shard, each that shard's copy (§10.2). */
		int per = n_servers > 1 ? n_servers : 1, np = p->n_pulls * per;

		b->model_bytes = (uint64_t)uniform_int(&s, (int64_t)p->min_bytes,
						       (int64_t)p->max_bytes);
		b->pulls = calloc((size_t)np, sizeof(*b->pulls));
		b->n_distributors = workers - next < p->n_distributors ? workers - next
								       : p->n_distributors;
		if (n_servers > 1)
			b->n_distributors = 0; /* trees are not planned for a sharded model */
		b->distributors = pick(perm, &next, b->n_distributors);
		if (!b->pulls || !b->distributors)
			goto nomem;
		for (int i = 0; i < np; i++) {
			snprintf(b->pulls[i].id, sizeof(b->pulls[i].id), "p%d", i);
			b->pulls[i].worker = (i / per) % workers;
			b->pulls[i].ready_s = uniform(&s, 0.0, p->max_ready_s, 1e-6);
			if (per > 1) {
				b->pulls[i].server = i % per;
				b->pulls[i].bytes = b->model_bytes / (uint64_t)per + 1;
			}
		}
		b->n_pulls = np;
	}
	free(perm);
	return 0;
nomem:
	free(perm);
	planio_batch_free(b);
	return -ENOMEM;
}
