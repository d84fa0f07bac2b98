/* sched_fail.c - what a failed transfer, a lost update, a gone application or a dead host dooms. */
#include "sched_fail.h"

#include <inttypes.h>
#include <string.h>

#include "arr.h"
#include "clock.h"
#include "log.h"
#include "sched_policy.h"
#include "sched_rec.h"
#include "sched_repl.h"
#include "sched_select.h"
#include "sched_shard.h"
#include "sched_xfer.h"

/* Transfer @xfer to the server at @dst will not arrive: `skip` it there (a shard server of a
 * sharded model: its own version stays @parts behind the group's, sched_shard_skipped); the
 * running policies hear that @parts parts of update @u (NULL: none known) will not come there. */
static void skip_at_server(struct sched *s, int dst, uint64_t xfer, int parts,
			   const struct sched_update *u)
{
	int k = s->server.n_shards ? sched_shard_of(s, dst) : 0;
	int h = s->server.n_shards && k >= 0 ? dst : s->server.host;

	sched_to_app(s, "server", h, json_pack("{s:s, s:i, s:[I]}", "type", "skip",
		     "chan", 1, "xfers", (json_int_t)xfer));
	if (h == dst && s->server.n_shards)
		sched_shard_skipped(s, dst, parts, xfer);
	if (k >= 0 && u) /* after the shard's lag counts it */
		sched_policy_part_lost(s, u, k, parts);
}

/* A planned update that will never be committed: record it lost, tell its worker. */
int sched_fail_update(struct sched *s, struct sched_update *u, const char *reason)
{
	if (u->state != SCHED_UPD_PLANNED && u->state != SCHED_UPD_PENDING)
		return 0;
	int was_planned = u->state == SCHED_UPD_PLANNED;
	u->state = was_planned ? SCHED_UPD_LOST : SCHED_UPD_DROPPED;
	sched_to_app(s, "worker", u->worker, json_pack("{s:s, s:I, s:s}", "type", "drop", "id",
		     (json_int_t)u->id, "reason", reason));
	sched_rec_update(s, u, was_planned ? "lost" : "dropped", reason);
	if (was_planned) {
		sched_repl_server_lost(s, u);
		sched_select_lost(s, u);
	}
	return was_planned;
}

/*
 * Update transfer @x into the aggregator at x->dst (chan 2), part of aggregate @agg, will not
 * arrive. While another input of @agg is still planned, the aggregator is told at once (`skip`
 * with chan 2 and the update id) so it sends the aggregate of the rest instead of waiting its
 * input timeout; when none is left, the aggregate itself fails (skipped at its destination).
 */
static void agg_input_lost(struct sched *s, const struct sched_xfer *x, uint64_t agg,
			   const struct sched_update *u, const char *reason)
{
	int left = 0, ai = sched_xfer_find(s, agg);

	for (int i = 0; i < s->n_upd; i++)
		left += s->upd[i].agg == agg && s->upd[i].state == SCHED_UPD_PLANNED;
	if (left) {
		sched_to_app(s, "aggregator", x->dst, json_pack("{s:s, s:i, s:[I]}", "type", "skip",
			     "chan", 2, "xfers", (json_int_t)x->id));
		/* each server (shard) gets its aggregate one part short: its lag counts it, then
		 * the policies hear it (MLfabric-S: the iteration's sync_step there) */
		for (int i = 0; i < s->n_xfers; i++) {
			struct sched_xfer *a = &s->xfers[i];
			int k = s->server.n_shards ? sched_shard_of(s, a->dst) : a->dst == s->server.host ? 0 : -1;
			if (a->what != SCHED_WHAT_AGGREGATE || a->chan != 1 || a->done || a->replica || k < 0 ||
			    (a->xfer != agg && !(s->server.n_shards && a->id == agg)))
				continue;
			a->inputs_lost++;
			if (s->server.n_shards)
				sched_shard_skipped(s, a->dst, 1, 0);
			sched_policy_part_lost(s, u, k, 1);
		}
		return;
	}
	if (ai >= 0 && !s->xfers[ai].done) {
		char why[320];
		snprintf(why, sizeof(why), "every input of it was lost (last: %s)", reason);
		sched_fail_xfer(s, ai, why);
	}
}

