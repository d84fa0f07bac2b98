/* sched_daemon.c - the scheduler daemon: dataplane connections, message handling, failures. */
#define _GNU_SOURCE
#include "sched_daemon.h"

#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "mlf_payload.h"
#include "sched_batch.h"
#include "sched_rec.h"
#include "sched_repl.h"
#include "sched_xfer.h"

void sched_daemon_defaults(struct sched_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->batch_s = 0.1;
	cfg->t_lag_s = 0.2;
	cfg->peer_timeout_s = 2.0;
	cfg->headroom = 0.95;
	cfg->lead_s = 0.01;
	cfg->sync_timeout_s = 30.0;
	cfg->xfer_timeout_s = 10.0;
	cfg->max_batch = MLF_PAYLOAD_MAX_PARTS; /* an aggregate can name every update */
	cfg->catchup_timeout_s = 10.0;
}

/* ---- replies and errors ---------------------------------------------------------------- */

/* Answer connection @ci with {"type":"error","reason":...} (routed back to @app when set). */
static void reply_err(struct sched *s, int ci, const char *app, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void reply_err(struct sched *s, int ci, const char *app, const char *fmt, ...)
{
	char reason[512];
	va_list ap;
	int h = s->conns[ci].host;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	log_warn("%s%s%s: %s", h >= 0 ? s->cl.hosts[h].name : "connection",
		 app ? " " : "", app ? app : "", reason);
	json_t *m = json_pack("{s:s, s:s}", "type", "error", "reason", reason);
	if (app)
		json_object_set_new(m, "app", json_string(app));
	ctl_queue(&s->conns[ci].c, m);
	json_decref(m);
}

/* Field getters: 0 with the value, or -1 after answering an error that names the field. */
static int get_int(struct sched *s, int ci, const char *app, json_t *m, const char *k,
		   int64_t *out, int nonneg)
{
	json_t *v = json_object_get(m, k);
	if (!json_is_integer(v) || (nonneg && json_integer_value(v) < 0)) {
		reply_err(s, ci, app, "%s: field \"%s\" %s", ctl_type(m), k, !v ? "is missing" :
			  nonneg ? "is not a non-negative integer" : "is not an integer");
		return -1;
	}
	*out = json_integer_value(v);
	return 0;
}

static int get_u64(struct sched *s, int ci, const char *app, json_t *m, const char *k,
		   uint64_t *out)
{
	int64_t v;
	int rc = get_int(s, ci, app, m, k, &v, 1);
	*out = (uint64_t)v;
	return rc;
}

static int get_i64(struct sched *s, int ci, const char *app, json_t *m, const char *k,
		   int64_t *out)
{
	return get_int(s, ci, app, m, k, out, 0);
}

static int get_num(struct sched *s, int ci, const char *app, json_t *m, const char *k,
		   double *out)
{
	json_t *v = json_object_get(m, k);
	if (!json_is_number(v) || !(json_number_value(v) >= 0)) {
		reply_err(s, ci, app, "%s: field \"%s\" %s", ctl_type(m), k,
			  v ? "is not a non-negative number" : "is missing");
		return -1;
	}
	*out = json_number_value(v);
	return 0;
}

static const char *get_str(struct sched *s, int ci, const char *app, json_t *m, const char *k)
{
	const char *v = json_string_value(json_object_get(m, k));
	if (!v)
		reply_err(s, ci, app, "%s: field \"%s\" %s", ctl_type(m), k,
			  json_object_get(m, k) ? "is not a string" : "is missing");
	return v;
}

/* ---- failures (docs/control.md "Reality differs from the plan") ------------------------- */

static void skip_at_server(struct sched *s, uint64_t xfer)
{
	sched_to_app(s, "server", s->server.host, json_pack("{s:s, s:i, s:[I]}", "type", "skip",
		     "chan", 1, "xfers", (json_int_t)xfer));
}

/* A planned update that will never be committed: record it lost, tell its worker. */
static int lose_update(struct sched *s, struct sched_update *u, const char *reason)
{
	if (u->state != SCHED_UPD_PLANNED && u->state != SCHED_UPD_PENDING)
		return 0;
	int was_planned = u->state == SCHED_UPD_PLANNED;
	u->state = was_planned ? SCHED_UPD_LOST : SCHED_UPD_DROPPED;
	sched_to_app(s, "worker", u->worker, json_pack("{s:s, s:I, s:s}", "type", "drop", "id",
		     (json_int_t)u->id, "reason", reason));
	sched_rec_update(s, u, was_planned ? "lost" : "dropped", reason);
	if (was_planned)
		sched_repl_server_lost(s, u);
	return was_planned;
}

static void xfer_failed(struct sched *s, int xi, const char *reason);

/*
 * Update transfer @x into the aggregator at x->dst (chan 2), part of aggregate @agg, will not
 * arrive. While another input of @agg is still planned, the aggregator is told at once (`skip`
 * with chan 2 and the update id) so it sends the aggregate of the rest instead of waiting its
 * input timeout; when none is left, the aggregate itself fails (skipped at its destination).
 */
static void agg_input_lost(struct sched *s, const struct sched_xfer *x, uint64_t agg, const char *reason)
{
	int left = 0, ai = sched_xfer_find(s, agg);

	for (int i = 0; i < s->n_upd; i++)
		left += s->upd[i].agg == agg && s->upd[i].state == SCHED_UPD_PLANNED;
	if (left) {
		sched_to_app(s, "aggregator", x->dst, json_pack("{s:s, s:i, s:[I]}", "type", "skip",
			     "chan", 2, "xfers", (json_int_t)x->id));
		return;
	}
	if (ai >= 0 && !s->xfers[ai].done) {
		char why[320];
		snprintf(why, sizeof(why), "every input of it was lost (last: %s)", reason);
		xfer_failed(s, ai, why);
	}
}

/* Transfer @x will not arrive (failed done, dead peer): lose what it carries, skip it. */
static void xfer_failed(struct sched *s, int xi, const char *reason)
{
	struct sched_xfer *x = &s->xfers[xi];
	int lost = 0, finished = x->done; /* delivered or committed already */

	x->done = 1;
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
		 * a server restarted from its checkpoint) unless its worker is gone */
		int again = !finished && s->hosts[x->dst].alive && (s->hosts[x->dst].apps & SCHED_ROLE_WORKER) &&
			    !sched_grow((void **)&s->pulls, s->n_pulls, &s->cap_pulls, sizeof(*s->pulls));
		if (again)
			s->pulls[s->n_pulls++] = (struct sched_pull){ .id = x->id, .worker = x->dst,
				.min_version = -1, .t_arrival = clock_real_s() };
		log_warn("model transfer %" PRIu64 " (pull %" PRIu64 ") to %s failed: %s%s", x->xfer,
			 x->id, s->cl.hosts[x->dst].name, reason, again ? "; the pull is answered again" : "");
		return;
	}
	if (x->what == SCHED_WHAT_UPDATE) {
		int ui = sched_find_update(s, x->id);
		if (ui >= 0)
			lost = lose_update(s, &s->upd[ui], reason);
		if (ui >= 0 && x->chan == 2 && !finished && s->upd[ui].agg)
			agg_input_lost(s, x, s->upd[ui].agg, reason);
	} else {
		for (int i = 0; i < s->n_upd; i++)
			if (s->upd[i].agg == x->xfer)
				lost += lose_update(s, &s->upd[i], reason);
	}
	log_warn("transfer %" PRIu64 " %s -> %s failed (%s): %d update(s) lost", x->xfer,
		 s->cl.hosts[x->src].name, s->cl.hosts[x->dst].name, reason, lost);
	if (x->chan == 1 && !finished && s->server.host >= 0)
		skip_at_server(s, x->xfer);
}

