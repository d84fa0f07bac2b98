/* sched_xfer.h - the transfers the scheduler commanded: ids, reserved rate profiles, records. */
#ifndef MLF_SCHED_XFER_H
#define MLF_SCHED_XFER_H

#include "sched_state.h"

/*
 * The transfer table s->xfers, below both the batch (sched_batch.c, which commands the plan's
 * transfers) and the replica (sched_repl.c, which commands a catch-up's state snapshot), so that
 * neither calls the other to remember a transfer. Times are plan times (seconds since s->t0).
 */

/**
 * sched_xfer_add - remember a commanded transfer so its rate profile stays reserved (the links
 * of later batches see it subtracted, docs/scheduler.md "A batch") and append it to
 * transfers.jsonl. From @proto it takes xfer, what, id (update or pull id, 0 for an aggregate
 * or a state), src and dst (host indexes), chan, bytes, replica, from_xfer and n_fwd (a
 * forwarded model copy, §10.3); the rest is ignored. @t is
 * its plan transfer (start and end in seconds, the rate steps in Gbit/s are copied), or NULL
 * for an unpaced transfer that starts and ends at plan time @now_s (seconds since s->t0).
 * Returns 0, or -ENOMEM with nothing remembered and nothing recorded.
 */
int sched_xfer_add(struct sched *s, const struct sched_xfer *proto, const struct plan_transfer *t,
		   double now_s);

/** sched_xfer_find - index into s->xfers of transfer id @xfer, or -1. */
int sched_xfer_find(const struct sched *s, uint64_t xfer);

/**
 * sched_xfer_done - transfer @xfer was delivered (a commit names it): its reservation ends
 * and nothing waits for its `done` any more. Unknown ids (compacted, or never commanded by
 * this scheduler) are ignored.
 */
void sched_xfer_done(struct sched *s, uint64_t xfer);

/** sched_xfer_fresh - a new scheduler-chosen transfer id (1 << 62 | counter, docs/control.md). */
uint64_t sched_xfer_fresh(struct sched *s);

/**
 * sched_xfer_rate_at - the rate (Gbit/s of payload) @x reserves at plan time @t (seconds
 * since s->t0): 0 outside [start, end).
 */
double sched_xfer_rate_at(const struct sched_xfer *x, double t);

/**
 * sched_xfer_on_link - whether @x still holds a reservation on link @up (1: uplink, 0:
 * downlink) of host @host: no `done` yet, between two hosts, from (uplink) or to (downlink) it.
 */
int sched_xfer_on_link(const struct sched_xfer *x, int host, int up);

/**
 * sched_xfer_link_rate - the rate (Gbit/s) the transfers of s->xfers reserve on link @up of
 * @host at plan time @t (sched_xfer_on_link, sched_xfer_rate_at).
 */
double sched_xfer_link_rate(const struct sched *s, int host, int up, double t);

/**
 * sched_xfer_link_breaks - the plan times after @from_s at which the reservations on link @up of
 * @host change (a rate step or an end), ascending and without repeats, into *@bp (malloc'd, the
 * caller frees it; NULL when none). Returns their count, or -ENOMEM (*@bp NULL).
 */
int sched_xfer_link_breaks(const struct sched *s, int host, int up, double from_s, double **bp);

/** Seconds a transfer record is kept after its planned end (sched_config.xfer_keep_s). */
#define SCHED_XFER_KEEP_S 60.0

/** sched_xfer_compact - forget the transfers whose planned end is s->cfg.xfer_keep_s (default
 * SCHED_XFER_KEEP_S) before @now_plan (plan time, seconds). */
void sched_xfer_compact(struct sched *s, double now_plan);

/** sched_xfer_free - free every transfer and the table itself (s->xfers is NULL after). */
void sched_xfer_free(struct sched *s);

#endif