/*
 * Model copy @xfer to distributor @d failed before it arrived (§10.3): the forwards of it
 * cannot start, so their pulls are answered again (sched_fail_xfer of each). The distributor
 * gives up on them by itself once their start passed its timeout.
 */
static void fail_forwards(struct sched *s, uint64_t xfer, int d, const char *reason)
{
	char why[320];

	snprintf(why, sizeof(why), "the copy %" PRIu64 " it forwards did not reach %s (%s)", xfer,
		 s->cl.hosts[d].name, reason);
	for (int i = 0; i < s->n_xfers; i++)
		if (s->xfers[i].from_xfer == xfer && !s->xfers[i].done)
			sched_fail_xfer(s, i, why);
}

/* Transfer @x will not arrive (failed done, dead peer): lose what it carries, skip it. */
void sched_fail_xfer(struct sched *s, int xi, const char *reason)
{
	struct sched_xfer *x = &s->xfers[xi];
	int lost = 0, parts = 1, finished = x->done; /* delivered or committed already */
	int ui = -1; /* an update it carries */

	x->done = 1;
	x->failed |= !finished;
	if (x->what == SCHED_WHAT_STATE) {
		sched_repl_state_failed(s, reason);
		return;
	}
	if (x->replica) {
		char why[320];
		snprintf(why, sizeof(why), "replica transfer %" PRIu64 " %s -> %s failed: %s",
			 x->xfer, s->cl.hosts[x->src].name, s->cl.hosts[x->dst].name, reason);
		if (!finished)
			sched_repl_stale(s, why);
		return;
	}
	if (x->what == SCHED_WHAT_MODEL) {
		/* the pull is answered again by the next batch (the same server after a link cut, or
		 * a server restarted from its checkpoint) unless its worker is gone; a copy to a
		 * distributor that only fed its forwards answers no pull (id 0) */
		int again = !finished && x->id && s->hosts[x->dst].alive &&
			    (s->hosts[x->dst].apps & SCHED_ROLE_WORKER) &&
			    !arr_grow((void **)&s->pulls, &s->cap_pulls, s->n_pulls + 1,
				      sizeof(*s->pulls));
		if (again)
			s->pulls[s->n_pulls++] = (struct sched_pull){ .id = x->id, .worker = x->dst,
				.min_version = -1, .t_arrival = clock_real_s() };
		log_warn("model transfer %" PRIu64 " (pull %" PRIu64 ") to %s failed: %s%s", x->xfer,
			 x->id, s->cl.hosts[x->dst].name, reason,
			 again ? "; the pull is answered again" : "");
		if (!finished && x->n_fwd)
			fail_forwards(s, x->xfer, x->dst, reason);
		return;
	}
	if (x->what == SCHED_WHAT_UPDATE) {
		ui = sched_find_update(s, x->id);
		if (ui >= 0)
			lost = sched_fail_update(s, &s->upd[ui], reason);
		if (ui >= 0 && x->chan == 2 && !finished && s->upd[ui].agg)
			agg_input_lost(s, x, s->upd[ui].agg, &s->upd[ui], reason);
	} else {
		/* a shard's aggregate (§10.2) names its updates by the shard-0 aggregate's id */
		uint64_t key = s->server.n_shards && x->id ? x->id : x->xfer;
		for (int i = 0; i < s->n_upd; i++)
			if (s->upd[i].agg == key) {
				parts++;
				ui = i;
				lost += sched_fail_update(s, &s->upd[i], reason);
			}
	}
	log_warn("transfer %" PRIu64 " %s -> %s failed (%s): %d update(s) lost", x->xfer,
		 s->cl.hosts[x->src].name, s->cl.hosts[x->dst].name, reason, lost);
	if (x->chan == 1 && !finished && s->server.host >= 0)
		skip_at_server(s, x->dst, x->xfer, x->what == SCHED_WHAT_AGGREGATE ? parts - 1 : 1,
			       ui >= 0 ? &s->upd[ui] : NULL);
}

