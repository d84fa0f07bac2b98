/* sched_shard.c - sharded parameter servers (§10.2): registration, group versions, batches, commands. */
#include "sched_shard.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "mlf_payload.h"
#include "sched_cmd.h"
#include "sched_rec.h"
#include "sched_xfer.h"

int sched_shard_of(const struct sched *s, int h)
{
	for (int k = 0; k < s->server.n_shards; k++)
		if (s->server.shard[k].host == h)
			return k;
	return -1;
}

int64_t sched_shard_pull_version(const struct sched *s)
{
	return s->server.n_shards > 0 && s->server.sync ? s->sync.v : s->server.version;
}

int sched_shard_ready(const struct sched *s)
{
	for (int k = 0; k < s->server.n_shards; k++) {
		int h = s->server.shard[k].host;
		if (h < 0 || !s->hosts[h].alive || !(s->hosts[h].apps & SCHED_ROLE_SERVER))
			return 0;
	}
	return 1;
}

/* Whether the group at s->server is still live (a shard registered at a live host). */
static int group_live(const struct sched *s)
{
	for (int k = 0; k < s->server.n_shards; k++) {
		int h = s->server.shard[k].host;
		if (h >= 0 && s->hosts[h].alive)
			return 1;
	}
	return 0;
}

static void group_version(struct sched *s);

/*
 * Shard server at @h (re)registered: the `skip`s of the legs failed to that host in the last
 * minute (transfers are kept 60 s after their planned end, sched_xfer_compact) may never have
 * reached it (its host was taken for dead, its dataplane lost the scheduler). Its commit order
 * does not wait for them (a server empties it on `scheduler_back`, before registering again),
 * but a late arrival of such a leg must not be applied: send them again (a skip of a transfer
 * it applied or skipped already changes nothing; the library drops a late arrival it was told
 * to skip).
 */
static void skip_again(struct sched *s, int h)
{
	json_t *ids = json_array();
	int n = 0;

	for (int i = 0; ids && i < s->n_xfers; i++) {
		const struct sched_xfer *x = &s->xfers[i];
		if (x->failed && x->chan == 1 && x->dst == h && !x->replica) {
			json_array_append_new(ids, json_integer((json_int_t)x->xfer));
			n++;
		}
	}
	if (n)
		sched_to_app(s, "server", h, json_pack("{s:s, s:i, s:o}", "type", "skip", "chan", 1,
						       "xfers", ids));
	else
		json_decref(ids);
}

