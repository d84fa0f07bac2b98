/* plan_check.c - independent checker of plan invariants: link capacity sweep, causality, delay, order. */
#include "plan_check.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Written from docs/plan-format.md alone: nothing here is shared with the planner, so a bug in
 * the planner's residual-bandwidth bookkeeping cannot hide itself. Each check returns the first
 * violation with a message naming the invariant, the item and the numbers involved.
 */

struct ctx {
	const struct plan_batch *b;
	const struct plan *p;
	char *msg;
	size_t msglen;
};

static enum plan_check_result fail(struct ctx *c, enum plan_check_result r, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static enum plan_check_result fail(struct ctx *c, enum plan_check_result r, const char *fmt, ...)
{
	char body[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(body, sizeof(body), fmt, ap);
	va_end(ap);
	snprintf(c->msg, c->msglen, "%s: %s", plan_check_name(r), body);
	return r;
}

const char *plan_check_name(enum plan_check_result r)
{
	static const char *const names[] = {
		"ok", "structure", "invariant 1 (link capacity)",
		"invariant 2 (causality)", "invariant 3 (delay bound)",
		"invariant 4 (commit order)", "bytes", "replica", "divergence",
	};

	return (unsigned)r < sizeof(names) / sizeof(names[0]) ? names[r] : "unknown";
}

static const char *host(const struct ctx *c, int h)
{
	return c->b->hosts[h].name;
}

static const char *uid(const struct ctx *c, int u)
{
	return c->b->updates[u].id;
}

static double bytes_per_s(double gbps)
{
	return gbps * 1e9 / 8.0;
}

/* The size of the copy that answers pull @q: its own (a shard's copy, §10.2) or model_bytes. */
static uint64_t pull_bytes(const struct plan_batch *b, int q)
{
	return b->pulls[q].bytes ? b->pulls[q].bytes : b->model_bytes;
}

/* ---- structure ---- */

static int in_range(int x, int n)
{
	return x >= 0 && x < n;
}

static enum plan_check_result check_indexes(struct ctx *c)
{
	const struct plan_batch *b = c->b;
	const struct plan *p = c->p;

	for (int i = 0; i < p->n_order; i++)
		if (!in_range(p->order[i], b->n_updates))
			return fail(c, PLAN_CHECK_STRUCTURE, "order[%d] = %d out of range", i,
				    p->order[i]);
	for (int i = 0; i < p->n_dropped; i++)
		if (!in_range(p->dropped[i], b->n_updates))
			return fail(c, PLAN_CHECK_STRUCTURE, "dropped[%d] out of range", i);
	for (int i = 0; i < p->n_punted; i++)
		if (!in_range(p->punted[i], b->n_updates))
			return fail(c, PLAN_CHECK_STRUCTURE, "punted[%d] out of range", i);
	for (int i = 0; i < p->n_aggregates; i++) {
		const struct plan_aggregate *a = &p->aggregates[i];

		if (!in_range(a->host, b->n_hosts) || !in_range(a->target, b->n_hosts) ||
		    a->n_inputs < 1)
			return fail(c, PLAN_CHECK_STRUCTURE, "aggregate a%d: bad host, target or "
				    "no inputs", i);
		for (int j = 0; j < a->n_inputs; j++)
			if (!in_range(a->inputs[j], b->n_updates))
				return fail(c, PLAN_CHECK_STRUCTURE, "aggregate a%d input %d out "
					    "of range", i, j);
	}
	for (int i = 0; i < p->n_transfers; i++) {
		const struct plan_transfer *t = &p->transfers[i];
		int lim = t->kind == PLAN_CARRY_UPDATE ? b->n_updates :
			  t->kind == PLAN_CARRY_AGGREGATE ? p->n_aggregates :
			  t->kind == PLAN_CARRY_MODEL ? b->n_pulls : 0;

		if (!in_range(t->carries, lim) || !in_range(t->src, b->n_hosts) ||
		    !in_range(t->dst, b->n_hosts))
			return fail(c, PLAN_CHECK_STRUCTURE, "transfer t%d: carries/src/dst out of "
				    "range", i);
		if (t->shard >= 0 && (t->kind == PLAN_CARRY_MODEL || t->shard >= b->n_servers))
			return fail(c, PLAN_CHECK_STRUCTURE, "transfer t%d: shard %d invalid", i,
				    t->shard);
	}
	for (int i = 0; i < p->n_commits + p->n_replica_commits; i++) {
		const struct plan_commit *k = i < p->n_commits ? &p->commits[i] :
					      &p->replica_commits[i - p->n_commits];
		int lim = k->kind == PLAN_CARRY_UPDATE ? b->n_updates :
			  k->kind == PLAN_CARRY_AGGREGATE ? p->n_aggregates : 0;

		if (!in_range(k->carries, lim) || !in_range(k->host, b->n_hosts))
			return fail(c, PLAN_CHECK_STRUCTURE, "commit %d: carries/host out of range",
				    i);
	}
	return PLAN_CHECK_OK;
}

/* Every batch update is in exactly one of order/dropped (replica-only copies in neither). */
/*
 * Bytes link (@host, @dir) can carry from @from_s on when it ends at 0 Gbit/s for good (its last
 * capacity change sets 0): the capacity integral up to that change. -1 when it never dies.
 */
static double bytes_until_dead(const struct plan_batch *b, int host, enum plan_link_dir dir, double from_s)
{
	double gbps = dir == PLAN_UP ? b->hosts[host].up_gbps : b->hosts[host].down_gbps, t = b->now_s;
	double last_at = -INFINITY, last_gbps = gbps, bytes = 0, at_now = -INFINITY;

	for (int i = 0; i < b->n_changes; i++) {
		const struct plan_capacity_change *ch = &b->changes[i];
		if (ch->host != host || ch->dir != dir)
			continue;
		if (ch->at_s >= last_at) {
			last_at = ch->at_s;
			last_gbps = ch->gbps;
		}
		if (ch->at_s <= t && ch->at_s >= at_now) { /* the capacity in force at now_s */
			at_now = ch->at_s;
			gbps = ch->gbps;
		}
	}
	if (last_gbps > 0 || last_at == -INFINITY)
		return -1;
	/* walk the later steps in time order (changes are few: quadratic is fine for a checker) */
	for (;;) {
		int next = -1;
		for (int i = 0; i < b->n_changes; i++) {
			const struct plan_capacity_change *ch = &b->changes[i];
			if (ch->host == host && ch->dir == dir && ch->at_s > t &&
			    (next < 0 || ch->at_s < b->changes[next].at_s))
				next = i;
		}
		double end = next < 0 ? t : b->changes[next].at_s;
		double lo = t > from_s ? t : from_s;
		if (end > lo)
			bytes += gbps * 1e9 / 8 * (end - lo);
		if (next < 0)
			return bytes;
		t = b->changes[next].at_s;
		gbps = b->changes[next].gbps;
	}
}

/* MLfabric-S (§6) applies every update of an iteration; the one exception the planner makes is an
 * update that can never arrive: its worker's uplink or its server's downlink dies for good
 * before carrying the update's bytes. */
static int undeliverable(const struct plan_batch *b, const struct plan_update *u)
{
	int srv = b->servers[0];
	double up = bytes_until_dead(b, u->worker, PLAN_UP, u->ready_s);
	double down = bytes_until_dead(b, srv, PLAN_DOWN, u->ready_s);

	return (up >= 0 && up < (double)u->bytes) || (down >= 0 && down < (double)u->bytes);
}

static enum plan_check_result check_partition(struct ctx *c)
{
	const struct plan_batch *b = c->b;
	const struct plan *p = c->p;
	int *seen = calloc((size_t)b->n_updates + 1, sizeof(int));
	enum plan_check_result r = PLAN_CHECK_OK;

	for (int i = 0; i < p->n_order + p->n_dropped && !r; i++) {
		int u = i < p->n_order ? p->order[i] : p->dropped[i - p->n_order];

		if (b->updates[u].replica_only)
			r = fail(c, PLAN_CHECK_STRUCTURE, "replica-only update %s listed in %s",
				 uid(c, u), i < p->n_order ? "order" : "dropped");
		else if (seen[u]++)
			r = fail(c, PLAN_CHECK_STRUCTURE, "update %s listed twice in order/dropped",
				 uid(c, u));
	}
	for (int u = 0; u < b->n_updates && !r; u++)
		if (!b->updates[u].replica_only && !seen[u])
			r = fail(c, PLAN_CHECK_STRUCTURE, "update %s is in neither order nor "
				 "dropped", uid(c, u));
	for (int i = 0; i < p->n_dropped && !r && b->mode == PLAN_MLFABRIC_S; i++)
		if (!undeliverable(b, &b->updates[p->dropped[i]]))
			r = fail(c, PLAN_CHECK_STRUCTURE, "mode mlfabric-s drops no update it can "
				 "deliver, %s dropped", uid(c, p->dropped[i]));
	free(seen);
	return r;
}

/* Rate steps well formed and their integral equal to the bytes carried. */
static enum plan_check_result check_transfer_bytes(struct ctx *c)
{
	const struct plan_batch *b = c->b;

	for (int i = 0; i < c->p->n_transfers; i++) {
		const struct plan_transfer *t = &c->p->transfers[i];
		long double sent = 0;
		uint64_t want = 0;

		if (t->n_rate < 1 || !(t->end_s >= t->start_s) ||
		    fabs(t->rate[0].from_s - t->start_s) > PLAN_CHECK_TIME_TOL)
			return fail(c, PLAN_CHECK_STRUCTURE, "transfer t%d: rate must start at "
				    "start_s and end_s >= start_s", i);
		/* The dataplane starts a transfer at start_s: it must send from then on. */
		if (!(t->rate[0].gbps > 0))
			return fail(c, PLAN_CHECK_STRUCTURE, "transfer t%d: first rate step is "
				    "%g Gbit/s, must be > 0 (start_s is when sending begins)", i,
				    t->rate[0].gbps);
		for (int j = 0; j < t->n_rate; j++) {
			double to = j + 1 < t->n_rate ? t->rate[j + 1].from_s : t->end_s;

			if (!(t->rate[j].gbps >= 0) || !isfinite(t->rate[j].gbps) ||
			    to < t->rate[j].from_s - PLAN_CHECK_TIME_TOL)
				return fail(c, PLAN_CHECK_STRUCTURE, "transfer t%d: rate step %d "
					    "negative or out of time order", i, j);
			sent += (long double)bytes_per_s(t->rate[j].gbps) * (to - t->rate[j].from_s);
		}
		if (fabsl(sent - (long double)t->bytes) > PLAN_CHECK_BYTES_TOL * t->bytes + 1)
			return fail(c, PLAN_CHECK_BYTES, "transfer t%d: rate integral %.0Lf bytes, "
				    "carries %llu", i, sent, (unsigned long long)t->bytes);
		if (t->kind == PLAN_CARRY_UPDATE) {
			const struct plan_update *u = &b->updates[t->carries];

			want = t->shard >= 0 && u->n_shards > 0 ? u->shards[t->shard].bytes
								 : u->bytes;
		} else if (t->kind == PLAN_CARRY_MODEL) {
			want = pull_bytes(b, t->carries);
		}
		if (want && t->bytes != want)
			return fail(c, PLAN_CHECK_BYTES, "transfer t%d carries %llu bytes, its "
				    "payload has %llu", i, (unsigned long long)t->bytes,
				    (unsigned long long)want);
	}
	return PLAN_CHECK_OK;
}

/* ---- invariant 1: per-link capacity sweep ---- */

struct event {
	double t;
	double delta;   /* rate change (Gbit/s) when !is_cap */
	double cap;     /* new capacity when is_cap */
	int is_cap;
	int seq;        /* capacity changes: later entries win at equal times */
};

static int event_cmp(const void *a, const void *b)
{
	const struct event *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->seq - y->seq;
}

static int add_event(struct event **ev, int *n, int *cap, struct event e)
{
	if (*n == *cap) {
		int ncap = *cap ? *cap * 2 : 64;
		struct event *ne = realloc(*ev, (size_t)ncap * sizeof(*ne));

		if (!ne)
			return -1;
		*ev = ne;
		*cap = ncap;
	}
	e.seq = *n;
	(*ev)[(*n)++] = e;
	return 0;
}

/* Sweep one link: capacity step function vs the sum of the rates of its transfers. */
static enum plan_check_result sweep_link(struct ctx *c, int h, enum plan_link_dir dir,
					 struct event **ev, int *evcap)
{
	const struct plan_batch *b = c->b;
	const struct plan *p = c->p;
	double cap0 = dir == PLAN_UP ? b->hosts[h].up_gbps : b->hosts[h].down_gbps;
	long double load = 0;
	double cap = cap0;
	int n = 0, users = 0;

	for (int i = 0; i < b->n_changes; i++) {
		const struct plan_capacity_change *ch = &b->changes[i];

		if (ch->host == h && ch->dir == dir &&
		    add_event(ev, &n, evcap, (struct event){ .t = ch->at_s, .cap = ch->gbps,
							    .is_cap = 1 }))
			return fail(c, PLAN_CHECK_STRUCTURE, "out of memory");
	}
	for (int i = 0; i < p->n_transfers; i++) {
		const struct plan_transfer *t = &p->transfers[i];

		if (t->src == t->dst || (dir == PLAN_UP ? t->src : t->dst) != h)
			continue;
		users++;
		for (int j = 0; j < t->n_rate; j++) {
			double to = j + 1 < t->n_rate ? t->rate[j + 1].from_s : t->end_s;

			if (add_event(ev, &n, evcap, (struct event){ .t = t->rate[j].from_s,
								    .delta = t->rate[j].gbps }) ||
			    add_event(ev, &n, evcap, (struct event){ .t = to,
								    .delta = -t->rate[j].gbps }))
				return fail(c, PLAN_CHECK_STRUCTURE, "out of memory");
		}
	}
	if (users == 0)
		return PLAN_CHECK_OK;
	qsort(*ev, (size_t)n, sizeof(**ev), event_cmp);
	for (int i = 0; i < n;) {
		double t = (*ev)[i].t, next;

		for (; i < n && (*ev)[i].t == t; i++) {
			if ((*ev)[i].is_cap)
				cap = (*ev)[i].cap;
			else
				load += (*ev)[i].delta;
		}
		next = i < n ? (*ev)[i].t : INFINITY;
		/* Overlaps shorter than the time tolerance are rounding slivers, not reservations. */
		if (load > cap * (1 + PLAN_CHECK_RATE_TOL) + PLAN_CHECK_RATE_TOL &&
		    next - t > PLAN_CHECK_TIME_TOL) {
			char link[PLAN_NAME_MAX + 8];

			snprintf(link, sizeof(link), "%s.%s", host(c, h), dir == PLAN_UP ? "up" : "down");
			return fail(c, PLAN_CHECK_CAPACITY, "%s at t=%.9g s: %.9Lg Gbit/s reserved "
				    "> %.9g Gbit/s capacity", link, t, load, cap);
		}
	}
	return PLAN_CHECK_OK;
}

static enum plan_check_result check_capacity(struct ctx *c)
{
	struct event *ev = NULL;
	int evcap = 0;
	enum plan_check_result r = PLAN_CHECK_OK;

	for (int h = 0; h < c->b->n_hosts && !r; h++)
		for (int d = PLAN_UP; d <= PLAN_DOWN && !r; d++)
			r = sweep_link(c, h, (enum plan_link_dir)d, &ev, &evcap);
	free(ev);
	return r;
}

/* ---- invariant 2: causality ---- */

/* Latest end of the transfers of @purpose into @dst carrying (@kind, @carries); -INF if none. */
static double arrival(const struct plan *p, int dst, enum plan_carry_kind kind, int carries,
		      enum plan_purpose purpose)
{
	double at = -INFINITY;

	for (int i = 0; i < p->n_transfers; i++) {
		const struct plan_transfer *t = &p->transfers[i];

		if (t->dst == dst && t->kind == kind && t->carries == carries &&
		    t->purpose == purpose && t->end_s > at)
			at = t->end_s;
	}
	return at;
}

/*
 * Earliest start of a model copy to @dst carrying pull @q: a copy to a distributor serves the
 * pulls of its tree (the first pull of the batch), a copy to any other host serves @q itself.
 */
static double model_ready(const struct plan_batch *b, int dst, int q)
{
	double first = INFINITY;

	for (int i = 0; i < b->n_distributors; i++)
		if (b->distributors[i] == dst) {
			for (int k = 0; k < b->n_pulls; k++)
				if (b->pulls[k].ready_s < first)
					first = b->pulls[k].ready_s;
			return first;
		}
	return b->pulls[q].ready_s;
}

static enum plan_check_result check_causality(struct ctx *c)
{
	const struct plan_batch *b = c->b;
	const struct plan *p = c->p;
	const double tol = PLAN_CHECK_TIME_TOL;

	for (int i = 0; i < p->n_transfers; i++) {
		const struct plan_transfer *t = &p->transfers[i];

		if (t->start_s < b->now_s - tol)
			return fail(c, PLAN_CHECK_CAUSALITY, "transfer t%d starts at %.9g s before "
				    "now_s %.9g s", i, t->start_s, b->now_s);
		if (t->kind == PLAN_CARRY_UPDATE && t->src != b->updates[t->carries].worker)
			return fail(c, PLAN_CHECK_CAUSALITY, "transfer t%d sends %s from %s, computed "
				    "at %s", i, uid(c, t->carries), host(c, t->src),
				    host(c, b->updates[t->carries].worker));
		if (t->kind == PLAN_CARRY_UPDATE && t->start_s < b->updates[t->carries].ready_s - tol)
			return fail(c, PLAN_CHECK_CAUSALITY, "transfer t%d of %s starts at %.9g s "
				    "before ready_s %.9g s", i, uid(c, t->carries), t->start_s,
				    b->updates[t->carries].ready_s);
		if (t->kind == PLAN_CARRY_MODEL &&
		    t->start_s < model_ready(b, t->dst, t->carries) - tol)
			return fail(c, PLAN_CHECK_CAUSALITY, "model transfer t%d to %s starts at %.9g "
				    "s before the pull it serves was made", i, host(c, t->dst),
				    t->start_s);
		if (t->kind == PLAN_CARRY_AGGREGATE) {
			const struct plan_aggregate *a = &p->aggregates[t->carries];

			if (t->src != a->host)
				return fail(c, PLAN_CHECK_CAUSALITY, "transfer t%d sends aggregate "
					    "a%d from %s, formed at %s", i, t->carries,
					    host(c, t->src), host(c, a->host));
			for (int j = 0; j < a->n_inputs; j++) {
				int u = a->inputs[j];
				double in;

				if (b->updates[u].worker == a->host)
					continue;
				in = arrival(p, a->host, PLAN_CARRY_UPDATE, u, a->purpose);
				if (in == -INFINITY)
					return fail(c, PLAN_CHECK_CAUSALITY, "input %s of aggregate "
						    "a%d never reaches %s", uid(c, u), t->carries,
						    host(c, a->host));
				if (t->start_s < in - tol)
					return fail(c, PLAN_CHECK_CAUSALITY, "aggregate a%d leaves %s "
						    "at %.9g s before input %s arrives at %.9g s",
						    t->carries, host(c, a->host), t->start_s,
						    uid(c, u), in);
			}
		}
		if (t->kind == PLAN_CARRY_MODEL) {
			int from_server = 0;
			double in = INFINITY;

			for (int s = 0; s < b->n_servers; s++)
				from_server |= b->servers[s] == t->src;
			for (int k = 0; k < p->n_transfers && !from_server; k++) {
				const struct plan_transfer *o = &p->transfers[k];

				if (o->kind == PLAN_CARRY_MODEL && o->dst == t->src && o->end_s < in)
					in = o->end_s;
			}
			if (!from_server && t->start_s < in - tol)
				return fail(c, PLAN_CHECK_CAUSALITY, "model transfer t%d leaves %s "
					    "before a model copy reached it", i, host(c, t->src));
		}
	}
	return PLAN_CHECK_OK;
}

/*
 * Every pull is answered: a model copy reaches the worker that asked. (A distributor that pulls
 * may keep the copy it relays, even when that copy reached it before it asked: all pulls of a
 * batch get the same model.)
 */
static int server_slot(const struct plan_batch *b, int h);

/*
 * Every pull is answered by a model copy to its worker carrying it (the copy a distributor
 * receives may answer the distributor's own pull), or listed in `unanswered`, which a plan may
 * do only when no copy can ever get through: the worker's downlink dies for good (ends at
 * 0 Gbit/s) before carrying the copy's bytes, or the pull's server's uplink dies for good.
 * A copy that leaves a server leaves the pull's own server (a shard's copy, §10.2).
 */
static enum plan_check_result check_pulls(struct ctx *c)
{
	const struct plan_batch *b = c->b;
	const struct plan *p = c->p;
	char *listed = calloc((size_t)b->n_pulls + 1, 1);
	enum plan_check_result r = PLAN_CHECK_OK;

	if (!listed)
		return fail(c, PLAN_CHECK_STRUCTURE, "out of memory");
	for (int i = 0; i < p->n_unanswered && !r; i++) {
		int q = p->unanswered[i];

		if (!in_range(q, b->n_pulls) || (i > 0 && q <= p->unanswered[i - 1]))
			r = fail(c, PLAN_CHECK_STRUCTURE, "unanswered[%d] out of range or not "
				 "ascending", i);
		else
			listed[q] = 1;
	}
	for (int i = 0; i < p->n_transfers && !r; i++) {
		const struct plan_transfer *t = &p->transfers[i];
		int srv;

		if (t->kind != PLAN_CARRY_MODEL)
			continue;
		srv = b->servers[b->pulls[t->carries].server];
		if (server_slot(b, t->src) >= 0 && t->src != srv)
			r = fail(c, PLAN_CHECK_CAUSALITY, "model transfer t%d for pull %s leaves "
				 "server %s, the pull asks for %s's copy", i, b->pulls[t->carries].id,
				 host(c, t->src), host(c, srv));
		else if (listed[t->carries])
			r = fail(c, PLAN_CHECK_STRUCTURE, "pull %s is unanswered but transfer t%d "
				 "carries a copy for it", b->pulls[t->carries].id, i);
	}
	for (int q = 0; q < b->n_pulls && !r; q++) {
		const struct plan_pull *pl = &b->pulls[q];
		int answered = 0;

		for (int i = 0; i < p->n_transfers && !answered; i++)
			answered = p->transfers[i].kind == PLAN_CARRY_MODEL &&
				   p->transfers[i].carries == q && p->transfers[i].dst == pl->worker;
		if (listed[q]) {
			double down = bytes_until_dead(b, pl->worker, PLAN_DOWN, pl->ready_s);
			double up = bytes_until_dead(b, b->servers[pl->server], PLAN_UP, pl->ready_s);

			if (!((down >= 0 && down < (double)pull_bytes(b, q)) || up >= 0))
				r = fail(c, PLAN_CHECK_CAUSALITY, "pull %s left unanswered although "
					 "a copy can reach %s", pl->id, host(c, pl->worker));
		} else if (!answered) {
			r = fail(c, PLAN_CHECK_CAUSALITY, "pull %s: no model copy reaches %s",
				 pl->id, host(c, pl->worker));
		}
	}
	free(listed);
	return r;
}

/* ---- invariants 3 and 4: commit order, versions, delay ---- */

/* Number of updates a commit applies and, through @first, the update list it stands for. */
static int commit_updates(const struct plan *p, const struct plan_commit *k, const int **first)
{
	static int single;

	if (k->kind == PLAN_CARRY_AGGREGATE) {
		*first = p->aggregates[k->carries].inputs;
		return p->aggregates[k->carries].n_inputs;
	}
	single = k->carries;
	*first = &single;
	return 1;
}

static int server_slot(const struct plan_batch *b, int h)
{
	for (int s = 0; s < b->n_servers; s++)
		if (b->servers[s] == h)
			return s;
	return -1;
}

static enum plan_check_result check_commit_times(struct ctx *c, const struct plan_commit *k,
						 int n, enum plan_purpose purpose)
{
	const struct plan *p = c->p;

	for (int i = 0; i < n; i++) {
		double in = arrival(p, k[i].host, k[i].kind, k[i].carries, purpose);

		/* With a sharded model an aggregate carries one shard to every server. */
		if (k[i].kind == PLAN_CARRY_AGGREGATE &&
		    ((p->aggregates[k[i].carries].target != k[i].host &&
		      !(purpose == PLAN_PURPOSE_SERVER && c->b->n_servers > 1)) ||
		     p->aggregates[k[i].carries].purpose != purpose))
			return fail(c, PLAN_CHECK_ORDER, "aggregate a%d committed at %s, not its "
				    "target", k[i].carries, host(c, k[i].host));
		if (in == -INFINITY)
			return fail(c, PLAN_CHECK_CAUSALITY, "commit %d at %s: no transfer "
				    "delivers it there", i, host(c, k[i].host));
		if (k[i].at_s < in - PLAN_CHECK_TIME_TOL)
			return fail(c, PLAN_CHECK_CAUSALITY, "commit %d at %s at %.9g s before its "
				    "bytes arrive at %.9g s", i, host(c, k[i].host), k[i].at_s, in);
	}
	return PLAN_CHECK_OK;
}

static enum plan_check_result check_server_commits(struct ctx *c)
{
	const struct plan_batch *b = c->b;
	const struct plan *p = c->p;
	enum plan_check_result r = check_commit_times(c, p->commits, p->n_commits,
						      PLAN_PURPOSE_SERVER);

	for (int i = 0; i < p->n_commits && !r; i++)
		if (server_slot(b, p->commits[i].host) < 0)
			r = fail(c, PLAN_CHECK_ORDER, "commit %d at %s, not a server", i,
				 host(c, p->commits[i].host));
	for (int s = 0; s < b->n_servers && !r; s++) {
		int srv = b->servers[s], pos = 0;
		int64_t version = b->v_init;
		double last = -INFINITY;

		for (int i = 0; i < p->n_commits; i++) {
			const struct plan_commit *k = &p->commits[i];
			const int *in;
			int m;

			if (k->host != srv)
				continue;
			if (k->at_s < last)
				return fail(c, PLAN_CHECK_ORDER, "commits at %s not in time order "
					    "(commit %d at %.9g s)", host(c, srv), i, k->at_s);
			last = k->at_s;
			m = commit_updates(p, k, &in);
			for (int j = 0; j < m; j++, pos++) {
				if (pos >= p->n_order || p->order[pos] != in[j])
					return fail(c, PLAN_CHECK_ORDER, "%s commits %s at position "
						    "%d, order has %s", host(c, srv), uid(c, in[j]),
						    pos, pos < p->n_order ? uid(c, p->order[pos])
									  : "nothing");
				if (b->mode == PLAN_MLFABRIC_A &&
				    version - b->updates[in[j]].version > b->tau_max)
					return fail(c, PLAN_CHECK_DELAY, "%s applied at version "
						    "%lld, computed from %lld: delay %lld > tau_max "
						    "%lld", uid(c, in[j]), (long long)version,
						    (long long)b->updates[in[j]].version,
						    (long long)(version - b->updates[in[j]].version),
						    (long long)b->tau_max);
			}
			version += m;
			if (k->version != version)
				return fail(c, PLAN_CHECK_ORDER, "commit %d at %s has version %lld, "
					    "expected %lld", i, host(c, srv), (long long)k->version,
					    (long long)version);
		}
		if (pos != p->n_order)
			return fail(c, PLAN_CHECK_ORDER, "%s commits %d updates, order has %d",
				    host(c, srv), pos, p->n_order);
	}
	return r;
}

/* ---- replica ---- */

static enum plan_check_result check_replica(struct ctx *c)
{
	const struct plan_batch *b = c->b;
	const struct plan *p = c->p;
	int *state, pos = 0;   /* state[u]: 1 replicated, 2 punted */
	int64_t version = b->v_init - b->replica_lag;

	for (int u = 0; u < b->n_updates; u++)
		version += b->updates[u].inflight; /* in-flight copies commit first */
	double last = -INFINITY;
	enum plan_check_result r = PLAN_CHECK_OK;

	if (b->replica < 0) {
		if (p->n_replica_commits || p->n_punted)
			return fail(c, PLAN_CHECK_REPLICA, "replica commits or punted updates "
				    "without a replica");
		return PLAN_CHECK_OK;
	}
	if (!(p->divergence_bound >= 0) ||
	    p->divergence_bound > b->div_max * (1 + 1e-9) + 1e-12)
		return fail(c, PLAN_CHECK_DIVERGENCE, "divergence_bound %.9g > div_max %.9g",
			    p->divergence_bound, b->div_max);
	r = check_commit_times(c, p->replica_commits, p->n_replica_commits,
			       PLAN_PURPOSE_REPLICA);
	if (r)
		return r;
	state = calloc((size_t)b->n_updates + 1, sizeof(int));
	for (int i = 0; i < p->n_replica_commits && !r; i++) {
		const struct plan_commit *k = &p->replica_commits[i];
		const int *in;
		int m = commit_updates(p, k, &in);

		if (k->host != b->replica) {
			r = fail(c, PLAN_CHECK_REPLICA, "replica commit %d at %s, not the replica",
				 i, host(c, k->host));
			break;
		}
		if (k->at_s < last) {
			r = fail(c, PLAN_CHECK_REPLICA, "replica commits not in time order");
			break;
		}
		last = k->at_s;
		for (int j = 0; j < m && !r; j++) {
			int u = in[j];

			if (state[u])
				r = fail(c, PLAN_CHECK_REPLICA, "%s committed twice at the replica",
					 uid(c, u));
			else if (b->updates[u].inflight)
				r = fail(c, PLAN_CHECK_REPLICA, "%s is already in flight to the "
					 "replica and is sent again", uid(c, u));
			else if (b->updates[u].replica_only && pos > 0)
				r = fail(c, PLAN_CHECK_REPLICA, "carried replica-only %s after "
					 "updates of this batch", uid(c, u));
			else if (!b->updates[u].replica_only &&
				 (pos >= p->n_order || p->order[pos++] != u))
				r = fail(c, PLAN_CHECK_REPLICA, "replica commits %s, not a prefix "
					 "of order", uid(c, u));
			state[u] = 1;
		}
		version += m;
		if (!r && k->version != version)
			r = fail(c, PLAN_CHECK_REPLICA, "replica commit %d has version %lld, "
				 "expected %lld", i, (long long)k->version, (long long)version);
	}
	for (int i = 0; i < p->n_punted && !r; i++) {
		int u = p->punted[i];
		int in_order = 0;

		for (int j = 0; j < p->n_order; j++)
			in_order |= p->order[j] == u;
		if (state[u])
			r = fail(c, PLAN_CHECK_REPLICA, "%s both replicated and punted", uid(c, u));
		else if (b->updates[u].inflight)
			r = fail(c, PLAN_CHECK_REPLICA, "%s is in flight and punted", uid(c, u));
		else if (!in_order && !b->updates[u].replica_only)
			r = fail(c, PLAN_CHECK_REPLICA, "punted %s is not committed at the server",
				 uid(c, u));
		state[u] = 2;
	}
	for (int i = 0; i < p->n_order && !r; i++)
		if (!state[p->order[i]])
			r = fail(c, PLAN_CHECK_REPLICA, "%s neither replicated nor punted",
				 uid(c, p->order[i]));
	for (int u = 0; u < b->n_updates && !r; u++)
		if (b->updates[u].replica_only && !b->updates[u].inflight && !state[u])
			r = fail(c, PLAN_CHECK_REPLICA, "replica-only %s neither replicated nor "
				 "punted", uid(c, u));
	free(state);
	return r;
}

/*
 * Eq. 7 / 11 with the triangle inequality, written out from the paper: the replica holds the
 * first @p of the @n updates with norms @x the server applied, from a common state whose
 * history has norm @h0: ||w_s - w_r|| <= (sum_{j=1..n-p} g^j) ||h_p|| +
 * sum_{l=p+1..n} (sum_{j=0..n-l} g^j) ||u_l||, ||h_p|| <= g^p h0 + sum_{l<=p} g^(p-l) ||u_l||.
 */
static double divergence_bound(double g, double h0, const double *x, int n, int p)
{
	double hp = pow(g, p) * h0, a = 0.0, d = 0.0;

	for (int l = 1; l <= p; l++)
		hp += pow(g, p - l) * x[l - 1];
	for (int j = 1; j <= n - p; j++)
		a += pow(g, j);
	d = a * hp;
	for (int l = p + 1; l <= n; l++) {
		double cl = 0.0;

		for (int j = 0; j <= n - l; j++)
			cl += pow(g, j);
		d += cl * x[l - 1];
	}
	return d;
}

/*
 * The divergence bound at T_last (the last server commit; none: no race) re-derived: the
 * replica applies the in-flight copies (by inflight_s, from now_s on), then replica_commits,
 * and holds at T_last what has committed by then, which must be a prefix of that sequence;
 * the updates it still misses are the in-flight or punted ones. plan.inflight lists exactly
 * the copies under way after T_last, in commit order, with their times. The bound from the
 * norms must be within div_max, and the plan must not state less.
 */
static enum plan_check_result check_replica_bound(struct ctx *c)
{
	const struct plan_batch *b = c->b;
	const struct plan *p = c->p;
	const double tol = PLAN_CHECK_TIME_TOL;
	int n = 0, held = 0, nlate = 0, *seq;
	double t_last = -INFINITY, *x, *at, prev = b->now_s, d;
	enum plan_check_result r = PLAN_CHECK_OK;

	if (b->replica < 0)
		return p->n_inflight ? fail(c, PLAN_CHECK_REPLICA, "in-flight copies without a "
					    "replica") : PLAN_CHECK_OK;
	for (int i = 0; i < p->n_commits; i++)
		if (p->commits[i].at_s > t_last)
			t_last = p->commits[i].at_s;
	if (p->n_commits == 0)
		t_last = INFINITY;
	seq = calloc((size_t)b->n_updates + 1, sizeof(*seq));
	x = calloc((size_t)b->n_updates + 1, sizeof(*x));
	at = calloc((size_t)b->n_updates + 1, sizeof(*at));
	if (!seq || !x || !at) {
		free(seq), free(x), free(at);
		return fail(c, PLAN_CHECK_STRUCTURE, "out of memory");
	}
	/* in-flight copies in inflight_s order (ties: batch order) */
	for (int u = 0; u < b->n_updates; u++) {
		int j;

		if (!b->updates[u].inflight)
			continue;
		for (j = n; j > 0 && b->updates[seq[j - 1]].inflight_s > b->updates[u].inflight_s; j--)
			seq[j] = seq[j - 1];
		seq[j] = u;
		n++;
	}
	for (int i = 0; i < n; i++) {
		prev = fmax(prev, b->updates[seq[i]].inflight_s);
		at[i] = prev;
	}
	for (int i = 0; i < p->n_replica_commits && !r; i++) {
		const int *in;
		int m = commit_updates(p, &p->replica_commits[i], &in);

		if (p->replica_commits[i].at_s < prev - tol)
			r = fail(c, PLAN_CHECK_REPLICA, "replica commit %d at %.9g s before the "
				 "in-flight copies commit (%.9g s)", i, p->replica_commits[i].at_s, prev);
		for (int j = 0; j < m; j++) {
			at[n] = p->replica_commits[i].at_s;
			seq[n++] = in[j];
		}
	}
	for (int i = 0; i < n && !r; i++) {
		if (at[i] <= t_last + tol) {
			if (held != i)
				r = fail(c, PLAN_CHECK_REPLICA, "the replica holds %s at T_last but not "
					 "%s before it", uid(c, seq[i]), uid(c, seq[held]));
			held = i + 1;
			continue;
		}
		if (nlate >= p->n_inflight || p->inflight[nlate] != seq[i] ||
		    fabs(p->inflight_s[nlate] - at[i]) > tol)
			r = fail(c, PLAN_CHECK_REPLICA, "%s commits at the replica at %.9g s, after "
				 "T_last %.9g s: it must be in flight (inflight[%d])", uid(c, seq[i]),
				 at[i], t_last, nlate);
		nlate++;
	}
	if (!r && nlate != p->n_inflight)
		r = fail(c, PLAN_CHECK_REPLICA, "%d in-flight copies listed, %d commit after T_last",
			 p->n_inflight, nlate);
	for (int i = 0; i < p->n_punted && !r; i++)
		seq[n++] = p->punted[i];
	for (int i = 0; i < n; i++)
		x[i] = b->updates[seq[i]].norm;
	d = r ? 0.0 : divergence_bound(b->momentum, b->history_norm, x, n, held);
	if (!r && d > b->div_max * (1 + 1e-9) + 1e-12)
		r = fail(c, PLAN_CHECK_DIVERGENCE, "the replica holds %d of %d updates at T_last "
			 "%.9g s: divergence bound %.9g > div_max %.9g", held, n, t_last, d, b->div_max);
	if (!r && p->divergence_bound < d * (1 - 1e-9) - 1e-12)
		r = fail(c, PLAN_CHECK_DIVERGENCE, "divergence_bound %.9g states less than %.9g",
			 p->divergence_bound, d);
	free(seq);
	free(x);
	free(at);
	return r;
}

/*
 * A plan's times count from plan.origin_s (plan-format.md): @sb is @b with its times moved
 * there too. The shift of nearby doubles is exact, so the checks keep their tolerances. (The
 * planner has the same few lines in plan.c; they are repeated here on purpose: the checker
 * shares no code with the planner.)
 */
static int shift_to_origin(const struct plan_batch *b, double origin, struct plan_batch *sb)
{
	*sb = *b;
	sb->now_s -= origin;
	sb->changes = malloc(((size_t)b->n_changes + 1) * sizeof(*b->changes));
	sb->updates = malloc(((size_t)b->n_updates + 1) * sizeof(*b->updates));
	sb->pulls = malloc(((size_t)b->n_pulls + 1) * sizeof(*b->pulls));
	if (!sb->changes || !sb->updates || !sb->pulls)
		return -1;
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

static enum plan_check_result check_steps(struct ctx *c);

enum plan_check_result plan_check(const struct plan_batch *batch, const struct plan *plan,
				  char *msg, size_t msglen)
{
	struct plan_batch shifted;
	struct ctx c = { .b = batch, .p = plan, .msg = msg, .msglen = msglen };
	enum plan_check_result r = PLAN_CHECK_OK;

	if (msglen)
		msg[0] = '\0';
	if (plan->origin_s == 0.0)
		return check_steps(&c);
	if (!(plan->origin_s == floor(plan->origin_s)) || plan->origin_s > batch->now_s)
		return fail(&c, PLAN_CHECK_STRUCTURE, "origin_s %.17g is not a whole second at or "
			    "before now_s %.17g", plan->origin_s, batch->now_s);
	if (shift_to_origin(batch, plan->origin_s, &shifted))
		r = fail(&c, PLAN_CHECK_STRUCTURE, "out of memory");
	else {
		c.b = &shifted;
		r = check_steps(&c);
	}
	free(shifted.changes);
	free(shifted.updates);
	free(shifted.pulls);
	return r;
}

static enum plan_check_result check_steps(struct ctx *c)
{
	enum plan_check_result (*const steps[])(struct ctx *) = {
		check_indexes, check_partition, check_transfer_bytes, check_capacity,
		check_causality, check_pulls, check_server_commits, check_replica,
		check_replica_bound,
	};
	enum plan_check_result r = PLAN_CHECK_OK;

	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]) && !r; i++)
		r = steps[i](c);
	return r;
}

int plan_check_delay_violations(const struct plan_batch *b, const struct plan *p)
{
	int64_t version = b->v_init;
	int count = 0;

	if (b->mode != PLAN_MLFABRIC_A || b->n_servers < 1)
		return 0;
	for (int i = 0; i < p->n_commits; i++) {
		const struct plan_commit *k = &p->commits[i];
		const int *in;
		int m;

		if (k->host != b->servers[0])
			continue;
		m = commit_updates(p, k, &in);
		for (int j = 0; j < m; j++)
			count += version - b->updates[in[j]].version > b->tau_max;
		version += m;
	}
	return count;
}
