/* plan.c - plan_compute(): validate a batch, then order, aggregate, replicate, distribute (§5, §6, §10). */
#include "plan.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate.h"
#include "netstate.h"
#include "order.h"
#include "planwork.h"
#include "replicate.h"
#include "arr.h"

static int host_ok(const struct plan_batch *b, int h)
{
	return h >= 0 && h < b->n_hosts;
}

static int hosts_ok(const struct plan_batch *b, const int *v, int n)
{
	int i;

	if (n < 0 || (n > 0 && !v))
		return 0;
	for (i = 0; i < n; i++)
		if (!host_ok(b, v[i]))
			return 0;
	return 1;
}

static int rate_ok(double g)
{
	return isfinite(g) && g >= 0.0;
}

/* Shard layout: every update of a sharded batch has the same shards (server per index). */
static int shards_ok(const struct plan_batch *b, struct planwork *pw)
{
	int i, j, sharded = b->n_servers > 1;

	for (i = 0; i < b->n_updates; i++)
		if (b->updates[i].n_shards > 0)
			sharded = 1;
	pw->n_legs = 1;
	pw->leg_server[0] = 0;
	if (!sharded)
		return 1;
	for (i = 0; i < b->n_updates; i++) {
		const struct plan_update *u = &b->updates[i];

		if (u->n_shards <= 0 || u->n_shards > PLANWORK_MAX_LEGS || !u->shards)
			return 0;
		if (i == 0) {
			pw->n_legs = u->n_shards;
			for (j = 0; j < u->n_shards; j++)
				pw->leg_server[j] = u->shards[j].server;
		}
		if (u->n_shards != pw->n_legs)
			return 0;
		for (j = 0; j < u->n_shards; j++)
			if (u->shards[j].server != pw->leg_server[j] || u->shards[j].server < 0 ||
			    u->shards[j].server >= b->n_servers)
				return 0;
	}
	return 1;
}

