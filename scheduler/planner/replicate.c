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

/* Headroom of the lazy schedule, in batches' worth of norms: a catch-up starts when the
 * divergence at T_last plus this many times the batch's new norms would pass Div_max. */
#define REPLICA_HEADROOM 1.5

int replicate_sequence(const struct plan_batch *b, const int *order, int n_order, int *seq,
		       int *n_in)
{
	int i, j, n = 0, k;

	for (i = 0; i < b->n_updates; i++)
		if (b->updates[i].replica_only && b->updates[i].inflight) {
			/* insertion by inflight_s, stable */
			for (j = n; j > 0 && b->updates[seq[j - 1]].inflight_s > b->updates[i].inflight_s; j--)
				seq[j] = seq[j - 1];
			seq[j] = i;
			n++;
		}
	k = n;
	for (i = 0; i < b->n_updates; i++)
		if (b->updates[i].replica_only && !b->updates[i].inflight)
			seq[n++] = i;
	for (i = 0; i < n_order; i++)
		seq[n++] = order[i];
	if (n_in)
		*n_in = k;
	return n;
}

/*
 * The replica schedule for the new copies seq2 = @seq[n_in..n) (the first n_in are in flight,
 * holding from @cin[k] on). Lazy replication first (see replicate_plan): with Div_max > 0,
 * while the bound holds at @t_last without new copies nothing is sent (or, when it would not
 * hold a batch later and nothing is in flight, one catch-up aggregate of every new copy that
 * may commit after t_last: *@late = 1). Otherwise the schedule that sends the fewest bytes
 * while the bound holds at T_last: p* is the shortest prefix of @seq the replica must hold
 * at @t_last for the bound (from the norms); F the copies Alg. 3's fastest case commits by
 * t_last, in k_F transfers. The longest prefix of m = n2, n2/2, ... down to max(p* - n_in,
 * F, 1) that commits by t_last as one aggregate (Alg. 3's case n = 0: k_m transfers, 1 unless
 * inputs sit at other aggregators) is kept, the rest punted, when it is no worse in copies
 * per transfer (m / k_m >= F / k_F). Otherwise (and when the batch has no server commit,
 * t_last infinite, or no replica aggregator) the fastest case, which replicate_plan freezes
 * by T_last, delaying the last server transfer when the bound needs it.
 * Leaves the chosen case reserved, recorded and in @rres. Returns 0 or -ENOMEM.
 */
static int plan_replica_copies(struct planwork *pw, struct netstate *net, const int *seq, int n,
			       int n_in, const double *cin, const double *norms, int n_order,
			       double t_last, const int *raggs, int kr, int tr1, int ag1,
			       struct netstate_mark m1, struct aggregate_result *rres, int *late)
{
	const struct plan_batch *b = pw->b;
	const int *seq2 = seq + n_in;
	int n2 = n - n_in, pstar = 0, m, lo, f, kf = 0, km, rc = 0, held = 0;

