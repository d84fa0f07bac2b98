/* aggregate.c - Alg. 3 grouping through aggregators (§5.2) and its distribution-tree variant (§10.3). */
#include "aggregate.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* What one run of Alg. 3 works on. */
struct spec {
	int model;             /* 0: updates towards a server or the replica; 1: model copies */
	const int *list;       /* update indexes (or pull indexes), in order */
	int n;
	int dst;               /* update mode: replica host, or -1 for the shard servers */
	enum plan_purpose purpose;
	const int *hosts;      /* aggregators (or distributors), in the order groups use them */
	int k;
};

#define NOMEM (-1.0)

static void model_job(const struct planwork *pw, int src, int dst, double t0,
		      struct planwork_job *job)
{
	memset(job, 0, sizeof(*job));
	job->src = src;
	job->dst = dst;
	job->t0_s = planwork_max(t0, pw->b->now_s);
	job->bytes[0] = pw->b->model_bytes;
}

/* The job answering pull @p directly: from its shard's server (§10.2; the server otherwise). */
static void pull_job(const struct planwork *pw, const struct plan_pull *p, struct planwork_job *job)
{
	int sv = p->server > 0 && p->server < pw->b->n_servers ? p->server : 0;

	model_job(pw, pw->b->servers[sv], p->worker, p->ready_s, job);
	if (p->bytes)
		job->bytes[0] = p->bytes;
}

static int push_item(struct aggregate_result *res, const struct aggregate_item *it)
{
	if (arr_grow((void **)&res->items, &res->cap_items, res->n_items + 1,
			  sizeof(*res->items)))
		return -ENOMEM;
	res->items[res->n_items++] = *it;
	return 0;
}

/*
 * Reserve (and with @res, record) the job carrying item @it to its target; remembers the
 * network state before it, so that replication can delay the last one (§5.3).
 */
static double send_item(struct planwork *pw, struct netstate *net,
			const struct planwork_job *job, const struct planwork_tag *tag,
			struct aggregate_item *it, struct aggregate_result *res)
{
	double end;

	if (res) {
		res->last_mark = netstate_mark(net);
		res->last_transfer = pw->out->n_transfers;
		it->first_transfer = pw->out->n_transfers;
		it->t0_s = job->t0_s;
	}
	end = planwork_job_reserve(pw, net, job, res ? tag : NULL, it->arrival);
	if (end < 0.0 || end == INFINITY)
		return end;
	if (res && push_item(res, it))
		return NOMEM;
	return end;
}

/* The i-th item sent directly to the target. */
static double send_direct(struct planwork *pw, struct netstate *net, const struct spec *sp,
			  int i, int record, struct aggregate_result *res)
{
	struct planwork_job job;
	struct planwork_tag tag;
	struct aggregate_item it = { 0 };

	if (sp->model) {
		const struct plan_pull *p = &pw->b->pulls[sp->list[i]];

		pull_job(pw, p, &job);
		tag.kind = PLAN_CARRY_MODEL;
		tag.carries = sp->list[i];
		tag.purpose = PLAN_PURPOSE_MODEL;
		return planwork_job_reserve(pw, net, &job, record ? &tag : NULL, NULL);
	}
	planwork_update_job(pw, sp->list[i], sp->dst, &job);
	tag.kind = PLAN_CARRY_UPDATE;
	tag.carries = sp->list[i];
	tag.purpose = sp->purpose;
	it.kind = PLAN_CARRY_UPDATE;
	it.carries = sp->list[i];
	it.count = 1;
	return send_item(pw, net, &job, &tag, &it, res);
}

/*
 * The job of an aggregate of the @cnt updates @inputs at @host: same-size dense updates sum
 * to one as large as the largest input (per leg).
 */
static void aggregate_job(struct planwork *pw, int host, int dst, const int *inputs, int cnt,
			  double t0, struct planwork_job *job)
{
	struct planwork_job in;
	int i, j;

	memset(job, 0, sizeof(*job));
	job->src = host;
	job->dst = dst;
	job->t0_s = t0;
	for (i = 0; i < cnt; i++) {
		planwork_update_job(pw, inputs[i], dst, &in);
		for (j = 0; j < pw->n_legs; j++)
			if (in.bytes[j] > job->bytes[j])
				job->bytes[j] = in.bytes[j];
	}
}

