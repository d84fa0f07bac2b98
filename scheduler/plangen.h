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
	int64_t tau_max;      /* 0: |U| */
	int n_changes;        /* random capacity steps on random links within [0, 0.5 s] */
	int n_replica_only;   /* carried replica copies (with a replica), added after |U| */
	int fine;             /* 1: capacities Uniform(1, 10) to 1 Mbit/s, sizes 1..20 MB,
			       * ready within 10 ms (the planner-io generator's shape) */
};

/**
 * plangen_batch - fill @b with a random batch: |U|/2 worker hosts (at least 2) with access
 * links of Uniform(1, 10) Gbit/s, servers and replica at 10 Gbit/s, a congestion-free core,
 * updates of Uniform(1, 64) MB round-robin over the workers, deadlines Uniform(1, 2|U|)
 * (tau_max = |U|, versions set so that eq. 9 gives the drawn deadline), norms Uniform(0.1, 1),
 * a quarter of the updates ready up to 50 ms late (see plangen_opts.fine for the other
 * shape). Deterministic for a seed.
 * Returns 0, -EINVAL for a nonsensical option, or -ENOMEM. Free with plangen_free().
 */
int plangen_batch(const struct plangen_opts *o, struct plan_batch *b);

/** plangen_free - release every array plangen_batch() allocated and zero @b. */
void plangen_free(struct plan_batch *b);

#endif