static int batch_ok(const struct plan_batch *b, struct planwork *pw)
{
	int i;

	/* the limits the daemon applies to control messages (plan.h), with its messages */
	if (b->tau_max < 0 || b->tau_max > PLAN_MAX_TAU) {
		planwork_err(pw->error, sizeof(pw->error), "sdsd", "tau_max: out of range (0..",
			     (long long)PLAN_MAX_TAU, "), got ", (long long)b->tau_max);
		return 0;
	}
	if (b->v_init < -PLAN_MAX_VERSION || b->v_init > PLAN_MAX_VERSION || b->model_bytes > PLAN_MAX_BYTES) {
		planwork_err(pw->error, sizeof(pw->error), "s", b->model_bytes > PLAN_MAX_BYTES ?
			     "model_bytes: out of range (at most 1099511627776)" :
			     "v_init: out of range (magnitude at most 2^53)");
		return 0;
	}
	for (i = 0; i < b->n_updates && b->updates; i++) {
		const struct plan_update *u = &b->updates[i];
		if (u->bytes > PLAN_MAX_BYTES || u->version < -PLAN_MAX_VERSION || u->version > PLAN_MAX_VERSION) {
			planwork_err(pw->error, sizeof(pw->error), "sds", "updates[", (long long)i,
				     u->bytes > PLAN_MAX_BYTES ? "].bytes: out of range (1..1099511627776)" :
				     "].version: out of range (magnitude at most 2^53)");
			return 0;
		}
		for (int k = 0; k < u->n_shards && u->shards; k++)
			if (u->shards[k].bytes > PLAN_MAX_BYTES) {
				planwork_err(pw->error, sizeof(pw->error), "sdsds", "updates[", (long long)i,
					     "].shards[", (long long)k, "].bytes: out of range (1..1099511627776)");
				return 0;
			}
	}
	/* times are seconds from the batch origin (docs/plan-format.md): never before 0 */
	if (isfinite(b->now_s) && b->now_s < 0) {
		planwork_err(pw->error, sizeof(pw->error), "sg", "now_s: must be >= 0 seconds, got ", b->now_s);
		return 0;
	}
	for (i = 0; i < b->n_updates; i++)
		if (b->updates && isfinite(b->updates[i].ready_s) && b->updates[i].ready_s < 0) {
			planwork_err(pw->error, sizeof(pw->error), "sdsg", "updates[", (long long)i,
				     "].ready_s: must be >= 0 seconds, got ", b->updates[i].ready_s);
			return 0;
		}
	for (i = 0; i < b->n_pulls; i++)
		if (b->pulls && isfinite(b->pulls[i].ready_s) && b->pulls[i].ready_s < 0) {
			planwork_err(pw->error, sizeof(pw->error), "sdsg", "pulls[", (long long)i,
				     "].ready_s: must be >= 0 seconds, got ", b->pulls[i].ready_s);
			return 0;
		}
	if (b->n_hosts <= 0 || !b->hosts || b->n_servers < 1 ||
	    !hosts_ok(b, b->servers, b->n_servers) || (b->replica != -1 && !host_ok(b, b->replica)) ||
	    !hosts_ok(b, b->aggregators, b->n_aggregators) ||
	    !hosts_ok(b, b->replica_aggregators, b->n_replica_aggregators) ||
	    !hosts_ok(b, b->distributors, b->n_distributors) || !isfinite(b->now_s) ||
	    (b->mode != PLAN_MLFABRIC_A && b->mode != PLAN_MLFABRIC_S) || b->n_updates < 0 ||
	    (b->n_updates > 0 && !b->updates) || b->n_pulls < 0 || (b->n_pulls > 0 && !b->pulls) ||
	    (b->n_pulls > 0 && b->model_bytes == 0) || b->n_changes < 0 ||
	    (b->n_changes > 0 && !b->changes))
		return 0;
	if (b->replica >= 0 && (!(b->momentum >= 0.0 && b->momentum <= 1.0) ||
				!(b->div_max >= 0.0) || !(b->history_norm >= 0.0)))
		return 0;
	for (i = 0; i < b->n_hosts; i++)
		if (!rate_ok(b->hosts[i].up_gbps) || !rate_ok(b->hosts[i].down_gbps))
			return 0;
	for (i = 0; i < b->n_changes; i++)
		if (!host_ok(b, b->changes[i].host) || !rate_ok(b->changes[i].gbps) ||
		    !isfinite(b->changes[i].at_s))
			return 0;
	for (i = 0; i < b->n_updates; i++) {
		const struct plan_update *u = &b->updates[i];

		if (!host_ok(b, u->worker) || !isfinite(u->ready_s) || !(u->norm >= 0.0) ||
		    (u->replica_only && b->replica < 0) ||
		    (u->inflight && (!u->replica_only || !isfinite(u->inflight_s))))
			return 0;
	}
	for (i = 0; i < b->n_pulls; i++)
		if (!host_ok(b, b->pulls[i].worker) || !isfinite(b->pulls[i].ready_s) ||
		    b->pulls[i].server < 0 || b->pulls[i].server >= b->n_servers ||
		    b->pulls[i].bytes > PLAN_MAX_BYTES)
			return 0;
	if (b->n_servers > 1 && b->n_pulls > 0 && b->n_distributors > 0) {
		planwork_err(pw->error, sizeof(pw->error), "s", "distributors: distribution trees "
			     "(§10.3) are not planned for a sharded model (§10.2); each shard's server "
			     "answers its pulls directly");
		return 0;
	}
	return shards_ok(b, pw);
}

/* Aggregators by the smaller of their link capacities at now_s, largest first (ties: list). */
static int *sorted_hosts(const struct plan_batch *b, const int *v, int n)
{
	struct arr_key *k = malloc(((size_t)n + 1) * sizeof(*k));
	int *out = malloc(((size_t)n + 1) * sizeof(*out));
	int i;

	if (!k || !out) {
		free(k);
		free(out);
		return NULL;
	}
	for (i = 0; i < n; i++) {
		const struct plan_host *h = &b->hosts[v[i]];

		k[i].v = -(h->up_gbps < h->down_gbps ? h->up_gbps : h->down_gbps);
		k[i].i = i;
	}
	arr_sort_keys(k, n);
	for (i = 0; i < n; i++)
		out[i] = v[k[i].i];
	free(k);
	return out;
}

