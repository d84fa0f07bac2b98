/* sched_msg.c - the handlers of dataplane and application messages (docs/control.md). */
#include "sched_msg.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "arr.h"
#include "clock.h"
#include "log.h"
#include "clocksync.h"
#include "proto.h"
#include "sched_arrival.h"
#include "sched_clock.h"
#include "sched_fail.h"
#include "sched_lead.h"
#include "sched_policy.h"
#include "sched_rec.h"
#include "sched_repl.h"
#include "sched_shard.h"
#include "sched_status.h"
#include "sched_xfer.h"

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
	sched_conn_queue(s, ci, m);
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

void sched_msg_frame_error(struct sched *s, int ci, const char *err)
{
	reply_err(s, ci, NULL, "%s", err);
}

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
			sched_fail_apps(s, h, b, why);
			s->hosts[h].apps &= ~b;
			if (b == SCHED_ROLE_SERVER && s->server.host == h)
				s->server.host = -1;
			if (b == SCHED_ROLE_SERVER && sched_shard_of(s, h) >= 0)
				s->server.shard[sched_shard_of(s, h)].host = -1;
			log_warn("%s unregistered", app);
		}
}

/*
 * Challenge of a hello on @ci claiming @name (a host, or SCHED_VIEWER_NAME): checks the peer's
 * nonce, sends ours with the MAC that proves the key. Returns 0, or -1 after refusing (closing).
 */
static int challenge(struct sched *s, int ci, json_t *m, const char *name, const char *what)
{
	const char *nc = json_string_value(json_object_get(m, "nonce"));
	char mac[AUTH_MAC_HEX + 1], who[64];
	struct sched_conn *c = &s->conns[ci];

	if (!auth_nonce_ok(nc)) {
		sched_conn_peer(s, ci, who, sizeof(who));
		log_warn("control connection from %s: hello as %s without a valid nonce: refused "
			 "(this cluster authenticates its %ss)", who, name, what);
		reply_err(s, ci, NULL, "hello: %s %s: field \"nonce\" (32 hex digits) missing: cluster "
			  "%s authenticates its %ss (key_file, docs/security.md)", what, name, s->cl.name, what);
		c->closing = 1;
		return -1;
	}
	snprintf(c->nc, sizeof(c->nc), "%s", nc);
	if (auth_nonce(c->ns) || auth_mac(s->key, "scheduler", name, c->nc, c->ns, mac)) {
		log_err("hello from %s: no random nonce or HMAC available", name);
		c->closing = 1;
		return -1;
	}
	sched_conn_queue(s, ci, json_pack("{s:s, s:s, s:s}", "type", "challenge", "nonce", c->ns, "mac", mac));
	return 0;
}

/* `hello` with "viewer": true: a status viewer (tools/mlf-top) that proves the key when the
 * cluster has one (docs/security.md); without a key it is a viewer at once. */
static void on_viewer_hello(struct sched *s, int ci, json_t *m)
{
	if (!s->auth_on) {
		s->conns[ci].viewer = 1;
		sched_conn_trust(s, ci);
		sched_conn_queue(s, ci, json_pack("{s:s, s:b}", "type", "welcome", "viewer", 1));
		return;
	}
	if (challenge(s, ci, m, SCHED_VIEWER_NAME, "viewer") == 0)
		s->conns[ci].auth_viewer = 1;
}

static void on_hello(struct sched *s, int ci, json_t *m, double now)
{
	if (json_is_true(json_object_get(m, "viewer"))) {
		on_viewer_hello(s, ci, m);
		return;
	}
	const char *name = get_str(s, ci, NULL, m, "host");
	int h = name ? cluster_find(&s->cl, name) : -1;

	if (h < 0) {
		if (name)
			reply_err(s, ci, NULL, "hello: unknown host '%s' (not in cluster %s)", name,
				  s->cl.name);
		s->conns[ci].closing = 1;
		return;
	}
	json_t *proto = json_object_get(m, "proto"); /* absent: a peer older than the field */
	if (proto && (!json_is_integer(proto) || json_integer_value(proto) != MLF_PROTO_VERSION)) {
		char theirs[32] = "not an integer";

		if (json_is_integer(proto))
			snprintf(theirs, sizeof(theirs), "%lld", (long long)json_integer_value(proto));
		reply_err(s, ci, NULL, "hello: host %s speaks protocol version %s, this scheduler %d",
			  name, theirs, MLF_PROTO_VERSION);
		s->conns[ci].closing = 1;
		return;
	}
	if (s->auth_on) {
		/* challenge-response first (docs/security.md): nothing is bound to host h before the
		 * `auth` answer proves the key, so an outsider's hello replaces nobody */
		if (challenge(s, ci, m, name, "host") == 0)
			s->conns[ci].auth_host = h;
		return;
	}
	sched_bind_host(s, ci, h, now);
}