/* Send the aggregate of list[from, from+cnt) from aggregator @host; returns its arrival. */
static double send_aggregate(struct planwork *pw, struct netstate *net, const struct spec *sp,
			     int host, int from, int cnt, double inputs_end,
			     struct aggregate_result *res)
{
	struct plan *o = pw->out;
	struct planwork_job job;
	struct planwork_tag tag;
	struct aggregate_item it = { 0 };

	/* The aggregate leaves only once every input has arrived (plan.md invariant 2). */
	aggregate_job(pw, host, sp->dst, sp->list + from, cnt,
		      planwork_max(inputs_end, pw->b->now_s), &job);
	it.kind = PLAN_CARRY_AGGREGATE;
	it.count = cnt;
	if (res) {
		struct plan_aggregate *a;

		if (arr_grow((void **)&o->aggregates, &pw->cap_aggregates,
				  o->n_aggregates + 1, sizeof(*o->aggregates)))
			return NOMEM;
		a = &o->aggregates[o->n_aggregates];
		memset(a, 0, sizeof(*a));
		a->inputs = malloc((size_t)cnt * sizeof(*a->inputs));
		if (!a->inputs)
			return NOMEM;
		a->host = host;
		a->target = sp->dst >= 0 ? sp->dst : pw->b->servers[pw->leg_server[0]];
		a->purpose = sp->purpose;
		a->n_inputs = cnt;
		memcpy(a->inputs, sp->list + from, (size_t)cnt * sizeof(*a->inputs));
		it.carries = o->n_aggregates++;
	}
	tag.kind = PLAN_CARRY_AGGREGATE;
	tag.carries = it.carries;
	tag.purpose = sp->purpose;
	return send_item(pw, net, &job, &tag, &it, res);
}

/*
 * A lower bound on when the last aggregate of a case can reach the target, once updates
 * list[from..n) remain for the aggregators hosts[aid..k): every byte of an update not computed
 * on one of those hosts crosses one of their downlinks after now_s, never faster than the sum
 * of their largest capacities. The margin keeps rounding from ever pruning a case that would
 * win (SIMPLE does not prune at all).
 */
static double groups_bound(const struct planwork *pw, const struct spec *sp, int from, int aid)
{
	double bytes = 0.0, cap = 0.0;
	int i, j;

	for (i = aid; i < sp->k; i++) {
		for (j = aid; j < i && sp->hosts[j] != sp->hosts[i]; j++)
			;
		if (j == i) /* each host once */
			cap += pw->max_down_gbps[sp->hosts[i]];
	}
	for (i = from; i < sp->n; i++) {
		const struct plan_update *u = &pw->b->updates[sp->list[i]];

		for (j = aid; j < sp->k && sp->hosts[j] != u->worker; j++)
			;
		if (j < sp->k)
			continue;
		if (u->n_shards == 0)
			bytes += (double)u->bytes;
		for (j = 0; j < u->n_shards; j++)
			bytes += (double)u->shards[j].bytes;
	}
	if (bytes == 0.0)
		return pw->b->now_s;
	if (!(cap > 0.0))
		return INFINITY;
	return pw->b->now_s + bytes * 8.0 / (cap * 1e9) * (1.0 - 1e-9);
}

/*
 * DetAgg lines 8-18 of Alg. 3 for the updates list[from..n): group after group through the
 * aggregators; @tmax is when the target is busy until after the direct ones. Returns when the
 * last byte reaches the target, INFINITY for an infeasible case or one that cannot beat
 * @prune (the best case so far), NOMEM on allocation failure.
 */
