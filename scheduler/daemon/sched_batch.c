/* sched_batch.c - build a plan_batch from the daemon state, plan it, and command the plan. */
#include "sched_batch.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "arr.h"
#include "clock.h"
#include "log.h"
#include "sched_arrival.h"
#include "sched_cmd.h"
#include "sched_gather.h"
#include "sched_lead.h"
#include "sched_policy.h"
#include "sched_rec.h"
#include "sched_select.h"
#include "sched_repl.h"
#include "sched_shard.h"
#include "sched_xfer.h"

double sched_batch_link_gbps(const struct sched *s, int host, int up, double now)
{
	const struct sched_host *h = &s->hosts[host];
	const struct sched_link_report *best = NULL;

	for (int i = 0; i < h->n_reports; i++) {
		const struct sched_link_report *r = &h->reports[i];
		if (r->t <= now - s->cfg.t_lag_s && (!best || r->t > best->t))
			best = r;
	}
	double g = best ? (up ? best->up_gbps : best->down_gbps) :
			  (up ? s->cl.hosts[host].up_gbps : s->cl.hosts[host].down_gbps);
	if (s->cfg.capacity_measured) { /* the measured estimate, at most the declared capacity */
		double m = sched_netmon_gbps(s, host, up);
		if (m < g)
			g = m;
	}
	return g;
}

/*
 * The residual of one link from @now_s on: capacity @cap minus the profiles of the transfers
 * commanded earlier that still run on it. Sets *@at_now and appends capacity changes.
 */
static int carry_link(const struct sched *s, int host, int up, double cap, double now_s,
		      double *at_now, struct plan_capacity_change **ch, int *n_ch, int *cap_ch)
{
	double *bp, res = cap - sched_xfer_link_rate(s, host, up, now_s);
	int n_bp = sched_xfer_link_breaks(s, host, up, now_s, &bp);

	if (n_bp < 0)
		return -ENOMEM;
	*at_now = res > 0 ? res : 0;
	double last = *at_now;
	for (int b = 0; b < n_bp; b++) {
		res = cap - sched_xfer_link_rate(s, host, up, bp[b]);
		if (res < 0)
			res = 0;
		if (res == last)
			continue;
		last = res;
		if (arr_grow((void **)ch, cap_ch, *n_ch + 1, sizeof(**ch))) {
			free(bp);
			return -ENOMEM;
		}
		(*ch)[(*n_ch)++] = (struct plan_capacity_change){
			.host = host, .dir = up ? PLAN_UP : PLAN_DOWN, .at_s = bp[b], .gbps = res };
	}
	free(bp);
	return 0;
}

/* Per-update bookkeeping of one batch's commands (arrays of b->n_updates). */
struct cmd_work {
	uint64_t *aggx;   /* transfer id of each aggregate (server and replica) */
	int *agg_of;      /* server aggregate of update i, or -1 */
	int *ragg_of;     /* replica aggregate of update i, or -1 */
	int *left;        /* copies of update i still to command in this batch */
	char *more;       /* 1: update i's replica copy is punted (a later copy follows) */
	char *rcommit;    /* 1: update i's replica copy is committed in this batch */
	char *sent;       /* server copy (or pull) commanded through a plan transfer */
	char *rsent;      /* replica copy commanded through a plan transfer */
	/* model distribution (§10.3), arrays of p->n_transfers */
	uint64_t *model_x; /* transfer id of each model copy */
	int *fwd_in;      /* a distributor's forward: index of the server's copy it forwards */
	int *n_fwd;       /* a server's copy to a distributor: forwards of it */
	int models_left;  /* model copies the server still sends in this batch (`keep`) */
	int64_t at_version; /* the batch's snapshot: at this server version at least (fresh pulls,
			     * docs/scheduler.md "Fresh pulls"); -1 = as the server stands */
};

static void cmd_work_free(struct cmd_work *w)
{
	free(w->aggx);
	free(w->agg_of);
	free(w->ragg_of);
	free(w->left);
	free(w->more);
	free(w->rcommit);
	free(w->sent);
	free(w->rsent);
	free(w->model_x);
	free(w->fwd_in);
	free(w->n_fwd);
}

/*
 * The model copies of plan @p (§10.3): transfer ids, and for each distributor's forward the
 * server's copy to that distributor it forwards (the latest one before it in the plan: the
 * planner records a group's server copy, then its forwards). Counts the server's copies (the
 * planned ones and the direct copies of pulls no plan transfer answers) for `keep`.
 */
static int model_work_init(struct sched *s, const struct plan_batch *b, const struct plan *p,
			   struct cmd_work *w)
{
	size_t nt = (size_t)p->n_transfers + 1;
	int srv = s->server.host;