/* `auth`: the host's answer to the challenge; a good MAC binds the connection to the host. */
static void on_auth(struct sched *s, int ci, json_t *m, double now)
{
	struct sched_conn *c = &s->conns[ci];
	const char *mac = json_string_value(json_object_get(m, "mac"));
	char who[64];
	int h = c->auth_host;

	if (s->auth_on && c->auth_viewer) {
		c->auth_viewer = 0;
		if (!mac || auth_check(s->key, "viewer", SCHED_VIEWER_NAME, c->nc, c->ns, mac)) {
			sched_conn_peer(s, ci, who, sizeof(who));
			log_warn("control connection from %s: authentication as a status viewer failed (wrong "
				 "key): closed", who);
			reply_err(s, ci, NULL, "auth: authentication as a status viewer failed");
			c->closing = 1;
			return;
		}
		c->viewer = 1;
		sched_conn_trust(s, ci);
		sched_conn_queue(s, ci, json_pack("{s:s, s:b}", "type", "welcome", "viewer", 1));
		return;
	}
	if (!s->auth_on || h < 0 || c->host >= 0) {
		reply_err(s, ci, NULL, "auth: no challenge is pending on this connection");
		c->closing = 1;
		return;
	}
	c->auth_host = -1;
	if (!mac || auth_check(s->key, "host", s->cl.hosts[h].name, c->nc, c->ns, mac)) {
		sched_conn_peer(s, ci, who, sizeof(who));
		log_warn("control connection from %s: authentication as host %s failed (wrong key): closed",
			 who, s->cl.hosts[h].name);
		reply_err(s, ci, NULL, "auth: authentication as host %s failed", s->cl.hosts[h].name);
		c->closing = 1;
		return;
	}
	sched_bind_host(s, ci, h, now);
}

void sched_bind_host(struct sched *s, int ci, int h, double now)
{
	const char *name = s->cl.hosts[h].name;

	if (s->hosts[h].conn >= 0 && s->hosts[h].conn != ci) {
		log_warn("peer %s connected again: closing its previous connection", name);
		sched_conn_close(s, s->hosts[h].conn);
	}
	s->conns[ci].host = h;
	sched_conn_trust(s, ci);
	s->hosts[h].conn = ci;
	sched_clock_reset(s, h);
	s->hosts[h].alive = 1;
	s->hosts[h].last_heard = now;
	log_info("peer %s connected", name);
	json_t *w = json_pack("{s:s, s:s, s:f, s:f}", "type", "welcome", "host", name, "t_lag",
			      s->cfg.t_lag_s, "batch_ms", s->cfg.batch_s * 1e3);
	sched_conn_queue(s, ci, w);
}

