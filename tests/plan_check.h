/* plan_check.h - independent checker of the plan invariants of docs/plan-format.md. */
#ifndef MLF_PLAN_CHECK_H
#define MLF_PLAN_CHECK_H

/*
 * The checker shares no code with the planner: it re-derives every link's load from the
 * transfers' rate steps (its own sweep) and compares it with the capacity step function built
 * from the batch. Tolerances: rates may exceed a capacity by PLAN_CHECK_RATE_TOL (relative) and
 * times may be early by PLAN_CHECK_TIME_TOL seconds, to absorb floating-point rounding only;
 * a rate integral may differ from the bytes by PLAN_CHECK_BYTES_TOL (relative) plus one byte.
 */

#include <stddef.h>

#include "plan.h"

#define PLAN_CHECK_RATE_TOL 1e-9
#define PLAN_CHECK_TIME_TOL 1e-9
#define PLAN_CHECK_BYTES_TOL 1e-6

/** Which invariant a plan breaks (plan-format.md "What must always hold", plus the extras). */
enum plan_check_result {
	PLAN_CHECK_OK = 0,
	PLAN_CHECK_STRUCTURE,  /* index out of range, update not in exactly one of order/dropped,
				* bad rate steps (a first step must be > 0 Gbit/s at start_s),
				* drops in sync mode */
	PLAN_CHECK_CAPACITY,   /* 1: a link carries more than its capacity at some instant */
	PLAN_CHECK_CAUSALITY,  /* 2: aggregate sent before its inputs arrived; a transfer before
				* ready_s / now_s; a commit before its bytes arrived; a
				* pull that no model copy answers */
	PLAN_CHECK_DELAY,      /* 3: a committed update's delay exceeds tau_max (async) */
	PLAN_CHECK_ORDER,      /* 4: server commits not in `order`, versions not consecutive */
	PLAN_CHECK_BYTES,      /* rate integral != bytes, or a transfer of the wrong size */
	PLAN_CHECK_REPLICA,    /* replica commits not a prefix of order, versions, punted */
	PLAN_CHECK_DIVERGENCE, /* divergence_bound > div_max */
};

/**
 * plan_check - verify every invariant of @plan for @batch.
 * @msg: receives one line naming the invariant and the offending item (empty when OK).
 * Returns PLAN_CHECK_OK or the first violated invariant (enum plan_check_result).
 */
enum plan_check_result plan_check(const struct plan_batch *batch, const struct plan *plan,
				  char *msg, size_t msglen);

/**
 * plan_check_delay_violations - number of committed updates of @plan whose delay (server version
 * just before the commit minus the update's version) exceeds tau_max; 0 in sync mode. Versions
 * are counted from v_init along the commit order, as invariant 3 defines them.
 */
int plan_check_delay_violations(const struct plan_batch *batch, const struct plan *plan);

/** plan_check_name - short name of a result, e.g. "capacity" (for messages and tests). */
const char *plan_check_name(enum plan_check_result r);

#endif