	w->model_x = calloc(nt, sizeof(*w->model_x));
	w->fwd_in = malloc(sizeof(int) * nt);
	w->n_fwd = calloc(nt, sizeof(int));
	if (!w->model_x || !w->fwd_in || !w->n_fwd)
		return -ENOMEM;
	w->models_left = b->n_pulls;
	for (int i = 0; i < p->n_transfers; i++) {
		const struct plan_transfer *t = &p->transfers[i];
		w->fwd_in[i] = -1;
		if (t->kind != PLAN_CARRY_MODEL)
			continue;
		w->model_x[i] = sched_xfer_fresh(s);
		if (t->src == srv) {
			/* a copy to a distributor that did not pull answers no pull: one more */
			w->models_left += t->dst != b->pulls[t->carries].worker;
			continue;
		}
		for (int j = i - 1; j >= 0 && w->fwd_in[i] < 0; j--)
			if (p->transfers[j].kind == PLAN_CARRY_MODEL && p->transfers[j].src == srv &&
			    p->transfers[j].dst == t->src)
				w->fwd_in[i] = j;
		if (w->fwd_in[i] >= 0) {
			w->n_fwd[w->fwd_in[i]]++;
			w->models_left--; /* this pull is answered by a forward */
		}
	}
	return 0;
}

/* Fill @w for plan @p; assigns aggregate and replica transfer ids. Returns 0 or -ENOMEM. */
static int cmd_work_init(struct sched *s, const struct plan_batch *b, const struct plan *p,
			 const int *sel, struct cmd_work *w)
{
	size_t nu = (size_t)b->n_updates + 1;

	w->aggx = calloc((size_t)p->n_aggregates + 1, sizeof(*w->aggx));
	w->agg_of = malloc(sizeof(int) * nu);
	w->ragg_of = malloc(sizeof(int) * nu);
	w->left = calloc(nu, sizeof(int));
	w->more = calloc(nu, 1);
	w->rcommit = calloc(nu, 1);
	w->sent = calloc(nu + (size_t)b->n_pulls, 1);
	w->rsent = calloc(nu, 1);
	if (!w->aggx || !w->agg_of || !w->ragg_of || !w->left || !w->more || !w->rcommit ||
	    !w->sent || !w->rsent)
		return -ENOMEM;
	for (int i = 0; i < b->n_updates; i++)
		w->agg_of[i] = w->ragg_of[i] = -1;
	for (int a = 0; a < p->n_aggregates; a++) {
		const struct plan_aggregate *ag = &p->aggregates[a];
		w->aggx[a] = sched_xfer_fresh(s);
		for (int k = 0; k < ag->n_inputs; k++)
			(ag->purpose == PLAN_PURPOSE_SERVER ? w->agg_of : w->ragg_of)[ag->inputs[k]] = a;
	}
	for (int k = 0; k < p->n_order; k++)
		w->left[p->order[k]]++;
	for (int c = 0; c < p->n_replica_commits; c++) {
		const struct plan_commit *pc = &p->replica_commits[c];
		int one = pc->carries;
		int m = pc->kind == PLAN_CARRY_AGGREGATE ? p->aggregates[one].n_inputs : 1;
		const int *in = pc->kind == PLAN_CARRY_AGGREGATE ? p->aggregates[one].inputs : &one;
		for (int k = 0; k < m; k++) {
			struct sched_update *u = &s->upd[sel[in[k]]];
			w->rcommit[in[k]] = 1;
			w->left[in[k]]++;
			u->rxfer = sched_xfer_fresh(s);
			u->ragg = w->ragg_of[in[k]] >= 0 ? w->aggx[w->ragg_of[in[k]]] : 0;
		}
	}
	for (int k = 0; k < p->n_punted; k++)
		w->more[p->punted[k]] = 1;
	return model_work_init(s, b, p, w);
}

/* Whether the copy of update @i commanded now is followed by another (`keep`). */
static int keep_next(struct cmd_work *w, int i)
{
	return --w->left[i] > 0 || w->more[i];
}

/* The `order`s: the server's commit order (chan 1), then the replica's (chan 4). */
static void command_orders(struct sched *s, const struct plan_batch *b, const struct plan *p,
			   const int *sel, const struct cmd_work *w)
{
	int srv = s->server.host;
	json_t *xs = json_array();

	for (int c = 0; c < p->n_commits; c++) {
		const struct plan_commit *pc = &p->commits[c];
		if (pc->host == srv)
			json_array_append_new(xs, json_integer((json_int_t)(pc->kind ==
				PLAN_CARRY_AGGREGATE ? w->aggx[pc->carries] : s->upd[sel[pc->carries]].id)));
	}
	sched_cmd_order(s, "server", srv, 1, xs);
	if (b->replica < 0)
		return;
	xs = json_array();
	for (int c = 0; c < p->n_replica_commits; c++) {
		const struct plan_commit *pc = &p->replica_commits[c];
		json_array_append_new(xs, json_integer((json_int_t)(pc->kind == PLAN_CARRY_AGGREGATE ?
			w->aggx[pc->carries] : s->upd[sel[pc->carries]].rxfer)));
	}
	sched_cmd_order(s, "replica", b->replica, 4, xs);
}

/*
 * `send` of a model copy by the server: one snapshot for the whole batch (@batch tag, `keep`
 * while more copies of it follow, `at_version` when the batch's pulls wait for updates: docs/
 * scheduler.md "Fresh pulls"), @fwd forwards of it by its destination (docs/control.md).
 */
