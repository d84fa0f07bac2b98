/* netmon.h - the network monitor's measurements: per peer and direction, the rate transfers achieved, their loss and RTT. */
#ifndef MLF_NETMON_H
#define MLF_NETMON_H

#include <stdint.h>

/**
 * What this host's transfers to (dir tx) or from (dir rx) one peer did over one report period
 * (MLfabric §3/§4: "the network monitor periodically measures and reports available network
 * bandwidth"; docs/control.md `link` field `paths`). Rates are of payload, Gbit/s.
 */
struct netmon_path {
	uint64_t bytes;     /* payload bytes acknowledged (tx) or received (rx) in the period */
	uint64_t active_ns; /* time at least one transfer to/from the peer was active, ns: tx =
			     * from its first frame to its end (all acknowledged), not paused
			     * (commanded rate != 0); the longest such span of the peer's transfers
			     * per monitor step; rx = the steps in which bytes arrived */
	double cmd_bits;    /* tx: integral of the commanded payload rate over active_ns, Gbit
			     * (the scheduler's steps, summed over concurrent transfers) */
	int unpaced;        /* tx: an active transfer was unpaced (no commanded rate) */
	uint64_t segs;      /* tx: DATA frames sent (first copies and resends) */
	uint64_t retx;      /* tx: segments resent (the loss the sender saw) */
	double rtt_us_sum;  /* tx: smoothed RTTs of active transfers, summed over samples, us */
	uint64_t rtt_n;     /* ... number of those samples */
};

/**
 * netmon_init - size the tables for the cluster (dp.cluster) and this dataplane's segment.
 * Returns 0 or -ENOMEM.
 */
int netmon_init(void);

/**
 * netmon_step - sample every transfer (transport_stats) and add what it did since the last
 * step to its peer's accumulators; called by the monitor every ~10 ms from the main loop.
 */
void netmon_step(void);

/**
 * netmon_take - the accumulators of peer host index @peer, direction @tx (1: to the peer,
 * 0: from it), since the last take; resets them. Returns 0, or -1 when @peer is out of range
 * (or netmon_init did not run) and *@out is zeroed.
 */
int netmon_take(int peer, int tx, struct netmon_path *out);

#endif