static double groups_update(struct planwork *pw, struct netstate *net, const struct spec *sp,
			    int from, double tmax, double prune, struct aggregate_result *res)
{
	int aid = 0, i = from, gfrom = from, gcnt = 0;
	double gend = pw->b->now_s;

	if (tmax >= prune)
		return INFINITY;
	while (i < sp->n) {
		struct planwork_job job;
		struct planwork_tag tag;
		double te;

		if (sp->k == 0)
			return INFINITY; /* no aggregator: only the all-direct case exists */
		if (gcnt == 0 && prune < INFINITY && groups_bound(pw, sp, i, aid) >= prune)
			return INFINITY;
		planwork_update_job(pw, sp->list[i], sp->hosts[aid], &job);
		te = planwork_job_tend(pw, net, &job);
		if (te < 0.0)
			return NOMEM;
		if (aid < sp->k - 1 && te > tmax) {
			/* Aggregating this input would keep the target waiting: close the group. */
			if (gcnt > 0) {
				double arr = send_aggregate(pw, net, sp, sp->hosts[aid], gfrom, gcnt,
							    gend, res);

				if (arr < 0.0 || arr == INFINITY)
					return arr;
				tmax = planwork_max(tmax, arr);
				if (tmax >= prune)
					return INFINITY;
			}
			aid++;
			gfrom = i;
			gcnt = 0;
			gend = pw->b->now_s;
			continue;
		}
		if (te == INFINITY)
			return INFINITY;
		tag.kind = PLAN_CARRY_UPDATE;
		tag.carries = sp->list[i];
		tag.purpose = sp->purpose;
		te = planwork_job_reserve(pw, net, &job, res ? &tag : NULL, NULL);
		if (te < 0.0)
			return NOMEM;
		gend = planwork_max(gend, te);
		/* The group's aggregate cannot reach the target before its inputs are in. */
		if (gend >= prune)
			return INFINITY;
		gcnt++;
		i++;
	}
	if (gcnt > 0) {
		double arr = send_aggregate(pw, net, sp, sp->hosts[aid], gfrom, gcnt, gend, res);

		if (arr < 0.0 || arr == INFINITY)
			return arr;
		tmax = planwork_max(tmax, arr);
	}
	return tmax >= prune ? INFINITY : tmax;
}

/* Drop the transfers recorded from index @from on (a distribution group that stayed empty). */
static void truncate_transfers(struct plan *o, int from)
{
	while (o->n_transfers > from)
		free(o->transfers[--o->n_transfers].rate);
}

/*
 * The distribution variant of groups_update: each group first gets a model copy from the
 * server to its distributor, then the distributor sends it to the group's workers.
 */
static double groups_model(struct planwork *pw, struct netstate *net, const struct spec *sp,
			   int from, double tmax, double prune, int record)
{
	const struct plan_batch *b = pw->b;
	int aid = 0, i = from;

	if (tmax >= prune)
		return INFINITY;
	while (i < sp->n) {
		struct netstate_mark m = netstate_mark(net);
		int tr0 = pw->out->n_transfers, d, gcnt = 0, own = -1;
		struct planwork_job job;
		struct planwork_tag tag = { PLAN_CARRY_MODEL, sp->list[i], PLAN_PURPOSE_MODEL };
		double a_d, gmax = b->now_s;

		if (sp->k == 0)
			return INFINITY;
		d = sp->hosts[aid];
		model_job(pw, b->servers[0], d, b->pulls[sp->list[i]].ready_s, &job);
		a_d = planwork_job_reserve(pw, net, &job, record ? &tag : NULL, NULL);
		if (a_d < 0.0 || a_d == INFINITY)
			return a_d;
		while (i < sp->n) {
			const struct plan_pull *p = &b->pulls[sp->list[i]];
			double te;

			model_job(pw, d, p->worker, planwork_max(a_d, p->ready_s), &job);
			te = planwork_job_tend(pw, net, &job);
			if (te < 0.0)
				return NOMEM;
			if (aid < sp->k - 1 && te > tmax)
				break;
			if (te == INFINITY)
				return INFINITY;
			tag.carries = sp->list[i];
			te = planwork_job_reserve(pw, net, &job, record ? &tag : NULL, NULL);
			if (te < 0.0)
				return NOMEM;
			if (p->worker == d)
				own = sp->list[i];
			gmax = planwork_max(gmax, te);
			gcnt++;
			i++;
		}
		if (gcnt == 0) {
			netstate_undo(net, m);
			truncate_transfers(pw->out, tr0);
		} else {
			/* A distributor that pulled too: its own copy answers its pull. */
			if (record && own >= 0 && pw->out->n_transfers > tr0 &&
			    pw->out->transfers[tr0].dst == d)
				pw->out->transfers[tr0].carries = own;
			tmax = planwork_max(tmax, gmax);
			if (tmax >= prune)
				return INFINITY;
		}
		aid++;
	}
	return tmax;
}