static void conn_close(struct sched *s, int ci)
{
	struct sched_conn *c = &s->conns[ci];
	if (c->host >= 0 && s->hosts[c->host].conn == ci)
		s->hosts[c->host].conn = -1;
	ctl_close(&c->c);
	c->host = -1;
	c->closing = 0;
}

/* Does the loss of the @roles applications of host @h doom unfinished transfer @x? */
static int xfer_needs(const struct sched *s, const struct sched_xfer *x, int h, unsigned roles)
{
	if ((roles & SCHED_ROLE_WORKER) && ((x->what == SCHED_WHAT_UPDATE && x->src == h) ||
					    (x->what == SCHED_WHAT_MODEL && x->dst == h)))
		return 1;
	if ((roles & SCHED_ROLE_AGGREGATOR) && ((x->chan == 2 && x->dst == h) ||
						(x->what == SCHED_WHAT_AGGREGATE && x->src == h)))
		return 1;
	if ((roles & SCHED_ROLE_REPLICA) && h == s->repl.host && x->chan == 4 && x->dst == h)
		return 1;
	return (roles & SCHED_ROLE_SERVER) && h == s->server.host &&
	       ((x->chan == 1 && x->dst == h) || ((x->what == SCHED_WHAT_MODEL ||
						   x->what == SCHED_WHAT_STATE) && x->src == h));
}

/*
 * The @roles applications of host @h are gone (dead host, or an application its dataplane no
 * longer has): fail their unfinished transfers, drop their pending updates and pulls.
 */
static void apps_gone(struct sched *s, int h, unsigned roles, const char *reason)
{
	int server = (roles & SCHED_ROLE_SERVER) && h == s->server.host;

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
			lose_update(s, &s->upd[i], reason);
	for (int i = 0; i < s->n_xfers; i++)
		if (!s->xfers[i].done && xfer_needs(s, &s->xfers[i], h, roles))
			xfer_failed(s, i, reason);
	if (roles & SCHED_ROLE_WORKER) { /* after the failed models, which may queue their pulls again */
		int k = 0;
		for (int i = 0; i < s->n_pulls; i++)
			if (s->pulls[i].worker != h)
				s->pulls[k++] = s->pulls[i];
		s->n_pulls = k;
	}
	if (server) {
		for (int i = 0; i < s->n_upd; i++)
			lose_update(s, &s->upd[i], reason);
		log_warn("server at %s is gone: updates are dropped until it is back",
			 s->cl.hosts[h].name);
	}
}

