/* sched_esync.h - ESync's State Server (esync.txt §4, Alg. 2) in the scheduler: the rule alone. */
#ifndef MLF_SCHED_ESYNC_H
#define MLF_SCHED_ESYNC_H

#include <stdint.h>

/**
 * One device's record at the State Server (Alg. 2: rank, local iterations, capability, last
 * finish time, ready, round). Times are CLOCK_REALTIME seconds at the scheduler.
 */
struct esync_rec {
	int known;         /* the device has queried at least once */
	int alive;         /* counted when looking for the slowest (its host is up) */
	int64_t round;     /* communication round t the device is in (its aggregations so far) */
	int k;             /* local iterations done in this round */
	double c;          /* capability: seconds one local iteration takes (0: not measured) */
	double t_e;        /* when its last local iteration finished (the query's arrival) */
	int64_t ready_round; /* the round in which it was told READY (-1: never) */
};

/** ESync's epsilon (Alg. 2): a small constant against boundary errors, seconds. */
#define ESYNC_EPS_S 0.005

/**
 * esync_query - QUERY-STATE of Alg. 2 for device @r of @recs[0..n): first its record becomes
 * (@round, @k, @c if > 0, t_e = @now); then, with the slowest device the live one of largest c,
 * READY (1) when k >= 1, the slowest is in this round already (has pulled the model), and
 * either @r is the slowest, the slowest was told READY in this round, or @r's next local
 * iteration (c + @eps) would not end before the slowest is ready (its c - (now - t_e)). Else
 * NOT-READY (0). A READY is remembered for the round. @c, @now, @eps in seconds.
 */
int esync_query(struct esync_rec *recs, int n, int r, int64_t round, int k, double c, double now,
		double eps);

#endif
