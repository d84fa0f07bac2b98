/* sched_repl.c - the replica in the scheduler: registration, carried copies, catch-up, fail-over. */
#include "sched_repl.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "arr.h"
#include "clock.h"
#include "log.h"
#include "sched_rec.h"
#include "sched_xfer.h"

int sched_repl_planned(const struct sched *s)
{
	const struct sched_replica *r = &s->repl;

	return r->host >= 0 && !r->chain && r->catchup == SCHED_CATCHUP_NONE &&
	       s->hosts[r->host].alive && !s->fo.active;
}

int sched_repl_paused(const struct sched *s)
{
	return (s->fo.active && s->fo.new_server < 0) ||
	       (s->repl.host >= 0 && s->repl.catchup != SCHED_CATCHUP_NONE);
}

/* Fate string of @u's server copy for updates.jsonl lines written after planning. */
static const char *fate_of(const struct sched_update *u)
{
	if (u->state == SCHED_UPD_LOST)
		return "lost";
	if (u->state == SCHED_UPD_DROPPED)
		return "dropped";
	return u->agg ? "aggregated" : "direct";
}

int sched_repl_carried_sel(struct sched *s, int *sel)
{
	struct sched_replica *r = &s->repl;
	int n = 0, k = 0;

	for (int c = 0; c < r->n_carried; c++) {
		int ui = sched_find_update(s, r->carried[c]);
		if (ui < 0)
			continue;
		/* a punted copy, or one in flight (planned or already committed: it then holds) */
		enum sched_rep_state st = s->upd[ui].rstate;
		if (r->carried_s[c] < 0 ? st != SCHED_REP_PUNTED
					: st != SCHED_REP_PLANNED && st != SCHED_REP_COMMITTED)
			continue;
		r->carried_s[k] = r->carried_s[c];
		r->carried[k++] = r->carried[c];
		sel[n++] = ui;
	}
	r->n_carried = k;
	return n;
}

int sched_repl_fill(struct sched *s, struct plan_batch *b, int n_carried)
{
	b->replica = s->repl.host;
	b->div_max = s->repl.div_max;
	b->history_norm = s->repl.history_norm;
	b->replica_lag = n_carried;
	b->replica_aggregators = calloc((size_t)s->cl.n_hosts + 1, sizeof(int));
	if (!b->replica_aggregators)
		return -ENOMEM;
	for (int h = 0; h < s->cl.n_hosts; h++) {
		if (!(s->hosts[h].apps & SCHED_ROLE_AGGREGATOR) || !s->hosts[h].alive ||
		    h == s->server.host || h == s->repl.host)
			continue;
		if (s->ragg_allowed ? s->ragg_allowed[h] : 0)
			b->replica_aggregators[b->n_replica_aggregators++] = h;
	}
	if (!s->ragg_allowed)
		for (int a = 0; a < b->n_aggregators; a++)
			if (b->aggregators[a] != s->repl.host)
				b->replica_aggregators[b->n_replica_aggregators++] = b->aggregators[a];
	for (int i = 0; i < n_carried; i++) {
		b->updates[i].replica_only = 1;
		if (s->repl.carried_s[i] < 0)
			continue;
		/* In flight: it holds from its planned commit, from now once committed; one
		 * overdue is given the failure detector's grace (a transfer is failed 0.3 s
		 * after its planned end, and the replica is then caught up as a whole). */
		const struct sched_update *u = &s->upd[sched_find_update(s, s->repl.carried[i])];
		double t = s->repl.carried_s[i];
		b->updates[i].inflight = 1;
		b->updates[i].inflight_s = u->rstate == SCHED_REP_COMMITTED ? b->now_s :
					   t >= b->now_s ? t : b->now_s + 0.3;
	}
	return 0;
}

int sched_repl_carry(struct sched *s, const struct plan_batch *b, const struct plan *p,
		     const int *sel)
{
	struct sched_replica *r = &s->repl;
	struct plan_carry c;

	if (plan_carry_next(b, p, &c))
		return -ENOMEM;
	r->n_carried = 0;
	for (int k = 0; k < c.n_carried; k++) {
		if (arr_grow((void **)&r->carried, &r->cap_carried, r->n_carried + 1,
			       sizeof(*r->carried)) ||
		    arr_grow((void **)&r->carried_s, &r->cap_carried_s, r->n_carried + 1,
			       sizeof(*r->carried_s))) {
			plan_carry_free(&c);
			return -ENOMEM;
		}
		struct sched_update *u = &s->upd[sel[c.carried[k]]];
		if (c.carried_s[k] < 0) /* punted; in flight keeps its state (planned) */
			u->rstate = SCHED_REP_PUNTED;
		r->carried_s[r->n_carried] = c.carried_s[k];
		r->carried[r->n_carried++] = u->id;
	}
	r->history_norm = c.history_norm;
	plan_carry_free(&c);
	return 0;
}