/* Host @h is dead (silent or disconnected): fail what involves it, drop its pending updates. */
static void host_dead(struct sched *s, int h)
{
	char reason[96];

	snprintf(reason, sizeof(reason), "peer %s dead", s->cl.hosts[h].name);
	s->hosts[h].alive = 0;
	if (s->hosts[h].conn >= 0)
		conn_close(s, s->hosts[h].conn);
	apps_gone(s, h, SCHED_ROLE_WORKER | SCHED_ROLE_SERVER | SCHED_ROLE_AGGREGATOR |
		  SCHED_ROLE_REPLICA, reason);
}

/*
 * A dataplane's `error`: logged. With "app" (an application of that host the dataplane no
 * longer has), that application is unregistered and what depends on it fails.
 */
static void on_peer_error(struct sched *s, int ci, json_t *m)
{
	int h = s->conns[ci].host;
	const char *reason = json_string_value(json_object_get(m, "reason"));
	const char *app = json_string_value(json_object_get(m, "app"));
	const char *at = app ? strchr(app, '@') : NULL;
	char why[160];

	log_warn("peer %s reports an error: %s", s->cl.hosts[h].name, reason ? reason : "-");
	if (!at || strcmp(at + 1, s->cl.hosts[h].name))
		return;
	/* A promoted replica may still call itself replica@host: it is the server. */
	int promoted = h == s->server.host && !strncmp(app, s->server.role, (size_t)(at - app)) &&
		       strlen(s->server.role) == (size_t)(at - app);
	for (unsigned b = SCHED_ROLE_WORKER; b <= SCHED_ROLE_REPLICA; b <<= 1)
		if (((promoted && b == SCHED_ROLE_SERVER) ||
		     (!promoted && !strncmp(app, sched_role_name(b), (size_t)(at - app)) &&
		      strlen(sched_role_name(b)) == (size_t)(at - app))) && (s->hosts[h].apps & b)) {
			snprintf(why, sizeof(why), "application %s gone", app);
			apps_gone(s, h, b, why);
			s->hosts[h].apps &= ~b;
			if (b == SCHED_ROLE_SERVER && s->server.host == h)
				s->server.host = -1;
			log_warn("%s unregistered", app);
		}
}

/* ---- message handlers ------------------------------------------------------------------ */

static void on_hello(struct sched *s, int ci, json_t *m, double now)
{
	const char *name = get_str(s, ci, NULL, m, "host");
	int h = name ? cluster_find(&s->cl, name) : -1;

	if (h < 0) {
		if (name)
			reply_err(s, ci, NULL, "hello: unknown host '%s' (not in cluster %s)", name,
				  s->cl.name);
		s->conns[ci].closing = 1;
		return;
	}
	if (s->hosts[h].conn >= 0 && s->hosts[h].conn != ci) {
		log_warn("peer %s connected again: closing its previous connection", name);
		conn_close(s, s->hosts[h].conn);
	}
	s->conns[ci].host = h;
	s->hosts[h].conn = ci;
	s->hosts[h].alive = 1;
	s->hosts[h].last_heard = now;
	log_info("peer %s connected", name);
	json_t *w = json_pack("{s:s, s:s, s:f, s:f}", "type", "welcome", "host", name, "t_lag",
			      s->cfg.t_lag_s, "batch_ms", s->cfg.batch_s * 1e3);
	ctl_queue(&s->conns[ci].c, w);
	json_decref(w);
}

static void on_link(struct sched *s, int ci, json_t *m)
{
	struct sched_link_report r;
	struct sched_host *h = &s->hosts[s->conns[ci].host];

	if (get_num(s, ci, NULL, m, "t", &r.t) || get_num(s, ci, NULL, m, "up_gbps", &r.up_gbps) ||
	    get_num(s, ci, NULL, m, "down_gbps", &r.down_gbps))
		return;
	h->reports[h->next_report] = r;
	h->next_report = (h->next_report + 1) % SCHED_LINK_HIST;
	if (h->n_reports < SCHED_LINK_HIST)
		h->n_reports++;
}

/* The server host named by @v ("ps" or "server@ps"), or -1 after an error reply. */
static int server_field(struct sched *s, int ci, const char *app, json_t *m)
{
	const char *v = get_str(s, ci, app, m, "server");
	if (!v)
		return -1;
	const char *at = strchr(v, '@');
	int h = cluster_find(&s->cl, at ? at + 1 : v);
	if (h >= 0 && s->server_alias[h] && s->server.host >= 0)
		h = s->server.host; /* the server moved (fail-over) */
	if (h < 0)
		reply_err(s, ci, app, "%s: field \"server\": unknown host '%s'", ctl_type(m), v);
	else if (s->server.host >= 0 && h != s->server.host) {
		reply_err(s, ci, app, "%s: field \"server\": '%s' is not the registered server (%s)",
			  ctl_type(m), v, s->cl.hosts[s->server.host].name);
		h = -1;
	}
	return h;
}