static double run_groups(struct planwork *pw, struct netstate *net, const struct spec *sp,
			 int from, double tmax, double prune, int record,
			 struct aggregate_result *res)
{
	if (sp->model)
		return groups_model(pw, net, sp, from, tmax, prune, record);
	return groups_update(pw, net, sp, from, tmax, prune, res);
}

/* The best case so far: its cost and n. */
struct best {
	double cost;
	int n;
};

/*
 * The pruning threshold for case @n: it wins only with a smaller cost, or an equal cost and a
 * smaller n (SIMPLE keeps the first of equal cases). Every bound test is "bound >= prune".
 */
static double prune_for(const struct best *bs, int n)
{
	return n < bs->n ? nextafter(bs->cost, INFINITY) : bs->cost;
}

static void consider(struct best *bs, int n, double cost)
{
	if (cost < bs->cost || (cost == bs->cost && cost < INFINITY && n < bs->n)) {
		bs->cost = cost;
		bs->n = n;
	}
}

/* SIMPLE: every case on a fresh copy of the network, no pruning. */
static int best_case_simple(struct planwork *pw, struct netstate *net, const struct spec *sp,
			    struct best *bs)
{
	int n;

	for (n = 0; n <= sp->n; n++) {
		struct netstate tmp;
		double tmax = pw->b->now_s, cost = 0.0;
		int i;

		if (netstate_copy(&tmp, net))
			return -ENOMEM;
		for (i = 0; i < n && cost != INFINITY; i++) {
			double e = send_direct(pw, &tmp, sp, i, 0, NULL);

			if (e < 0.0) {
				netstate_free(&tmp);
				return -ENOMEM;
			}
			if (e == INFINITY)
				cost = INFINITY;
			tmax = planwork_max(tmax, e);
		}
		if (cost != INFINITY)
			cost = run_groups(pw, &tmp, sp, n, tmax, INFINITY, 0, NULL);
		netstate_free(&tmp);
		if (cost < 0.0)
			return -ENOMEM;
		consider(bs, n, cost);
	}
	return 0;
}

/*
 * FAST: one network with an undo log. Pass 1 reserves the direct prefix once, remembering the
 * state P_n after the first n direct transfers and t_max of each; a coarse sample of cases,
 * visited from large n to small by rolling back to P_n, gives a good first best. Pass 2
 * enumerates every case in order: case n+1 is case n's prefix plus one reservation, the group
 * part is undone after each case, and a case stops as soon as a bound shows it cannot win
 * (see prune_for). Because t_max only grows with n, pass 2 stops once the prefix alone
 * cannot win. Pruning never discards a case SIMPLE would pick, so both choose the same n.
 */
static int best_case_fast(struct planwork *pw, struct netstate *net, const struct spec *sp,
			  struct best *bs)
{
	struct netstate_mark m0 = netstate_mark(net), *marks;
	double *tm, tmax = pw->b->now_s, cost, e;
	int n, neff = sp->n, step, rc = -ENOMEM;