/* Does the loss of the @roles applications of host @h doom unfinished transfer @x? */
static int xfer_needs(const struct sched *s, const struct sched_xfer *x, int h, unsigned roles)
{
	if ((roles & SCHED_ROLE_WORKER) && ((x->what == SCHED_WHAT_UPDATE && x->src == h) ||
					    (x->what == SCHED_WHAT_MODEL && x->dst == h) ||
					    (x->what == SCHED_WHAT_MODEL && x->from_xfer && x->src == h)))
		return 1; /* the last: a distributor's forward (§10.3) */
	if ((roles & SCHED_ROLE_AGGREGATOR) && ((x->chan == 2 && x->dst == h) ||
						(x->what == SCHED_WHAT_AGGREGATE && x->src == h)))
		return 1;
	if ((roles & SCHED_ROLE_REPLICA) && h == s->repl.host && x->chan == 4 && x->dst == h)
		return 1;
	return (roles & SCHED_ROLE_SERVER) && (h == s->server.host || sched_shard_of(s, h) >= 0) &&
	       ((x->chan == 1 && x->dst == h) || ((x->what == SCHED_WHAT_MODEL ||
						   x->what == SCHED_WHAT_STATE) && x->src == h));
}

/*
 * The @roles applications of host @h are gone (dead host, or an application its dataplane no
 * longer has): fail their unfinished transfers, drop their pending updates and pulls.
 */
void sched_fail_apps(struct sched *s, int h, unsigned roles, const char *reason)
{
	int server = (roles & SCHED_ROLE_SERVER) && (h == s->server.host ||
						     sched_shard_of(s, h) >= 0);

	if ((roles & SCHED_ROLE_REPLICA) && h == s->repl.host)
		sched_repl_gone(s, reason);
	if (roles & SCHED_ROLE_WORKER)
		sched_repl_worker_gone(s, h);
	if (server && sched_repl_failover(s, h, clock_real_s())) {
		server = 0;
		roles &= ~(unsigned)SCHED_ROLE_SERVER;
	}

	for (int i = 0; i < s->n_upd; i++)
		if (s->upd[i].state == SCHED_UPD_PENDING &&
		    (server || ((roles & SCHED_ROLE_WORKER) && s->upd[i].worker == h)))
			sched_fail_update(s, &s->upd[i], reason);
	for (int i = 0; i < s->n_xfers; i++)
		if (!s->xfers[i].done && xfer_needs(s, &s->xfers[i], h, roles))
			sched_fail_xfer(s, i, reason);
	if (roles & SCHED_ROLE_WORKER) { /* after the failed models, which may queue their pulls again */
		int k = 0;
		for (int i = 0; i < s->n_pulls; i++)
			if (s->pulls[i].worker != h)
				s->pulls[k++] = s->pulls[i];
		s->n_pulls = k;
	}
	if (server) {
		for (int i = 0; i < s->n_upd; i++)
			sched_fail_update(s, &s->upd[i], reason);
		log_warn("server at %s is gone: updates are dropped until it is back",
			 s->cl.hosts[h].name);
	}
}

/* Host @h is dead (silent or disconnected): fail what involves it, drop its pending updates. */
void sched_fail_host(struct sched *s, int h)
{
	char reason[96];

	snprintf(reason, sizeof(reason), "peer %s dead", s->cl.hosts[h].name);
	s->hosts[h].alive = 0;
	if (s->hosts[h].conn >= 0)
		sched_conn_close(s, s->hosts[h].conn);
	sched_fail_apps(s, h, SCHED_ROLE_WORKER | SCHED_ROLE_SERVER | SCHED_ROLE_AGGREGATOR |
		  SCHED_ROLE_REPLICA, reason);
}

/*
 * A dataplane's `error`: logged. With "app" (an application of that host the dataplane no
 * longer has), that application is unregistered and what depends on it fails.
 */