static void on_register_server(struct sched *s, int ci, const char *app, json_t *m)
{
	struct sched_server sv = { .host = s->conns[ci].host };
	uint64_t nw;
	const char *mode = get_str(s, ci, app, m, "mode");

	if (!mode)
		return;
	if (strcmp(mode, "async") && strcmp(mode, "sync")) {
		reply_err(s, ci, app, "register: field \"mode\": '%s' is not async or sync", mode);
		return;
	}
	sv.sync = !strcmp(mode, "sync");
	if (get_u64(s, ci, app, m, "n_floats", &sv.n_floats) ||
	    get_u64(s, ci, app, m, "bytes", &sv.bytes) ||
	    get_i64(s, ci, app, m, "version", &sv.version) ||
	    get_i64(s, ci, app, m, "tau_max", &sv.tau_max) ||
	    get_num(s, ci, app, m, "momentum", &sv.momentum) ||
	    get_u64(s, ci, app, m, "n_workers", &nw))
		return;
	if (sv.bytes == 0 || nw == 0 || nw > 100000 || sv.tau_max < 0) {
		reply_err(s, ci, app, "register: fields \"bytes\" and \"n_workers\" must be > 0 and "
			  "\"tau_max\" >= 0");
		return;
	}
	if (s->server.host >= 0 && s->server.host != sv.host && s->hosts[s->server.host].alive) {
		reply_err(s, ci, app, "register: a server is already registered at %s",
			  s->cl.hosts[s->server.host].name);
		return;
	}
	sv.n_workers = (int)nw;
	snprintf(sv.role, sizeof(sv.role), "server");
	for (int i = 0; i < s->n_upd; i++)
		if (s->upd[i].state == SCHED_UPD_PLANNED)
			lose_update(s, &s->upd[i], "the server registered again");
	s->server = sv;
	/* a server restarted from an older state (a checkpoint): what waits for a newer version
	 * would never be served, so pending updates and pulls count from its version */
	for (int i = 0; i < s->n_upd; i++)
		if (s->upd[i].state == SCHED_UPD_PENDING && s->upd[i].version > sv.version)
			s->upd[i].version = sv.version;
	for (int i = 0; i < s->n_pulls; i++)
		if (s->pulls[i].min_version > sv.version)
			s->pulls[i].min_version = sv.version;
	log_info("server at %s: mode %s, %" PRIu64 " bytes per update, version %" PRId64
		 ", tau_max %" PRId64 ", momentum %g, %d workers", s->cl.hosts[sv.host].name, mode,
		 sv.bytes, sv.version, sv.tau_max, sv.momentum, sv.n_workers);
}

/* `register` role replica (docs/replication.md). Returns 0 when accepted, else -1 (answered). */
static int on_register_replica(struct sched *s, int ci, const char *app, json_t *m)
{
	double div_max;
	uint64_t n_floats, bytes;
	int64_t version;
	double momentum;
	char err[256];
	const char *repl = json_string_value(json_object_get(m, "replication"));

	if (s->server.host < 0 || !s->hosts[s->server.host].alive) {
		reply_err(s, ci, app, "register: no server is registered");
		return -1;
	}
	if (server_field(s, ci, app, m) < 0 || get_num(s, ci, app, m, "div_max", &div_max) ||
	    get_u64(s, ci, app, m, "n_floats", &n_floats) ||
	    get_u64(s, ci, app, m, "bytes", &bytes) ||
	    get_i64(s, ci, app, m, "version", &version) ||
	    get_num(s, ci, app, m, "momentum", &momentum))
		return -1;
	if (json_object_get(m, "replication") && (!repl || (strcmp(repl, "mlfabric") &&
							    strcmp(repl, "chain")))) {
		reply_err(s, ci, app, "register: field \"replication\" is not \"mlfabric\" or "
			  "\"chain\"");
		return -1;
	}
	if (sched_repl_register(s, s->conns[ci].host, div_max, repl && !strcmp(repl, "chain"),
				n_floats, version, err, sizeof(err))) {
		reply_err(s, ci, app, "%s", err);
		return -1;
	}
	return 0;
}

