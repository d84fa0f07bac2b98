/* gen_batch.h - seeded random batch generator: the paper's §7.4 scheduler workload and variants. */
#ifndef MLF_GEN_BATCH_H
#define MLF_GEN_BATCH_H

#include <stdint.h>

#include "plan.h"

/** Which kind of batch to generate. */
enum gen_variant {
	GEN_ASYNC = 0,   /* MLfabric-A: deadlines Uniform(1, 2|U|), |U|/2 worker hosts (§7.4) */
	GEN_SYNC = 1,    /* MLfabric-S: one update per worker, all from version v_init (§6) */
	GEN_SHARDED = 2, /* async, model sharded over 3 servers ps0..ps2 (§10.2) */
	GEN_PULLS = 3,   /* async plus model pulls answered through distributors (§10.3) */
};

/**
 * Generator parameters. Hosts: workers w0.., server "ps" (or ps0..ps2), replica "rep". Every
 * random draw comes from one seeded generator, so equal parameters give equal batches.
 */
struct gen_params {
	int n_updates;            /* |U| (updates of this batch, not counting replica-only copies) */
	enum gen_variant variant;
	int n_aggregators;        /* k, taken from the workers */
	int with_replica;         /* 1: replica "rep" with n_replica_aggregators workers */
	int n_replica_aggregators;
	int n_replica_only;       /* carried replica-only copies (only with a replica) */
	int n_capacity_changes;   /* random capacity steps on random links within [0, 0.5 s] */
	double min_gbps, max_gbps;   /* link capacities Uniform(min, max), Gbit/s */
	uint64_t min_bytes, max_bytes; /* update sizes Uniform(min, max), bytes */
	double max_ready_s;       /* ready_s Uniform(0, max_ready_s), seconds */
	int64_t tau_max, v_init;
	uint64_t seed;
};

/**
 * gen_params_default - the §7.4 workload for @n_updates updates: async, 4 aggregators (fewer on
 * small batches), a replica with 2 replica aggregators, 3 capacity changes, 1..10 Gbit/s links,
 * 1..20 MB updates ready within 10 ms, tau_max 30, v_init 1000.
 */
void gen_params_default(struct gen_params *p, int n_updates, uint64_t seed);

/**
 * gen_batch - fill @out with a random batch; release with planio_batch_free().
 * Deadlines dl ~ Uniform(1, 2|U|) give version = dl - tau_max + v_init (eq. 9).
 * Aggregators, replica aggregators and distributors are distinct workers; with too few workers
 * their numbers are reduced. Returns 0, -EINVAL for inconsistent parameters (n_updates < 1,
 * min > max, a negative count), or -ENOMEM.
 */
int gen_batch(const struct gen_params *p, struct plan_batch *out);

#endif