static void take_estimate(struct sched *s, int ci, int h, double off, double err, int n)
{
	struct sched_host *sh = &s->hosts[h];
	const char *name = s->cl.hosts[h].name;
	int first = !sh->clk_known;

	sh->clk_offset_s = off;
	sh->clk_err_s = err;
	sh->clk_known = 1;
	if (first || fabs(off - sh->clk_rec_s) > (err > 1e-4 ? err : 1e-4)) {
		sh->clk_rec_s = off;
		sched_rec_put(s->rec_clocks, json_pack("{s:f, s:s, s:f, s:f, s:i}", "t", clock_real_s(),
			      "host", name, "offset_ms", sched_rec_ms(off), "err_ms", sched_rec_ms(err), "samples", n));
		log_info("host %s: clock offset %+.3f ms (+- %.3f ms) to the scheduler's%s", name,
			 off * 1e3, err * 1e3, s->cfg.clock_correct ? "" :
			 " (not corrected: --clock-correct off)");
	}
	if (n >= CLOCKSYNC_SAMPLES && err > s->cfg.clock_max_s) {
		char why[256];
		snprintf(why, sizeof(why), "host %s: clock offset uncertain by %.1f ms over %d "
			 "exchanges, above --clock-max-ms %.1f: refused (is the control network "
			 "congested, or the host overloaded?)", name, err * 1e3, n,
			 s->cfg.clock_max_s * 1e3);
		log_err("%s", why);
		sched_conn_queue(s, ci, json_pack("{s:s, s:s}", "type", "error", "reason", why));
		s->conns[ci].closing = 1;
		return;
	}
	if (err > s->cfg.clock_warn_s && !sh->clk_warned) {
		sh->clk_warned = 1;
		log_warn("host %s: clock offset uncertain by %.1f ms, above --clock-warn-ms %.1f: its "
			 "transfers may start that far from plan", name, err * 1e3,
			 s->cfg.clock_warn_s * 1e3);
	}
	else if (err <= s->cfg.clock_warn_s)
		sh->clk_warned = 0;
}

/*
 * A `heartbeat` @m from the dataplane of connection @ci (docs/control.md "Clocks"): answered with
 * `clock` (t1 = its "t", t2 = t3 = now on the scheduler's clock: the host's half of the NTP-style
 * exchange, lib/proto/clocksync.h); the host's estimate, when it carries one ("offset" =
 * scheduler clock - host clock, "offset_err", "offset_n"), is taken. An uncertainty above
 * --clock-warn-ms is warned about naming the host, once per crossing; above --clock-max-ms over a
 * full filter window the host is refused: an `error` naming the bound, then the connection is
 * closed (the dataplane reconnects and is measured again). A clocks.jsonl line records the first
 * estimate and every move by more than its uncertainty.
 */
static void on_heartbeat(struct sched *s, int ci, json_t *m)
{
	int h = s->conns[ci].host;
	json_t *t1 = json_object_get(m, "t"), *off = json_object_get(m, "offset"),
	       *err = json_object_get(m, "offset_err"), *n = json_object_get(m, "offset_n");

	if (h < 0)
		return;
	if (json_is_number(t1)) {
		double now = clock_real_s();
		sched_conn_queue(s, ci, json_pack("{s:s, s:f, s:f, s:f}", "type", "clock", "t1",
						  json_number_value(t1), "t2", now, "t3", now));
	}
	if (json_is_number(off) && json_is_number(err) && isfinite(json_number_value(off)) &&
	    isfinite(json_number_value(err)) && json_number_value(err) >= 0)
		take_estimate(s, ci, h, json_number_value(off), json_number_value(err),
			      json_is_integer(n) ? (int)json_integer_value(n) : 1);
}

static void on_link(struct sched *s, int ci, json_t *m)
{
	struct sched_link_report r;
	struct sched_host *h = &s->hosts[s->conns[ci].host];

	if (get_num(s, ci, NULL, m, "t", &r.t) || get_num(s, ci, NULL, m, "up_gbps", &r.up_gbps) ||
	    get_num(s, ci, NULL, m, "down_gbps", &r.down_gbps))
		return;
	r.tx_gbps = json_number_value(json_object_get(m, "tx_gbps")); /* optional: 0 */
	r.rx_gbps = json_number_value(json_object_get(m, "rx_gbps"));
	sched_netmon_port(&h->port, json_object_get(m, "port")); /* optional */
	const struct sched_link_report *last = h->n_reports ?
		&h->reports[(h->next_report + SCHED_LINK_HIST - 1) % SCHED_LINK_HIST] : NULL;
	if (!last || last->up_gbps != r.up_gbps || last->down_gbps != r.down_gbps)
		sched_arrival_note(s, r.t + s->cfg.t_lag_s); /* a capacity change, usable then */
	if (sched_netmon_on_link(s, s->conns[ci].host, m, r.t, r.up_gbps, r.down_gbps) &&
	    s->cfg.capacity_measured)
		sched_arrival_note(s, r.t); /* a measured estimate changed: usable now */
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
	if (h >= 0 && s->server.n_shards && (sched_shard_of(s, h) >= 0 || !sched_shard_ready(s)))
		h = s->server.host; /* any shard server names the sharded model's group */
	if (h < 0)
		reply_err(s, ci, app, "%s: field \"server\": unknown host '%s'", ctl_type(m), v);
	else if (s->server.host >= 0 && h != s->server.host) {
		reply_err(s, ci, app, "%s: field \"server\": '%s' is not the registered server (%s)",
			  ctl_type(m), v, s->cl.hosts[s->server.host].name);
		h = -1;
	}
	return h;
}

