/* pacer.h - per-transfer byte-credit pacing along a piecewise-constant rate schedule (TSC ticks). */
#ifndef MLF_PACER_H
#define MLF_PACER_H

#include <stdint.h>

#define PACER_MAX_STEPS 256
#define PACER_MIN_SCALE (1.0 / 16) /* lowest fraction of the commanded rate after loss cuts */
#define PACER_AI_STEP 0.125        /* fraction of the commanded rate regained per loss-free RTT */

/** One step of a rate schedule: from @at_ns after the start, send at @gbps (0 = pause). */
struct pacer_step {
	uint64_t at_ns; /* offset from the transfer's start time, nanoseconds */
	double gbps;    /* rate in Gbit/s of L2 frame bytes (Ethernet header included) */
};

/**
 * Pacing state of one transfer. Time is in ticks of a free-running counter (the TSC in the
 * dataplane), converted once at init; credit is in bytes. A transfer with no steps is unpaced.
 */
struct pacer {
	uint64_t start;         /* tick at which the schedule starts */
	uint64_t last;          /* tick up to which credit has been accrued */
	uint64_t now;           /* latest tick passed to pacer_advance() */
	int n_steps, cur;       /* number of steps, index of the step active at `last` */
	uint64_t step_at[PACER_MAX_STEPS];  /* absolute tick where step i begins */
	double step_bpt[PACER_MAX_STEPS];   /* bytes per tick of step i */
	double credit;          /* bytes that may be sent now */
	double burst_ticks;     /* credit is capped at this many ticks worth of the current rate */
	double min_burst;       /* ... but never below this many bytes (one or two frames) */
	/* loss response (pacer_on_loss / pacer_on_progress): credit accrues at the commanded
	 * rate x scale, scale in [PACER_MIN_SCALE, 1], 1 until the first loss */
	double scale;
	uint64_t cut_at, grow_at; /* ticks of the last cut and of the last increase */
	uint64_t cuts;            /* loss cuts so far */
};

/**
 * pacer_bad_step - the first step of @steps[0..n) that pacer_init refuses (offset not after the
 * previous one, negative, NaN or infinite rate), or -1 when every step is valid.
 */
int pacer_bad_step(const struct pacer_step *steps, int n);

/**
 * pacer_init - set up pacing for a transfer starting at tick @start.
 * @hz:        ticks per second (rte_get_tsc_hz() in the dataplane).
 * @steps/@n:  the rate schedule, offsets strictly increasing, first offset usually 0 (before it
 *             the rate is 0); n = 0 means unpaced (pacer_allow always true after start).
 * @burst_s:   cap of accumulated credit in seconds of the current rate (e.g. 500e-6), so a
 *             late loop iteration does not release an unbounded burst.
 * @min_burst: lower bound of that cap in bytes (at least one frame).
 * Returns 0, or -EINVAL (too many steps, offsets not increasing, negative or NaN rate).
 */
int pacer_init(struct pacer *p, uint64_t start, double hz, const struct pacer_step *steps, int n,
	       double burst_s, double min_burst);

/** pacer_advance - accrue credit up to tick @now along the schedule (no-op before the start). */
void pacer_advance(struct pacer *p, uint64_t now);

/**
 * pacer_allow - may a frame of @bytes go now? Returns 1 and consumes the credit, or 0.
 * Call pacer_advance() first. Before the start tick always 0; unpaced transfers always 1 after it.
 */
int pacer_allow(struct pacer *p, double bytes);

/**
 * pacer_restart - move the whole schedule so that it starts at tick @start (used when the start
 * time is reached by the wall clock, which the TSC rate estimate only approximates).
 */
void pacer_restart(struct pacer *p, uint64_t start);

/** pacer_refund - give back @bytes taken by pacer_allow() for a frame that was not sent. */
void pacer_refund(struct pacer *p, double bytes);

/**
 * pacer_wait_ticks - how long until pacer_allow(@bytes) would succeed, if nothing else is sent:
 * ticks counted from the latest pacer_advance() tick, following the rate steps (a pause waits
 * for the next nonzero step). 0 when a frame may go now (or the transfer is unpaced and
 * started); the ticks to the start tick before it; UINT64_MAX when never (the schedule ends at
 * rate 0 with less credit than @bytes). Used by the dataplane loop to sleep until the next frame
 * is due instead of polling (CPU proportional to traffic; docs/dataplane.md "Idle behaviour").
 */
uint64_t pacer_wait_ticks(const struct pacer *p, double bytes);

/**
 * pacer_on_loss - the sender inferred a loss at tick @now (it is about to retransmit): the
 * network carries less than the commanded rate, here because transfers the plan kept apart
 * overlap on a link and its queue overflows. Halves the pacing scale (not below
 * PACER_MIN_SCALE), at most once per @rtt_ticks (one cut per loss episode, as TCP's fast
 * recovery). Credit accrued up to @now keeps the old scale. Returns 1 when it cut, else 0
 * (unpaced transfers: always 0).
 */
int pacer_on_loss(struct pacer *p, uint64_t now, uint64_t rtt_ticks);

/**
 * pacer_on_progress - a SACK acknowledged new data at tick @now: once @rtt_ticks have passed
 * since the last cut and the last increase, the scale grows by PACER_AI_STEP (up to 1: the
 * commanded rate again). Additive increase, multiplicative decrease: overlapping transfers
 * converge to a share the link carries instead of losing most of what they send.
 */
void pacer_on_progress(struct pacer *p, uint64_t now, uint64_t rtt_ticks);

/** pacer_gbps_at - the commanded rate (Gbit/s) at tick @now; -1 when unpaced, 0 before start. */
double pacer_gbps_at(const struct pacer *p, uint64_t now, double hz);

#endif
