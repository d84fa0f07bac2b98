/* planwork.h - shared state of one plan_compute() call: the batch, the growing plan, jobs. */
#ifndef MLF_PLANWORK_H
#define MLF_PLANWORK_H

#include <stdint.h>

#include "netstate.h"
#include "plan.h"
#include "arr.h"

/*
 * A "job" is everything one update, aggregate or model copy sends at once: one leg per shard
 * (§10.2; a single leg when the model is not sharded). All legs of a job start together and
 * are reserved one after the other, so legs sharing a link never overbook it; the job's t_en
 * is the latest leg end (eq. 18).
 */

/** Most shards per update this planner handles (one per parameter server). */
#define PLANWORK_MAX_LEGS 64

/** The legs of one job: bytes[j] for leg j (0: no leg), sent towards dst or the shard server. */
struct planwork_job {
	int src;                         /* host index */
	int dst;                         /* host index, or -1: leg j goes to its shard's server */
	double t0_s;                     /* earliest start (seconds) */
	uint64_t bytes[PLANWORK_MAX_LEGS];
};

/** What a recorded job's transfers carry. */
struct planwork_tag {
	enum plan_carry_kind kind;
	int carries;
	enum plan_purpose purpose;
};

/** Working state of one plan_compute() call. */
struct planwork {
	const struct plan_batch *b;
	enum plan_impl impl;
	struct plan *out;
	int n_legs;                      /* legs per job: 1, or the shards per update */
	int leg_server[PLANWORK_MAX_LEGS]; /* server index (into b->servers) of leg j */
	int cap_order, cap_dropped, cap_aggregates, cap_transfers;
	int cap_commits, cap_replica_commits, cap_punted;
	struct netstate_profile prof;    /* scratch profile */
	double *max_down_gbps;           /* per host: the largest capacity its downlink ever has */
	char error[PLAN_ERROR_MAX];      /* why the plan failed (one line), copied to plan.error */
};

/**
 * planwork_update_job - fill @job with update @u's legs (bytes per shard, or its bytes),
 * sent from its worker to @dst (-1: to the shard servers), starting no earlier than ready_s.
 */
void planwork_update_job(const struct planwork *pw, int u, int dst, struct planwork_job *job);

/**
 * planwork_job_tend - t_en of @job on @net without changing it (legs after the first are
 * evaluated on the network with the earlier legs reserved, then rolled back). Returns the
 * latest leg end in seconds, INFINITY if a leg never ends, or -1.0 on -ENOMEM.
 */
double planwork_job_tend(struct planwork *pw, struct netstate *net,
			 const struct planwork_job *job);

/**
 * planwork_job_reserve - NetUp for every leg of @job: reserve its profile on @net, and when
 * @tag is not NULL append one plan_transfer per leg to the plan. @arrival[j] (may be NULL)
 * receives leg j's end time. Returns the latest leg end (seconds), INFINITY when a leg never
 * ends (nothing is reserved then), or -1.0 on -ENOMEM.
 */
double planwork_job_reserve(struct planwork *pw, struct netstate *net,
			    const struct planwork_job *job, const struct planwork_tag *tag,
			    double *arrival);

/** planwork_leg_dst - destination host of leg @j of @job. */
int planwork_leg_dst(const struct planwork *pw, const struct planwork_job *job, int j);

/**
 * planwork_add_transfer - append a transfer with profile @prof (the one NetUp reserved, fig. 4)
 * to the plan. Leading zero-rate steps (e.g. a replica copy waiting for the server's transfer
 * on the same uplink) are left out: the transfer's start_s is its first non-zero rate step.
 * Returns 0 or -ENOMEM.
 */
int planwork_add_transfer(struct planwork *pw, const struct planwork_tag *tag, int shard,
			  int src, int dst, uint64_t bytes, const struct netstate_profile *prof);

/** planwork_max - the larger of two doubles. */
static inline double planwork_max(double a, double b) { return a > b ? a : b; }

/**
 * planwork_err - append to the planner's one-line error @buf (@len bytes, always NUL-terminated)
 * the strings and numbers of @fmt: each 's' in @fmt takes a const char * argument, each 'g' a
 * double (written as an integer when it is one, else with up to 6 decimals), each 'd' a long long.
 * The planner builds its messages with it because it has no stdio (docs/architecture.md).
 */
void planwork_err(char *buf, size_t len, const char *fmt, ...);

#endif