	*late = 0;
	if (n2 == 0)
		return 0;
	if (t_last == INFINITY || kr == 0)
		return aggregate_plan(pw, net, seq2, n2, b->replica, PLAN_PURPOSE_REPLICA, raggs, kr,
				      rres);
	while (held < n_in && cin[held] <= t_last)
		held++;
	if (b->div_max > 0.0 &&
	    replicate_divergence(b->momentum, b->history_norm, norms, n, held) <= b->div_max) {
		double d = replicate_divergence(b->momentum, b->history_norm, norms, n, held), g = 0.0;

		for (int i = n - n_order; i < n; i++)
			g += norms[i];
		if (n_in > 0 || d + REPLICA_HEADROOM * g <= b->div_max)
			return 0; /* punt every new copy: the bound holds without them */
		/* the catch-up: every owed copy in one aggregate, committing when it can */
		rc = aggregate_plan_case(pw, net, seq2, n2, b->replica, PLAN_PURPOSE_REPLICA, raggs,
					 kr, 0, rres);
		if (rc == -ENOMEM)
			return rc;
		if (rc == 0 && rres->cost_s < INFINITY) {
			*late = 1;
			return 0;
		}
		discard_case(pw, net, m1, tr1, ag1, rres);
	}
	while (pstar < n && replicate_divergence(b->momentum, b->history_norm, norms, n, pstar) >
				    b->div_max)
		pstar++;
	pstar = pstar > n_in ? pstar - n_in : 0;
	rc = aggregate_plan(pw, net, seq2, n2, b->replica, PLAN_PURPOSE_REPLICA, raggs, kr, rres);
	if (rc)
		return rc;
	f = copies_by(pw, rres, t_last, &kf);
	discard_case(pw, net, m1, tr1, ag1, rres);
	lo = pstar > f ? pstar : f;
	if (lo < 1)
		lo = 1;
	for (m = n2; m >= lo; m = m > lo && m / 2 < lo ? lo : m / 2) {
		rc = try_one_aggregate(pw, net, seq2, m, t_last, raggs, kr, tr1, ag1, m1, rres);
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
	return aggregate_plan(pw, net, seq2, n2, b->replica, PLAN_PURPOSE_REPLICA, raggs, kr, rres);
}

/* Copies the items [0..k) of @rres carry. */
static int items_copies(const struct aggregate_result *rres, int k)
{
	int c = 0;

	for (int i = 0; i < k; i++)
		c += rres->items[i].count;
	return c;
}

/* Append update @u (commit time @t) to the plan's in-flight list. */
static int add_inflight(struct plan *o, int u, double t)
{
	int *a = realloc(o->inflight, ((size_t)o->n_inflight + 1) * sizeof(*a));
	double *s;

	if (!a)
		return -ENOMEM;
	o->inflight = a;
	s = realloc(o->inflight_s, ((size_t)o->n_inflight + 1) * sizeof(*s));
	if (!s)
		return -ENOMEM;
	o->inflight_s = s;
	o->inflight[o->n_inflight] = u;
	o->inflight_s[o->n_inflight++] = t;
	return 0;
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
	int *seq = NULL, *cum = NULL, n, n_in = 0, i, nc, nf = 0, nk, p = 0, delay = 0, late = 0, rc;
	double *norms = NULL, *c = NULL, t_last, a_e = 0.0, prev;

	seq = malloc(((size_t)b->n_updates + 1) * sizeof(*seq));
	norms = malloc(((size_t)b->n_updates + 1) * sizeof(*norms));
	if (!seq || !norms) {
		rc = -ENOMEM;
		goto out;
	}
	/* The replica owes the carried copies first (they were committed at the server earlier),
	 * the ones already under way before the others. */
	n = replicate_sequence(b, o->order, o->n_order, seq, &n_in);
	for (i = 0; i < n; i++)
		norms[i] = b->updates[seq[i]].norm;
	/* With no server commit in this batch there is nothing to race: freeze everything. */
	t_last = o->n_order > 0 ? aggregate_last_arrival(pw, sres) : INFINITY;
	/* Items in replica commit order: the in-flight copies (one each), then the new items. */
	c = malloc(((size_t)n + 1) * sizeof(*c));
	cum = malloc(((size_t)n + 1) * sizeof(*cum));
	if (!c || !cum) {
		rc = -ENOMEM;
		goto out;
	}
	prev = b->now_s;
	for (i = 0; i < n_in; i++) {
		prev = planwork_max(prev, b->updates[seq[i]].inflight_s);
		c[i] = prev;
		cum[i] = i + 1;
	}
	rc = plan_replica_copies(pw, net, seq, n, n_in, c, norms, o->n_order, t_last, raggs, kr,
				 tr1, ag1, m1, &rres, &late);
	if (rc)
		goto out;
	for (i = 0; i < rres.n_items; i++) {
		int j;

		for (j = 0; j < pw->n_legs; j++)
			prev = planwork_max(prev, rres.items[i].arrival[j]);
		c[n_in + i] = prev; /* replica commits follow the order too */
		cum[n_in + i] = (n_in + i ? cum[n_in + i - 1] : 0) + rres.items[i].count;
	}
	nc = n_in + rres.n_items;
	fz.upd = calloc((size_t)b->n_updates + 1, 1);
	fz.agg = calloc((size_t)o->n_aggregates + 1, 1);
	if (!fz.upd || !fz.agg) {
		rc = -ENOMEM;
		goto out;
	}
	while (nf < nc && c[nf] <= t_last)
		nf++;
	p = nf ? cum[nf - 1] : 0;
	if (replicate_divergence(b->momentum, b->history_norm, norms, n, p) > b->div_max) {
		/* Delay the last server transfer until the earliest replica commit that suffices. */
		for (i = nf; i < nc; i++)
			if (replicate_divergence(b->momentum, b->history_norm, norms, n, cum[i]) <=
			    b->div_max)
				break;
		if (i >= nc || sres->n_items == 0) {
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
	/* New items kept: those frozen by T_last (or a_e), or all of a catch-up. */
	nk = late ? rres.n_items : (nf > n_in ? nf - n_in : 0);
	for (i = 0; i < nk; i++) {
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
		t_last = aggregate_last_arrival(pw, sres);
	}
	/* The replica's version at batch start: replica_lag updates behind the server; the
	 * in-flight copies commit first. */
	rc = add_replica_commits(pw, &rres, nk, c + n_in, cum + n_in, b->v_init - b->replica_lag);
	if (rc)
		goto out;
	/* What the replica holds at T_last: a prefix of the items; the kept rest is in flight. */
	nf = 0;
	while (nf < n_in + nk && c[nf] <= t_last)
		nf++;
	p = nf ? cum[nf - 1] : 0;
	for (i = nf; i < n_in + nk && !rc; i++) {
		if (i < n_in) {
			rc = add_inflight(o, seq[i], c[i]);
			continue;
		}
		const struct aggregate_item *it = &rres.items[i - n_in];
		if (it->kind == PLAN_CARRY_UPDATE) {
			rc = add_inflight(o, it->carries, c[i]);
		} else {
			const struct plan_aggregate *a = &o->aggregates[it->carries];

			for (int j = 0; j < a->n_inputs && !rc; j++)
				rc = add_inflight(o, a->inputs[j], c[i]);
		}
	}
	if (rc)
		goto out;
	/* The rest of the new copies waits for a later batch. */
	{
		int sent = n_in + items_copies(&rres, nk);

		if (n - sent > 0) {
			o->punted = malloc((size_t)(n - sent) * sizeof(*o->punted));
			if (!o->punted) {
				rc = -ENOMEM;
				goto out;
			}
			memcpy(o->punted, seq + sent, (size_t)(n - sent) * sizeof(*seq));
			o->n_punted = n - sent;
		}
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