	marks = malloc(((size_t)sp->n + 1) * sizeof(*marks));
	tm = malloc(((size_t)sp->n + 1) * sizeof(*tm));
	if (!marks || !tm)
		goto out;
	for (n = 0; n <= sp->n; n++) {
		marks[n] = netstate_mark(net);
		tm[n] = tmax;
		if (n == sp->n)
			break;
		e = send_direct(pw, net, sp, n, 0, NULL);
		if (e < 0.0)
			goto out;
		if (e == INFINITY) {
			neff = n; /* cases with more direct transfers never finish */
			break;
		}
		tmax = planwork_max(tmax, e);
	}
	step = neff / 16 > 1 ? neff / 16 : 1;
	for (n = neff; n >= 0; n -= step) {
		netstate_undo(net, marks[n]);
		cost = run_groups(pw, net, sp, n, tm[n], prune_for(bs, n), 0, NULL);
		netstate_undo(net, marks[n]);
		if (cost < 0.0)
			goto out;
		consider(bs, n, cost);
	}
	netstate_undo(net, m0);
	for (n = 0; n <= neff; n++) {
		struct netstate_mark m;
		double prune = prune_for(bs, n);

		if (n > bs->n && tm[n] >= prune)
			break;
		if (n != bs->n && tm[n] < prune) {
			m = netstate_mark(net);
			cost = run_groups(pw, net, sp, n, tm[n], prune, 0, NULL);
			netstate_undo(net, m);
			if (cost < 0.0)
				goto out;
			consider(bs, n, cost);
		}
		if (n < neff && send_direct(pw, net, sp, n, 0, NULL) < 0.0)
			goto out;
	}
	rc = 0;
out:
	netstate_undo(net, m0);
	free(marks);
	free(tm);
	return rc;
}

/* The best case of Alg. 3 (-1 in *best_n when none can finish). 0 or -ENOMEM. */
static int best_case(struct planwork *pw, struct netstate *net, const struct spec *sp,
		     int *best_n)
{
	struct best bs = { INFINITY, -1 };
	int rc = pw->impl == PLAN_IMPL_SIMPLE ? best_case_simple(pw, net, sp, &bs)
					      : best_case_fast(pw, net, sp, &bs);

	*best_n = bs.n;
	return rc;
}

/* Reserve and record case @n on @net. */
static int record_case(struct planwork *pw, struct netstate *net, const struct spec *sp, int n,
		       struct aggregate_result *res)
{
	double tmax = pw->b->now_s, cost;
	int i;

	for (i = 0; i < n; i++) {
		double e = send_direct(pw, net, sp, i, 1, res);

		if (e < 0.0)
			return -ENOMEM;
		tmax = planwork_max(tmax, e);
	}
	cost = run_groups(pw, net, sp, n, tmax, INFINITY, 1, res);
	if (cost < 0.0)
		return -ENOMEM;
	if (res) {
		res->n_direct = n;
		res->cost_s = cost;
	}
	return 0;
}

/* @res before a case is recorded: nothing reserved; 1 when @n == 0 (nothing to send, done). */
static int result_start(struct planwork *pw, struct netstate *net, int n,
			struct aggregate_result *res)
{
	memset(res, 0, sizeof(*res));
	res->cost_s = n == 0 ? pw->b->now_s : INFINITY;
	res->last_mark = netstate_mark(net);
	return n == 0;
}

int aggregate_plan(struct planwork *pw, struct netstate *net, const int *list, int n, int dst,
		   enum plan_purpose purpose, const int *aggs, int k, struct aggregate_result *res)
{
	struct spec sp = { 0, list, n, dst, purpose, aggs, k };
	int best_n, rc;

	if (result_start(pw, net, n, res))
		return 0;
	rc = best_case(pw, net, &sp, &best_n);
	if (rc || best_n < 0)
		return rc;
	return record_case(pw, net, &sp, best_n, res);
}

void aggregate_result_free(struct aggregate_result *res)
{
	free(res->items);
	memset(res, 0, sizeof(*res));
}

static int int_cmp(const void *x, const void *y)
{
	return *(const int *)x - *(const int *)y;
}

