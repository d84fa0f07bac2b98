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

#endif
