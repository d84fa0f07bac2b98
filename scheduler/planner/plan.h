/* plan.h - the planning library's public interface: a batch in, a plan out (paper §5, §6, §10). */
#ifndef MLF_PLAN_H
#define MLF_PLAN_H

/*
 * The planning library is pure computation: no I/O, no clock, no allocation it does not free.
 * The offline planner (mlf-plan), the scheduler daemon and the tests fill a struct plan_batch
 * and call plan_compute(). The JSON documents that mirror these structs are specified in
 * docs/plan-format.md.
 *
 * Units everywhere: times in seconds (double, same origin as plan_batch.now_s), sizes in bytes
 * (uint64_t), rates in Gbit/s (double, 1 Gbit/s = 1e9 bit/s, so bytes/s = gbps * 1e9 / 8).
 * Hosts, updates, servers, ... are referred to by their index into the batch arrays.
 */

#include <stdint.h>

#define PLAN_NAME_MAX 64 /* longest host / update id, including the NUL */

/** Planning mode: MLfabric-A (§5) or MLfabric-S (§6); a batch document's `mode` "mlfabric-a" or
 * "mlfabric-s" (docs/plan-format.md). */
enum plan_mode {
	PLAN_MLFABRIC_A = 0, /* ordering, delay bound, dropping, aggregation, replication */
	PLAN_MLFABRIC_S = 1, /* one iteration's updates, no ordering or dropping; aggregation,
			      * replication */
};

/** Direction of a host's link to the (non-blocking) core switch. */
enum plan_link_dir {
	PLAN_UP = 0,   /* host -> switch, named "<host>.up" */
	PLAN_DOWN = 1, /* switch -> host, named "<host>.down" */
};

/** A host with its access-link capacities at now_s (Gbit/s). */
struct plan_host {
	char name[PLAN_NAME_MAX];
	double up_gbps;
	double down_gbps;
};

/** A step change of one link's capacity: from at_s on, the link carries gbps (Gbit/s). */
struct plan_capacity_change {
	int host;               /* index into plan_batch.hosts */
	enum plan_link_dir dir;
	double at_s;
	double gbps;
};

/** One shard of an update to a sharded model (§10.2): bytes for one server. */
struct plan_shard {
	int server; /* index into plan_batch.servers (not a host index) */
	uint64_t bytes;
};

/** A worker update ready to be sent (one entry of the batch U). */
struct plan_update {
	char id[PLAN_NAME_MAX];
	int worker;       /* host index of the worker that computed it */
	uint64_t bytes;   /* size when the model is not sharded (n_shards == 0) */
	int64_t version;  /* v(g): model version the update was computed from */
	double norm;      /* ||g||_2 as reported by the worker; used only for divergence (eq. 11) */
	double ready_s;   /* when its bytes are available at the worker */
	int n_shards;     /* 0 for a single server; else one shard per server */
	struct plan_shard *shards;
	int replica_only; /* 1: a punted replica copy carried from an earlier batch (already
			   * committed at the server, still owed to the replica; JSON
			   * "replica_only": true); never in order/dropped, only replicated */
	int inflight;     /* replica_only only: 1 when its replica copy is already under way
			   * (planned by an earlier batch to commit after that batch's last server
			   * commit, §5.3 lazy replication); it is not sent again, and the replica
			   * holds it from inflight_s on (JSON "inflight_s") */
	double inflight_s; /* when that copy commits at the replica (batch time base; <= now_s
			    * when it already has) */
};

/** A pull request to be answered through a distribution tree (§10.3). */
struct plan_pull {
	char id[PLAN_NAME_MAX];
	int worker;     /* host index that asked for the model */
	double ready_s; /* when the request reached the scheduler (a shard server's snapshot: when
			 * the updates ordered before it are planned to have arrived) */
	int server;     /* sharded model (§10.2): the shard, an index into plan_batch.servers, whose
			 * copy this pull entry answers (0 otherwise) */
	uint64_t bytes; /* bytes of that copy (0 = plan_batch.model_bytes) */
};

/**
 * The batch: the network, the roles, the parameters and the updates to plan.
 * Arrays are owned by whoever filled the batch (plan_batch_free() frees what planio allocated).
 */
struct plan_batch {
	enum plan_mode mode;
	double now_s;

	int n_hosts;
	struct plan_host *hosts;
	int n_changes;
	struct plan_capacity_change *changes;

	int n_servers;          /* >= 1; > 1 means a sharded model (§10.2) */
	int *servers;           /* host indexes */
	int replica;            /* host index, or -1 when nothing is replicated */
	int n_aggregators;      /* k of Alg. 3 */
	int *aggregators;       /* host indexes */
	int n_replica_aggregators; /* k' of §5.3 */
	int *replica_aggregators;