static void on_register(struct sched *s, int ci, const char *app, json_t *m)
{
	int h = s->conns[ci].host;
	const char *role = get_str(s, ci, app, m, "role");
	unsigned bit = 0;

	if (!role)
		return;
	for (unsigned b = SCHED_ROLE_WORKER; b <= SCHED_ROLE_REPLICA; b <<= 1)
		if (!strcmp(role, sched_role_name(b)))
			bit = b;
	if (!bit) {
		reply_err(s, ci, app, "register: field \"role\": unknown role '%s'", role);
		return;
	}
	if (bit == SCHED_ROLE_SERVER) {
		on_register_server(s, ci, app, m);
		if (s->server.host != h)
			return;
	} else if (bit == SCHED_ROLE_WORKER) {
		if (server_field(s, ci, app, m) < 0)
			return;
	} else if (bit == SCHED_ROLE_REPLICA) {
		if (on_register_replica(s, ci, app, m))
			return;
	}
	s->hosts[h].apps |= bit;
	log_info("%s registered", app);
	json_t *r = json_pack("{s:s, s:I}", "type", "registered", "xfer_base",
			      (json_int_t)((uint64_t)(h + 1) << 40));
	sched_to_app(s, role, h, r);
}

static void on_update(struct sched *s, int ci, const char *app, json_t *m, double now)
{
	struct sched_update u = { .worker = s->conns[ci].host, .batch = -1, .t_arrival = now };

	if (get_u64(s, ci, app, m, "id", &u.id) || server_field(s, ci, app, m) < 0 ||
	    get_u64(s, ci, app, m, "bytes", &u.bytes) ||
	    get_i64(s, ci, app, m, "version", &u.version) ||
	    get_num(s, ci, app, m, "norm", &u.norm))
		return;
	if (u.bytes == 0) {
		reply_err(s, ci, app, "update: field \"bytes\" must be > 0");
		return;
	}
	if (sched_find_update(s, u.id) >= 0) {
		reply_err(s, ci, app, "update: field \"id\": update %" PRIu64 " is already known", u.id);
		return;
	}
	if (sched_grow((void **)&s->upd, s->n_upd, &s->cap_upd, sizeof(*s->upd))) {
		reply_err(s, ci, app, "update: out of memory");
		return;
	}
	s->upd[s->n_upd++] = u;
	if (s->server.host >= 0 && !s->hosts[s->server.host].alive) {
		char reason[96];
		snprintf(reason, sizeof(reason), "peer %s dead", s->cl.hosts[s->server.host].name);
		lose_update(s, &s->upd[s->n_upd - 1], reason);
	}
}

static void on_pull(struct sched *s, int ci, const char *app, json_t *m, double now)
{
	struct sched_pull p = { .worker = s->conns[ci].host, .min_version = -1, .t_arrival = now };

	if (get_u64(s, ci, app, m, "id", &p.id) || server_field(s, ci, app, m) < 0)
		return;
	if (json_object_get(m, "min_version") && get_i64(s, ci, app, m, "min_version",
							  &p.min_version))
		return;
	if (sched_grow((void **)&s->pulls, s->n_pulls, &s->cap_pulls, sizeof(*s->pulls))) {
		reply_err(s, ci, app, "pull: out of memory");
		return;
	}
	s->pulls[s->n_pulls++] = p;
}

static void on_done(struct sched *s, int ci, const char *app, json_t *m)
{
	uint64_t xfer;
	int64_t status;

	if (get_u64(s, ci, app, m, "xfer", &xfer) || get_i64(s, ci, app, m, "status", &status))
		return;
	int xi = sched_xfer_find(s, xfer);
	int h = s->conns[ci].host;
	if (s->repl.host >= 0 && s->repl.chain && h == s->server.host &&
	    (xi < 0 || s->xfers[xi].src != h)) {
		/* the server's unscheduled chain forward of an applied transfer */
		if (status < 0) {
			char why[160];
			snprintf(why, sizeof(why), "the server's chain forward of transfer %" PRIu64
				 " failed (status %" PRId64 ")", xfer, status);
			sched_repl_stale(s, why);
		}
		return;
	}
	if (xi < 0) {
		reply_err(s, ci, app, "done: field \"xfer\": unknown transfer %" PRIu64, xfer);
		return;
	}
	if (status == 0) {
		s->xfers[xi].done = 1;
		return;
	}
	const char *why = json_string_value(json_object_get(m, "reason"));
	char reason[256];
	snprintf(reason, sizeof(reason), "transfer failed: %s (status %" PRId64 ")",
		 why ? why : "no reason given", status);
	xfer_failed(s, xi, reason);
}

static void commit_one(struct sched *s, uint64_t id)
{
	int ui = sched_find_update(s, id);
	if (ui >= 0 && s->upd[ui].state == SCHED_UPD_PLANNED) {
		s->upd[ui].state = SCHED_UPD_COMMITTED;
		sched_repl_server_committed(s, &s->upd[ui]);
	}
}

