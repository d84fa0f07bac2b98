/* replicate.c - replica schedule, divergence bound from update norms, freeze/punt/delay (§5.3). */
#include "replicate.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

double replicate_history_bound(double gamma, double h0_norm, const double *norms, int p)
{
	double h = h0_norm;
	int l;

	for (l = 0; l < p; l++)
		h = gamma * h + norms[l];
	return h;
}

double replicate_divergence(double gamma, double h0_norm, const double *norms, int n, int p)
{
	double a = 0.0, g = 1.0, c = 0.0, d;
	int j, l;

	if (p >= n)
		return 0.0;
	for (j = 1; j <= n - p; j++) {
		g *= gamma;
		a += g; /* a = sum_{j=1..n-p} gamma^j */
	}
	d = a * replicate_history_bound(gamma, h0_norm, norms, p);
	for (l = n; l > p; l--) {
		c = c * gamma + 1.0; /* c = sum_{j=0..n-l} gamma^j */
		d += c * norms[l - 1];
	}
	return d;
}

/* Reserve a recorded transfer's own rate profile again (exactly what the plan says). */
static int rereserve(struct netstate *net, const struct plan_transfer *t)
{
	struct netstate_profile p = { t->n_rate, t->n_rate, t->rate, t->start_s, t->end_s };

	return netstate_reserve(net, t->src, t->dst, &p);
}

/* Marks of what the frozen replica items carry. */
struct frozen {
	char *upd;
	char *agg;
};

static int keep_transfer(const struct frozen *fz, const struct plan_transfer *t)
{
	return t->kind == PLAN_CARRY_UPDATE ? fz->upd[t->carries] : fz->agg[t->carries];
}

/*
 * Keep the plan's transfers from index @from that belong to frozen replica items (those
 * before @tr1 belong to the server's last item and are dropped), reserving each again.
 */
static int compact_transfers(struct planwork *pw, struct netstate *net, int from, int tr1,
			     const struct frozen *fz)
{
	struct plan *o = pw->out;
	int t, w = from, rc = 0;

	for (t = from; t < o->n_transfers; t++) {
		struct plan_transfer *tr = &o->transfers[t];

		if (t >= tr1 && keep_transfer(fz, tr)) {
			if (!rc)
				rc = rereserve(net, tr);
			o->transfers[w++] = *tr;
		} else {
			free(tr->rate);
		}
	}
	o->n_transfers = w;
	return rc;
}

static int add_replica_commits(struct planwork *pw, const struct aggregate_result *rres,
			       int nf, const double *c, const int *cum, int64_t v_base)
{
	struct plan *o = pw->out;
	int i;

	if (arr_grow((void **)&o->replica_commits, &pw->cap_replica_commits, nf,
			  sizeof(*o->replica_commits)))
		return -ENOMEM;
	for (i = 0; i < nf; i++) {
		struct plan_commit *pc = &o->replica_commits[o->n_replica_commits++];

		pc->host = pw->b->replica;
		pc->kind = rres->items[i].kind;
		pc->carries = rres->items[i].carries;
		pc->at_s = c[i];
		pc->version = v_base + cum[i];
	}
	return 0;
}

/* Forget the case in @res: its items, what the plan recorded since @tr1 / @ag1, and its
 * reservations (@net back to @m). */
static void discard_case(struct planwork *pw, struct netstate *net, struct netstate_mark m,
			 int tr1, int ag1, struct aggregate_result *res)
{
	struct plan *o = pw->out;

	aggregate_result_free(res);
	memset(res, 0, sizeof(*res));
	netstate_undo(net, m);
	while (o->n_transfers > tr1)
		free(o->transfers[--o->n_transfers].rate);
	while (o->n_aggregates > ag1)
		free(o->aggregates[--o->n_aggregates].inputs);
}

/* The replica copies seq[0..m) as Alg. 3's case n = 0 (one aggregate, §3.3 "aggressively
 * aggregated"): 1 kept (reserved and recorded in @rres) when every item commits by @t_last,
 * 0 rolled back, -ENOMEM. */
static int try_one_aggregate(struct planwork *pw, struct netstate *net, const int *seq, int m,
			     double t_last, const int *raggs, int kr, int tr1, int ag1,
			     struct netstate_mark m1, struct aggregate_result *rres)
{
	int rc = aggregate_plan_case(pw, net, seq, m, pw->b->replica, PLAN_PURPOSE_REPLICA, raggs,
				     kr, 0, rres);

	if (rc == -ENOMEM)
		return rc;
	if (rc == 0 && rres->cost_s <= t_last)
		return 1;
	discard_case(pw, net, m1, tr1, ag1, rres);
	return 0;
}