static json_t *model_msg(struct sched *s, uint64_t pull, uint64_t xfer, int dst, uint64_t bytes,
			 const struct plan_transfer *t, double now_s, struct cmd_work *w, int fwd)
{
	json_t *m = sched_cmd_send(s, "model", pull, xfer, dst, 3, bytes, t, now_s,
			     --w->models_left > 0);

	json_object_set_new(m, "batch", json_integer(s->batch_no));
	if (w->at_version >= 0)
		json_object_set_new(m, "at_version", json_integer(w->at_version));
	if (fwd)
		json_object_set_new(m, "forwards", json_integer(fwd));
	return m;
}

/*
 * Model copy @t (plan transfer @ti, §10.3): from the server, a `send` to the server app (the
 * pull it answers, 0 when it only feeds a distributor); from a distributor, a `forward` to the
 * worker app there naming the server's copy it forwards (xfer_in). A forward whose incoming
 * copy is not in the plan is left to the direct copies of command_plan.
 */
static int command_model(struct sched *s, const struct plan_batch *b, const int *psel,
			 const struct sched_pull *pulls, struct cmd_work *w,
			 const struct plan_transfer *t, int ti)
{
	const struct sched_pull *pl = &pulls[psel[t->carries]];
	int srv = s->server.host, answers = t->dst == pl->worker, in = w->fwd_in[ti];
	uint64_t x = w->model_x[ti];

	if (t->src == srv) {
		if (answers)
			w->sent[b->n_updates + t->carries] = 1;
		sched_to_app(s, "server", srv, model_msg(s, answers ? pl->id : 0, x, t->dst,
			     t->bytes, t, b->now_s, w, w->n_fwd[ti]));
		return sched_xfer_add(s, &(struct sched_xfer){ .xfer = x, .what = SCHED_WHAT_MODEL,
				      .id = answers ? pl->id : 0, .src = srv, .dst = t->dst,
				      .chan = 3, .bytes = t->bytes, .n_fwd = w->n_fwd[ti] }, t,
				      b->now_s);
	}
	if (in < 0) {
		log_err("batch %d: model copy %s -> %s has no copy from the server to forward; "
			"the server answers pull %" PRIu64 " itself", s->batch_no,
			s->cl.hosts[t->src].name, s->cl.hosts[t->dst].name, pl->id);
		return 0;
	}
	w->sent[b->n_updates + t->carries] = 1;
	sched_to_app(s, "worker", t->src, json_pack(
		"{s:s, s:I, s:I, s:I, s:s, s:i, s:I, s:f, s:o, s:i}", "type", "forward",
		"xfer_in", (json_int_t)w->model_x[in], "xfer", (json_int_t)x, "id",
		(json_int_t)pl->id, "dst", s->cl.hosts[t->dst].name, "chan", 3, "bytes",
		(json_int_t)t->bytes, "start", s->t0 + t->start_s, "steps", sched_cmd_steps(t),
		"forwards", w->n_fwd[in]));
	return sched_xfer_add(s, &(struct sched_xfer){ .xfer = x, .what = SCHED_WHAT_MODEL,
			      .id = pl->id, .src = t->src, .dst = t->dst, .chan = 3,
			      .bytes = t->bytes, .from_xfer = w->model_x[in] }, t, b->now_s);
}

/* Command plan transfer @t (an update copy, an aggregate or a model). */
static int command_transfer(struct sched *s, const struct plan_batch *b, const struct plan *p,
			    const int *sel, const int *psel, const struct sched_pull *pulls,
			    struct cmd_work *w, const struct plan_transfer *t)
{
	int srv = s->server.host, rep = t->purpose == PLAN_PURPOSE_REPLICA, rc;

	if (t->kind == PLAN_CARRY_UPDATE) {
		int i = t->carries;
		struct sched_update *u = &s->upd[sel[i]];
		int direct = t->dst == (rep ? b->replica : srv);
		int chan = direct ? (rep ? 4 : 1) : 2;
		uint64_t x = rep ? u->rxfer : direct ? u->id : sched_xfer_fresh(s);
		if (rep)
			w->rsent[i] = 1;
		else
			w->sent[i] = 1;
		if (!rep)
			u->xfer = x;
		sched_to_app(s, "worker", u->worker, sched_cmd_send(s, "update", u->id, x, t->dst, chan,
			     u->bytes, t, b->now_s, keep_next(w, i)));
		rc = sched_xfer_add(s, &(struct sched_xfer){ .xfer = x, .what = SCHED_WHAT_UPDATE,
				    .id = u->id, .src = t->src, .dst = t->dst, .chan = chan,
				    .bytes = u->bytes, .replica = rep }, t, b->now_s);
	} else if (t->kind == PLAN_CARRY_AGGREGATE) {
		const struct plan_aggregate *ag = &p->aggregates[t->carries];
		json_t *in = json_array();
		for (int k = 0; k < ag->n_inputs; k++)
			json_array_append_new(in, json_integer(
				(json_int_t)s->upd[sel[ag->inputs[k]]].id));
		sched_to_app(s, "aggregator", ag->host, json_pack(
			"{s:s, s:I, s:o, s:s, s:i, s:I, s:f, s:o}", "type", "aggregate",
			"agg", (json_int_t)w->aggx[t->carries], "inputs", in,
			"dst", s->cl.hosts[t->dst].name, "chan", rep ? 4 : 1, "bytes",
			(json_int_t)t->bytes, "start", s->t0 + t->start_s, "steps",
			sched_cmd_steps(t)));
		rc = sched_xfer_add(s, &(struct sched_xfer){ .xfer = w->aggx[t->carries],
				    .what = SCHED_WHAT_AGGREGATE, .src = t->src, .dst = t->dst,
				    .chan = rep ? 4 : 1, .bytes = t->bytes, .replica = rep }, t,
				    b->now_s);
	} else {
		rc = command_model(s, b, psel, pulls, w, t, (int)(t - p->transfers));
	}
	return rc;
}

