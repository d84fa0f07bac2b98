/* order.h - update ordering: shortest transfer first with deadlines and look-ahead dropping (Alg. 1, 2). */
#ifndef MLF_ORDER_H
#define MLF_ORDER_H

#include "planwork.h"

/**
 * order_deadline - dl(g) = v(g) + tau_max - v_init (paper eq. 9): the last commit position
 * (1-based, counting updates) at which update @u may be applied at the server.
 */
int64_t order_deadline(const struct plan_batch *b, int u);

/**
 * order_compute - order the batch's updates (not the replica_only ones) for the server.
 * MLfabric-A (PLAN_MLFABRIC_A; Alg. 2, §5.1): shortest transfer first by t_en to the server,
 * an update whose deadline equals the next commit position is forced, a forced pick whose
 * look-ahead successor would finish first is dropped (§5.1.3), updates that can no longer meet
 * their deadline are dropped. MLfabric-S (PLAN_MLFABRIC_S, §6): Alg. 1 only (shortest transfer
 * first, no dropping).
 * Works on @net and leaves it as it was. Fills pw->out->order and ->dropped.
 * Returns 0 or -ENOMEM.
 */
int order_compute(struct planwork *pw, struct netstate *net);

#endif