/* Copies (and items) of @res that commit at the replica by @t_last (items commit in order). */
static int copies_by(const struct planwork *pw, const struct aggregate_result *res, double t_last,
		     int *items)
{
	double prev = pw->b->now_s;
	int i, j, copies = 0;

	for (i = 0; i < res->n_items; i++) {
		for (j = 0; j < pw->n_legs; j++)
			prev = planwork_max(prev, res->items[i].arrival[j]);
		if (prev > t_last)
			break;
		copies += res->items[i].count;
	}
	*items = i;
	return copies;
}

/*
 * The replica schedule that sends the fewest bytes to the replica while the bound holds at
 * T_last (§3.3: "a large Div_max bound allows delaying several replicated updates, which can
 * be aggressively aggregated later, controlling network replication load"). p* is the
 * shortest prefix of @seq the replica must hold at @t_last for the bound (from the norms); F
 * the copies Alg. 3's fastest case commits by t_last, in k_F transfers. The longest prefix of
 * m = n, n/2, n/4, ... down to max(p*, F, 1) that commits by t_last as one aggregate (Alg. 3's
 * case n = 0: k_m transfers, 1 unless inputs sit at other aggregators) is kept, the rest
 * punted, when it is no worse in copies per transfer (m / k_m >= F / k_F): it then delivers
 * at least the fastest case's copies, in fewer bytes, without delaying the server. Otherwise
 * (and when the batch has no server commit, t_last infinite, or no replica aggregator) the
 * fastest case, which replicate_plan freezes by T_last, delaying the last server transfer when
 * the bound needs it. In the cluster benchmark this made no measurable difference
 * (BENCHMARKS.md, A/B of 2026-11-23); holding every copy back while the bound allows it was
 * measured worse (0.86 replica transfers per applied update at 16x the mean norm, 52%
 * overhead) and dropped.
 * Leaves the chosen case reserved, recorded and in @rres. Returns 0 or -ENOMEM.
 */
static int plan_replica_copies(struct planwork *pw, struct netstate *net, const int *seq, int n,
			       const double *norms, double t_last, const int *raggs, int kr,
			       int tr1, int ag1, struct netstate_mark m1,
			       struct aggregate_result *rres)
{
	const struct plan_batch *b = pw->b;
	int pstar = 0, m, lo, f, kf = 0, km, rc = 0;

	if (t_last == INFINITY || kr == 0 || n == 0)
		return aggregate_plan(pw, net, seq, n, b->replica, PLAN_PURPOSE_REPLICA, raggs, kr,
				      rres);
	while (pstar < n && replicate_divergence(b->momentum, b->history_norm, norms, n, pstar) >
				    b->div_max)
		pstar++;
	rc = aggregate_plan(pw, net, seq, n, b->replica, PLAN_PURPOSE_REPLICA, raggs, kr, rres);
	if (rc)
		return rc;
	f = copies_by(pw, rres, t_last, &kf);
	discard_case(pw, net, m1, tr1, ag1, rres);
	lo = pstar > f ? pstar : f;
	if (lo < 1)
		lo = 1;
	for (m = n; m >= lo; m = m > lo && m / 2 < lo ? lo : m / 2) {
		rc = try_one_aggregate(pw, net, seq, m, t_last, raggs, kr, tr1, ag1, m1, rres);
		if (rc < 0)
			return rc;
		if (rc == 1) {
			km = rres->n_items;
			if (kf == 0 || (long)m * kf >= (long)f * km)
				return 0;
			/* more transfers per copy: try a shorter one */
			discard_case(pw, net, m1, tr1, ag1, rres);
		}
		if (m == lo)
			break;
	}
	return aggregate_plan(pw, net, seq, n, b->replica, PLAN_PURPOSE_REPLICA, raggs, kr, rres);
}

