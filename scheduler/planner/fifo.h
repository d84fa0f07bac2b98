/* fifo.h - FIFO fair-share baseline: every update sent at once, links shared max-min fairly. */
#ifndef MLF_FIFO_H
#define MLF_FIFO_H

/*
 * The baseline MLfabric is compared with (paper fig. 1a, §7): no scheduler. Each update (each
 * shard of a sharded update) is sent directly from its worker to its server at its ready time
 * (never before now_s); the bandwidth of every link is shared max-min fairly among the transfers
 * using it at each instant, following the links' capacity step functions; the server applies
 * updates in the order their last byte arrives. Replica-only copies and pulls are ignored.
 */

#include "plan.h"

/** The outcome of the baseline on one batch. */
struct fifo_result {
	int n_updates;        /* == batch.n_updates */
	double *commit_s;     /* per update index: when its last byte reached its server(s), s;
			       * INFINITY if a link stays at 0 Gbit/s; NAN for replica-only copies */
	int n_order;
	int *order;           /* update indexes in commit (arrival) order */
	double mean_commit_s; /* mean of commit_s - now_s over the committed updates, s */
	int delay_violations; /* async: updates applied with delay > tau_max (the version before
			       * the i-th commit is v_init + i - 1) */
};

/**
 * fifo_simulate - run the baseline on @batch (validated, e.g. by planio).
 * @out: zeroed, then filled; release with fifo_result_free().
 * Returns 0, -EINVAL if an index in @batch is out of range, or -ENOMEM.
 */
int fifo_simulate(const struct plan_batch *batch, struct fifo_result *out);

/** fifo_result_free - release the arrays of @r and zero it. */
void fifo_result_free(struct fifo_result *r);

#endif
