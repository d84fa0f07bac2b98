/* sched_capest.h - capacity estimate of one host link from measured transfers (MLfabric §3, §4: the network monitor). */
#ifndef MLF_SCHED_CAPEST_H
#define MLF_SCHED_CAPEST_H

/*
 * MLfabric §3 ("a network monitor periodically measures and reports available network
 * bandwidth") and §4 (the MLfabric daemon on every host reports to the scheduler): the
 * scheduler plans with link capacities. Declared capacities come from the config or the
 * runner's schedule (docs/control.md `link`); this estimator derives them from what commanded
 * transfers achieved (the dataplanes' `paths`, docs/control.md), one estimator per host link:
 *
 * - A report counts when the link carried transfers for at least CAPEST_MIN_ACTIVE of its
 *   period. It is a *shortfall* when they achieved less than CAPEST_SHORT x the rate they were
 *   commanded at (unpaced transfers: commanded at the link's maximum).
 * - Attribution (the paper's model: a non-blocking core, only host links are bottlenecks): a
 *   shortfall with congestion signals (loss >= CAPEST_LOSS, or the RTT grown by CAPEST_RTT_GROWTH
 *   over the smallest seen and by CAPEST_RTT_MIN_MS) happened in the network, at the
 *   receiver's downlink; one without them happened before the wire (the sender could not send
 *   faster: its NIC / uplink, queued at the sender). So an uplink estimator counts shortfalls
 *   without signals, a downlink estimator those with them.
 * - Back-off: CAPEST_SUSTAIN consecutive counted shortfalls (one noisy report is not enough;
 *   reports without traffic neither count nor break the run) lower the estimate to what was
 *   achieved over them (their mean), never below CAPEST_FLOOR x the maximum.
 * - Probe: CAPEST_PROBE_N consecutive reports in which the transfers achieved at least
 *   CAPEST_OK x their commanded rate without loss, while commanded at least CAPEST_PROBE_USE x
 *   the estimate (the link was used as planned), raise it multiplicatively by CAPEST_PROBE_MUL,
 *   up to the declared maximum.
 */

/** One report period of one link, as the estimator sees it. Rates: Gbit/s of payload. */
struct capest_obs {
	double period_s;  /* length of the report period, s (> 0) */
	double active_s;  /* of it, the time transfers on the link were active, s */
	double gbps;      /* achieved: bytes x 8 / active time / 1e9 */
	double cmd_gbps;  /* commanded, over the same active time; < 0: unpaced */
	double loss;      /* segments resent / segments sent, 0..1 */
	double rtt_ms;    /* mean smoothed round-trip time of the transfers, ms (0: unknown) */
};

/** Which link of a host an estimator follows (it decides which shortfalls it counts). */
enum capest_dir { CAPEST_UP = 1, CAPEST_DOWN = 0 };

#define CAPEST_MIN_ACTIVE 0.25  /* fraction of the period the link must be active */
#define CAPEST_SHORT 0.85       /* achieved below this x commanded: a shortfall */
#define CAPEST_OK 0.9           /* achieved at least this x commanded (and no loss): on plan */
#define CAPEST_LOSS 0.01        /* loss at or above this fraction: a congestion signal */
#define CAPEST_RTT_GROWTH 2.0   /* RTT above this x the smallest seen ... */
#define CAPEST_RTT_MIN_MS 1.0   /* ... and by more than this, ms: a congestion signal */
#define CAPEST_SUSTAIN 3        /* consecutive shortfalls before a back-off */
#define CAPEST_PROBE_N 2        /* consecutive on-plan reports before a probe step */
#define CAPEST_PROBE_MUL 1.25   /* multiplicative increase of a probe step */
#define CAPEST_PROBE_USE 0.5    /* probe only when commanded at least this x the estimate */
#define CAPEST_FLOOR 0.01       /* the estimate never goes below this x the maximum */

/** The state of one link's estimate. */
struct capest {
	double max_gbps;      /* the declared capacity: the ceiling of probing, Gbit/s */
	double est_gbps;      /* the estimate, Gbit/s, in [CAPEST_FLOOR x max, max] */
	double rtt_base_ms;   /* smallest RTT seen on the link, ms (0: none yet) */
	int n_short;          /* consecutive counted shortfalls */
	double short_sum;     /* sum of their achieved rates, Gbit/s */
	int n_ok;             /* consecutive on-plan reports */
	unsigned long backoffs, probes; /* how often each happened */
};

/** capest_init - an estimate at @max_gbps (> 0), nothing measured yet. */
void capest_init(struct capest *e, double max_gbps);

/**
 * capest_set_max - the declared capacity changed to @max_gbps (> 0): an estimate at the old
 * maximum (never lowered, or capped by it) follows it; one below stays, capped at the new one.
 */
void capest_set_max(struct capest *e, double max_gbps);

/**
 * capest_feed - one report period @o of link @dir. Returns -1 when the estimate was lowered
 * (back-off), 1 when it was raised (probe), 0 when unchanged. A bad @o (period <= 0, negative
 * or non-finite figures) changes nothing and returns 0.
 */
int capest_feed(struct capest *e, enum capest_dir dir, const struct capest_obs *o);

#endif