/* Copies within one host (no network, no plan transfer): unpaced, now. */
static int command_local(struct sched *s, const struct plan_batch *b, const struct plan *p,
			 const int *sel, struct cmd_work *w)
{
	int srv = s->server.host, rc = 0;

	for (int k = 0; k < p->n_order && !rc; k++) {
		int i = p->order[k];
		struct sched_update *u = &s->upd[sel[i]];
		if (w->sent[i])
			continue;
		int dst = w->agg_of[i] >= 0 ? p->aggregates[w->agg_of[i]].host : srv;
		int chan = w->agg_of[i] >= 0 ? 2 : 1;
		u->xfer = chan == 1 ? u->id : sched_xfer_fresh(s);
		sched_to_app(s, "worker", u->worker, sched_cmd_send(s, "update", u->id, u->xfer, dst,
			     chan, u->bytes, NULL, b->now_s, keep_next(w, i)));
		rc = sched_xfer_add(s, &(struct sched_xfer){ .xfer = u->xfer,
				    .what = SCHED_WHAT_UPDATE, .id = u->id, .src = u->worker,
				    .dst = dst, .chan = chan, .bytes = u->bytes }, NULL, b->now_s);
	}
	for (int i = 0; i < b->n_updates && !rc; i++) {
		struct sched_update *u = &s->upd[sel[i]];
		if (!w->rcommit[i] || w->rsent[i])
			continue;
		int dst = w->ragg_of[i] >= 0 ? p->aggregates[w->ragg_of[i]].host : b->replica;
		int chan = w->ragg_of[i] >= 0 ? 2 : 4;
		sched_to_app(s, "worker", u->worker, sched_cmd_send(s, "update", u->id, u->rxfer, dst,
			     chan, u->bytes, NULL, b->now_s, keep_next(w, i)));
		rc = sched_xfer_add(s, &(struct sched_xfer){ .xfer = u->rxfer,
				    .what = SCHED_WHAT_UPDATE, .id = u->id, .src = u->worker,
				    .dst = dst, .chan = chan, .bytes = u->bytes, .replica = 1 }, NULL,
				    b->now_s);
	}
	return rc;
}

/*
 * The commands of @p (docs/control.md, docs/replication.md): the orders first, then
 * transfers, local sends, drops. Every update gets exactly one command without `keep`
 * (its last copy) or a `drop`; a punted copy keeps the worker holding it. The model copies
 * take the snapshot at @at_version at least (-1: as the server stands).
 */
static int command_plan(struct sched *s, const struct plan_batch *b, const struct plan *p,
			const int *sel, const int *psel, const struct sched_pull *pulls,
			int64_t at_version)
{
	struct cmd_work w;
	int rc;

	memset(&w, 0, sizeof(w));
	w.at_version = at_version;
	rc = cmd_work_init(s, b, p, sel, &w);
	if (rc)
		goto out;
	command_orders(s, b, p, sel, &w);
	for (int i = 0; i < p->n_transfers && !rc; i++)
		rc = command_transfer(s, b, p, sel, psel, pulls, &w, &p->transfers[i]);
	if (!rc)
		rc = command_local(s, b, p, sel, &w);
	for (int q = 0; q < b->n_pulls && !rc; q++) {
		if (w.sent[b->n_updates + q])
			continue;
		const struct sched_pull *pl = &pulls[psel[q]];
		uint64_t x = sched_xfer_fresh(s);
		sched_to_app(s, "server", s->server.host, model_msg(s, pl->id, x, pl->worker,
			     b->model_bytes, NULL, b->now_s, &w, 0));
		rc = sched_xfer_add(s, &(struct sched_xfer){ .xfer = x, .what = SCHED_WHAT_MODEL,
				    .id = pl->id, .src = s->server.host, .dst = pl->worker,
				    .chan = 3, .bytes = b->model_bytes }, NULL, b->now_s);
	}

	/* Fates: planned (direct / aggregated), replica copies, dropped (delay bound, §5.1.3). */
	for (int i = 0; i < b->n_updates; i++) {
		struct sched_update *u = &s->upd[sel[i]];
		if (w.rcommit[i])
			u->rstate = SCHED_REP_PLANNED;
		else if (w.more[i])
			u->rstate = SCHED_REP_PUNTED;
		if (b->updates[i].replica_only && w.rcommit[i])
			sched_rec_update(s, u, u->agg ? "aggregated" : "direct", NULL);
	}
	for (int k = 0; k < p->n_order; k++) {
		int i = p->order[k];
		struct sched_update *u = &s->upd[sel[i]];
		u->state = SCHED_UPD_PLANNED;
		u->agg = w.agg_of[i] >= 0 ? w.aggx[w.agg_of[i]] : 0;
		if (sched_select_commit(p, s->server.host, i, &u->v_commit, &u->t_commit))
			u->v_commit = -1; /* no server commit: a pull naming it does not wait */
		sched_rec_update(s, u, u->agg ? "aggregated" : "direct", NULL);
	}
	for (int k = 0; k < p->n_dropped; k++)
		sched_cmd_drop(s, &s->upd[sel[p->dropped[k]]], "delay bound");
out:
	cmd_work_free(&w);
	return rc;
}