	int64_t tau_max;        /* delay bound */
	int64_t v_init;         /* server version after all previous batches (eq. 9) */
	double momentum;        /* gamma of eq. 2 */
	double div_max;         /* divergence bound ||w_s - w_r||_2 (only with a replica) */
	double history_norm;    /* ||h0||_2, the update history at batch start (eq. 7) */
	int64_t replica_lag;    /* updates the replica still misses at batch start (carried) */

	int n_updates;
	struct plan_update *updates;

	uint64_t model_bytes;   /* size of the model, for pulls (§10.3); 0 when no pulls */
	int n_pulls;
	struct plan_pull *pulls;
	int n_distributors;     /* k° of §10.3 */
	int *distributors;      /* host indexes */
};

/** What a transfer carries. */
enum plan_carry_kind {
	PLAN_CARRY_UPDATE = 0,    /* plan_transfer.carries indexes plan_batch.updates */
	PLAN_CARRY_AGGREGATE = 1, /* indexes plan.aggregates */
	PLAN_CARRY_MODEL = 2,     /* a model copy answering pulls (§10.3); carries indexes pulls */
};

/** Where a transfer's bytes go. */
enum plan_purpose {
	PLAN_PURPOSE_SERVER = 0,  /* towards a server (directly or through an aggregator) */
	PLAN_PURPOSE_REPLICA = 1, /* towards the replica (§5.3) */
	PLAN_PURPOSE_MODEL = 2,   /* model distribution to workers (§10.3) */
};

/** One step of a piecewise-constant rate: gbps from from_s until the next step or end_s. */
struct plan_rate_step {
	double from_s;
	double gbps;
};

/** A reserved transfer: src sends bytes to dst following rate[] over [start_s, end_s]. */
struct plan_transfer {
	enum plan_carry_kind kind;
	int carries;            /* index, see enum plan_carry_kind */
	int shard;              /* shard index for sharded updates, else -1 */
	int src, dst;           /* host indexes */
	uint64_t bytes;
	enum plan_purpose purpose;
	double start_s, end_s;
	int n_rate;
	struct plan_rate_step *rate; /* integral over [start_s, end_s] == bytes */
};

/** An aggregate formed at an aggregator host from consecutive updates of the order. */
struct plan_aggregate {
	int host;               /* aggregator host index */
	int target;             /* host index of the server or replica it is sent to */
	enum plan_purpose purpose; /* SERVER or REPLICA */
	int n_inputs;
	int *inputs;            /* update indexes, in commit order */
};

/** A commit: an update or aggregate applied at a server or replica. */
struct plan_commit {
	int host;
	enum plan_carry_kind kind; /* UPDATE or AGGREGATE */
	int carries;
	double at_s;
	int64_t version;        /* version after applying it (an aggregate of m adds m) */
};

#define PLAN_ERROR_MAX 240 /* bytes of struct plan.error, NUL included */

/* Ranges of a batch's numbers, the same for the daemon (which refuses them in control messages,
 * docs/control.md "Limits") and mlf-plan (plan_compute refuses a batch outside them, naming the
 * field): far beyond any real value, small enough that deadlines (version + tau_max) and rate
 * integrals (bytes * 8) cannot overflow. */
#define PLAN_MAX_BYTES (1ull << 40)  /* an update, a shard or the model: 1 TiB */
#define PLAN_MAX_VERSION (1ll << 53) /* a model version (exact as a double) */
#define PLAN_MAX_TAU (1ll << 31)     /* the delay bound, in versions */

/* Batches whose now_s is at least this (seconds, 2^20: 12 days) are planned relative to its whole second
 * (struct plan.origin_s): below it a double resolves 2.3e-10 s, fine for byte-exact integrals. */
#define PLAN_ORIGIN_MIN_S 1048576.0

/** The plan for one batch. Every array is owned by the plan (plan_free()). */
struct plan {
	int n_order;
	int *order;             /* update indexes, server commit order (not dropped) */
	int n_dropped;
	int *dropped;           /* update indexes dropped at the worker (§5.1.3) */
	int n_aggregates;
	struct plan_aggregate *aggregates;
	int n_transfers;
	struct plan_transfer *transfers;
	int n_commits;
	struct plan_commit *commits;          /* server commits in time order */
	int n_replica_commits;
	struct plan_commit *replica_commits;  /* replica commits, a prefix of order */
	int n_punted;
	int *punted;            /* update indexes whose replica copy waits for the next batch */
	int n_inflight;
	int *inflight;          /* update indexes whose replica copy is under way but commits
				 * after the batch's last server commit (T_last), in replica
				 * commit order: the in-flight inputs still late, then this plan's
				 * late replica commits (§5.3 lazy replication); the next batch
				 * carries them with inflight_s */
	double *inflight_s;     /* their replica commit times (plan times, origin_s) */
	int n_unanswered;
	int *unanswered;        /* pull indexes no model copy can reach: the worker's downlink (or
				 * the pull's server's uplink) goes to 0 Gbit/s for good before
				 * the copy's bytes get through (§10.3); ascending. The caller
				 * keeps them for a later batch */
	double origin_s;        /* every time of this plan (transfers, rate steps, commits) is
				 * seconds after origin_s, in the batch's time base: 0 when the
				 * batch's times are below PLAN_ORIGIN_MIN_S, else floor(now_s), so
				 * epoch-sized times keep rate integrals byte-exact (a double at
				 * 1.7e9 s resolves only 2.4e-7 s) */
	double divergence_bound; /* estimate of ||w_s - w_r||_2 at the last server commit (eq. 11) */
	double plan_ms;         /* filled by the caller that timed plan_compute() */
	char error[PLAN_ERROR_MAX]; /* when plan_compute fails: one line naming the field or the
				     * condition (e.g. "now_s: ..."), for mlf-plan and the daemon */
};

