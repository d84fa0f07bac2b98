/* sched_cmd.h - the command messages a batch queues: send, order, drop, rate steps (docs/control.md). */
#ifndef MLF_SCHED_CMD_H
#define MLF_SCHED_CMD_H

#include "sched_state.h"

/** Shortest step of a command's rate schedule (s): shorter ones are float noise. */
#define SCHED_MIN_STEP_S 1e-6

/**
 * sched_cmd_steps - the `steps` of a command for plan transfer @t: [offset_s, gbps] pairs
 * (offset from t->start_s in seconds, Gbit/s of payload). More than SCHED_MAX_STEPS steps are
 * merged in groups of consecutive steps, each group at the rate that carries the same bytes
 * over the same interval. Offsets are strictly increasing by at least SCHED_MIN_STEP_S (a
 * shorter step, float noise between reservations, takes the next step's rate; the dataplane
 * refuses offsets that do not increase), never negative, rates never below 0.
 * Returns a new JSON array (NULL only when out of memory).
 */
json_t *sched_cmd_steps(const struct plan_transfer *t);

/**
 * sched_cmd_send - a `send` command of update or model @id as transfer @xfer to host
 * @dst on @chan (docs/control.md); @t NULL = a transfer within one host (unpaced, start now:
 * @now_s, plan time in s). @keep: another copy of the update is commanded later, the worker
 * keeps holding it. NULL only when out of memory.
 */
json_t *sched_cmd_send(struct sched *s, const char *what, uint64_t id, uint64_t xfer, int dst,
			     int chan, uint64_t bytes, const struct plan_transfer *t, double now_s,
			     int keep);

/**
 * sched_cmd_order - queue `order` of transfer ids @xs (stolen) on @chan to application
 * @role at @host and flush it, so it is there before the transfers it orders (nothing is sent
 * for an empty array).
 */
void sched_cmd_order(struct sched *s, const char *role, int host, int chan, json_t *xs);

/** sched_cmd_drop - update @u is dropped (@reason, e.g. the delay bound): `drop` and record. */
void sched_cmd_drop(struct sched *s, struct sched_update *u, const char *reason);

#endif