static int on_register_server(struct sched *s, int ci, const char *app, json_t *m)
{
	struct sched_server sv = { .host = s->conns[ci].host };
	uint64_t nw;
	const char *mode = get_str(s, ci, app, m, "mode");

	if (!mode)
		return -1;
	if (strcmp(mode, "mlfabric-a") && strcmp(mode, "mlfabric-s")) {
		reply_err(s, ci, app, "register: field \"mode\": '%s' is not mlfabric-a or mlfabric-s%s", mode,
			  !strcmp(mode, "async") ? " (MLfabric-A is now spelled mlfabric-a)" :
			  !strcmp(mode, "sync") ? " (MLfabric-S is now spelled mlfabric-s)" : "");
		return -1;
	}
	sv.sync = !strcmp(mode, "mlfabric-s");
	if (get_u64(s, ci, app, m, "n_floats", &sv.n_floats) ||
	    get_u64(s, ci, app, m, "bytes", &sv.bytes) ||
	    get_i64(s, ci, app, m, "version", &sv.version) ||
	    get_i64(s, ci, app, m, "tau_max", &sv.tau_max) ||
	    get_num(s, ci, app, m, "momentum", &sv.momentum) ||
	    get_u64(s, ci, app, m, "n_workers", &nw))
		return -1;
	/* momentum is gamma of eq. 2: the planner bounds divergence with it (found by fuzz_sched:
	 * a server registered with momentum 4 made every replica batch refused) */
	if (!(sv.momentum >= 0 && sv.momentum < 1)) {
		reply_err(s, ci, app, "register: field \"momentum\" must be in [0, 1), got %g", sv.momentum);
		return -1;
	}
	if (sv.bytes == 0 || nw == 0 || nw > 100000 || sv.tau_max < 0) {
		reply_err(s, ci, app, "register: fields \"bytes\" and \"n_workers\" must be > 0 and "
			  "\"tau_max\" >= 0");
		return -1;
	}
	if (sv.bytes > SCHED_MAX_BYTES || sv.tau_max > SCHED_MAX_TAU || sv.version < 0 ||
	    sv.version > SCHED_MAX_VERSION) {
		reply_err(s, ci, app, "register: field \"%s\" out of range (bytes <= %llu, tau_max <= %lld, "
			  "version 0..%lld)", sv.bytes > SCHED_MAX_BYTES ? "bytes" :
			  sv.tau_max > SCHED_MAX_TAU ? "tau_max" : "version",
			  (unsigned long long)SCHED_MAX_BYTES, (long long)SCHED_MAX_TAU, (long long)SCHED_MAX_VERSION);
		return -1;
	}
	sv.n_workers = (int)nw;
	snprintf(sv.role, sizeof(sv.role), "server");
	if (json_object_get(m, "n_shards")) {
		char err[320];
		if (sched_shard_register(s, ci >= 0 ? sv.host : -1, m, &sv, err, sizeof(err))) {
			reply_err(s, ci, app, "%s", err);
			return -1;
		}
		s->hosts[sv.host].apps |= SCHED_ROLE_SERVER;
		return 0;
	}
	if (s->server.host >= 0 && s->server.host != sv.host && s->hosts[s->server.host].alive) {
		reply_err(s, ci, app, "register: a server is already registered at %s",
			  s->cl.hosts[s->server.host].name);
		return -1;
	}
	for (int i = 0; i < s->n_upd; i++)
		if (s->upd[i].state == SCHED_UPD_PLANNED)
			sched_fail_update(s, &s->upd[i], "the server registered again");
	s->server = sv;
	/* a promoted replica registering with a restarted scheduler names the servers it replaced:
	 * workers still naming them mean this one (as after the fail-over itself) */
	json_t *rep = json_object_get(m, "replaces"), *r;
	size_t k;
	json_array_foreach(rep, k, r) {
		int oh = json_is_string(r) ? cluster_find(&s->cl, json_string_value(r)) : -1;
		if (oh >= 0 && oh != sv.host)
			s->server_alias[oh] = 1;
	}
	s->server_alias[sv.host] = 0;
	/* MLfabric-S: a new iteration from the registered version (sched_policy_mlfabric_s.c) */
	s->sync.v = sv.version;
	s->sync.n = 0;
	s->sync.since = 0;
	if (s->sync.in)
		memset(s->sync.in, 0, (size_t)s->cl.n_hosts);
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
	return 0;
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
	if (s->server.n_shards) {
		reply_err(s, ci, app, "register: the model is sharded over %d servers; a sharded "
			  "model is not replicated", s->server.n_shards);
		return -1;
	}
	if (server_field(s, ci, app, m) < 0 || get_num(s, ci, app, m, "div_max", &div_max) ||
	    get_u64(s, ci, app, m, "n_floats", &n_floats) ||
	    get_u64(s, ci, app, m, "bytes", &bytes) ||
	    get_i64(s, ci, app, m, "version", &version) ||
	    get_num(s, ci, app, m, "momentum", &momentum))
		return -1;
	if (!(div_max >= 0 && div_max < 1e300) || !(momentum >= 0 && momentum < 1)) {
		reply_err(s, ci, app, "register: field \"%s\" out of range (div_max >= 0, momentum in [0, 1))",
			  !(div_max >= 0 && div_max < 1e300) ? "div_max" : "momentum");
		return -1;
	}
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
	/* with a key, the roles that hold the model must be the host's in the cluster file
	 * (docs/security.md "Roles"; without one anybody can say hello as the server's host);
	 * a replica registers as the server when it takes over */
	if (s->auth_on && (bit == SCHED_ROLE_SERVER || bit == SCHED_ROLE_REPLICA) &&
	    !(s->cl.hosts[h].roles & (CLUSTER_ROLE_SERVER | CLUSTER_ROLE_REPLICA))) {
		reply_err(s, ci, app, "register: host %s may not register as %s: its roles in cluster %s "
			  "include neither server nor replica", s->cl.hosts[h].name, role, s->cl.name);
		return;
	}
	if (bit == SCHED_ROLE_SERVER) {
		char err[256];

		/* refused: no `registered` (a shard server refused again used to get one after the
		 * error, its host still being the group's shard host) */
		if (on_register_server(s, ci, app, m) < 0)
			return;
		/* the registered mode chooses the planning policy */
		if (sched_policy_choose(s, err, sizeof(err)))
			log_err("%s: %s", app, err);
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
	sched_policy_on_register(s, h, bit);
}

static void on_update(struct sched *s, int ci, const char *app, json_t *m, double now)
{
	struct sched_update u = { .worker = s->conns[ci].host, .batch = -1, .t_arrival = now };

	if (get_u64(s, ci, app, m, "id", &u.id) || server_field(s, ci, app, m) < 0 ||
	    get_u64(s, ci, app, m, "bytes", &u.bytes) ||
	    get_i64(s, ci, app, m, "version", &u.version) ||
	    get_num(s, ci, app, m, "norm", &u.norm))
		return;
	if (u.bytes == 0 || u.bytes > SCHED_MAX_BYTES) {
		reply_err(s, ci, app, "update: field \"bytes\" must be in 1..%llu", (unsigned long long)SCHED_MAX_BYTES);
		return;
	}
	if (u.version < 0 || u.version > SCHED_MAX_VERSION || !(u.norm >= 0 && u.norm < 1e300)) {
		reply_err(s, ci, app, "update: field \"%s\" out of range (version 0..%lld, norm finite >= 0)",
			  u.version < 0 || u.version > SCHED_MAX_VERSION ? "version" : "norm",
			  (long long)SCHED_MAX_VERSION);
		return;
	}
	if (sched_find_update(s, u.id) >= 0) {
		reply_err(s, ci, app, "update: field \"id\": update %" PRIu64 " is already known", u.id);
		return;
	}
	sched_policy_on_update(s, u.worker, now); /* one more iteration of this worker */
	int max = s->cfg.max_upd_per_host;
	if (max > 0 && s->hosts[u.worker].held_upd >= max) {
		/* dropped at once, not held: told to the worker like any drop (sched_fail_update) */
		char reason[160];
		snprintf(reason, sizeof(reason), "host %s already has %d updates at the scheduler "
			 "(--max-updates-per-host %d)", s->cl.hosts[u.worker].name,
			 s->hosts[u.worker].held_upd, max);
		log_warn("update %" PRIu64 " of %s dropped: %s", u.id, app, reason);
		sched_fail_update(s, &u, reason);
		return;
	}
	if (arr_grow((void **)&s->upd, &s->cap_upd, s->n_upd + 1, sizeof(*s->upd))) {
		reply_err(s, ci, app, "update: out of memory");
		return;
	}
	s->upd[s->n_upd++] = u;
	s->hosts[u.worker].held_upd++;
	sched_index_put(&s->upd_ix, u.id, s->n_upd - 1); /* a failure leaves it stale: scans */
	if (s->server.host >= 0 && !s->hosts[s->server.host].alive) {
		char reason[96];
		snprintf(reason, sizeof(reason), "peer %s dead", s->cl.hosts[s->server.host].name);
		sched_fail_update(s, &s->upd[s->n_upd - 1], reason);
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
	if (json_object_get(m, "after") && get_u64(s, ci, app, m, "after", &p.after))
		return;
	if (p.min_version < -1 || p.min_version > SCHED_MAX_VERSION) {
		reply_err(s, ci, app, "pull: field \"min_version\" out of range (0..%lld)",
			  (long long)SCHED_MAX_VERSION);
		return;
	}
	int max = s->cfg.max_pulls_per_host;
	if (max > 0 && s->hosts[p.worker].held_pulls >= max) {
		reply_err(s, ci, app, "pull %" PRIu64 " refused: host %s already has %d pulls waiting at "
			  "the scheduler (--max-pulls-per-host %d)", p.id, s->cl.hosts[p.worker].name,
			  s->hosts[p.worker].held_pulls, max);
		return;
	}
	if (arr_grow((void **)&s->pulls, &s->cap_pulls, s->n_pulls + 1, sizeof(*s->pulls))) {
		reply_err(s, ci, app, "pull: out of memory");
		return;
	}
	s->pulls[s->n_pulls++] = p;
	s->hosts[p.worker].held_pulls++;
}

static void on_done(struct sched *s, int ci, const char *app, json_t *m, double now)
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
		sched_lead_done(s, xi, json_number_value(json_object_get(m, "t")),
				json_number_value(json_object_get(m, "t_start")), now);
		s->xfers[xi].done = s->xfers[xi].sent = 1;
		return;
	}
	const char *why = json_string_value(json_object_get(m, "reason"));
	char reason[256];
	snprintf(reason, sizeof(reason), "transfer failed: %s (status %" PRId64 ")",
		 why ? why : "no reason given", status);
	sched_fail_xfer(s, xi, reason);
}