/* Remove the answered pulls (indexes @psel, ascending) from s->pulls. */
static void remove_pulls(struct sched *s, const int *psel, int n)
{
	int k = 0, j = 0;
	double now = clock_real_s();

	for (int i = 0; i < s->n_pulls; i++) {
		if (j < n && psel[j] == i) {
			sched_policy_pull_planned(s, s->pulls[i].worker, now);
			j++;
			continue;
		}
		s->pulls[k++] = s->pulls[i];
	}
	s->n_pulls = k;
}

static void free_batch(struct plan_batch *b)
{
	sched_shard_free_batch(b);
	free(b->hosts);
	free(b->changes);
	free(b->servers);
	free(b->aggregators);
	free(b->replica_aggregators);
	free(b->updates);
	free(b->pulls);
	free(b->distributors);
}

/*
 * The distributors of batch @b (§10.3, docs/scheduler.md "Distribution trees"): hosts with a
 * live worker application other than the server's (the worker library forwards a model copy it
 * received; an aggregator-only host has no endpoint listening for models), those that pulled
 * in this batch first (the server's copy to them also answers their own pull), at most
 * --distributors (cfg.distributors; -1 = all, 0 = none: the server answers every pull).
 * Returns 0 or -ENOMEM.
 */
static int fill_distributors(struct sched *s, struct plan_batch *b)
{
	int n_h = s->cl.n_hosts, cap = s->cfg.distributors < 0 ? n_h : s->cfg.distributors;

	b->distributors = calloc((size_t)n_h + 1, sizeof(int));
	if (!b->distributors)
		return -ENOMEM;
	for (int pass = 0; pass < 2; pass++)
		for (int h = 0; h < n_h && b->n_distributors < cap; h++) {
			int pulled = 0;
			if (!(s->hosts[h].apps & SCHED_ROLE_WORKER) || !s->hosts[h].alive ||
			    h == s->server.host)
				continue;
			for (int q = 0; q < b->n_pulls && !pulled; q++)
				pulled = b->pulls[q].worker == h;
			if (pulled == !pass)
				b->distributors[b->n_distributors++] = h;
		}
	return 0;
}

/*
 * Fill @b (arrays allocated here, free_batch) for the selected updates and pulls; the first
 * @n_car of @sel are carried replica copies (replica_only) when the replica is planned.
 */