/* Tell the server about its chain replica (@h, or none with -1): the replica's dataplane takes
 * every transfer from the server on chan 4 (its chain forwards are not commanded one by one),
 * from a replica no longer chained the standing announcement is withdrawn. */
static void tell_chain(struct sched *s, int h)
{
	if (s->server.host < 0)
		return;
	if (h >= 0)
		sched_announce(s, s->server.host, h, 4, 0, 1);
	else if (s->repl.host >= 0)
		sched_announce(s, s->server.host, s->repl.host, 4, 0, 0);
	sched_to_app(s, "server", s->server.host, json_pack("{s:s, s:s, s:s}", "type", "replica",
		     "host", h >= 0 ? s->cl.hosts[h].name : "", "replication", "chain"));
}

static void start_catchup(struct sched *s, double now)
{
	s->repl.catchup = SCHED_CATCHUP_WAIT_SERVER;
	s->repl.catchup_since = now;
	s->repl.state_xfer = 0;
}

int sched_repl_register(struct sched *s, int h, double div_max, int chain, uint64_t n_floats,
			int64_t version, char *err, size_t errlen)
{
	struct sched_replica *r = &s->repl;

	if (s->server.host < 0 || !s->hosts[s->server.host].alive ||
	    (s->fo.active && s->fo.new_server < 0)) {
		snprintf(err, errlen, "register: no server is registered");
		return -1;
	}
	if (h == s->server.host) {
		snprintf(err, errlen, "register: %s is the server's host", s->cl.hosts[h].name);
		return -1;
	}
	if (n_floats != s->server.n_floats) {
		snprintf(err, errlen, "register: field \"n_floats\": %" PRIu64 " differs from the "
			 "server's %" PRIu64, n_floats, s->server.n_floats);
		return -1;
	}
	if (r->host >= 0 && r->host != h && s->hosts[r->host].alive) {
		snprintf(err, errlen, "register: a replica is already registered at %s",
			 s->cl.hosts[r->host].name);
		return -1;
	}
	if (r->host >= 0)
		sched_repl_gone(s, "the replica registered again");
	int planned = 0;
	for (int i = 0; i < s->n_upd; i++)
		planned += s->upd[i].state == SCHED_UPD_PLANNED;
	r->host = h;
	r->chain = chain;
	r->div_max = div_max;
	r->n_floats = n_floats;
	r->version = version;
	r->history_norm = 0;
	r->n_carried = 0;
	r->catchup = SCHED_CATCHUP_NONE;
	r->synced_batch = s->batch_no;
	if (version == 0 && s->server.version == 0 && planned == 0) {
		if (chain)
			tell_chain(s, h);
	} else {
		start_catchup(s, clock_real_s());
	}
	log_info("replica at %s: %s replication, div_max %g, version %" PRId64 "%s",
		 s->cl.hosts[h].name, chain ? "chain" : "mlfabric", div_max, version,
		 r->catchup ? "; catching up from the server" : "; in step with the server");
	if (!chain && s->server.momentum > 0)
		log_warn("replica at %s: momentum %g: an aggregate is applied as one momentum step (eq. 2), "
			 "so a replica aggregated differently from the server drifts from it and the "
			 "divergence bound holds exactly only with momentum 0 at the server: run the "
			 "workers with --momentum instead (momentum_at worker, docs/replication.md)",
			 s->cl.hosts[h].name, s->server.momentum);
	return 0;
}

/* Mark @u replica-committed (first time only) and record it. */
static void replica_committed(struct sched *s, struct sched_update *u)
{
	if (u->rstate != SCHED_REP_PLANNED)
		return;
	u->rstate = SCHED_REP_COMMITTED;
}

