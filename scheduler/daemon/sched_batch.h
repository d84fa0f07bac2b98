/* sched_batch.h - one scheduling batch: state -> struct plan_batch -> plan -> commands (§4, §5, §6). */
#ifndef MLF_SCHED_BATCH_H
#define MLF_SCHED_BATCH_H

#include "sched_state.h"

/**
 * sched_batch_tick - called every --batch-ms. When the server is registered and updates or
 * answerable pulls are pending (sync mode: an update from every worker, or --sync-timeout
 * passed), builds a struct plan_batch from the state (capacities from link reports older than
 * t_lag times headroom, minus the rate profiles of transfers still running; v_init = last
 * committed version + planned-but-uncommitted updates), runs plan_compute (PLAN_IMPL_FAST),
 * calls the hook, and queues the commands: `order` to the server first (and chan 4 to the
 * replica), then `send` (with `keep`), `aggregate` and `drop` (docs/control.md,
 * docs/replication.md). With a caught-up replica the carried copies go first as replica_only
 * updates; a catch-up or fail-over pauses the updates (pulls are still answered). Logs one
 * line per batch and writes the records.
 * @now: CLOCK_REALTIME seconds.
 * Returns 1 when a batch was planned, 0 when there was nothing to plan, -ENOMEM (out of memory
 * building, commanding or carrying the batch, or remembering a catch-up's state transfer), or
 * -EINVAL when plan_compute refused the batch. Errors are logged; the updates stay pending.
 */
int sched_batch_tick(struct sched *s, double now);

/**
 * sched_batch_link_gbps - capacity of @host's uplink (@up = 1) or downlink in Gbit/s at
 * CLOCK_REALTIME @now: the latest link report with t <= now - t_lag, else the cluster
 * config's; not yet multiplied by the headroom.
 */
double sched_batch_link_gbps(const struct sched *s, int host, int up, double now);

/** Shortest step of a command's rate schedule (s): shorter ones are float noise. */
#define SCHED_MIN_STEP_S 1e-6

/**
 * sched_batch_steps - the `steps` of a command for plan transfer @t: [offset_s, gbps] pairs
 * (offset from t->start_s in seconds, Gbit/s of payload). More than SCHED_MAX_STEPS steps are
 * merged in groups of consecutive steps, each group at the rate that carries the same bytes
 * over the same interval. Offsets are strictly increasing by at least SCHED_MIN_STEP_S (a
 * shorter step, float noise between reservations, takes the next step's rate; the dataplane
 * refuses offsets that do not increase), never negative, rates never below 0.
 * Returns a new JSON array (NULL only when out of memory).
 */
json_t *sched_batch_steps(const struct plan_transfer *t);

/**
 * sched_batch_send_msg - a `send` command of update or model @id as transfer @xfer to host
 * @dst on @chan (docs/control.md); @t NULL = a transfer within one host (unpaced, start now:
 * @now_s, plan time in s). @keep: another copy of the update is commanded later, the worker
 * keeps holding it. NULL only when out of memory.
 */
json_t *sched_batch_send_msg(struct sched *s, const char *what, uint64_t id, uint64_t xfer, int dst,
			     int chan, uint64_t bytes, const struct plan_transfer *t, double now_s,
			     int keep);

/**
 * sched_batch_order - queue `order` of transfer ids @xs (stolen) on @chan to application
 * @role at @host and flush it, so it is there before the transfers it orders (nothing is sent
 * for an empty array).
 */
void sched_batch_order(struct sched *s, const char *role, int host, int chan, json_t *xs);

/** sched_batch_drop - update @u is dropped (@reason, e.g. the delay bound): `drop` and record. */
void sched_batch_drop(struct sched *s, struct sched_update *u, const char *reason);

#endif