static int build_batch(struct sched *s, double now, const int *sel, int n_sel, int n_car,
		       const int *psel, int n_psel, struct plan_batch *b)
{
	int n_h = s->cl.n_hosts, cap_ch = 0;

	memset(b, 0, sizeof(*b));
	b->mode = sched_policy_plan_mode(s);
	b->now_s = now - s->t0 + sched_lead_s(s);
	b->n_hosts = n_h;
	b->hosts = calloc((size_t)n_h, sizeof(*b->hosts));
	b->servers = malloc(sizeof(int));
	b->aggregators = calloc((size_t)n_h, sizeof(int));
	b->updates = calloc((size_t)n_sel + 1, sizeof(*b->updates));
	b->pulls = calloc((size_t)n_psel + 1, sizeof(*b->pulls));
	if (!b->hosts || !b->servers || !b->aggregators || !b->updates || !b->pulls)
		return -ENOMEM;
	for (int h = 0; h < n_h; h++) {
		snprintf(b->hosts[h].name, PLAN_NAME_MAX, "%s", s->cl.hosts[h].name);
		for (int up = 0; up < 2; up++) {
			double cap = sched_batch_link_gbps(s, h, up, now) * s->cfg.headroom;
			double *at = up ? &b->hosts[h].up_gbps : &b->hosts[h].down_gbps;
			if (carry_link(s, h, up, cap, b->now_s, at, &b->changes, &b->n_changes,
				       &cap_ch))
				return -ENOMEM;
		}
		if ((s->hosts[h].apps & SCHED_ROLE_AGGREGATOR) && s->hosts[h].alive &&
		    h != s->server.host && (!s->agg_allowed || s->agg_allowed[h]))
			b->aggregators[b->n_aggregators++] = h;
	}
	b->n_servers = 1;
	b->servers[0] = s->server.host;
	b->replica = -1;
	b->tau_max = s->server.tau_max;
	b->momentum = s->server.momentum;
	int64_t planned = 0;
	for (int i = 0; i < s->n_upd; i++)
		planned += s->upd[i].state == SCHED_UPD_PLANNED;
	b->v_init = s->server.version + planned;
	for (int k = 0; k < n_sel; k++) {
		const struct sched_update *u = &s->upd[sel[k]];
		struct plan_update *pu = &b->updates[k];
		snprintf(pu->id, PLAN_NAME_MAX, "%" PRIu64, u->id);
		pu->worker = u->worker;
		pu->bytes = u->bytes;
		pu->version = u->version;
		pu->norm = u->norm;
		pu->ready_s = b->now_s;
	}
	b->n_updates = n_sel;
	for (int k = 0; k < n_psel; k++) {
		snprintf(b->pulls[k].id, PLAN_NAME_MAX, "%" PRIu64, s->pulls[psel[k]].id);
		b->pulls[k].worker = s->pulls[psel[k]].worker;
		b->pulls[k].ready_s = b->now_s;
	}
	b->n_pulls = n_psel;
	b->model_bytes = n_psel ? s->server.bytes : 0;
	if (s->server.n_shards)
		return sched_shard_fill(s, b);
	if (n_psel && fill_distributors(s, b))
		return -ENOMEM;
	if (sched_repl_planned(s))
		return sched_repl_fill(s, b, n_car);
	return 0;
}

/* Batch delay statistics over the server commits (delay = version before commit - v(g)). */
static void delays(const struct sched *s, const struct plan_batch *b, const struct plan *p,
		   double *mean, int64_t *max)
{
	double sum = 0;
	int n = 0;

	*max = 0;
	for (int c = 0; c < p->n_commits; c++) {
		const struct plan_commit *pc = &p->commits[c];
		int one = pc->carries;
		int m = pc->kind == PLAN_CARRY_AGGREGATE ? p->aggregates[one].n_inputs : 1;
		const int *in = pc->kind == PLAN_CARRY_AGGREGATE ? p->aggregates[one].inputs : &one;
		if (pc->host != s->server.host)
			continue;
		for (int k = 0; k < m; k++) {
			int64_t d = pc->version - m - b->updates[in[k]].version;
			sum += (double)d;
			n++;
			if (d > *max)
				*max = d;
		}
	}
	*mean = n ? sum / n : 0.0;
}

/*
 * Take the pulls of @p's unanswered entries out of @psel (a sharded batch has one entry per
 * shard, pull q's entries are q*S..q*S+S-1): they stay in s->pulls, with a warning naming the
 * worker. Returns the new count.
 */
static int drop_unanswered(struct sched *s, const struct plan_batch *b, const struct plan *p,
			   int *psel, int n_psel)
{
	int S = s->server.n_shards > 0 ? s->server.n_shards : 1, k = 0;
	char *drop = calloc((size_t)n_psel + 1, 1);

	if (!drop)
		return 0; /* out of memory: plan no pull this time, they all stay queued */
	for (int i = 0; i < p->n_unanswered; i++) {
		int q = p->unanswered[i] / S;
		if (q < 0 || q >= n_psel || drop[q])
			continue;
		drop[q] = 1;
		if (s->pulls[psel[q]].unreachable)
			continue;
		s->pulls[psel[q]].unreachable = 1;
		log_warn("batch %d: no model copy can reach %s (its downlink or the server's uplink "
			 "is at 0 Gbit/s for good): pull %" PRIu64 " stays queued until it can", s->batch_no + 1,
			 b->hosts[b->pulls[p->unanswered[i]].worker].name, s->pulls[psel[q]].id);
	}
	for (int q = 0; q < n_psel; q++)
		if (!drop[q])
			psel[k++] = psel[q];
	free(drop);
	return k;
}

/*
 * The hold rule (§10.3, docs/scheduler.md "Distribution trees"): the planner's cost model on the
 * @n_psel ready pulls @psel alone, twice: direct copies planned now (no distributors) against a
 * tree planned when the server's uplink frees. Returns 1 (hold them for a later batch, where the
 * pulls that gather meanwhile join them) only when the tree answers them all sooner.
 */