int sched_shard_register(struct sched *s, int h, json_t *m, const struct sched_server *sv,
			 char *err, size_t cap)
{
	json_t *jk = json_object_get(m, "shard"), *jn = json_object_get(m, "n_shards");
	json_t *jo = json_object_get(m, "offset"), *jt = json_object_get(m, "n_total");
	struct sched_server *g = &s->server;
	int64_t lag = 0, raise = 0, v0 = 0;
	int old = -1; /* the host shard k had in this group, -1: its first registration */

	if (!json_is_integer(jk) || !json_is_integer(jn) || !json_is_integer(jo) ||
	    !json_is_integer(jt)) {
		snprintf(err, cap, "register: a shard server needs integer fields \"shard\", "
			 "\"n_shards\", \"offset\" and \"n_total\"");
		return -1;
	}
	int64_t k = json_integer_value(jk), n = json_integer_value(jn);
	int64_t off = json_integer_value(jo), total = json_integer_value(jt);
	if (n < 2 || n > SCHED_MAX_SHARDS || k < 0 || k >= n || off < 0 || total <= 0 ||
	    (uint64_t)off + sv->n_floats > (uint64_t)total) {
		snprintf(err, cap, "register: shard %" PRId64 " of %" PRId64 " (floats %" PRId64
			 " + %" PRIu64 " of %" PRId64 "): need 2 <= n_shards <= %d, 0 <= shard < "
			 "n_shards, the slice inside n_total", k, n, off, sv->n_floats, total,
			 SCHED_MAX_SHARDS);
		return -1;
	}
	if (s->repl.host >= 0) {
		snprintf(err, cap, "register: a replica is registered; a sharded model is not "
			 "replicated");
		return -1;
	}
	if (g->n_shards == 0 || !group_live(s)) {
		/* the first shard of a new group */
		for (int i = 0; i < s->n_upd; i++)
			if (s->upd[i].state == SCHED_UPD_PLANNED)
				s->upd[i].state = SCHED_UPD_LOST;
		*g = *sv;
		g->n_floats = (uint64_t)total;
		g->bytes = mlf_payload_bytes((uint64_t)total);
		g->n_shards = (int)n;
		for (int i = 0; i < SCHED_MAX_SHARDS; i++)
			g->shard[i] = (struct sched_shard){ .host = -1 };
		g->ordered = sv->version;
		/* MLfabric-S (§6 over §10.2): a new iteration from the group's version */
		s->sync.v = sv->version;
		s->sync.n = 0;
		s->sync.since = 0;
		if (s->sync.in)
			memset(s->sync.in, 0, (size_t)s->cl.n_hosts);
	} else {
		const char *bad = g->n_shards != n ? "n_shards" :
				  g->n_floats != (uint64_t)total ? "n_total" :
				  g->sync != sv->sync ? "mode" :
				  g->tau_max != sv->tau_max ? "tau_max" :
				  g->momentum != sv->momentum ? "momentum" :
				  g->n_workers != sv->n_workers ? "n_workers" : NULL;
		if (bad) {
			snprintf(err, cap, "register: field \"%s\" differs from the other shard servers'",
				 bad);
			return -1;
		}
		old = g->shard[k].host;
		if (old >= 0 && old != h && s->hosts[old].alive) {
			snprintf(err, cap, "register: shard %" PRId64 " is already served by %s", k,
				 s->cl.hosts[old].name);
			return -1;
		}
		/*
		 * The group version is g->ordered. A shard behind it is accepted (refusing it left
		 * the group without that shard for good). Back at the same host (its host was taken
		 * for dead, its dataplane reconnected), its lag stays what sched_shard_skipped
		 * counted, the legs failed to it (less those it committed after all, on_commit),
		 * and never more than ordered - version; legs still in flight to it are not lag.
		 * A new server of the shard (another host, a restarted group) has only its version:
		 * lag = ordered - version. A shard ahead of the group is refused when the group ran
		 * without it; at its first registration in the group (a restarted scheduler, the
		 * lagging shard registered first) the group moves up to it (below, after every
		 * check) and the shards already registered lag by the difference.
		 */
		v0 = g->ordered;
		if (sv->version > v0 && old >= 0) { /* shard k is back: the group ran without it */
			snprintf(err, cap, "register: field \"version\": %" PRId64 ", the other shard "
				 "servers are at %" PRId64 " (a shard cannot be ahead of its group)",
				 sv->version, v0);
			return -1;
		}
		if (sv->version > v0)
			raise = sv->version - v0;
		lag = v0 + raise - sv->version;
		if (old == h && g->shard[k].lag < lag)
			lag = g->shard[k].lag;
		/*
		 * MLfabric-S: back at the same host, the shard may hold parts of the iteration from
		 * its version (the rest lost while it was away). It is told that iteration's size
		 * again (sync_step, the policy's on_register), which needs the iteration remembered:
		 * a shard below its start of the oldest one remembered would wait for ever.
		 */
		const struct sched_sync_it *r = g->sync && old == h ? sched_shard_sync_oldest(s) : NULL;
		int64_t start = r ? sched_shard_sync_start(s, (int)k, r) + g->shard[k].lag - lag : 0;
		if (r && sv->version < start) {
			snprintf(err, cap, "register: field \"version\": shard %" PRId64 " at %" PRId64
				 " is behind the oldest MLfabric-S iteration the scheduler remembers (the "
				 "last %d; it starts at this shard's version %" PRId64 "): the sizes of the "
				 "iterations it missed are gone; restart the shard servers from one checkpoint",
				 k, sv->version, SCHED_SYNC_RING, start);
			return -1;
		}
		for (int i = 0; i < g->n_shards; i++) {
			const struct sched_shard *o = &g->shard[i];
			if (i == k || o->host < 0)
				continue;
			if ((uint64_t)off < o->offset + o->n_floats &&
			    o->offset < (uint64_t)off + sv->n_floats) {
				snprintf(err, cap, "register: field \"offset\": floats [%" PRId64 ", +%"
					 PRIu64 ") overlap shard %d's", off, sv->n_floats, i);
				return -1;
			}
		}
	}
	g->shard[k] = (struct sched_shard){ .host = h, .version = sv->version, .lag = lag,
					     .offset = (uint64_t)off, .n_floats = sv->n_floats };
	if (g->host < 0 || !s->hosts[g->host].alive)
		g->host = h;
	uint64_t covered = 0;
	int have = 0;
	for (int i = 0; i < g->n_shards; i++)
		if (g->shard[i].host >= 0) {
			covered += g->shard[i].n_floats;
			have++;
		}
	if (have == g->n_shards && covered != g->n_floats) {
		snprintf(err, cap, "register: the %d shards cover %" PRIu64 " floats, n_total is %"
			 PRIu64, have, covered, g->n_floats);
		g->shard[k].host = -1;
		return -1;
	}
	if (raise) {
		for (int i = 0; i < g->n_shards; i++)
			if (i != k && g->shard[i].host >= 0)
				g->shard[i].lag += raise;
		g->ordered += raise;
		if (g->sync) /* the group never planned (its first registration): no open iteration */
			s->sync.v += raise;
		group_version(s);
	}
	if (lag)
		log_warn("server shard %" PRId64 " at %s joins at version %" PRId64 ", the group is at "
			 "%" PRId64 ": lag %" PRId64 " (legs it skipped)", k, s->cl.hosts[h].name,
			 sv->version, g->ordered, lag);
	skip_again(s, h); /* harmless when nothing failed to it */
	log_info("server shard %" PRId64 "/%" PRId64 " at %s: floats [%" PRId64 ", +%" PRIu64
		 ") of %" PRId64 "%s", k, n, s->cl.hosts[h].name, off, sv->n_floats, total,
		 have == g->n_shards ? "; every shard registered" : "");
	return 0;
}

