/* coreshare.h - is the dataplane loop's core shared with other threads? (docs/dataplane.md "Idle behaviour") */
#ifndef MLF_DP_CORESHARE_H
#define MLF_DP_CORESHARE_H

#include <stdint.h>

#define CORESHARE_ON 0.05               /* waited share above which the core is shared ... */
#define CORESHARE_OFF 0.01              /* ... and below which it is ours again, ... */
#define CORESHARE_HOLD_NS 1000000000ULL /* ... but not before this long under CORESHARE_ON */
#define CORESHARE_GAIN 0.25             /* weight of one sample in the smoothed share */

/**
 * The loop's view of its core, from the scheduler's per-thread counters (Linux
 * /proc/thread-self/schedstat: ns run on a CPU, ns waited runnable on a run queue). Of the time
 * the thread wanted the core between two samples (ran or waited), the share it waited, smoothed
 * with CORESHARE_GAIN: shared above CORESHARE_ON; its own again below CORESHARE_OFF once it was
 * under CORESHARE_ON for CORESHARE_HOLD_NS. A share of wall time would not do: a loop that sleeps
 * between events waits little on a busy core too, and the verdict would swing at each change.
 * The loop polls while transfers are due only on a core of its own (issue 35).
 */
struct coreshare {
	int shared;           /* the verdict: 1 = shared */
	int have;             /* a first sample was taken */
	uint64_t run_ns, wait_ns; /* the counters at the last sample */
	uint64_t calm_since_ns;   /* last sample with the share above CORESHARE_ON */
	double frac;          /* the smoothed waited share, 0..1 */
};

/**
 * coreshare_sample - one sample of the counters @run_ns and @wait_ns (monotonic, ns) taken at
 * @now_ns (monotonic ns; samples ~10 ms apart). Counters that went backwards or did not move are
 * no sample. Returns 1 when the verdict changed, else 0.
 */
int coreshare_sample(struct coreshare *c, uint64_t run_ns, uint64_t wait_ns, uint64_t now_ns);

#endif