static int hold_pulls(struct sched *s, double now, const int *psel, int n_psel)
{
	double t_free, end[2] = { INFINITY, INFINITY };

	if (!sched_select_may_hold(s, now, psel, n_psel, &t_free))
		return 0;
	for (int tree = 0; tree < 2; tree++) {
		struct plan_batch b;
		struct plan p;
		memset(&p, 0, sizeof(p));
		if (!build_batch(s, tree ? s->t0 + t_free - sched_lead_s(s) : now, NULL, 0, 0, psel,
				 n_psel, &b)) {
			if (!tree)
				b.n_distributors = 0;
			if (!plan_compute(&b, PLAN_IMPL_FAST, &p)) {
				plan_to_batch_time(&p);
				end[tree] = sched_select_pulls_end(&b, &p);
			}
		}
		plan_free(&p);
		free_batch(&b);
	}
	if (!(end[1] < end[0]))
		return 0;
	/* planned again when the uplink frees (less the lead and the replan interval), or when the
	 * oldest pull's hold would end */
	double release = s->t0 + t_free - sched_lead_s(s), oldest = now;
	for (int k = 0; k < n_psel; k++)
		if (s->pulls[psel[k]].t_arrival < oldest)
			oldest = s->pulls[psel[k]].t_arrival;
	if (release > oldest + SCHED_PULL_HOLD_MAX_S)
		release = oldest + SCHED_PULL_HOLD_MAX_S;
	sched_arrival_note(s, release - s->cfg.replan_s);
	return 1;
}

/*
 * The snapshot of batch @b's model copies (docs/scheduler.md "Fresh pulls"): the highest server
 * version the pulls (@psel, waits @fr) wait for, in plan @p or an earlier one; -1 when none waits.
 * Every pull of the batch shares that snapshot, so each copy starts no earlier than that version
 * is planned: sets *@replan when a pull's ready_s moved (the batch must be planned again).
 */
static int64_t fresh_snapshot(const struct sched *s, struct plan_batch *b, const struct plan *p,
			      const int *psel, const struct sched_fresh *fr, int *replan)
{
	int64_t v_at = -1;
	double t_at = b->now_s;

	*replan = 0;
	if (s->server.n_shards) /* a sharded batch's copies carry the version ordered before it */
		return -1;
	for (int k = 0; k < b->n_pulls; k++) {
		const struct sched_fresh *f = &fr[psel[k]];
		int64_t v = f->v;
		double t = f->t;
		if (f->upd >= 0 && sched_select_commit(p, s->server.host, f->upd, &v, &t))
			v = -1; /* dropped in this batch: no wait for it */
		if (v < 0)
			continue;
		if (v > v_at)
			v_at = v;
		if (t > t_at)
			t_at = t;
	}
	for (int k = 0; k < b->n_pulls && v_at >= 0; k++)
		if (b->pulls[k].ready_s < t_at) {
			b->pulls[k].ready_s = t_at;
			*replan = 1;
		}
	return v_at;
}

/* sched_gather_hold on the @n selected updates @sel with every link's capacity now. */
static int gather(struct sched *s, double now, int *sel, int n)
{
	double *gbps = n ? malloc(sizeof(double) * 2 * (size_t)s->cl.n_hosts) : NULL;

	if (!gbps)
		return n; /* nothing selected, or out of memory: nothing held */
	for (int h = 0; h < s->cl.n_hosts; h++)
		for (int up = 0; up < 2; up++)
			gbps[2 * h + up] = sched_batch_link_gbps(s, h, up, now);
	n = sched_gather_hold(s, now, gbps, sel, n);
	free(gbps);
	return n;
}