int64_t sched_shard_sync_start(const struct sched *s, int k, const struct sched_sync_it *r)
{
	int64_t v = r->v;

	if (!s->server.n_shards)
		return v;
	v -= s->server.shard[k].lag;
	for (int64_t j = r->iter; j <= s->sync.iter; j++) {
		const struct sched_sync_it *q = &s->sync.ring[j % SCHED_SYNC_RING];
		if (q->iter == j)
			v += q->lost[k];
	}
	return v;
}

const struct sched_sync_it *sched_shard_sync_oldest(const struct sched *s)
{
	for (int64_t j = s->sync.iter - SCHED_SYNC_RING < 0 ? 0 : s->sync.iter - SCHED_SYNC_RING;
	     j < s->sync.iter; j++) {
		const struct sched_sync_it *r = &s->sync.ring[j % SCHED_SYNC_RING];
		if (r->iter == j && r->parts > 0)
			return r;
	}
	return NULL;
}

static void group_version(struct sched *s)
{
	int64_t v = INT64_MAX;

	for (int k = 0; k < s->server.n_shards; k++) {
		const struct sched_shard *d = &s->server.shard[k];
		if (d->version + d->lag < v)
			v = d->version + d->lag;
	}
	if (v != INT64_MAX && v > s->server.version)
		s->server.version = v;
}

/* A leg (update or aggregate on chan 1) to shard host @h. */
static int is_leg(const struct sched_xfer *x, int h)
{
	return x->chan == 1 && x->dst == h &&
	       (x->what == SCHED_WHAT_UPDATE || x->what == SCHED_WHAT_AGGREGATE);
}