void sched_repl_commit(struct sched *s, json_t *m, uint64_t xfer, int64_t version, double now)
{
	struct sched_replica *r = &s->repl;

	if (json_is_true(json_object_get(m, "state"))) {
		if (r->catchup != SCHED_CATCHUP_WAIT_STATE || xfer != r->state_xfer) {
			log_warn("replica at %s: unexpected state commit (transfer %" PRIu64 ")",
				 s->cl.hosts[r->host].name, xfer);
			return;
		}
		sched_xfer_done(s, xfer);
		if (version < s->server.version) {
			log_warn("replica at %s: state at version %" PRId64 " but the server is at %"
				 PRId64 ": catching up again", s->cl.hosts[r->host].name, version,
				 s->server.version);
			start_catchup(s, r->catchup_since);
			return;
		}
		json_t *hn = json_object_get(m, "history_norm");
		r->version = version;
		r->history_norm = json_is_number(hn) ? json_number_value(hn) : 0.0;
		r->catchup = SCHED_CATCHUP_NONE;
		r->n_carried = 0;
		r->synced_batch = s->batch_no;
		log_info("replica at %s caught up at version %" PRId64 " (history norm %g): "
			 "planning paused %.2f s", s->cl.hosts[r->host].name, version,
			 r->history_norm, now - r->catchup_since);
		if (r->chain)
			tell_chain(s, r->host);
		return;
	}
	if (version > r->version)
		r->version = version;
	sched_xfer_done(s, xfer);
	json_t *parts = json_object_get(m, "parts"), *v;
	size_t k;
	if (json_is_array(parts) && json_array_size(parts) > 0) {
		json_array_foreach(parts, k, v) {
			int ui = json_is_integer(v) ?
				 sched_find_update(s, (uint64_t)json_integer_value(v)) : -1;
			if (ui >= 0)
				replica_committed(s, &s->upd[ui]);
		}
		return;
	}
	for (int i = 0; i < s->n_upd; i++)
		if (s->upd[i].rstate == SCHED_REP_PLANNED &&
		    (s->upd[i].ragg == xfer || (!s->upd[i].ragg && s->upd[i].rxfer == xfer)))
			replica_committed(s, &s->upd[i]);
}

/* `release` of a held (punted) copy of @u to its worker. */
static void release_copy(struct sched *s, struct sched_update *u)
{
	sched_to_app(s, "worker", u->worker, json_pack("{s:s, s:I}", "type", "release", "id",
		     (json_int_t)u->id));
}

/* Append transfer @x to the array @xs unless it is there. */
static void add_skip(json_t *xs, uint64_t x)
{
	size_t k;
	json_t *v;

	json_array_foreach(xs, k, v)
		if ((uint64_t)json_integer_value(v) == x)
			return;
	json_array_append_new(xs, json_integer((json_int_t)x));
}

/* `skip` chan 4 of @xs at the replica (stolen). */
static void send_skips(struct sched *s, json_t *xs)
{
	if (json_array_size(xs) > 0 && s->repl.host >= 0)
		sched_to_app(s, "replica", s->repl.host, json_pack("{s:s, s:i, s:O}", "type",
			     "skip", "chan", 4, "xfers", xs));
	json_decref(xs);
}

/* The chan 4 transfer that brings @u's replica copy to the replica. */
static uint64_t replica_xfer(const struct sched_update *u)
{
	return u->ragg ? u->ragg : u->rxfer;
}

/*
 * Every replica copy not committed at the replica is lost: `skip` chan 4 of the transfers
 * commanded (direct copies and replica aggregates), `release` of the punted copies the
 * workers hold. Returns how many updates' copies were lost.
 */
static int lose_replica_copies(struct sched *s)
{
	json_t *xs = json_array();
	int n = 0;

	for (int i = 0; i < s->n_upd; i++) {
		struct sched_update *u = &s->upd[i];
		int live = u->state == SCHED_UPD_PLANNED || u->state == SCHED_UPD_COMMITTED;
		if (u->rstate == SCHED_REP_PLANNED)
			add_skip(xs, replica_xfer(u));
		else if (u->rstate != SCHED_REP_PUNTED)
			continue;
		if (u->rstate == SCHED_REP_PUNTED && live)
			release_copy(s, u);
		u->rstate = SCHED_REP_LOST;
		if (live)
			sched_rec_update(s, u, fate_of(u), "replica copy lost");
		n++;
	}
	send_skips(s, xs);
	s->repl.n_carried = 0;
	return n;
}

void sched_repl_stale(struct sched *s, const char *why)
{
	struct sched_replica *r = &s->repl;

	if (r->host < 0 || r->catchup == SCHED_CATCHUP_WAIT_SERVER)
		return;
	int n = lose_replica_copies(s);
	log_warn("replica at %s is stale (%s): %d replica cop%s lost, catching up",
		 s->cl.hosts[r->host].name, why, n, n == 1 ? "y" : "ies");
	start_catchup(s, clock_real_s());
}