static void on_commit(struct sched *s, int ci, const char *app, json_t *m)
{
	uint64_t xfer;
	int64_t version;

	if (get_u64(s, ci, app, m, "xfer", &xfer) || get_i64(s, ci, app, m, "version", &version))
		return;
	if (s->conns[ci].host == s->repl.host && !strncmp(app, "replica@", 8)) {
		sched_repl_commit(s, m, xfer, version, clock_real_s());
		return;
	}
	if (s->conns[ci].host != s->server.host) {
		reply_err(s, ci, app, "commit: %s is not the registered server's host",
			  s->cl.hosts[s->conns[ci].host].name);
		return;
	}
	if (version > s->server.version)
		s->server.version = version;
	sched_repl_server_commit(s, clock_real_s());
	int xi = sched_xfer_find(s, xfer);
	if (xi >= 0)
		s->xfers[xi].done = 1;
	json_t *parts = json_object_get(m, "parts"), *v;
	size_t k;
	if (json_is_array(parts) && json_array_size(parts) > 0) {
		json_array_foreach(parts, k, v)
			if (json_is_integer(v))
				commit_one(s, (uint64_t)json_integer_value(v));
		return;
	}
	for (int i = 0; i < s->n_upd; i++)
		if (s->upd[i].state == SCHED_UPD_PLANNED &&
		    (s->upd[i].agg == xfer || (!s->upd[i].agg && s->upd[i].xfer == xfer))) {
			s->upd[i].state = SCHED_UPD_COMMITTED;
			sched_repl_server_committed(s, &s->upd[i]);
		}
}

static void on_partial(struct sched *s, int ci, const char *app, json_t *m)
{
	uint64_t agg;
	json_t *missing = json_object_get(m, "missing"), *v;
	size_t k;

	if (get_u64(s, ci, app, m, "agg", &agg))
		return;
	int xi = sched_xfer_find(s, agg);
	if (xi >= 0 && s->xfers[xi].replica) {
		char why[128];
		snprintf(why, sizeof(why), "replica aggregate %" PRIu64 " at %s sent partial", agg,
			 s->cl.hosts[s->conns[ci].host].name);
		sched_repl_stale(s, why);
		return;
	}
	if (!json_is_array(missing)) {
		reply_err(s, ci, app, "partial: field \"missing\" %s",
			  missing ? "is not an array" : "is missing");
		return;
	}
	json_array_foreach(missing, k, v) {
		int ui = json_is_integer(v) ? sched_find_update(s, (uint64_t)json_integer_value(v)) : -1;
		if (ui >= 0)
			lose_update(s, &s->upd[ui], "aggregator sent the aggregate without it");
	}
	log_warn("aggregate %" PRIu64 " at %s sent without %zu input(s)", agg,
		 s->cl.hosts[s->conns[ci].host].name, json_array_size(missing));
}

static void on_promoted(struct sched *s, int ci, const char *app, json_t *m)
{
	int64_t version;
	char err[256];

	if (get_i64(s, ci, app, m, "version", &version))
		return;
	if (sched_repl_promoted(s, s->conns[ci].host, version, clock_real_s(), err, sizeof(err)))
		reply_err(s, ci, app, "%s", err);
	else
		snprintf(s->server.role, sizeof(s->server.role), "%.*s",
			 (int)(strchr(app, '@') - app), app);
}

/* An application message: check "app" names a role on this connection's host, dispatch. */
static void on_app(struct sched *s, int ci, json_t *m, const char *type, double now)
{
	int h = s->conns[ci].host;
	const char *app = json_string_value(json_object_get(m, "app"));
	const char *at = app ? strchr(app, '@') : NULL;

	if (!app) {
		reply_err(s, ci, NULL, "%s: field \"app\" is missing", type);
		return;
	}
	if (!at || strcmp(at + 1, s->cl.hosts[h].name)) {
		reply_err(s, ci, app, "%s: field \"app\": '%s' is not <role>@%s", type, app,
			  s->cl.hosts[h].name);
		return;
	}
	if (!strcmp(type, "register"))
		on_register(s, ci, app, m);
	else if (!strcmp(type, "update"))
		on_update(s, ci, app, m, now);
	else if (!strcmp(type, "pull"))
		on_pull(s, ci, app, m, now);
	else if (!strcmp(type, "done"))
		on_done(s, ci, app, m);
	else if (!strcmp(type, "commit"))
		on_commit(s, ci, app, m);
	else if (!strcmp(type, "promoted"))
		on_promoted(s, ci, app, m);
	else
		on_partial(s, ci, app, m);
}

void sched_daemon_handle(struct sched *s, int ci, json_t *m)
{
	static const char *const app_types[] = { "register", "update", "pull", "done", "commit",
						 "partial", "promoted" };
	const char *type = ctl_type(m);
	double now = clock_real_s();

	if (!strcmp(type, "hello")) {
		if (s->conns[ci].host >= 0)
			reply_err(s, ci, NULL, "hello: this connection already belongs to %s",
				  s->cl.hosts[s->conns[ci].host].name);
		else
			on_hello(s, ci, m, now);
		return;
	}
	if (s->conns[ci].host < 0) {
		reply_err(s, ci, NULL, "%s: expected hello first", type);
		s->conns[ci].closing = 1;
		return;
	}
	s->hosts[s->conns[ci].host].last_heard = now;
	if (!strcmp(type, "heartbeat"))
		return;
	if (!strcmp(type, "error")) {
		on_peer_error(s, ci, m);
		return;
	}
	if (!strcmp(type, "link")) {
		on_link(s, ci, m);
		return;
	}
	for (size_t i = 0; i < sizeof(app_types) / sizeof(app_types[0]); i++)
		if (!strcmp(type, app_types[i])) {
			on_app(s, ci, m, type, now);
			return;
		}
	reply_err(s, ci, json_string_value(json_object_get(m, "app")), "unknown type '%s'", type);
}

