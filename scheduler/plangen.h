/* plangen.h - seeded random batches shaped like the paper's scheduler benchmark (§7.4). */
#ifndef MLF_PLANGEN_H
#define MLF_PLANGEN_H

#include "plan.h"

/** What to generate. */
struct plangen_opts {
	int n_updates;        /* |U| */
	int n_aggregators;    /* k (taken from the worker hosts) */
	int n_replica_aggregators; /* k' (worker hosts too) */
	int replica;          /* 1: add a replica host */
	int n_servers;        /* > 1: sharded model, one shard per server */
	int n_pulls;          /* pulls answered through distribution trees */
	int n_distributors;
	enum plan_mode mode;
	double div_max;       /* with a replica */
	unsigned seed;
};

/**
 * plangen_batch - fill @b with a random batch: |U|/2 worker hosts (at least 2) with access
 * links of Uniform(1, 10) Gbit/s, servers and replica at 10 Gbit/s, a congestion-free core,
 * updates of Uniform(1, 64) MB round-robin over the workers, deadlines Uniform(1, 2|U|)
 * (tau_max = |U|, versions set so that eq. 9 gives the drawn deadline), norms Uniform(0.1, 1),
 * a quarter of the updates ready up to 50 ms late. Deterministic for a seed.
 * Returns 0, -EINVAL for a nonsensical option, or -ENOMEM. Free with plangen_free().
 */
int plangen_batch(const struct plangen_opts *o, struct plan_batch *b);

/** plangen_free - release every array plangen_batch() allocated and zero @b. */
void plangen_free(struct plan_batch *b);

#endif