void sched_repl_state_failed(struct sched *s, const char *why)
{
	if (s->repl.host < 0 || s->repl.catchup != SCHED_CATCHUP_WAIT_STATE)
		return;
	log_warn("replica at %s: state transfer failed (%s): sending it again",
		 s->cl.hosts[s->repl.host].name, why);
	start_catchup(s, s->repl.catchup_since);
}

void sched_repl_server_lost(struct sched *s, struct sched_update *u)
{
	if (u->rstate == SCHED_REP_PUNTED) {
		u->rstate = SCHED_REP_LOST;
		for (int c = 0; c < s->repl.n_carried; c++)
			if (s->repl.carried[c] == u->id) {
				memmove(&s->repl.carried[c], &s->repl.carried[c + 1],
					sizeof(*s->repl.carried) * (size_t)(s->repl.n_carried - c - 1));
				memmove(&s->repl.carried_s[c], &s->repl.carried_s[c + 1],
					sizeof(*s->repl.carried_s) * (size_t)(s->repl.n_carried - c - 1));
				s->repl.n_carried--;
				break;
			}
	} else if (u->rstate == SCHED_REP_PLANNED || u->rstate == SCHED_REP_COMMITTED) {
		char why[96];
		snprintf(why, sizeof(why), "update %" PRIu64 " lost at the server", u->id);
		sched_repl_stale(s, why);
	}
}

void sched_repl_worker_gone(struct sched *s, int h)
{
	for (int i = 0; i < s->n_upd; i++)
		if (s->upd[i].worker == h && s->upd[i].rstate == SCHED_REP_PUNTED) {
			char why[96];
			snprintf(why, sizeof(why), "worker %s gone with a punted copy",
				 s->cl.hosts[h].name);
			sched_repl_stale(s, why);
			return;
		}
}

int sched_repl_tick(struct sched *s, double now)
{
	struct sched_replica *r = &s->repl;
	int srv = s->server.host;

	if (r->host < 0 || r->catchup != SCHED_CATCHUP_WAIT_SERVER || srv < 0 ||
	    !s->hosts[srv].alive || !s->hosts[r->host].alive || s->fo.active)
		return 0;
	int planned = 0;
	for (int i = 0; i < s->n_upd; i++)
		planned += s->upd[i].state == SCHED_UPD_PLANNED;
	if (planned > 0 && now - r->catchup_since < s->cfg.catchup_timeout_s)
		return 0;
	if (planned > 0)
		log_warn("catch-up of the replica at %s: %d update(s) still planned at the server "
			 "after %.1f s: sending the state anyway", s->cl.hosts[r->host].name, planned,
			 now - r->catchup_since);
	uint64_t x = sched_xfer_fresh(s), bytes = 8 * s->server.n_floats;
	double gbps = s->cl.hosts[srv].up_gbps < s->cl.hosts[r->host].down_gbps ?
		      s->cl.hosts[srv].up_gbps : s->cl.hosts[r->host].down_gbps;
	double dur = gbps > 0 ? (double)bytes * 8 / (gbps * 1e9) : 0;
	/* remembered before it is commanded: without memory, nothing is sent and the next
	 * batch tries again (the catch-up stays in WAIT_SERVER) */
	int rc = sched_xfer_add(s, &(struct sched_xfer){ .xfer = x, .what = SCHED_WHAT_STATE,
				.src = srv, .dst = r->host, .chan = 4, .bytes = bytes }, NULL,
				now - s->t0 + dur);
	if (rc) {
		log_err("catch-up of the replica at %s: state transfer %" PRIu64 " not commanded: "
			"%s", s->cl.hosts[r->host].name, x, strerror(-rc));
		return rc;
	}
	sched_to_app(s, "replica", r->host, json_pack("{s:s, s:i, s:[I]}", "type", "order",
		     "chan", 4, "xfers", (json_int_t)x));
	sched_flush_host(s, r->host);
	sched_to_app(s, "server", srv, json_pack("{s:s, s:s, s:i, s:I, s:s, s:i, s:I, s:f, s:[]}",
		     "type", "send", "what", "state", "id", 0, "xfer", (json_int_t)x, "dst",
		     s->cl.hosts[r->host].name, "chan", 4, "bytes", (json_int_t)bytes, "start", now,
		     "steps"));
	r->state_xfer = x;
	r->catchup = SCHED_CATCHUP_WAIT_STATE;
	log_info("catch-up of the replica at %s: state at server version %" PRId64 " commanded "
		 "(transfer %" PRIu64 ", %" PRIu64 " bytes)", s->cl.hosts[r->host].name,
		 s->server.version, x, bytes);
	return 0;
}