/* ---- the loop -------------------------------------------------------------------------- */

static void accept_all(struct sched *s)
{
	for (;;) {
		int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		int one = 1, ci = -1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		for (int i = 0; i < s->n_conns; i++)
			if (s->conns[i].c.fd < 0)
				ci = i;
		if (ci < 0) {
			if (sched_grow((void **)&s->conns, s->n_conns, &s->cap_conns,
				       sizeof(*s->conns))) {
				close(fd);
				continue;
			}
			ci = s->n_conns++;
		}
		ctl_init(&s->conns[ci].c, fd);
		s->conns[ci].host = -1;
		s->conns[ci].closing = 0;
		s->conns[ci].t_open = clock_real_s();
	}
}

static void disconnect(struct sched *s, int ci)
{
	int h = s->conns[ci].host;
	if (h >= 0 && s->hosts[h].conn == ci) {
		log_warn("peer %s disconnected", s->cl.hosts[h].name);
		host_dead(s, h);
	}
	if (s->conns[ci].c.fd >= 0)
		conn_close(s, ci);
}

static void read_conn(struct sched *s, int ci)
{
	long r = ctl_read(&s->conns[ci].c);
	char err[256];
	json_t *m;

	if (r == 0 || (r < 0 && r != -EAGAIN)) {
		disconnect(s, ci);
		return;
	}
	while (s->conns[ci].c.fd >= 0 && !s->conns[ci].closing) {
		int rc = ctl_next(&s->conns[ci].c, &m, err, sizeof(err));
		if (rc == 0)
			break;
		if (rc < 0) {
			reply_err(s, ci, NULL, "%s", err);
			continue;
		}
		sched_daemon_handle(s, ci, m);
		json_decref(m);
	}
}

static void check_peers(struct sched *s, double now)
{
	for (int h = 0; h < s->cl.n_hosts; h++)
		if (s->hosts[h].alive && now - s->hosts[h].last_heard > s->cfg.peer_timeout_s) {
			log_warn("peer %s silent for %.1f s", s->cl.hosts[h].name,
				 now - s->hosts[h].last_heard);
			host_dead(s, h);
		}
	for (int ci = 0; ci < s->n_conns; ci++)
		if (s->conns[ci].c.fd >= 0 && s->conns[ci].host < 0 && !s->conns[ci].closing &&
		    now - s->conns[ci].t_open > s->cfg.peer_timeout_s) {
			log_warn("connection without hello for %.1f s: closed",
				 now - s->conns[ci].t_open);
			conn_close(s, ci);
		}
}

/* Transfers with no `done` --xfer-timeout after their planned end are lost (nothing waits). */
static void check_xfers(struct sched *s, double now)
{
	char reason[128];

	for (int i = 0; i < s->n_xfers; i++) {
		struct sched_xfer *x = &s->xfers[i];
		double late = now - s->t0 - x->end;
		if (x->done || late <= s->cfg.xfer_timeout_s)
			continue;
		snprintf(reason, sizeof(reason), "no done report %.1f s after its planned end", late);
		xfer_failed(s, i, reason);
	}
}

static void flush_all(struct sched *s)
{
	for (int ci = 0; ci < s->n_conns; ci++) {
		struct sched_conn *c = &s->conns[ci];
		if (c->c.fd < 0)
			continue;
		if (ctl_pending(&c->c) && ctl_flush(&c->c) < 0) {
			disconnect(s, ci);
			continue;
		}
		if (c->closing && !ctl_pending(&c->c))
			conn_close(s, ci);
	}
}

int sched_daemon_run(struct sched *s, const volatile sig_atomic_t *stop)
{
	struct pollfd *pf = NULL;
	int cap_pf = 0, rc = 0;

	s->next_batch = clock_real_s() + s->cfg.batch_s;
	while (!*stop) {
		if (cap_pf < s->n_conns + 1) {
			cap_pf = s->n_conns + 16;
			struct pollfd *np = realloc(pf, sizeof(*pf) * (size_t)cap_pf);
			if (!np) {
				rc = -ENOMEM;
				break;
			}
			pf = np;
		}
		pf[0] = (struct pollfd){ .fd = s->listen_fd, .events = POLLIN };
		for (int ci = 0; ci < s->n_conns; ci++)
			pf[ci + 1] = (struct pollfd){ .fd = s->conns[ci].c.fd, .events = POLLIN |
				(ctl_pending(&s->conns[ci].c) ? POLLOUT : 0) };
		double wait = s->next_batch - clock_real_s();
		int ms = wait <= 0 ? 0 : wait > 0.05 ? 50 : (int)(wait * 1e3) + 1;
		int n_pf = s->n_conns + 1;
		if (poll(pf, (nfds_t)n_pf, ms) < 0 && errno != EINTR) {
			rc = -errno;
			log_err("poll: %s", strerror(errno));
			break;
		}
		if (pf[0].revents & (POLLERR | POLLNVAL)) {
			rc = -EIO;
			log_err("listening socket failed");
			break;
		}
		if (pf[0].revents & POLLIN)
			accept_all(s);
		for (int ci = 0; ci < n_pf - 1; ci++)
			if (s->conns[ci].c.fd >= 0 && (pf[ci + 1].revents & (POLLIN | POLLHUP | POLLERR)))
				read_conn(s, ci);
		double now = clock_real_s();
		check_peers(s, now);
		check_xfers(s, now);
		if (now >= s->next_batch) {
			/* errors are logged by the batch; the updates stay pending for the next */
			(void)sched_batch_tick(s, now);
			sched_compact(s);
			sched_xfer_compact(s, now - s->t0);
			s->next_batch = now + s->cfg.batch_s;
		}
		flush_all(s);
	}
	free(pf);
	return rc;
}