double sched_shard_copy_ready(const struct sched *s, int k, double now_s)
{
	const struct sched_shard *d = &s->server.shard[k];
	enum sched_copy_wait mode = (enum sched_copy_wait)s->cfg.copy_wait;
	double ready = now_s, late = mode == SCHED_COPY_WAIT_LEARNED ? d->late_s : 0;

	for (int i = 0; i < s->n_xfers; i++) {
		const struct sched_xfer *x = &s->xfers[i];
		/* a leg counts until its shard applied it: the sender's `done` comes first */
		if (x->committed || x->failed || !is_leg(x, d->host) ||
		    (mode == SCHED_COPY_WAIT_UPDATES && x->what != SCHED_WHAT_UPDATE))
			continue;
		if (x->end + late > ready)
			ready = x->end + late;
	}
	return ready;
}

void sched_shard_commit(struct sched *s, int h, int64_t version, uint64_t xfer)
{
	int k = sched_shard_of(s, h), xi = sched_xfer_find(s, xfer);

	if (k < 0)
		return;
	struct sched_shard *d = &s->server.shard[k];
	if (version > d->version)
		d->version = version;
	/* MLfabric-S: a shard commits every leg of an iteration at its step, which waits for the
	 * iteration's last leg: no measure of this leg's own lateness */
	if (xi >= 0 && !s->server.sync && is_leg(&s->xfers[xi], h) && !s->xfers[xi].failed &&
	    !s->xfers[xi].committed) {
		/* plan time is CLOCK_REALTIME - t0 (sched_batch: now_s = now - t0 + lead) */
		double late = clock_real_s() - s->t0 - s->xfers[xi].end;
		late = late > 0 ? (late < SCHED_LATE_MAX ? late : SCHED_LATE_MAX) : 0;
		d->late_s = d->late_init ? d->late_s + SCHED_LATE_WEIGHT * (late - d->late_s) : late;
		d->late_init = 1;
	}
	if (xi >= 0 && s->xfers[xi].dst == h)
		s->xfers[xi].committed = 1;
	/* a leg counted as skipped (failed: its host taken for dead) that the shard applied after
	 * all (delivered before the failure was declared): its parts are not lag */
	if (xi >= 0 && s->xfers[xi].skipped && s->xfers[xi].dst == h) {
		d->lag = d->lag > s->xfers[xi].skipped ? d->lag - s->xfers[xi].skipped : 0;
		log_info("server shard %d at %s committed transfer %" PRIu64 " counted as skipped: "
			 "lag %" PRId64 " now", k, s->cl.hosts[h].name, xfer, d->lag);
		s->xfers[xi].skipped = 0;
	}
	/* own + lag never passes the ordered count: a safety net for a skipped leg applied after
	 * its transfer record was dropped (copies at version - lag would find the shard past them
	 * for good) */
	if (d->version + d->lag > s->server.ordered) {
		int64_t lag = s->server.ordered - d->version;
		log_info("server shard %d at %s: version %" PRId64 " with lag %" PRId64 " passes the "
			 "group's %" PRId64 ": lag %" PRId64 " now", k, s->cl.hosts[h].name, d->version,
			 d->lag, s->server.ordered, lag > 0 ? lag : 0);
		d->lag = lag > 0 ? lag : 0;
	}
	group_version(s);
}

void sched_shard_skipped(struct sched *s, int h, int n, uint64_t xfer)
{
	int k = sched_shard_of(s, h), xi = sched_xfer_find(s, xfer);

	if (k < 0 || n <= 0)
		return;
	if (xi >= 0 && s->xfers[xi].dst == h)
		s->xfers[xi].skipped += n;
	s->server.shard[k].lag += n;
	group_version(s);
}

