/* replicate.h - bounded-consistency replication: divergence bound, freezing, punting (§3.3, §5.3). */
#ifndef MLF_REPLICATE_H
#define MLF_REPLICATE_H

#include "aggregate.h"
#include "planwork.h"

/**
 * replicate_history_bound - bound on ||h_p||_2, the momentum history after the first @p
 * updates of a sequence: ||h_p|| <= gamma^p ||h_0|| + sum_{l=1..p} gamma^(p-l) ||u_l||
 * (triangle inequality on h_l = gamma h_(l-1) + u_l, eq. 2). @norms[l-1] = ||u_l||.
 */
double replicate_history_bound(double gamma, double h0_norm, const double *norms, int p);

/**
 * replicate_divergence - the planner's bound on ||w_s - w_r||_2 (eq. 7, 11) when, from a
 * state common to server and replica (history norm @h0_norm), the server has applied the
 * @n updates with norms @norms[0..n) and the replica the first @p of them (p <= n):
 *   w_s - w_r = (sum_{j=1..n-p} gamma^j) h_p + sum_{l=p+1..n} (sum_{j=0..n-l} gamma^j) u_l,
 * bounded with the triangle inequality and replicate_history_bound() for ||h_p||. This is
 * eq. 11 with every Cauchy-Schwarz cross term at its maximum. It never decreases when p
 * decreases (a replica further behind never diverges less) and is 0 for p == n.
 */
double replicate_divergence(double gamma, double h0_norm, const double *norms, int n, int p);

/**
 * replicate_sequence - the order in which the replica applies a batch's copies: the in-flight
 * carried copies (plan_update.inflight) by inflight_s (ties: batch order), the other carried
 * (replica_only) copies in batch order, then @order[0..n_order). Fills @seq (room for
 * b->n_updates) and, when @n_in is not NULL, the number of in-flight copies. Returns the length.
 */
int replicate_sequence(const struct plan_batch *b, const int *order, int n_order, int *seq,
		       int *n_in);

/**
 * replicate_plan - §5.3 on top of the tentative server schedule @sres (already reserved on
 * @net and recorded in the plan). The replica gets, in order, the carried replica_only
 * updates then pw->out->order, towards the replica with the replica aggregators @raggs[0..kr).
 * T_last = the last server commit. The fewest replica bytes first (§3.3): the longest
 * prefix of the copies (n, n/2, ..., down to what the bound needs and to what the fastest case
 * delivers by T_last) that commits by T_last as one aggregate (Alg. 3's case n = 0) goes, the
 * rest is punted, when it carries at least as many copies per transfer as Alg. 3's fastest
 * case. Otherwise the fastest case: if the divergence bound holds at T_last, replica
 * commits up to T_last are frozen and the rest punted; otherwise the last
 * server transfer is delayed to start after the earliest replica commit a_e that makes the
 * bound hold, and the replica commits up to a_e are frozen.
 * Lazy replication (§3.3 "delaying several replicated updates, which can be aggressively
 * aggregated later"): copies already under way (carried with inflight) come first and hold at
 * their inflight_s. While the bound holds at T_last without any new copy, every new copy is
 * punted; when it would not hold one batch later (the divergence plus this batch's norms,
 * REPLICA_HEADROOM times, exceeds Div_max) and no copy is in flight, all owed copies leave as
 * one catch-up aggregate that may commit after T_last: its copies are then in flight
 * (plan.inflight) and the next batches count them as missing until they commit.
 * Fills replica_commits, punted, inflight, divergence_bound; may change @sres's last item
 * (its transfers are re-recorded).
 * Returns 0, -EINVAL when the replica cannot receive what the bound needs (a link to it never
 * has capacity), or -ENOMEM.
 */
int replicate_plan(struct planwork *pw, struct netstate *net, struct aggregate_result *sres,
		   const int *raggs, int kr);

#endif