void sched_repl_gone(struct sched *s, const char *why)
{
	struct sched_replica *r = &s->repl;

	if (r->host < 0)
		return;
	int h = r->host, n = lose_replica_copies(s);
	for (int i = 0; i < s->n_xfers; i++)
		if (s->xfers[i].replica || s->xfers[i].what == SCHED_WHAT_STATE)
			s->xfers[i].done = 1; /* nothing waits for them any more */
	if (r->chain)
		tell_chain(s, -1);
	r->host = -1;
	r->catchup = SCHED_CATCHUP_NONE;
	log_warn("replica at %s is gone (%s): %d replica cop%s lost", s->cl.hosts[h].name, why, n,
		 n == 1 ? "y" : "ies");
	if (s->fo.active && s->fo.new_server < 0) {
		log_err("fail-over aborted: the replica at %s is gone before its promotion; updates "
			"are dropped until a server registers", s->cl.hosts[h].name);
		s->fo.active = 0;
		for (int i = 0; i < s->n_upd; i++)
			if (s->upd[i].state == SCHED_UPD_PENDING) {
				s->upd[i].state = SCHED_UPD_DROPPED;
				sched_to_app(s, "worker", s->upd[i].worker, json_pack(
					"{s:s, s:I, s:s}", "type", "drop", "id",
					(json_int_t)s->upd[i].id, "reason", "server failed"));
				sched_rec_update(s, &s->upd[i], "dropped", "server failed");
			}
	}
}

static void write_failover(struct sched *s);

int sched_repl_failover(struct sched *s, int old, double now)
{
	struct sched_replica *r = &s->repl;
	struct sched_failover *fo = &s->fo;

	if (fo->active && fo->new_server >= 0)
		write_failover(s); /* the previous one never saw a commit */
	if (r->host < 0 || !s->hosts[r->host].alive || r->catchup != SCHED_CATCHUP_NONE ||
	    fo->active || old != s->server.host)
		return 0;
	memset(fo, 0, sizeof(*fo));
	fo->active = 1;
	fo->t_gone = now;
	fo->old_server = old;
	fo->new_server = -1;
	json_t *xs = json_array();
	for (int i = 0; i < s->n_upd; i++) {
		struct sched_update *u = &s->upd[i];
		enum sched_rep_state rp = u->rstate;
		int copy = rp == SCHED_REP_PLANNED || rp == SCHED_REP_PUNTED;
		if (rp == SCHED_REP_PLANNED)
			add_skip(xs, replica_xfer(u));
		if (copy)
			u->rstate = SCHED_REP_LOST;
		if (u->state == SCHED_UPD_PLANNED && rp == SCHED_REP_COMMITTED) {
			u->state = SCHED_UPD_COMMITTED; /* applied on the surviving model */
		} else if (u->state == SCHED_UPD_PLANNED) {
			u->state = SCHED_UPD_LOST;
			sched_to_app(s, "worker", u->worker, json_pack("{s:s, s:I, s:s}", "type",
				     "drop", "id", (json_int_t)u->id, "reason", "server failed"));
			sched_rec_update(s, u, "lost", "server failed");
			fo->lost_planned++;
		} else if (u->state == SCHED_UPD_COMMITTED && copy) {
			u->state = SCHED_UPD_LOST;
			if (rp == SCHED_REP_PUNTED)
				release_copy(s, u);
			sched_rec_update(s, u, "lost", "server failed: not replicated");
			fo->lost_committed++;
		}
	}
	send_skips(s, xs);
	r->n_carried = 0;
	for (int i = 0; i < s->n_xfers; i++) {
		struct sched_xfer *x = &s->xfers[i];
		if (x->done || x->replica)
			continue;
		if (x->chan == 1 || x->what == SCHED_WHAT_STATE)
			x->done = 1;
		/* the new server answers the pull the old one did not (without memory for it, the
		 * model transfer fails by --xfer-timeout and sched_fail_xfer queues the pull) */
		if (x->what == SCHED_WHAT_MODEL && x->src == old &&
		    !arr_grow((void **)&s->pulls, &s->cap_pulls, s->n_pulls + 1,
			      sizeof(*s->pulls))) {
			x->done = 1;
			s->pulls[s->n_pulls++] = (struct sched_pull){ .id = x->id, .worker = x->dst,
				.min_version = -1, .t_arrival = now };
		}
	}
	s->server.host = -1;
	sched_to_app(s, "replica", r->host, json_pack("{s:s, s:I}", "type", "promote", "version",
		     (json_int_t)r->version));
	log_warn("server at %s is gone: promoting the replica at %s (version %" PRId64 "); %d "
		 "committed update(s) not replicated, %d planned update(s) lost",
		 s->cl.hosts[old].name, s->cl.hosts[r->host].name, r->version, fo->lost_committed,
		 fo->lost_planned);
	return 1;
}