/* Commits of several shard servers interleave: sort them by time (stable). */
static int sort_commits(struct plan *o)
{
	struct arr_key *k;
	struct plan_commit *c;
	int i;

	if (o->n_commits < 2)
		return 0;
	k = malloc((size_t)o->n_commits * sizeof(*k));
	c = malloc((size_t)o->n_commits * sizeof(*c));
	if (!k || !c) {
		free(k);
		free(c);
		return -ENOMEM;
	}
	for (i = 0; i < o->n_commits; i++) {
		k[i].v = o->commits[i].at_s;
		k[i].i = i;
	}
	arr_sort_keys(k, o->n_commits);
	for (i = 0; i < o->n_commits; i++)
		c[i] = o->commits[k[i].i];
	memcpy(o->commits, c, (size_t)o->n_commits * sizeof(*c));
	free(k);
	free(c);
	return 0;
}

/* Per host, the largest capacity its downlink has at any time (for pruning bounds). */
static double *max_down(const struct plan_batch *b)
{
	double *m = malloc(((size_t)b->n_hosts + 1) * sizeof(*m));
	int i;

	if (!m)
		return NULL;
	for (i = 0; i < b->n_hosts; i++)
		m[i] = b->hosts[i].down_gbps;
	for (i = 0; i < b->n_changes; i++)
		if (b->changes[i].dir == PLAN_DOWN && b->changes[i].gbps > m[b->changes[i].host])
			m[b->changes[i].host] = b->changes[i].gbps;
	return m;
}

/*
 * @sb: @b with every time moved to seconds after @origin (its arrays of times copied, the rest
 * shared). Times near each other subtract exactly (Sterbenz), so nothing is lost; the planner
 * then works where a double resolves far below a nanosecond. 0 or -ENOMEM.
 */
static int shift_batch(const struct plan_batch *b, double origin, struct plan_batch *sb)
{
	*sb = *b;
	sb->now_s = b->now_s - origin;
	sb->changes = malloc(((size_t)b->n_changes + 1) * sizeof(*sb->changes));
	sb->updates = malloc(((size_t)b->n_updates + 1) * sizeof(*sb->updates));
	sb->pulls = malloc(((size_t)b->n_pulls + 1) * sizeof(*sb->pulls));
	if (!sb->changes || !sb->updates || !sb->pulls)
		return -ENOMEM;
	for (int i = 0; i < b->n_changes; i++) {
		sb->changes[i] = b->changes[i];
		sb->changes[i].at_s -= origin;
	}
	for (int i = 0; i < b->n_updates; i++) {
		sb->updates[i] = b->updates[i];
		sb->updates[i].ready_s -= origin;
		sb->updates[i].inflight_s -= origin;
	}
	for (int i = 0; i < b->n_pulls; i++) {
		sb->pulls[i] = b->pulls[i];
		sb->pulls[i].ready_s -= origin;
	}
	return 0;
}

static void shift_free(struct plan_batch *sb)
{
	/* a zeroed @sb (no shift) frees nothing */
	free(sb->changes);
	free(sb->updates);
	free(sb->pulls);
}

