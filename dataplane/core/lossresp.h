/* lossresp.h - tells random loss from congestion for the sender's loss response (docs/dataplane.md "Loss response"). */
#ifndef MLF_DP_LOSSRESP_H
#define MLF_DP_LOSSRESP_H

#include <stdint.h>

#define LOSSRESP_QDELAY_MIN_US 5000.0 /* queueing delay that means congestion: at least 5 ms (in
				       * the testbed a loop's sleeps and SACK batching delay the
				       * samples of a 0.1 Gbit/s transfer by 1-2 ms) ... */
#define LOSSRESP_QDELAY_FRAC 0.5      /* ... and half the path's base round trip */
#define LOSSRESP_BURST_FRAC 0.25      /* a loss rate over the last frames that means congestion */
#define LOSSRESP_GAIN (1.0 / 64)      /* weight of one frame in the loss rate (~64 frames) */
#define LOSSRESP_RECENT 8             /* round-trip samples whose lowest is the recent RTT */

/**
 * What one transfer's sender saw of its path: round-trip samples and which of its frames were
 * lost. A loss is congestion when the path queues (the recent round trip, the lowest of the
 * last LOSSRESP_RECENT samples, exceeds the lowest of all by max(LOSSRESP_QDELAY_MIN_US,
 * LOSSRESP_QDELAY_FRAC x that): a queue delays every sample, while a late SACK or a loop that
 * slept delays some; so the lowest of the recent ones tells them apart) or losses come in a
 * burst (more than LOSSRESP_BURST_FRAC of the last ~64 frames lost, which 5% random loss does
 * not reach in 600,000 frames of tests/unit/test_dp_lossresp.c); otherwise it is random
 * (corruption, a lossy link or the fault injector) and a rate cut would only slow the transfer.
 */
struct lossresp {
	double base_us;   /* lowest round-trip sample: the path with empty queues (0: none yet) */
	double recent[LOSSRESP_RECENT]; /* the last round-trip samples (ring, 0: empty slot) */
	int next;         /* slot of the next sample */
	double loss_rate; /* lost frames among the recent ones, smoothed with LOSSRESP_GAIN */
	uint64_t random, congested; /* losses judged so far, each way */
};

/** lossresp_rtt - a round-trip sample of @us microseconds (> 0; others are ignored). */
void lossresp_rtt(struct lossresp *l, double us);

/** lossresp_sent - a frame's first copy left (the loss rate decays). */
void lossresp_sent(struct lossresp *l);

/**
 * lossresp_lost - a frame was lost (about to be resent): counts it into the loss rate, then
 * judges it. Returns 1 for congestion (the sender may cut its rate), 0 for random loss.
 */
int lossresp_lost(struct lossresp *l);

/** lossresp_qdelay_us - recent round trip minus the lowest (0 without samples). */
double lossresp_qdelay_us(const struct lossresp *l);

#endif
