/* plangen.c - seeded random batches for the planner's tests and timing driver (paper §7.4). */
#include "plangen.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* xorshift64*: small, seedable, the same on every platform. */
static double unif(uint64_t *s, double lo, double hi)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return lo + (hi - lo) * (double)((x * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

/* A link capacity: whole Gbit/s in [1, 10], or with @fine to the Mbit/s. */
static double gbps(uint64_t *s, int fine)
{
	if (fine)
		return (double)(int64_t)(unif(s, 1.0, 10.0) * 1000.0) / 1000.0;
	return (double)(int)unif(s, 1.0, 11.0);
}

static int *host_list(int n, int first)
{
	int *v = calloc((size_t)n + 1, sizeof(*v));
	int i;

	if (v)
		for (i = 0; i < n; i++)
			v[i] = first + i;
	return v;
}

int plangen_batch(const struct plangen_opts *o, struct plan_batch *b)
{
	uint64_t s = 0x9E3779B97F4A7C15ULL ^ ((uint64_t)o->seed * 0xD1B54A32D192ED03ULL);
	int n_workers = o->n_updates / 2 < 2 ? 2 : o->n_updates / 2;
	int n_srv = o->n_servers < 1 ? 1 : o->n_servers;
	int i, j, first_srv = n_workers, rep = n_workers + n_srv;

	memset(b, 0, sizeof(*b));
	if (o->n_updates < 0 || o->n_changes < 0 || o->n_replica_only < 0 || o->n_aggregators > n_workers ||
	    o->n_replica_aggregators > n_workers || o->n_distributors > n_workers ||
	    n_srv > PLAN_NAME_MAX)
		return -EINVAL;
	b->mode = o->mode;
	b->n_hosts = n_workers + n_srv + (o->replica ? 1 : 0);
	b->hosts = calloc((size_t)b->n_hosts, sizeof(*b->hosts));
	b->n_servers = n_srv;
	b->servers = host_list(n_srv, first_srv);
	b->replica = o->replica ? rep : -1;
	/* Aggregators and distributors: the last workers (they also send their own updates). */
	b->n_aggregators = o->n_aggregators;
	b->aggregators = host_list(o->n_aggregators, n_workers - o->n_aggregators);
	b->n_replica_aggregators = o->n_replica_aggregators;
	b->replica_aggregators = host_list(o->n_replica_aggregators, 0);
	b->n_distributors = o->n_distributors;
	b->distributors = host_list(o->n_distributors, n_workers / 2);
	b->n_updates = o->n_updates + (o->replica ? o->n_replica_only : 0);
	b->updates = calloc((size_t)b->n_updates + 1, sizeof(*b->updates));
	b->n_changes = o->n_changes;
	b->changes = calloc((size_t)o->n_changes + 1, sizeof(*b->changes));
	b->n_pulls = o->n_pulls;
	b->pulls = calloc((size_t)o->n_pulls + 1, sizeof(*b->pulls));
	if (!b->hosts || !b->servers || !b->aggregators || !b->replica_aggregators ||
	    !b->distributors || !b->updates || !b->pulls || !b->changes) {
		plangen_free(b);
		return -ENOMEM;
	}
	for (i = 0; i < b->n_hosts; i++) {
		struct plan_host *h = &b->hosts[i];

		snprintf(h->name, sizeof(h->name), i < n_workers ? "w%d" : i < rep ? "ps%d" : "rep",
			 i < n_workers ? i : i - first_srv);
		h->up_gbps = i < n_workers ? gbps(&s, o->fine) : 10.0;
		h->down_gbps = i < n_workers ? gbps(&s, o->fine) : 10.0;
	}
	for (i = 0; i < o->n_changes; i++) {
		b->changes[i].host = (int)unif(&s, 0.0, (double)b->n_hosts);
		b->changes[i].dir = unif(&s, 0.0, 1.0) < 0.5 ? PLAN_UP : PLAN_DOWN;
		b->changes[i].at_s = unif(&s, 0.0, 0.5);
		b->changes[i].gbps = gbps(&s, 1);
	}
	b->replica_lag = o->replica ? o->n_replica_only : 0;
	b->tau_max = o->tau_max > 0 ? o->tau_max : o->n_updates;
	b->v_init = 1000000;
	b->momentum = 0.9;
	b->div_max = o->div_max;
	b->history_norm = 0.5;
	b->model_bytes = 32000000;
	for (i = 0; i < b->n_updates; i++) {
		struct plan_update *u = &b->updates[i];
		int64_t dl = 1 + (int64_t)unif(&s, 0.0, 2.0 * o->n_updates);
		uint64_t bytes = (uint64_t)unif(&s, 1e6, o->fine ? 20e6 : 64e6);

		snprintf(u->id, sizeof(u->id), "u%d", i);
		u->worker = i % n_workers;
		u->version = dl - b->tau_max + b->v_init;
		u->norm = unif(&s, 0.1, 1.0);
		if (o->fine)
			u->ready_s = unif(&s, 0.0, 0.01);
		else
			u->ready_s = unif(&s, 0.0, 1.0) < 0.25 ? unif(&s, 0.0, 0.05) : 0.0;
		u->bytes = bytes;
		u->replica_only = i >= o->n_updates;
		if (n_srv > 1) {
			u->n_shards = n_srv;
			u->shards = calloc((size_t)n_srv, sizeof(*u->shards));
			if (!u->shards) {
				plangen_free(b);
				return -ENOMEM;
			}
			for (j = 0; j < n_srv; j++) {
				u->shards[j].server = j;
				u->shards[j].bytes = bytes / (uint64_t)n_srv;
			}
		}
	}
	for (i = 0; i < o->n_pulls; i++) {
		snprintf(b->pulls[i].id, sizeof(b->pulls[i].id), "p%d", i);
		b->pulls[i].worker = i % n_workers;
		b->pulls[i].ready_s = 0.0;
	}
	return 0;
}

void plangen_free(struct plan_batch *b)
{
	int i;

	free(b->hosts);
	free(b->changes);
	free(b->servers);
	free(b->aggregators);
	free(b->replica_aggregators);
	free(b->distributors);
	if (b->updates)
		for (i = 0; i < b->n_updates; i++)
			free(b->updates[i].shards);
	free(b->updates);
	free(b->pulls);
	memset(b, 0, sizeof(*b));
}
