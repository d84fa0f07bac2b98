/* sched_gather.h - updates held while their path is busy, so that aggregation has something to
 * combine under planning on arrival (§5.2; docs/scheduler.md "Gathering behind a busy link"). */
#ifndef MLF_SCHED_GATHER_H
#define MLF_SCHED_GATHER_H

#include "sched_state.h"

/* A link is free at a plan time when the capacity the transfers commanded earlier leave on it
 * is at least this fraction of its planning capacity (link capacity x --headroom). */
#define SCHED_GATHER_FREE_FRAC 0.5

/**
 * sched_gather_free_at - plan time (seconds since s->t0) from which link @up (1: uplink, 0:
 * downlink) of host @host, of planning capacity @cap Gbit/s (its capacity x --headroom), is
 * free: at least SCHED_GATHER_FREE_FRAC of @cap unreserved by the transfers commanded earlier
 * that have no `done` yet (sched_xfer_link_rate), searched from plan time @from_s on; @from_s
 * when it is free then, when @cap <= 0, or when out of memory.
 */
double sched_gather_free_at(const struct sched *s, int host, int up, double cap, double from_s);

/**
 * sched_gather_hold - the gathering rule (§5.2, docs/scheduler.md "Gathering behind a busy
 * link"): of the @n pending updates @sel (indexes into s->upd) an update whose direct path
 * (its worker's uplink and the server's downlink; of a sharded model, its worker's uplink and
 * the first shard server's downlink to free: its first leg) is not free at this plan's start
 * (now + the lead, sched_gather_free_at) would queue behind the transfers commanded earlier
 * anyway: it is held, so that the updates arriving
 * meanwhile are planned with it and an aggregation tree can combine them. It is released
 * (planned) when its path frees, less the lead and --replan-ms, and never later than
 * --batch-ms after its arrival less --replan-ms (no starvation). Updates whose path is free are
 * kept in @sel. Only in plan mode PLAN_MLFABRIC_A (MLfabric-S gathers its iteration itself).
 * The earliest release of a held update becomes a future arrival (sched_arrival_note), so the
 * loop plans then. @now: CLOCK_REALTIME seconds; @gbps: every link's capacity in Gbit/s
 * before the headroom, [2 * host + 1] the uplink and [2 * host] the downlink of each host (the
 * link report in force, sched_batch_link_gbps). Returns the new count of @sel (the kept
 * updates, in their order).
 */
int sched_gather_hold(struct sched *s, double now, const double *gbps, int *sel, int n);

#endif