int sched_repl_promoted(struct sched *s, int h, int64_t version, double now, char *err,
			size_t errlen)
{
	struct sched_failover *fo = &s->fo;

	if (!fo->active || fo->new_server >= 0 || s->repl.host != h) {
		snprintf(err, errlen, "promoted: no promotion was asked of %s", s->cl.hosts[h].name);
		return -1;
	}
	fo->t_promoted = now;
	fo->new_server = h;
	fo->version = version;
	s->server.host = h;
	s->server.version = version;
	s->hosts[h].apps = (s->hosts[h].apps & ~(unsigned)SCHED_ROLE_REPLICA) | SCHED_ROLE_SERVER;
	s->server_alias[fo->old_server] = 1;
	s->server_alias[h] = 0;
	s->repl.host = -1;
	s->repl.n_carried = 0;
	for (int i = 0; i < s->n_upd; i++)
		if (s->upd[i].state == SCHED_UPD_PENDING && s->upd[i].version > version)
			s->upd[i].version = version;
	for (int i = 0; i < s->n_pulls; i++)
		if (s->pulls[i].min_version > version)
			s->pulls[i].min_version = version;
	for (int w = 0; w < s->cl.n_hosts; w++)
		if (s->hosts[w].apps & SCHED_ROLE_WORKER)
			sched_to_app(s, "worker", w, json_pack("{s:s, s:s}", "type", "server_moved",
				     "server", s->cl.hosts[h].name));
	log_info("replica at %s promoted: it serves version %" PRId64 " as the server %.3f s "
		 "after the failure was detected", s->cl.hosts[h].name, version, now - fo->t_gone);
	return 0;
}

static void write_failover(struct sched *s)
{
	struct sched_failover *fo = &s->fo;

	fo->active = 0;
	log_info("fail-over %s -> %s: detected at %.3f, promoted +%.3f s, first commit %s%.3f s, "
		 "version %" PRId64 ", lost %d committed at the old server only, %d planned",
		 s->cl.hosts[fo->old_server].name, fo->new_server >= 0 ?
		 s->cl.hosts[fo->new_server].name : "-", fo->t_gone, fo->t_promoted > 0 ?
		 fo->t_promoted - fo->t_gone : -1.0, fo->t_first_commit > 0 ? "+" : "never ",
		 fo->t_first_commit > 0 ? fo->t_first_commit - fo->t_gone : 0.0, fo->version,
		 fo->lost_committed, fo->lost_planned);
	sched_rec_failover(s);
}

void sched_repl_server_commit(struct sched *s, double now)
{
	if (s->fo.active && s->fo.new_server >= 0 && s->fo.new_server == s->server.host) {
		s->fo.t_first_commit = now;
		write_failover(s);
	}
}

void sched_repl_finish(struct sched *s)
{
	if (s->fo.active)
		write_failover(s);
}

void sched_repl_verify(struct sched *s, int batch_no)
{
	if (s->cfg.verify_every <= 0 || batch_no % s->cfg.verify_every)
		return;
	if (s->server.host >= 0)
		sched_to_app(s, "server", s->server.host, json_pack("{s:s, s:i}", "type",
			     "snapshot", "tag", batch_no));
	if (s->repl.host >= 0)
		sched_to_app(s, "replica", s->repl.host, json_pack("{s:s, s:i}", "type",
			     "snapshot", "tag", batch_no));
}

void sched_repl_server_committed(struct sched *s, const struct sched_update *u)
{
	const struct sched_replica *r = &s->repl;
	char why[128];

	if (r->host < 0 || r->chain || r->catchup != SCHED_CATCHUP_NONE ||
	    u->rstate != SCHED_REP_NONE || u->batch > r->synced_batch)
		return;
	snprintf(why, sizeof(why), "update %" PRIu64 " committed at the server after the state "
		 "snapshot", u->id);
	sched_repl_stale(s, why);
}