int sched_shard_fill(struct sched *s, struct plan_batch *b)
{
	const struct sched_server *g = &s->server;
	int S = g->n_shards, n_p = b->n_pulls;
	struct plan_shard *sh = calloc((size_t)b->n_updates * (size_t)S + 1, sizeof(*sh));
	struct plan_pull *pl = calloc((size_t)n_p * (size_t)S + 1, sizeof(*pl));
	int *srv = calloc((size_t)S, sizeof(int));

	if (!sh || !pl || !srv) {
		free(sh);
		free(pl);
		free(srv);
		return -ENOMEM;
	}
	free(b->servers);
	b->servers = srv;
	b->n_servers = S;
	for (int k = 0; k < S; k++)
		srv[k] = g->shard[k].host;
	/* aggregators (§5.2 per shard): not on a shard server's host */
	int na = 0;
	for (int a = 0; a < b->n_aggregators; a++)
		if (sched_shard_of(s, b->aggregators[a]) < 0)
			b->aggregators[na++] = b->aggregators[a];
	b->n_aggregators = na;
	b->n_distributors = 0;
	b->v_init = g->ordered;
	if (b->n_updates == 0) {
		free(sh); /* a batch of pulls only: nothing holds the shard legs (freed per batch before:
			   * sched_shard_free_batch frees them through updates[0]; make sanitize found it) */
		sh = NULL;
	}
	for (int i = 0; i < b->n_updates; i++) {
		b->updates[i].shards = sh + (size_t)i * (size_t)S;
		b->updates[i].n_shards = S;
		for (int k = 0; k < S; k++)
			b->updates[i].shards[k] = (struct plan_shard){ .server = k,
				.bytes = mlf_payload_bytes(g->shard[k].n_floats) };
	}
	for (int k = 0; k < S; k++) {
		/* shard k's copies wait for the legs ordered to it before this batch (--copy-wait) */
		double ready = sched_shard_copy_ready(s, k, b->now_s);
		for (int q = 0; q < n_p; q++) {
			struct plan_pull *e = &pl[(size_t)q * (size_t)S + (size_t)k];
			*e = b->pulls[q];
			e->ready_s = ready;
			e->server = k;
			e->bytes = mlf_payload_bytes(g->shard[k].n_floats);
		}
	}
	free(b->pulls);
	b->pulls = pl;
	b->n_pulls = n_p * S;
	if (n_p)
		b->model_bytes = mlf_payload_bytes(g->shard[0].n_floats);
	return 0;
}

void sched_shard_free_batch(struct plan_batch *b)
{
	if (b->n_servers > 1 && b->n_updates > 0)
		free(b->updates[0].shards);
}

/* Per-batch bookkeeping of the commands (S = shards). */
struct shard_work {
	uint64_t *legx;   /* transfer id of leg k of update i: [i * S + k] */
	uint64_t *aggx;   /* transfer id of shard k's aggregate of plan aggregate a: [a * S + k] */
	int *agg_of;      /* plan aggregate of update i, or -1 */
	char *sent;       /* leg commanded through a plan transfer: [i * S + k] */
	char *psent;      /* pull entry (q * S + k) answered through a plan transfer */
	int *legs_left;   /* legs of update i still to command (`keep` until the last) */
	int models_left[SCHED_MAX_SHARDS]; /* copies shard k still sends in this batch */
};

static void shard_work_free(struct shard_work *w)
{
	free(w->legx);
	free(w->aggx);
	free(w->agg_of);
	free(w->sent);
	free(w->psent);
	free(w->legs_left);
}

/* Model copy of pull entry @e (shard k = e % S) to its worker; @t NULL = within one host. */
static int command_copy(struct sched *s, const struct plan_batch *b, const int *psel, int e,
			const struct plan_transfer *t, int64_t v, struct shard_work *w)
{
	const struct sched_server *g = &s->server;
	int S = g->n_shards, k = e % S;
	const struct sched_pull *pl = &s->pulls[psel[e / S]];
	int src = g->shard[k].host;
	uint64_t x = sched_xfer_fresh(s), bytes = mlf_payload_bytes(g->shard[k].n_floats);
	json_t *m = sched_cmd_send(s, "model", pl->id, x, pl->worker, 3, bytes, t, b->now_s,
					 --w->models_left[k] > 0);

	if (!m)
		return -ENOMEM;
	json_object_set_new(m, "batch", json_integer(s->batch_no));
	json_object_set_new(m, "at_version", json_integer(v - g->shard[k].lag));
	json_object_set_new(m, "version", json_integer(v));
	sched_to_app(s, "server", src, m);
	return sched_xfer_add(s, &(struct sched_xfer){ .xfer = x, .what = SCHED_WHAT_MODEL,
			      .id = pl->id, .src = src, .dst = pl->worker, .chan = 3,
			      .bytes = bytes }, t, b->now_s);
}