int replicate_plan(struct planwork *pw, struct netstate *net, struct aggregate_result *sres,
		   const int *raggs, int kr)
{
	const struct plan_batch *b = pw->b;
	struct plan *o = pw->out;
	struct aggregate_result rres = { 0 };
	struct netstate_mark m1 = netstate_mark(net);
	struct frozen fz = { NULL, NULL };
	int tr1 = o->n_transfers, ag1 = o->n_aggregates;
	int *seq = NULL, *cum = NULL, L = 0, n, i, nf = 0, p = 0, delay = 0, rc;
	double *norms = NULL, *c = NULL, t_last, a_e = 0.0, prev;

	for (i = 0; i < b->n_updates; i++)
		L += b->updates[i].replica_only != 0;
	n = L + o->n_order;
	seq = malloc(((size_t)n + 1) * sizeof(*seq));
	norms = malloc(((size_t)n + 1) * sizeof(*norms));
	if (!seq || !norms) {
		rc = -ENOMEM;
		goto out;
	}
	/* The replica owes the carried copies first (they were committed at the server earlier). */
	for (i = 0, n = 0; i < b->n_updates; i++)
		if (b->updates[i].replica_only)
			seq[n++] = i;
	for (i = 0; i < o->n_order; i++)
		seq[n++] = o->order[i];
	for (i = 0; i < n; i++)
		norms[i] = b->updates[seq[i]].norm;
	/* With no server commit in this batch there is nothing to race: freeze everything. */
	t_last = o->n_order > 0 ? aggregate_last_arrival(pw, sres) : INFINITY;

	rc = plan_replica_copies(pw, net, seq, n, norms, t_last, raggs, kr, tr1, ag1, m1, &rres);
	if (rc)
		goto out;
	c = malloc(((size_t)rres.n_items + 1) * sizeof(*c));
	cum = malloc(((size_t)rres.n_items + 1) * sizeof(*cum));
	fz.upd = calloc((size_t)b->n_updates + 1, 1);
	fz.agg = calloc((size_t)o->n_aggregates + 1, 1);
	if (!c || !cum || !fz.upd || !fz.agg) {
		rc = -ENOMEM;
		goto out;
	}
	prev = b->now_s;
	for (i = 0; i < rres.n_items; i++) {
		int j;

		for (j = 0; j < pw->n_legs; j++)
			prev = planwork_max(prev, rres.items[i].arrival[j]);
		c[i] = prev; /* replica commits follow the order too */
		cum[i] = (i ? cum[i - 1] : 0) + rres.items[i].count;
	}
	while (nf < rres.n_items && c[nf] <= t_last)
		nf++;
	p = nf ? cum[nf - 1] : 0;
	if (replicate_divergence(b->momentum, b->history_norm, norms, n, p) > b->div_max) {
		/* Delay the last server transfer until the earliest replica commit that suffices. */
		for (i = nf; i < rres.n_items; i++)
			if (replicate_divergence(b->momentum, b->history_norm, norms, n, cum[i]) <=
			    b->div_max)
				break;
		if (i >= rres.n_items || sres->n_items == 0) {
			planwork_err(pw->error, sizeof(pw->error), "sssgs", "replica ", b->hosts[b->replica].name,
				     ": no replica commit keeps the divergence within div_max ", b->div_max,
				     ": its downlink or the path to it carries too little (at 0 Gbit/s for good: "
				     "nothing)");
			rc = -EINVAL;
			goto out;
		}
		nf = i + 1;
		p = cum[i];
		a_e = c[i];
		delay = 1;
	}
	for (i = 0; i < nf; i++) {
		const struct aggregate_item *it = &rres.items[i];

		if (it->kind == PLAN_CARRY_UPDATE) {
			fz.upd[it->carries] = 1;
		} else {
			const struct plan_aggregate *a = &o->aggregates[it->carries];
			int j;

			fz.agg[it->carries] = 1;
			for (j = 0; j < a->n_inputs; j++)
				fz.upd[a->inputs[j]] = 1;
		}
	}
	/* Roll the network back and reserve exactly what stays in the plan. */
	netstate_undo(net, delay ? sres->last_mark : m1);
	rc = compact_transfers(pw, net, delay ? sres->last_transfer : tr1, tr1, &fz);
	if (rc)
		goto out;
	/* Frozen replica aggregates are a prefix of the replica's aggregates. */
	while (o->n_aggregates > ag1 && !fz.agg[o->n_aggregates - 1])
		free(o->aggregates[--o->n_aggregates].inputs);
	if (delay) {
		struct aggregate_item *it = &sres->items[sres->n_items - 1];
		struct planwork_tag tag = { it->kind, it->carries, PLAN_PURPOSE_SERVER };
		struct planwork_job job;
		double end;

		aggregate_item_job(pw, it, -1, &job);
		job.t0_s = planwork_max(job.t0_s, a_e);
		it->t0_s = job.t0_s;
		end = planwork_job_reserve(pw, net, &job, &tag, it->arrival);
		if (end < 0.0) {
			rc = -ENOMEM;
			goto out;
		}
		if (end == INFINITY) {
			planwork_err(pw->error, sizeof(pw->error), "s", "the last server transfer, delayed for the "
				     "replica, can never finish (a link on its path is at 0 Gbit/s for good)");
			rc = -EINVAL;
			goto out;
		}
	}
	/* The replica's version at batch start: replica_lag updates behind the server. */
	rc = add_replica_commits(pw, &rres, nf, c, cum, b->v_init - b->replica_lag);
	if (rc)
		goto out;
	if (n - p > 0) {
		o->punted = malloc((size_t)(n - p) * sizeof(*o->punted));
		if (!o->punted) {
			rc = -ENOMEM;
			goto out;
		}
		memcpy(o->punted, seq + p, (size_t)(n - p) * sizeof(*seq));
		o->n_punted = n - p;
	}
	o->divergence_bound = replicate_divergence(b->momentum, b->history_norm, norms, n, p);
out:
	aggregate_result_free(&rres);
	free(seq);
	free(norms);
	free(c);
	free(cum);
	free(fz.upd);
	free(fz.agg);
	return rc;
}
