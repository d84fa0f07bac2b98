/* aggregate.h - grouping ordered updates through aggregators (Alg. 3) and distribution trees (§10.3). */
#ifndef MLF_AGGREGATE_H
#define MLF_AGGREGATE_H

#include "planwork.h"

/** One item applied at the target: a direct update or an aggregate, in commit order. */
struct aggregate_item {
	enum plan_carry_kind kind;   /* PLAN_CARRY_UPDATE or PLAN_CARRY_AGGREGATE */
	int carries;                 /* update index or plan.aggregates index */
	int count;                   /* updates it holds (1 for a direct update) */
	double arrival[PLANWORK_MAX_LEGS]; /* when leg j's last byte reaches its host (s) */
	double t0_s;                 /* earliest start of the item's transfer to the target */
	int first_transfer;          /* plan.transfers index of its transfer(s) to the target */
};

/** The chosen case of Alg. 3 (or of the distribution variant). */
struct aggregate_result {
	int n_direct;                /* n: the first n go directly to the target */
	double cost_s;               /* when the last byte reaches the target (INFINITY: none) */
	int n_items, cap_items;
	struct aggregate_item *items;
	struct netstate_mark last_mark; /* network state just before the last item's transfer */
	int last_transfer;           /* plan.transfers index where the last item's transfers begin */
};

/**
 * aggregate_plan - Alg. 3 (§5.2): split @list (update indexes, in commit order) into the
 * first n sent directly to the target, then groups streamed through the aggregators @aggs[0..k)
 * (used in this order); group i closes when its next input would reach aggregator i later
 * than t_max, the time the target is busy until; the last aggregator takes every remaining
 * update. Every case n = 0..|list| is evaluated from @net's current state and the one whose
 * last byte reaches the target earliest wins (ties: smallest n). The winner is reserved on
 * @net and recorded in the plan (transfers, aggregates with @purpose); its items go to @res.
 * @dst: the replica host, or -1 for the server(s) (legs to each shard's server).
 * Returns 0 (res->cost_s == INFINITY and nothing reserved when no case can finish),
 * or -ENOMEM.
 */
int aggregate_plan(struct planwork *pw, struct netstate *net, const int *list, int n, int dst,
		   enum plan_purpose purpose, const int *aggs, int k, struct aggregate_result *res);

/**
 * aggregate_plan_case - Alg. 3's case @n_direct for @list without comparing cases: the first
 * @n_direct updates directly to @dst, the rest in groups through @aggs[0..k). With n_direct 0,
 * t_max is now, so a group closes at its first input that is not already at its aggregator:
 * the list becomes one aggregate at the last aggregator (plus at most one per other
 * aggregator for updates computed on its own host), i.e. the fewest transfers into @dst.
 * Reserved on @net and recorded in the plan like aggregate_plan (res->cost_s INFINITY when the
 * case cannot finish).
 * Returns 0, -EINVAL (n_direct outside 0..n, or groups without aggregators), -ENOMEM.
 */
int aggregate_plan_case(struct planwork *pw, struct netstate *net, const int *list, int n, int dst,
			enum plan_purpose purpose, const int *aggs, int k, int n_direct,
			struct aggregate_result *res);

/**
 * aggregate_distribute - model distribution (§10.3): answer the batch's pulls with copies of
 * the model (model_bytes, or pull.bytes) from the first server (or the pull's shard server), the first n pulls directly, the rest through
 * distribution trees (server -> distributor, distributor -> workers) chosen with the Alg. 3
 * variant: a distributor's group closes when its next worker would receive the model later
 * than every earlier delivery; the case whose last delivery ends first wins (ties: smallest n).
 * Pulls are taken in shortest-transfer-first order from the server. Transfers have purpose
 * PLAN_PURPOSE_MODEL, kind PLAN_CARRY_MODEL (carries = the pull answered; the copy sent to a
 * distributor carries the distributor's own pull when it pulled too, else its group's first
 * pull; shard -1: with a sharded model, pull.server says whose copy it is, and that shard's
 * server sends it directly). Pulls whose direct copy cannot arrive at all (a link on its path
 * ends at 0 Gbit/s first) get no transfer and go to plan.unanswered. Returns 0 or -ENOMEM.
 */
int aggregate_distribute(struct planwork *pw, struct netstate *net, const int *dists, int k);

/**
 * aggregate_commits - append the commits of @res's items to @arr (capacity *@cap): at the
 * server(s) when @host < 0 (one commit per shard server, at max(arrival, previous commit at
 * that server)), else one commit per item at @host (when its last leg arrived, in order).
 * Versions start from @v_base and grow by each item's count. Returns 0 or -ENOMEM.
 */
int aggregate_commits(struct planwork *pw, const struct aggregate_result *res, int host,
		      int64_t v_base, struct plan_commit **arr, int *n, int *cap);

/** aggregate_last_arrival - when the last byte of @res's items arrives (now_s if none). */
double aggregate_last_arrival(const struct planwork *pw, const struct aggregate_result *res);

/**
 * aggregate_item_job - rebuild the job that carries item @it of a plan towards @dst
 * (-1: the shard servers): the update's own legs, or the aggregate's (largest input per leg,
 * from the aggregator, leaving after t0_s).
 */
void aggregate_item_job(struct planwork *pw, const struct aggregate_item *it, int dst,
			struct planwork_job *job);

/** aggregate_result_free - release @res's items. */
void aggregate_result_free(struct aggregate_result *res);

#endif