int aggregate_distribute(struct planwork *pw, struct netstate *net, const int *dists, int k)
{
	const struct plan_batch *b = pw->b;
	struct arr_key *keys;
	int *list, i, best_n, rc;
	struct spec sp = { 1, NULL, b->n_pulls, -1, PLAN_PURPOSE_MODEL, dists, k };

	if (b->n_pulls == 0)
		return 0;
	keys = malloc((size_t)b->n_pulls * sizeof(*keys));
	list = malloc((size_t)b->n_pulls * sizeof(*list));
	if (!keys || !list) {
		free(keys);
		free(list);
		return -ENOMEM;
	}
	for (i = 0; i < b->n_pulls; i++) {
		struct planwork_job job;

		pull_job(pw, &b->pulls[i], &job);
		/* Pulls in shortest-transfer-first order from the server (ties: pull index). */
		keys[i].v = netstate_tend(net, job.src, job.dst, job.t0_s, job.bytes[0], NULL);
		keys[i].i = i;
	}
	arr_sort_keys(keys, b->n_pulls);
	for (i = 0; i < b->n_pulls; i++)
		list[i] = keys[i].i;
	/* A pull whose direct copy never arrives (its downlink, or its server's uplink, ends at
	 * 0 Gbit/s first) is reached by no tree either: plan.unanswered, ascending. */
	while (sp.n > 0 && keys[sp.n - 1].v == INFINITY)
		sp.n--;
	if (sp.n < b->n_pulls) {
		int nu = b->n_pulls - sp.n;

		pw->out->unanswered = malloc((size_t)nu * sizeof(int));
		if (!pw->out->unanswered) {
			free(keys);
			free(list);
			return -ENOMEM;
		}
		memcpy(pw->out->unanswered, list + sp.n, (size_t)nu * sizeof(int));
		qsort(pw->out->unanswered, (size_t)nu, sizeof(int), int_cmp);
		pw->out->n_unanswered = nu;
	}
	sp.list = list;
	rc = best_case(pw, net, &sp, &best_n);
	if (!rc && best_n >= 0)
		rc = record_case(pw, net, &sp, best_n, NULL);
	free(keys);
	free(list);
	return rc;
}

int aggregate_commits(struct planwork *pw, const struct aggregate_result *res, int host,
		      int64_t v_base, struct plan_commit **arr, int *n, int *cap)
{
	double prev[PLANWORK_MAX_LEGS];
	int64_t v = v_base;
	int i, j;

	for (j = 0; j < PLANWORK_MAX_LEGS; j++)
		prev[j] = pw->b->now_s;
	for (i = 0; i < res->n_items; i++) {
		const struct aggregate_item *it = &res->items[i];
		int legs = host < 0 ? pw->n_legs : 1;

		v += it->count;
		if (arr_grow((void **)arr, cap, *n + legs, sizeof(**arr)))
			return -ENOMEM;
		for (j = 0; j < legs; j++) {
			struct plan_commit *c = &(*arr)[(*n)++];
			double t = it->arrival[j];
			int k;

			if (host >= 0)
				for (k = 1; k < pw->n_legs; k++)
					t = planwork_max(t, it->arrival[k]);
			/* The destination holds early arrivals: commits follow the order. */
			prev[j] = planwork_max(prev[j], t);
			c->host = host >= 0 ? host : pw->b->servers[pw->leg_server[j]];
			c->kind = it->kind;
			c->carries = it->carries;
			c->at_s = prev[j];
			c->version = v;
		}
	}
	return 0;
}

double aggregate_last_arrival(const struct planwork *pw, const struct aggregate_result *res)
{
	double t = pw->b->now_s;
	int i, j;

	for (i = 0; i < res->n_items; i++)
		for (j = 0; j < pw->n_legs; j++)
			t = planwork_max(t, res->items[i].arrival[j]);
	return t;
}

void aggregate_item_job(struct planwork *pw, const struct aggregate_item *it, int dst,
			struct planwork_job *job)
{
	const struct plan_aggregate *a;

	if (it->kind == PLAN_CARRY_UPDATE) {
		planwork_update_job(pw, it->carries, dst, job);
		job->t0_s = planwork_max(job->t0_s, it->t0_s);
		return;
	}
	a = &pw->out->aggregates[it->carries];
	aggregate_job(pw, a->host, dst, a->inputs, a->n_inputs, it->t0_s, job);
}

int aggregate_plan_case(struct planwork *pw, struct netstate *net, const int *list, int n, int dst,
			enum plan_purpose purpose, const int *aggs, int k, int n_direct,
			struct aggregate_result *res)
{
	struct spec sp = { 0, list, n, dst, purpose, aggs, k };

	if (result_start(pw, net, n, res))
		return 0;
	if (n_direct < 0 || n_direct > n || (n_direct < n && k == 0))
		return -EINVAL;
	return record_case(pw, net, &sp, n_direct, res);
}