/*
 * Leg @k of update @i (its slice) to shard k's server, or to its aggregator when the plan
 * aggregates it (chan 2); @t NULL = within one host.
 */
static int command_leg(struct sched *s, const struct plan_batch *b, const struct plan *p,
		       const int *sel, int i, int k, const struct plan_transfer *t,
		       struct shard_work *w)
{
	const struct sched_server *g = &s->server;
	const struct sched_shard *d = &g->shard[k];
	struct sched_update *u = &s->upd[sel[i]];
	uint64_t x = w->legx[(size_t)i * (size_t)g->n_shards + (size_t)k];
	uint64_t bytes = mlf_payload_bytes(d->n_floats);
	int a = w->agg_of[i], dst = a >= 0 ? p->aggregates[a].host : d->host, chan = a >= 0 ? 2 : 1;
	json_t *m = sched_cmd_send(s, "update", u->id, x, dst, chan, bytes, t, b->now_s,
					 --w->legs_left[i] > 0);

	if (!m)
		return -ENOMEM;
	json_object_set_new(m, "offset", json_integer((json_int_t)d->offset));
	json_object_set_new(m, "n_floats", json_integer((json_int_t)d->n_floats));
	sched_to_app(s, "worker", u->worker, m);
	return sched_xfer_add(s, &(struct sched_xfer){ .xfer = x, .what = SCHED_WHAT_UPDATE,
			      .id = u->id, .src = u->worker, .dst = dst, .chan = chan,
			      .bytes = bytes }, t, b->now_s);
}

/*
 * Shard @t->shard's aggregate of plan aggregate @t->carries (§5.2 per shard): the aggregator
 * sums the inputs' slices at that shard's offset and sends the sum to the shard's server. Its
 * sched_xfer's id is the aggregate's shard-0 transfer id, the `agg` of its updates.
 */
static int command_aggregate(struct sched *s, const struct plan_batch *b, const struct plan *p,
			     const int *sel, const struct plan_transfer *t, struct shard_work *w)
{
	const struct sched_server *g = &s->server;
	const struct plan_aggregate *ag = &p->aggregates[t->carries];
	const struct sched_shard *d = &g->shard[t->shard];
	size_t S = (size_t)g->n_shards, a = (size_t)t->carries;
	json_t *in = json_array();

	for (int k = 0; k < ag->n_inputs; k++)
		json_array_append_new(in, json_integer((json_int_t)s->upd[sel[ag->inputs[k]]].id));
	sched_to_app(s, "aggregator", ag->host, json_pack(
		"{s:s, s:I, s:o, s:s, s:i, s:I, s:f, s:o, s:I}", "type", "aggregate", "agg",
		(json_int_t)w->aggx[a * S + (size_t)t->shard], "inputs", in, "dst",
		s->cl.hosts[d->host].name, "chan", 1, "bytes", (json_int_t)t->bytes, "start",
		s->t0 + t->start_s, "steps", sched_cmd_steps(t), "offset", (json_int_t)d->offset));
	return sched_xfer_add(s, &(struct sched_xfer){ .xfer = w->aggx[a * S + (size_t)t->shard],
			      .what = SCHED_WHAT_AGGREGATE, .id = w->aggx[a * S], .src = ag->host,
			      .dst = d->host, .chan = 1, .bytes = t->bytes }, t, b->now_s);
}