static void commit_one(struct sched *s, uint64_t id)
{
	int ui = sched_find_update(s, id);
	if (ui >= 0 && s->upd[ui].state == SCHED_UPD_PLANNED && s->server.n_shards &&
	    --s->upd[ui].legs > 0)
		return; /* a sharded update is committed once every shard applied its leg */
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
	if (s->server.n_shards && sched_shard_of(s, s->conns[ci].host) >= 0) {
		sched_shard_commit(s, s->conns[ci].host, version, xfer);
	} else if (s->conns[ci].host != s->server.host) {
		reply_err(s, ci, app, "commit: %s is not the registered server's host",
			  s->cl.hosts[s->conns[ci].host].name);
		return;
	} else if (version > s->server.version) {
		s->server.version = version;
	}
	sched_repl_server_commit(s, clock_real_s());
	sched_xfer_done(s, xfer);
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
	const struct sched_update *u = NULL;
	json_array_foreach(missing, k, v) {
		int ui = json_is_integer(v) ? sched_find_update(s, (uint64_t)json_integer_value(v)) : -1;
		if (ui >= 0) {
			sched_fail_update(s, &s->upd[ui], "aggregator sent the aggregate without it");
			u = &s->upd[ui];
		}
	}
	/* those the scheduler declared lost itself (sched_fail.c agg_input_lost) are counted */
	int n_new = (int)json_array_size(missing) - (xi >= 0 ? s->xfers[xi].inputs_lost : 0);
	if (xi >= 0 && n_new > 0) {
		int dst = s->xfers[xi].dst;
		int ks = s->server.n_shards ? sched_shard_of(s, dst) : dst == s->server.host ? 0 : -1;
		if (s->server.n_shards) /* that shard applies the aggregate without them */
			sched_shard_skipped(s, dst, n_new, 0);
		/* then the running policies hear it (MLfabric-S: the iteration's `sync_step` at that
		 * server, else it waits for parts that never come); every input of one aggregate
		 * is of one batch, so any of them names the iteration */
		if (ks >= 0 && u)
			sched_policy_part_lost(s, u, ks, n_new);
		else if (ks >= 0)
			log_warn("aggregate %" PRIu64 ": its missing inputs are forgotten: the policies do "
				 "not hear of %d lost part(s)", agg, n_new);
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
		on_done(s, ci, app, m, now);
	else if (!strcmp(type, "commit"))
		on_commit(s, ci, app, m);
	else if (!strcmp(type, "promoted"))
		on_promoted(s, ci, app, m);
	else if (!strcmp(type, "waits")) {
		char err[256];
		if (sched_status_waits(s, h, app, m, err, sizeof(err)))
			reply_err(s, ci, app, "%s", err);
		return; /* nothing to plan */
	} else if (sched_policy_owns_msg(type)) {
		char err[256];
		if (sched_policy_on_msg(s, h, app, type, m, now, err, sizeof(err)))
			reply_err(s, ci, app, "%s", err);
	} else {
		on_partial(s, ci, app, m);
	}
	/* an update, a pull, a done, a commit, a registration...: plan soon (docs/scheduler.md
	 * "Batches"); one that changed nothing makes a plan with nothing to do */
	sched_arrival_note(s, now);
}

void sched_msg_handle(struct sched *s, int ci, json_t *m)
{
	static const char *const app_types[] = { "register", "update", "pull", "done", "commit",
						 "partial", "promoted", "waits" };
	const char *type = ctl_type(m);
	double now = clock_real_s();

	if (!strcmp(type, "status")) {
		sched_status_request(s, ci, now);
		return;
	}
	if (s->conns[ci].viewer) {
		reply_err(s, ci, NULL, "%s: this is a read-only status connection (only \"status\")",
			  type);
		s->conns[ci].closing = 1;
		return;
	}
	if (!strcmp(type, "auth")) {
		on_auth(s, ci, m, now);
		return;
	}
	if (!strcmp(type, "hello")) {
		if (s->conns[ci].auth_viewer)
			reply_err(s, ci, NULL, "hello: this connection already said hello as a viewer");
		else if (s->conns[ci].host >= 0 || s->conns[ci].auth_host >= 0)
			reply_err(s, ci, NULL, "hello: this connection already belongs to %s",
				  s->cl.hosts[s->conns[ci].host >= 0 ? s->conns[ci].host
								     : s->conns[ci].auth_host].name);
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
	if (!strcmp(type, "heartbeat")) {
		on_heartbeat(s, ci, m);
		return;
	}
	/* times a host reports, in the scheduler's clock from here on (docs/control.md "Clocks") */
	static const char *const times[] = { "t", "t_start" };
	for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++) {
		json_t *t = json_object_get(m, times[i]);
		if (json_is_number(t))
			json_object_set_new(m, times[i], json_real(sched_clock_from_host(
					    s, s->conns[ci].host, json_number_value(t))));
	}
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
	if (sched_policy_owns_msg(type)) { /* a policy's message (sched_policy_ops.msg_types) */
		on_app(s, ci, m, type, now);
		return;
	}
	reply_err(s, ci, json_string_value(json_object_get(m, "app")), "unknown type '%s'", type);
}