int plan_compute(const struct plan_batch *b0, enum plan_impl impl, struct plan *out)
{
	struct planwork pw;
	struct netstate net;
	struct aggregate_result sres = { 0 };
	struct plan_batch shifted;
	const struct plan_batch *b = b0;
	int *aggs = NULL, *raggs = NULL, *dists = NULL, rc;

	memset(out, 0, sizeof(*out));
	memset(&pw, 0, sizeof(pw));
	memset(&net, 0, sizeof(net));
	memset(&shifted, 0, sizeof(shifted));
	pw.b = b0;
	pw.impl = impl;
	pw.out = out;
	if (!b0 || (impl != PLAN_IMPL_FAST && impl != PLAN_IMPL_SIMPLE) || !batch_ok(b0, &pw)) {
		planwork_err(out->error, sizeof(out->error), "s",
			     pw.error[0] ? pw.error : "batch: inconsistent (an index out of range, no server, a "
						      "capacity or time that is not a finite number >= 0)");
		return -EINVAL;
	}
	/* Epoch-sized times: plan relative to the whole second of now_s (struct plan.origin_s;
	 * a whole number, so it prints exactly in a plan document). */
	if (b0->now_s >= PLAN_ORIGIN_MIN_S) {
		rc = shift_batch(b0, floor(b0->now_s), &shifted);
		b = &shifted;
		pw.b = b;
		if (rc) {
			shift_free(&shifted);
			planwork_err(out->error, sizeof(out->error), "s", "planning failed: out of memory");
			return rc;
		}
	}
	rc = netstate_init(&net, b);
	if (rc) {
		shift_free(&shifted);
		planwork_err(out->error, sizeof(out->error), "ss", "network state: ", strerror(-rc));
		return rc;
	}
	pw.max_down_gbps = max_down(b);
	aggs = sorted_hosts(b, b->aggregators, b->n_aggregators);
	raggs = sorted_hosts(b, b->replica_aggregators, b->n_replica_aggregators);
	dists = sorted_hosts(b, b->distributors, b->n_distributors);
	if (!aggs || !raggs || !dists || !pw.max_down_gbps) {
		rc = -ENOMEM;
		goto out;
	}
	/* 1. Order (Alg. 2; Alg. 1 for MLfabric-S), on the network before any reservation. */
	rc = order_compute(&pw, &net);
	if (rc)
		goto out;
	/* 2. Aggregation (Alg. 3) from the same network state: the tentative server schedule. */
	rc = aggregate_plan(&pw, &net, out->order, out->n_order, -1, PLAN_PURPOSE_SERVER, aggs,
			    b->n_aggregators, &sres);
	if (rc)
		goto out;
	/* 3. Replication (§5.3) on the residual network; may delay the last server transfer. */
	if (b->replica >= 0) {
		rc = replicate_plan(&pw, &net, &sres, raggs, b->n_replica_aggregators);
		if (rc)
			goto out;
	}
	rc = aggregate_commits(&pw, &sres, -1, b->v_init, &out->commits, &out->n_commits,
			       &pw.cap_commits);
	if (!rc)
		rc = sort_commits(out);
	/* 4. Model distribution (§10.3) on what is left. */
	if (!rc && b->n_pulls > 0)
		rc = aggregate_distribute(&pw, &net, dists, b->n_distributors);
out:
	aggregate_result_free(&sres);
	netstate_profile_free(&pw.prof);
	netstate_free(&net);
	free(aggs);
	free(raggs);
	free(dists);
	free(pw.max_down_gbps);
	if (!rc)
		out->origin_s = b == b0 ? 0.0 : floor(b0->now_s);
	shift_free(&shifted);
	if (rc) {
		plan_free(out);
		if (pw.error[0])
			planwork_err(out->error, sizeof(out->error), "s", pw.error);
		else
			planwork_err(out->error, sizeof(out->error), "ss", "planning failed: ", strerror(-rc));
	}
	return rc;
}

void plan_free(struct plan *p)
{
	int i;

	free(p->order);
	free(p->dropped);
	for (i = 0; i < p->n_aggregates; i++)
		free(p->aggregates[i].inputs);
	free(p->aggregates);
	for (i = 0; i < p->n_transfers; i++)
		free(p->transfers[i].rate);
	free(p->transfers);
	free(p->commits);
	free(p->replica_commits);
	free(p->punted);
	free(p->unanswered);
	free(p->inflight);
	free(p->inflight_s);
	memset(p, 0, sizeof(*p));
}

void plan_to_batch_time(struct plan *p)
{
	double o = p->origin_s;

	if (o == 0.0)
		return;
	for (int i = 0; i < p->n_transfers; i++) {
		struct plan_transfer *t = &p->transfers[i];

		t->start_s += o;
		t->end_s += o;
		for (int j = 0; j < t->n_rate; j++)
			t->rate[j].from_s += o;
	}
	for (int i = 0; i < p->n_commits; i++)
		p->commits[i].at_s += o;
	for (int i = 0; i < p->n_replica_commits; i++)
		p->replica_commits[i].at_s += o;
	for (int i = 0; i < p->n_inflight; i++)
		p->inflight_s[i] += o;
	p->origin_s = 0.0;
}