int sched_batch_tick(struct sched *s, double now)
{
	if (s->server.host < 0 || !s->hosts[s->server.host].alive || !sched_shard_ready(s))
		return 0;
	int *sel = malloc(sizeof(int) * ((size_t)s->n_upd + 1));
	int *psel = malloc(sizeof(int) * ((size_t)s->n_pulls + 1));
	struct sched_fresh *fr = malloc(sizeof(*fr) * ((size_t)s->n_pulls + 1));
	int n_sel = 0, n_psel = 0, rc = 0, replan = 0;
	int64_t at_version = -1;
	struct plan_batch b;
	struct plan p;

	memset(&b, 0, sizeof(b));
	memset(&p, 0, sizeof(p));
	if (!sel || !psel || !fr) {
		rc = -ENOMEM;
		log_err("batch %d: out of memory selecting updates", s->batch_no + 1);
		goto out;
	}
	rc = sched_repl_tick(s, now);
	if (rc)
		goto out;
	int n_car = 0;
	if (sched_repl_planned(s))
		n_car = sched_repl_carried_sel(s, sel);
	if (!sched_repl_paused(s)) {
		n_sel = sched_policy_select_updates(s, now, sel + n_car, s->cfg.max_batch > n_car ?
						    s->cfg.max_batch - n_car : 0);
		/* updates behind a busy path wait to be planned together when it frees (§5.2) */
		n_sel = n_car + gather(s, now, sel + n_car, n_sel);
	}
	/* a pull waits for its min_version: applied, or for sharded MLfabric-S planned (its copies
	 * then wait at each shard for the step, sched_shard_pull_version) */
	int64_t v_pull = sched_shard_pull_version(s);
	for (int i = 0; i < s->n_pulls; i++)
		if (s->pulls[i].min_version <= v_pull && s->hosts[s->pulls[i].worker].alive &&
		    sched_policy_pull_ready(s, s->pulls[i].worker))
			psel[n_psel++] = i;
	n_psel = sched_select_fresh(s, now, sel, n_sel, psel, n_psel, fr);
	if (n_psel && hold_pulls(s, now, psel, n_psel))
		n_psel = 0;
	if (n_sel == 0 && n_psel == 0)
		goto out;
	double t1, t2;
	for (int attempt = 0;; attempt++) {
		rc = build_batch(s, now, sel, n_sel, n_car, psel, n_psel, &b);
		if (rc) {
			log_err("batch %d: building the batch (%d updates, %d pulls): %s",
				s->batch_no + 1, n_sel, n_psel, strerror(-rc));
			goto out;
		}
		t1 = clock_mono_s();
		rc = plan_compute(&b, PLAN_IMPL_FAST, &p);
		t2 = clock_mono_s();
		if (rc) {
			log_err("batch %d: plan_compute refused the batch (%d updates, %d pulls): %s",
				s->batch_no + 1, n_sel, n_psel, p.error[0] ? p.error : strerror(-rc));
			if (rc == -EINVAL && b.replica >= 0) /* e.g. no capacity towards the replica */
				sched_repl_stale(s, "the planner refused the batch with the replica");
			goto out;
		}
		if (p.n_unanswered == 0 || attempt > 0)
			break;
		/* Pulls no copy can reach (§10.3, plan.unanswered) stay queued for a later batch;
		 * the batch is planned again without them (every shard of such a pull). */
		n_psel = drop_unanswered(s, &b, &p, psel, n_psel);
		plan_free(&p);
		free_batch(&b);
		memset(&b, 0, sizeof(b));
		if (n_sel == 0 && n_psel == 0) {
			rc = 0;
			goto out;
		}
	}
	plan_to_batch_time(&p); /* the daemon's times are seconds since s->t0: origin_s is 0 */
	at_version = fresh_snapshot(s, &b, &p, psel, fr, &replan);
	if (replan) { /* the pulls' copies after their updates' commits; the updates plan alike */
		plan_free(&p);
		rc = plan_compute(&b, PLAN_IMPL_FAST, &p);
		t2 = clock_mono_s();
		if (rc) {
			log_err("batch %d: plan_compute refused the batch with fresh pulls (%d updates, "
				"%d pulls): %s", s->batch_no + 1, n_sel, n_psel,
				p.error[0] ? p.error : strerror(-rc));
			goto out;
		}
		plan_to_batch_time(&p);
	}
	p.plan_ms = (t2 - t1) * 1e3;
	s->batch_no++;
	s->sync_wait_since = 0;
	for (int k = 0; k < n_sel; k++)
		s->upd[sel[k]].batch = s->batch_no;
	if (s->hook)
		s->hook(s->hook_arg, s->batch_no, &b, &p);
	rc = s->server.n_shards ? sched_shard_command(s, &b, &p, sel, psel)
				: command_plan(s, &b, &p, sel, psel, s->pulls, at_version);
	if (!rc && b.replica >= 0)
		rc = sched_repl_carry(s, &b, &p, sel);
	if (rc) {
		log_err("batch %d: commanding the plan: %s (the commands queued so far stand; the "
			"batch's updates stay pending)", s->batch_no, strerror(-rc));
		goto out;
	}
	sched_policy_planned(s, now, sel + n_car, n_sel - n_car);
	remove_pulls(s, psel, n_psel);

	int aggregated = 0;
	for (int a = 0; a < p.n_aggregates; a++)
		if (p.aggregates[a].purpose == PLAN_PURPOSE_SERVER)
			aggregated += p.aggregates[a].n_inputs;
	double mean;
	int64_t max;
	delays(s, &b, &p, &mean, &max);
	char rtxt[128] = "";
	if (b.replica >= 0)
		snprintf(rtxt, sizeof(rtxt), " replica_commits=%d punted=%d divergence_bound=%.4g "
			 "replica_lag=%" PRId64, p.n_replica_commits, p.n_punted,
			 p.divergence_bound, b.replica_lag);
	log_info("batch %d: |U|=%d dropped=%d aggregated=%d plan=%.2f ms mean_delay=%.1f "
		 "max_delay=%" PRId64 " v_init=%" PRId64 " pulls=%d%s", s->batch_no, n_sel,
		 p.n_dropped, aggregated, p.plan_ms, mean, max, b.v_init, n_psel, rtxt);
	struct sched_rec_batch r = { .t = now, .batch = s->batch_no, .n_updates = n_sel,
		.dropped = p.n_dropped, .aggregated = aggregated, .pulls = n_psel,
		.plan_ms = p.plan_ms, .mean_delay = mean, .max_delay = max, .v_init = b.v_init,
		.replica = b.replica >= 0, .divergence_bound = p.divergence_bound,
		.replica_commits = p.n_replica_commits, .punted = p.n_punted,
		.replica_version = s->repl.version };
	sched_rec_batch(s, &r);
	sched_repl_verify(s, s->batch_no);
	rc = 1;
out:
	plan_free(&p);
	free_batch(&b);
	free(sel);
	free(psel);
	free(fr);
	return rc;
}