int sched_shard_command(struct sched *s, const struct plan_batch *b, const struct plan *p,
			const int *sel, const int *psel)
{
	struct sched_server *g = &s->server;
	int S = g->n_shards, n_u = b->n_updates, n_e = b->n_pulls, rc = 0;
	/* the version the pulls of this batch get: MLfabric-A every update ordered so far (a
	 * shard's copy waits until it applied them), MLfabric-S sched_shard_pull_version */
	int64_t v = g->sync ? sched_shard_pull_version(s) : g->ordered;
	struct shard_work w = { 0 };
	size_t n_legs = (size_t)n_u * (size_t)S + 1;

	w.legx = calloc(n_legs, sizeof(*w.legx));
	w.aggx = calloc((size_t)p->n_aggregates * (size_t)S + 1, sizeof(*w.aggx));
	w.agg_of = malloc(sizeof(int) * ((size_t)n_u + 1));
	w.sent = calloc(n_legs, 1);
	w.psent = calloc((size_t)n_e + 1, 1);
	w.legs_left = calloc((size_t)n_u + 1, sizeof(int));
	if (!w.legx || !w.aggx || !w.agg_of || !w.sent || !w.psent || !w.legs_left) {
		shard_work_free(&w);
		return -ENOMEM;
	}
	for (int k = 0; k < S; k++)
		w.models_left[k] = n_e / S;
	/* 1. model copies, before the orders: no shard can pass version v before they arrive */
	for (int i = 0; i < p->n_transfers && !rc; i++) {
		const struct plan_transfer *t = &p->transfers[i];
		if (t->kind != PLAN_CARRY_MODEL)
			continue;
		w.psent[t->carries] = 1;
		rc = command_copy(s, b, psel, t->carries, t, v, &w);
	}
	for (int e = 0; e < n_e && !rc; e++)
		if (!w.psent[e]) /* the worker runs on that shard server's host */
			rc = command_copy(s, b, psel, e, NULL, v, &w);
	/* 2. one commit order per shard server: the plan's commits at its host */
	for (int k = 0; k < n_u * S; k++)
		w.legx[k] = sched_xfer_fresh(s);
	for (int k = 0; k < p->n_aggregates * S; k++)
		w.aggx[k] = sched_xfer_fresh(s);
	for (int i = 0; i < n_u; i++)
		w.agg_of[i] = -1;
	for (int a = 0; a < p->n_aggregates; a++)
		for (int k = 0; k < p->aggregates[a].n_inputs; k++)
			w.agg_of[p->aggregates[a].inputs[k]] = a;
	for (int k = 0; k < S && !rc; k++) {
		json_t *xs = json_array();
		for (int c = 0; c < p->n_commits; c++) {
			const struct plan_commit *pc = &p->commits[c];
			if (pc->host != g->shard[k].host)
				continue;
			json_array_append_new(xs, json_integer((json_int_t)(pc->kind ==
				PLAN_CARRY_AGGREGATE ? w.aggx : w.legx)[(size_t)pc->carries *
				(size_t)S + (size_t)k]));
		}
		sched_cmd_order(s, "server", g->shard[k].host, 1, xs);
	}
	for (int k = 0; k < p->n_order; k++)
		w.legs_left[p->order[k]] = S;
	g->ordered += p->n_order;
	/* 3. the legs and the shards' aggregates */
	for (int i = 0; i < p->n_transfers && !rc; i++) {
		const struct plan_transfer *t = &p->transfers[i];
		if (t->shard < 0 || t->shard >= S || t->kind == PLAN_CARRY_MODEL)
			continue;
		if (t->kind == PLAN_CARRY_AGGREGATE) {
			rc = command_aggregate(s, b, p, sel, t, &w);
			continue;
		}
		w.sent[(size_t)t->carries * (size_t)S + (size_t)t->shard] = 1;
		rc = command_leg(s, b, p, sel, t->carries, t->shard, t, &w);
	}
	for (int o = 0; o < p->n_order && !rc; o++)
		for (int k = 0; k < S && !rc; k++)
			if (!w.sent[(size_t)p->order[o] * (size_t)S + (size_t)k])
				rc = command_leg(s, b, p, sel, p->order[o], k, NULL, &w);
	/* 4. fates */
	for (int o = 0; o < p->n_order; o++) {
		struct sched_update *u = &s->upd[sel[p->order[o]]];
		u->state = SCHED_UPD_PLANNED;
		u->legs = S;
		int a = w.agg_of[p->order[o]];
		u->xfer = w.legx[(size_t)p->order[o] * (size_t)S];
		u->agg = a >= 0 ? w.aggx[(size_t)a * (size_t)S] : 0;
		sched_rec_update(s, u, a >= 0 ? "aggregated" : "direct", NULL);
	}
	for (int k = 0; k < p->n_dropped; k++)
		sched_cmd_drop(s, &s->upd[sel[p->dropped[k]]], "delay bound");
	shard_work_free(&w);
	return rc;
}