int plan_carry_next(const struct plan_batch *b, const struct plan *plan, struct plan_carry *c)
{
	double *norms;
	int *seq, i, n, p, nc = plan->n_inflight + plan->n_punted;

	memset(c, 0, sizeof(*c));
	norms = malloc(((size_t)b->n_updates + 1) * sizeof(*norms));
	seq = malloc(((size_t)b->n_updates + 1) * sizeof(*seq));
	if (!norms || !seq) {
		free(norms);
		free(seq);
		return -ENOMEM;
	}
	/* The replica's sequence, as replicate_plan builds it. */
	n = replicate_sequence(b, plan->order, plan->n_order, seq, NULL);
	for (i = 0; i < n; i++)
		norms[i] = b->updates[seq[i]].norm;
	p = b->replica >= 0 ? n - nc : n;
	c->history_norm = replicate_history_bound(b->momentum, b->history_norm, norms, p);
	free(norms);
	free(seq);
	if (nc > 0) {
		c->carried = malloc((size_t)nc * sizeof(*c->carried));
		c->carried_s = malloc((size_t)nc * sizeof(*c->carried_s));
		if (!c->carried || !c->carried_s) {
			plan_carry_free(c);
			return -ENOMEM;
		}
		for (i = 0; i < plan->n_inflight; i++) {
			c->carried[i] = plan->inflight[i];
			c->carried_s[i] = plan->inflight_s[i] + plan->origin_s;
		}
		for (i = 0; i < plan->n_punted; i++) {
			c->carried[plan->n_inflight + i] = plan->punted[i];
			c->carried_s[plan->n_inflight + i] = -1.0;
		}
	}
	c->n_carried = nc;
	c->replica_lag = nc;
	c->v_init = b->v_init + plan->n_order;
	return 0;
}

void plan_carry_free(struct plan_carry *c)
{
	free(c->carried);
	free(c->carried_s);
	memset(c, 0, sizeof(*c));
}

#define SAME_ARRAY(x, y, n) ((n) == 0 || memcmp((x), (y), (size_t)(n) * sizeof(*(x))) == 0)

static int same_commit(const struct plan_commit *x, const struct plan_commit *y)
{
	return x->host == y->host && x->kind == y->kind && x->carries == y->carries &&
	       x->at_s == y->at_s && x->version == y->version;
}

int plan_equal(const struct plan *a, const struct plan *b)
{
	int i;

	if (a->n_order != b->n_order || a->n_dropped != b->n_dropped ||
	    a->n_aggregates != b->n_aggregates || a->n_transfers != b->n_transfers ||
	    a->n_commits != b->n_commits || a->n_replica_commits != b->n_replica_commits ||
	    a->n_punted != b->n_punted || a->divergence_bound != b->divergence_bound ||
	    a->n_unanswered != b->n_unanswered || a->origin_s != b->origin_s ||
	    a->n_inflight != b->n_inflight)
		return 0;
	if (!SAME_ARRAY(a->unanswered, b->unanswered, a->n_unanswered) ||
	    !SAME_ARRAY(a->inflight, b->inflight, a->n_inflight) ||
	    !SAME_ARRAY(a->inflight_s, b->inflight_s, a->n_inflight) ||
	    !SAME_ARRAY(a->order, b->order, a->n_order) ||
	    !SAME_ARRAY(a->dropped, b->dropped, a->n_dropped) ||
	    !SAME_ARRAY(a->punted, b->punted, a->n_punted))
		return 0;
	for (i = 0; i < a->n_aggregates; i++) {
		const struct plan_aggregate *x = &a->aggregates[i], *y = &b->aggregates[i];

		if (x->host != y->host || x->target != y->target || x->purpose != y->purpose ||
		    x->n_inputs != y->n_inputs || !SAME_ARRAY(x->inputs, y->inputs, x->n_inputs))
			return 0;
	}
	for (i = 0; i < a->n_transfers; i++) {
		const struct plan_transfer *x = &a->transfers[i], *y = &b->transfers[i];

		if (x->kind != y->kind || x->carries != y->carries || x->shard != y->shard ||
		    x->src != y->src || x->dst != y->dst || x->bytes != y->bytes ||
		    x->purpose != y->purpose || x->start_s != y->start_s || x->end_s != y->end_s ||
		    x->n_rate != y->n_rate || !SAME_ARRAY(x->rate, y->rate, x->n_rate))
			return 0;
	}
	for (i = 0; i < a->n_commits; i++)
		if (!same_commit(&a->commits[i], &b->commits[i]))
			return 0;
	for (i = 0; i < a->n_replica_commits; i++)
		if (!same_commit(&a->replica_commits[i], &b->replica_commits[i]))
			return 0;
	return 1;
}