/* ---- life cycle ------------------------------------------------------------------------ */

/* Host flags *@out from the comma-separated host list @spec of option @opt ("" = none). */
static int parse_hosts(struct sched *s, const char *opt, const char *spec, int **out, char *err,
		       size_t errlen)
{
	char list[512], *save = NULL;

	if (!spec[0])
		return 0;
	*out = calloc((size_t)s->cl.n_hosts, sizeof(int));
	if (!*out)
		return -ENOMEM;
	snprintf(list, sizeof(list), "%s", spec);
	for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int h = cluster_find(&s->cl, t);
		if (h < 0) {
			snprintf(err, errlen, "%s: unknown host '%s'", opt, t);
			return -EINVAL;
		}
		(*out)[h] = 1;
	}
	return 0;
}

struct sched *sched_daemon_create(const struct sched_config *cfg, const char *cluster_path,
				  char *err, size_t errlen)
{
	struct sched *s = calloc(1, sizeof(*s));
	char addr[64];

	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->cfg = *cfg;
	s->listen_fd = -1;
	s->server.host = -1;
	s->repl.host = -1;
	if (cluster_load(cluster_path, &s->cl, err, errlen))
		goto fail;
	s->hosts = calloc((size_t)s->cl.n_hosts, sizeof(*s->hosts));
	s->server_alias = calloc((size_t)s->cl.n_hosts, sizeof(int));
	if (!s->hosts || !s->server_alias) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	for (int h = 0; h < s->cl.n_hosts; h++)
		s->hosts[h].conn = -1;
	if (parse_hosts(s, "--aggregators", cfg->aggregators, &s->agg_allowed, err, errlen) ||
	    parse_hosts(s, "--replica-aggregators", cfg->replica_aggregators, &s->ragg_allowed, err,
			errlen))
		goto fail;
	if (cfg->listen[0]) {
		snprintf(addr, sizeof(addr), "%s", cfg->listen);
	} else {
		int h = cluster_find_role(&s->cl, CLUSTER_ROLE_SCHEDULER);
		if (h < 0) {
			snprintf(err, errlen, "%s: no host with role scheduler (use --listen IP:PORT)",
				 cluster_path);
			goto fail;
		}
		struct in_addr ia = { .s_addr = s->cl.hosts[h].ip };
		snprintf(addr, sizeof(addr), "%s:%u", inet_ntoa(ia), s->cl.control_port);
	}
	if (cfg->records[0] && sched_rec_open(s, cfg->records, err, errlen))
		goto fail;
	s->listen_fd = ctl_listen(addr, err, errlen);
	if (s->listen_fd < 0)
		goto fail;
	s->t0 = clock_real_s();
	log_info("listening on %s for %d hosts of cluster %s; batch %.0f ms, t_lag %.2f s, "
		 "peer timeout %.1f s, headroom %.2f", addr, s->cl.n_hosts, s->cl.name,
		 cfg->batch_s * 1e3, cfg->t_lag_s, cfg->peer_timeout_s, cfg->headroom);
	return s;
fail:
	sched_daemon_free(s);
	return NULL;
}

void sched_daemon_set_hook(struct sched *s, sched_batch_hook hook, void *arg)
{
	s->hook = hook;
	s->hook_arg = arg;
}

void sched_daemon_free(struct sched *s)
{
	if (!s)
		return;
	for (int ci = 0; ci < s->n_conns; ci++)
		if (s->conns[ci].c.fd >= 0)
			ctl_close(&s->conns[ci].c);
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	if (s->hosts)
		sched_repl_finish(s);
	sched_rec_close(s);
	free(s->repl.carried);
	free(s->ragg_allowed);
	free(s->server_alias);
	free(s->conns);
	free(s->upd);
	free(s->pulls);
	sched_xfer_free(s);
	free(s->hosts);
	free(s->agg_allowed);
	cluster_free(&s->cl);
	free(s);
}