/** Implementation choice, so benchmarks can compare the optimised planner with the plain one. */
enum plan_impl {
	PLAN_IMPL_FAST = 0,     /* default */
	PLAN_IMPL_SIMPLE = 1,   /* straightforward reference implementation; identical plans */
};

/**
 * plan_compute - plan one batch: order (Alg. 2), aggregate (Alg. 3), replicate (§5.3), or
 * the sync (§6), sharded (§10.2) and model distribution (§10.3) variants.
 * @batch: the input; not modified. Must be valid (planio validates documents).
 * @impl:  PLAN_IMPL_FAST or PLAN_IMPL_SIMPLE; both return identical plans.
 * @out:   zeroed by the call, then filled; free with plan_free().
 * Returns 0, -EINVAL when the batch is inconsistent (e.g. an index out of range, no server,
 * a negative capacity, a replica_only update without a replica, a sharded model whose updates
 * do not all have the same shard layout, pulls without model_bytes) or when the divergence
 * bound needs replica copies that can never arrive (a zero-capacity path to the replica),
 * or -ENOMEM. On error @out is left zeroed.
 * Conventions (docs/planner.md): the replica misses exactly the batch's replica_only updates
 * (replica_lag of them, their versions count from v_init - replica_lag), and history_norm is
 * the history at the last state common to server and replica (plan_carry_next() keeps both).
 */
int plan_compute(const struct plan_batch *batch, enum plan_impl impl, struct plan *out);

/**
 * plan_to_batch_time - add @plan->origin_s to every time of @plan and set it to 0, for callers
 * that want times in the batch's time base and can live with the rounding (at 1.7e9 s a
 * double resolves 2.4e-7 s, so a rate integral may then be off by rate x 2.4e-7 s).
 */
void plan_to_batch_time(struct plan *plan);

/** plan_free - release every array of @plan and zero it. Safe on a zeroed plan. */
void plan_free(struct plan *plan);

/**
 * plan_equal - 1 when @a and @b hold the same plan (every array element and every time equal
 * bit for bit, plan_ms ignored), else 0. Used to check that FAST and SIMPLE agree.
 */
int plan_equal(const struct plan *a, const struct plan *b);

/**
 * What the next batch inherits from a plan (§5.3): the scheduler daemon copies these fields
 * into its next struct plan_batch.
 */
struct plan_carry {
	int n_carried;
	int *carried;           /* update indexes (of the planned batch) the replica misses after
				 * the batch: first the in-flight ones (plan.inflight), then the
				 * punted ones; send them again with replica_only = 1 */
	double *carried_s;      /* per carried copy: its replica commit time (batch time base)
				 * when in flight (-> inflight = 1, inflight_s), -1 when punted */
	int64_t replica_lag;    /* updates the replica misses after this batch (= n_carried,
				 * in-flight copies included until they commit) */
	double history_norm;    /* bound on ||h|| at the last state common to server and replica
				 * (the replica's state after this batch), for eq. 7 / 11 */
	int64_t v_init;         /* server version after this batch's commits */
};

/**
 * plan_carry_next - from @batch and the @plan computed for it, the fields of the next batch.
 * The history bound follows the momentum recursion with the triangle inequality:
 * ||h_p|| <= gamma^p ||h0|| + sum gamma^(p-l) ||u_l|| over the updates the replica applied
 * (the carried copies first, then the order). Without a replica, over everything committed.
 * Note: in this planner, batch.history_norm always means the history at the state common to
 * server and replica, and the replica misses exactly the batch's replica_only updates.
 * Returns 0 or -ENOMEM; free @out with plan_carry_free().
 */
int plan_carry_next(const struct plan_batch *batch, const struct plan *plan,
		    struct plan_carry *out);

/** plan_carry_free - release @carry's array and zero it. */
void plan_carry_free(struct plan_carry *carry);

#endif
