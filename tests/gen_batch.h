/* gen_batch.h - seeded random batch generator: the paper's §7.4 scheduler workload and variants. */
#ifndef MLF_GEN_BATCH_H
#define MLF_GEN_BATCH_H

#include <stdint.h>

#include "plan.h"

/** Most servers a generated batch shards its model over (the planner's leg limit). */
#define GEN_MAX_SERVERS 64

/** Named batch kinds, applied to parameters by gen_params_variant(). */
enum gen_variant {
	GEN_ASYNC = 0,   /* MLfabric-A: deadlines Uniform(1, 2|U|), |U|/2 worker hosts (§7.4) */
	GEN_SYNC = 1,    /* MLfabric-S: one update per worker, all from version v_init (§6) */
	GEN_SHARDED = 2, /* async, model sharded over 3 servers ps0..ps2 (§10.2) */
	GEN_PULLS = 3,   /* async plus |U|/4 + 1 model pulls through 2 distributors (§10.3) */
	GEN_SHARDED_PULLS = 4, /* sharded over 3 servers, |U|/4 + 1 pulls of one entry per shard
				* (pull.server, pull.bytes), answered directly (§10.2) */
};

/**
 * Generator parameters. Hosts: workers w0.., server "ps" (or ps0.. when sharded), replica
 * "rep". Every random draw comes from one seeded generator, so equal parameters give equal
 * batches. Units: Gbit/s, bytes, seconds.
 */
struct gen_params {
	int n_updates;            /* |U| (updates of this batch, not counting replica-only copies) */
	enum plan_mode mode;      /* PLAN_MLFABRIC_S: one worker per update, every version v_init */
	int n_servers;            /* >= 1; > 1: model sharded over ps0.. (§10.2) */
	int n_aggregators;        /* k, taken from the workers */
	int with_replica;         /* 1: replica "rep" with n_replica_aggregators workers */
	int n_replica_aggregators;
	int n_replica_only;       /* carried replica-only copies (only with a replica) */
	int n_capacity_changes;   /* random capacity steps on random links within [0, 0.5 s] */
	int n_pulls;              /* model pulls answered through distribution trees (§10.3) */
	int n_distributors;       /* k° of §10.3, taken from the workers */
	double div_max;           /* with a replica; < 0: drawn (0 one time in 5, else 0.5..5) */
	double min_gbps, max_gbps;   /* worker link capacities Uniform(min, max), Gbit/s */
	double gbps_step;         /* capacities are rounded to this (0.001: the Mbit/s) */
	double server_gbps;       /* > 0: servers and replica links; 0: Uniform(max/2, max) */
	uint64_t min_bytes, max_bytes; /* update sizes Uniform(min, max), bytes */
	double late_fraction;     /* fraction of the updates not ready at now_s (0..1) */
	double max_ready_s;       /* those have ready_s Uniform(0, max_ready_s), seconds */
	int64_t tau_max, v_init;
	uint64_t seed;
};

/**
 * gen_params_default - the "fine" §7.4 workload for @n_updates updates: async, one server,
 * 4 aggregators (fewer on small batches), a replica with 2 replica aggregators and a drawn
 * div_max, 3 capacity changes, 1..10 Gbit/s links to the Mbit/s (servers 5..10), 1..20 MB
 * updates all ready within 10 ms, tau_max 30, v_init 1000.
 */
void gen_params_default(struct gen_params *p, int n_updates, uint64_t seed);

/**
 * gen_params_paper - the §7.4 workload as the paper states it: like gen_params_default but
 * whole 1..10 Gbit/s worker links, servers and replica at 10 Gbit/s, 1..64 MB updates of
 * which a quarter is ready up to 50 ms late, tau_max = |U| (deadlines span 1..2|U|), no
 * capacity changes, div_max 2.
 */
void gen_params_paper(struct gen_params *p, int n_updates, uint64_t seed);

/**
 * gen_params_variant - turn @p (filled by gen_params_default or gen_params_paper) into batch
 * kind @v (mode, servers, pulls and distributors; see enum gen_variant).
 */
void gen_params_variant(struct gen_params *p, enum gen_variant v);

/**
 * gen_batch - fill @out with a random batch; release with planio_batch_free().
 * Deadlines dl ~ Uniform(1, 2|U|) give version = dl - tau_max + v_init (eq. 9).
 * Aggregators, replica aggregators and distributors are distinct workers; with too few workers
 * their numbers are reduced. Returns 0, -EINVAL for inconsistent parameters (n_updates < 1,
 * min > max, a capacity <= 0, a negative count, n_servers outside 1..GEN_MAX_SERVERS), or
 * -ENOMEM.
 */
int gen_batch(const struct gen_params *p, struct plan_batch *out);

#endif
