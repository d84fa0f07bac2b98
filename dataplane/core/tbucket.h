/* tbucket.h - tc-style token bucket for the port's egress shaper (rate changeable at run time). */
#ifndef MLF_TBUCKET_H
#define MLF_TBUCKET_H

#include <stdint.h>

/** A token bucket counting L2 frame bytes (Ethernet header included, no FCS), like tc tbf. */
struct tbucket {
	double hz;          /* ticks per second of the clock used for @last */
	double gbps;        /* rate in Gbit/s; 0 = shaper off (everything passes) */
	double bpt;         /* bytes per tick at that rate */
	double burst;       /* bucket depth in bytes */
	double tokens;      /* bytes that may leave now (negative: debt of forced frames) */
	uint64_t last;      /* tick of the last refill */
	uint64_t passed_bytes, held;  /* counters: bytes let through, refusals */
};

/**
 * tbucket_init - shaper at @gbps (0 = off) with a depth of @burst_bytes, clock at @hz ticks/s,
 * starting full at tick @now.
 */
void tbucket_init(struct tbucket *tb, double gbps, double burst_bytes, double hz, uint64_t now);

/** tbucket_set_rate - change the rate (0 = off) from tick @now on; tokens earned so far are kept. */
void tbucket_set_rate(struct tbucket *tb, double gbps, uint64_t now);

/** tbucket_refill - add the tokens earned up to tick @now (capped at the depth). */
void tbucket_refill(struct tbucket *tb, uint64_t now);

/** tbucket_take - 1 and spend @bytes if the bucket holds them (or the shaper is off), else 0. */
int tbucket_take(struct tbucket *tb, uint32_t bytes);

/** tbucket_refund - give back @bytes taken by tbucket_take() for a frame that was not sent. */
void tbucket_refund(struct tbucket *tb, uint32_t bytes);

/**
 * tbucket_wait_ticks - ticks after the last refill until the bucket holds @bytes (0 when it does
 * now or the shaper is off); lets the dataplane loop sleep while the shaper holds its frames.
 */
uint64_t tbucket_wait_ticks(const struct tbucket *tb, uint32_t bytes);

/** tbucket_force - spend @bytes even into debt (acknowledgements must not wait behind data). */
void tbucket_force(struct tbucket *tb, uint32_t bytes);

#endif
