/* ctlrelay.c - control connection to the scheduler and relay of app control messages (docs/control.md). */
#define _GNU_SOURCE
#include "ctlrelay.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <jansson.h>

#include "appif.h"
#include "ctl.h"
#include "dp.h"
#include "log.h"
#include "monitor.h"
#include "netmon.h"
#include "transport.h"
#include "auth.h"
#include "clock.h"
#include "clocksync.h"
#include "proto.h"

#define MAX_APPS 64                   /* app connections (appif's MAX_CLIENTS) */
#define RETRY_NS 500000000ULL         /* connection attempts every 0.5 s */
#define CONNECT_TIMEOUT_NS 2000000000ULL
#define HEARTBEAT_NS 250000000ULL     /* heartbeat every 0.25 s */
#define APP_NAME_MAX 64
#define PENDING_MAX 4096              /* app messages held until `welcome` */

static struct {
	int enabled;
	char addr[96];
	struct sockaddr_in sa;
	uint64_t t_report_ns;
	int connecting_fd;          /* >= 0 while a non-blocking connect is in progress */
	uint64_t connect_since_ns, next_try_ns;
	int up;                     /* conn is established */
	struct ctl_conn conn;
	uint64_t last_hb_ns, last_link_ns, last_tx, last_rx;
	unsigned failures;          /* attempts that failed since the last connection */
	int was_lost;               /* a connection was lost: tell the apps when a new one is welcomed */
	int auth_on;                /* the cluster has a key_file (docs/security.md) */
	uint8_t key[AUTH_KEY_BYTES];
	char nc[AUTH_NONCE_HEX + 1]; /* our nonce of this connection's hello */
	int challenged;             /* the scheduler proved the key (its challenge's mac) */
	int welcomed;               /* `welcome` received: the connection speaks for this host */
	json_t *pending;            /* app messages that arrived before `welcome`, sent after it */
	double last_fail_log;
	char apps[MAX_APPS][APP_NAME_MAX]; /* "app" name registered by each app connection */
	struct clocksync clk;       /* this host's clock offset to the scheduler's (docs/control.md
				     * "Clocks"), from the `clock` answers to the heartbeats */
} cr = { .connecting_fd = -1 };

/*
 * Seconds of CLOCK_REALTIME for "t" of heartbeats and link reports. Not clock_real_s(): this
 * reads the sample the main loop took at the top of this iteration (dp.clk.real_ns, the same
 * instant as the counters and timers it reports with), and costs no extra system call.
 */
static double now_real(void)
{
	return (double)dp.clk.real_ns / 1e9;
}

int ctlrelay_init(const char *sched, double t_report, char *err, size_t errlen)
{
	char host[64];
	const char *colon;
	long port = CTL_DEFAULT_PORT;

	cr.t_report_ns = (uint64_t)(t_report * 1e9);
	if (!sched)
		return 0;
	if (dp.cluster.key_file[0]) {
		int rc = auth_key_load(dp.cluster.key_file, cr.key, err, errlen);
		if (rc)
			return rc;
		cr.auth_on = 1;
	}
	colon = strrchr(sched, ':');
	snprintf(host, sizeof(host), "%.*s", colon ? (int)(colon - sched) : (int)strlen(sched), sched);
	if (colon) {
		char *end;
		port = strtol(colon + 1, &end, 10);
		if (*end || end == colon + 1 || port <= 0 || port > 65535) {
			snprintf(err, errlen, "--scheduler: '%s': port must be 1..65535", sched);
			return -EINVAL;
		}
	}
	cr.sa.sin_family = AF_INET;
	cr.sa.sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, host, &cr.sa.sin_addr) != 1) {
		snprintf(err, errlen, "--scheduler: '%s' is not IPv4:PORT (or 'none')", sched);
		return -EINVAL;
	}
	snprintf(cr.addr, sizeof(cr.addr), "%s:%ld", host, port);
	cr.enabled = 1;
	return 0;
}

/* Queues @msg (stolen) to the scheduler; a failure is logged. */
static void to_sched(json_t *msg)
{
	int rc;

	if (!msg)
		return;
	rc = ctl_queue(&cr.conn, msg);
	if (rc < 0 && rc != -ENOBUFS) /* -ENOBUFS: serve_conn reconnects */
		log_warn("scheduler %s: %s message not sent: %s", cr.addr, ctl_type(msg), strerror(-rc));
	json_decref(msg);
}

/*
 * The "port" object of a link report (docs/control.md): the port's drop counters since start and
 * its link state, so that the scheduler and mlf-top see drops the transfers only see as loss.
 */
static json_t *port_json(void)
{
	struct portio_port_stats p;

	monitor_port(&p);
	if (!p.polls)
		return NULL;
	return json_pack("{s:s, s:b, s:I, s:I, s:I, s:I, s:I, s:I}", "name", portio_name(), "link_up", p.link_up,
			 "speed_mbps", (json_int_t)p.speed_mbps, "imissed", (json_int_t)p.imissed,
			 "ierrors", (json_int_t)p.ierrors, "rx_nombuf", (json_int_t)p.rx_nombuf,
			 "oerrors", (json_int_t)p.oerrors, "link_changes", (json_int_t)p.link_changes);
}

/**
 * The `paths` of a link report (docs/control.md): per peer and direction, what this host's
 * transfers achieved since the last report (netmon.h), only peers with traffic in it.
 */
static json_t *link_paths(void)
{
	json_t *a = json_array();

	for (int peer = 0; a && peer < dp.cluster.n_hosts; peer++) {
		for (int tx = 1; tx >= 0; tx--) {
			struct netmon_path p;
			double act;
			json_t *o;

			if (netmon_take(peer, tx, &p) < 0 || (!p.active_ns && !p.bytes))
				continue;
			act = (double)p.active_ns / 1e9;
			o = json_pack("{s:s, s:s, s:I, s:f, s:f}", "peer", dp.cluster.hosts[peer].name,
				      "dir", tx ? "tx" : "rx", "bytes", (json_int_t)p.bytes, "active_s", act,
				      "gbps", act > 0 ? (double)p.bytes * 8 / act / 1e9 : 0.0);
			if (o && tx) {
				json_object_set_new(o, "cmd_gbps", json_real(p.unpaced ? -1.0 :
							act > 0 ? p.cmd_bits / act : 0.0));
				json_object_set_new(o, "segs", json_integer((json_int_t)p.segs));
				json_object_set_new(o, "retx", json_integer((json_int_t)p.retx));
				json_object_set_new(o, "rtt_ms", json_real(p.rtt_n ?
							p.rtt_us_sum / (double)p.rtt_n / 1e3 : 0.0));
			}
			if (o)
				json_array_append_new(a, o);
		}
	}
	return a;
}

static void send_link(void)
{
	double up, down, dt = (double)(dp.clk.mono_ns - cr.last_link_ns) / 1e9;
	double tx = dt > 0 ? (double)(dp.cnt.tx_bytes - cr.last_tx) * 8 / dt / 1e9 : 0;
	double rx = dt > 0 ? (double)(dp.cnt.rx_bytes - cr.last_rx) * 8 / dt / 1e9 : 0;

	monitor_capacity(&up, &down);
	json_t *m = json_pack("{s:s, s:s, s:f, s:f, s:f, s:f, s:f}", "type", "link",
			      "host", dp.cluster.hosts[dp.me].name, "t", now_real(), "up_gbps", up,
			      "down_gbps", down, "tx_gbps", tx, "rx_gbps", rx), *port = port_json();

	if (m && port)
		json_object_set_new(m, "port", port);
	else
		json_decref(port);
	if (m)
		json_object_set_new(m, "paths", link_paths());
	to_sched(m);
	cr.last_link_ns = dp.clk.mono_ns;
	cr.last_tx = dp.cnt.tx_bytes;
	cr.last_rx = dp.cnt.rx_bytes;
}

static void lost(const char *why);

static void connected(int fd)
{
	double up, down;
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	ctl_init(&cr.conn, fd);
	cr.up = 1;
	cr.failures = 0;
	cr.challenged = 0;
	cr.welcomed = !cr.auth_on; /* without a key the connection speaks for this host at once */
	monitor_capacity(&up, &down);
	log_info("connected to scheduler %s%s", cr.addr, cr.auth_on ? " (authenticating)" : "");
	json_t *hello = json_pack("{s:s, s:s, s:i, s:f, s:f}", "type", "hello", "host",
				  dp.cluster.hosts[dp.me].name, "proto", MLF_PROTO_VERSION, "up_gbps", up,
				  "down_gbps", down);
	if (cr.auth_on && hello) {
		if (auth_nonce(cr.nc)) {
			json_decref(hello);
			lost("no random nonce for the hello");
			return;
		}
		json_object_set_new(hello, "nonce", json_string(cr.nc));
	}
	to_sched(hello);
	cr.last_hb_ns = dp.clk.mono_ns;
	json_decref(link_paths()); /* the next report covers this connection only */
	cr.last_link_ns = dp.clk.mono_ns;
	cr.last_tx = dp.cnt.tx_bytes;
	cr.last_rx = dp.cnt.rx_bytes;
}

static void attempt_failed(const char *why)
{
	cr.failures++;
	if (log_ratelimited(&cr.last_fail_log, 2.0))
		log_warn("scheduler %s: %s (attempt %u, retrying every 0.5 s)", cr.addr, why, cr.failures);
	cr.next_try_ns = dp.clk.mono_ns + RETRY_NS;
}

/* Tells every app that named itself that the scheduler is gone. */
static void lost(const char *why)
{
	log_warn("scheduler %s lost: %s; reconnecting", cr.addr, why);
	ctl_close(&cr.conn);
	cr.up = 0;
	cr.welcomed = 0;
	cr.was_lost = 1;
	json_decref(cr.pending); /* the apps get scheduler_lost; what they hold they announce again */
	cr.pending = NULL;
	cr.next_try_ns = dp.clk.mono_ns + RETRY_NS;
	for (int c = 0; c < MAX_APPS; c++)
		if (cr.apps[c][0])
			appif_ctl_to(c, "{\"type\":\"scheduler_lost\"}");
}

static void start_connect(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0) {
		attempt_failed(strerror(errno));
		return;
	}
	if (connect(fd, (struct sockaddr *)&cr.sa, sizeof(cr.sa)) == 0) {
		connected(fd);
		return;
	}
	if (errno != EINPROGRESS) {
		attempt_failed(strerror(errno));
		close(fd);
		return;
	}
	cr.connecting_fd = fd;
	cr.connect_since_ns = dp.clk.mono_ns;
}

static void check_connect(void)
{
	struct pollfd p = { .fd = cr.connecting_fd, .events = POLLOUT };
	int e = 0;
	socklen_t l = sizeof(e);

	if (poll(&p, 1, 0) <= 0) {
		if (dp.clk.mono_ns - cr.connect_since_ns > CONNECT_TIMEOUT_NS) {
			close(cr.connecting_fd);
			cr.connecting_fd = -1;
			attempt_failed("connect timed out after 2 s");
		}
		return;
	}
	getsockopt(cr.connecting_fd, SOL_SOCKET, SO_ERROR, &e, &l);
	if (e) {
		close(cr.connecting_fd);
		cr.connecting_fd = -1;
		attempt_failed(strerror(e));
		return;
	}
	connected(cr.connecting_fd);
	cr.connecting_fd = -1;
}

static int find_app(const char *name)
{
	for (int c = 0; c < MAX_APPS; c++)
		if (cr.apps[c][0] && !strcmp(cr.apps[c], name))
			return c;
	return -1;
}

#define EXPECT_MAX_IDS 4096 /* transfer ids in one `expect` */

/*
 * `expect` (docs/control.md): the scheduler announces incoming transfers: `src` (a cluster host,
 * not this one), `chan` (0..63) and either `xfers` (ids, at most EXPECT_MAX_IDS) or `standing`
 * (bool: every transfer from src on chan, or no longer). Only from a welcomed scheduler. A bad
 * field: `error` naming it, nothing stored.
 */
static void on_expect(json_t *msg)
{
	const char *src = json_string_value(json_object_get(msg, "src"));
	json_t *chan = json_object_get(msg, "chan"), *xs = json_object_get(msg, "xfers");
	json_t *standing = json_object_get(msg, "standing"), *v;
	char err[160] = "";
	int peer = src ? cluster_find(&dp.cluster, src) : -1;
	size_t i;

	if (!cr.welcomed)
		snprintf(err, sizeof(err), "expect before welcome");
	else if (!src || peer < 0 || peer == dp.me)
		snprintf(err, sizeof(err), "expect: 'src' must name another host of the cluster%s%s",
			 src ? ", not " : "", src ? src : "");
	else if (!json_is_integer(chan) || json_integer_value(chan) < 0 ||
		 json_integer_value(chan) >= TRANSPORT_MAX_CHANS)
		snprintf(err, sizeof(err), "expect: 'chan' must be an integer in [0, %d]",
			 TRANSPORT_MAX_CHANS - 1);
	else if (!!xs == !!standing || (xs && (!json_is_array(xs) || json_array_size(xs) > EXPECT_MAX_IDS)) ||
		 (standing && !json_is_boolean(standing)))
		snprintf(err, sizeof(err), "expect: needs exactly one of 'xfers' (an array of at most %d "
			 "ids) or 'standing' (true/false)", EXPECT_MAX_IDS);
	json_array_foreach(xs, i, v)
		if (!err[0] && (!json_is_integer(v) || json_integer_value(v) <= 0))
			snprintf(err, sizeof(err), "expect: 'xfers'[%zu] is not a positive transfer id", i);
	if (err[0]) {
		log_warn("scheduler %s: %s", cr.addr, err);
		to_sched(json_pack("{s:s, s:s}", "type", "error", "reason", err));
		return;
	}
	if (standing) {
		transport_announce(peer, (unsigned)json_integer_value(chan), 0, json_is_true(standing));
		log_info("scheduler %s: every transfer from %s on channel %d %s", cr.addr, src,
			 (int)json_integer_value(chan), json_is_true(standing) ? "announced" : "no longer announced");
		return;
	}
	json_array_foreach(xs, i, v)
		transport_announce(peer, (unsigned)json_integer_value(chan), (uint64_t)json_integer_value(v), 1);
}

/*
 * The scheduler's answer to a heartbeat (docs/control.md "Clocks"): t1 echoes the heartbeat's
 * "t", t2 and t3 are its receive and answer times; t4 is now, read afresh (the loop's sample may
 * be older than the read). A malformed or impossible exchange is ignored with a debug line.
 */
static void on_clock(json_t *msg)
{
	double t4 = clock_real_s();
	json_t *t1 = json_object_get(msg, "t1"), *t2 = json_object_get(msg, "t2"),
	       *t3 = json_object_get(msg, "t3");

	if (!json_is_number(t1) || !json_is_number(t2) || !json_is_number(t3) ||
	    clocksync_sample(&cr.clk, json_number_value(t1), json_number_value(t2),
			     json_number_value(t3), t4))
		log_debug("scheduler %s: clock answer without a usable exchange: ignored", cr.addr);
}

/* Routes one scheduler message by its "app"; handles the dataplane's own ones. */
static void from_sched(json_t *msg)
{
	const char *app = json_string_value(json_object_get(msg, "app")), *type = ctl_type(msg);
	char reason[256];
	int c;

	if (!app) {
		if (!strcmp(type, "challenge")) {
			const char *ns = json_string_value(json_object_get(msg, "nonce"));
			const char *mac = json_string_value(json_object_get(msg, "mac"));
			const char *me = dp.cluster.hosts[dp.me].name;
			char mine[AUTH_MAC_HEX + 1];

			if (!cr.auth_on || !auth_nonce_ok(ns) ||
			    auth_check(cr.key, "scheduler", me, cr.nc, ns, mac ? mac : "")) {
				log_err("scheduler %s failed to prove the cluster key (%s): not trusted",
					cr.addr, cr.auth_on ? "wrong key or malformed challenge" :
							      "this host has no key_file");
				lost("the scheduler did not authenticate");
				return;
			}
			if (auth_mac(cr.key, "host", me, cr.nc, ns, mine)) {
				lost("no HMAC for the challenge");
				return;
			}
			cr.challenged = 1;
			to_sched(json_pack("{s:s, s:s}", "type", "auth", "mac", mine));
			return;
		}
		if (!strcmp(type, "welcome")) {
			if (cr.auth_on && !cr.challenged) {
				log_err("scheduler %s welcomed this host without proving the cluster key: not "
					"trusted (a scheduler without key_file?)", cr.addr);
				lost("the scheduler did not authenticate");
				return;
			}
			cr.welcomed = 1;
			cr.last_hb_ns = 0; /* a heartbeat at once: the first clock exchange */
			clocksync_init(&cr.clk); /* a new scheduler may have another clock */
			log_info("scheduler %s: welcome", cr.addr);
			/* app messages held during the handshake, in order */
			size_t k;
			json_t *pm;
			json_array_foreach(cr.pending, k, pm)
				to_sched(json_incref(pm));
			json_decref(cr.pending);
			cr.pending = NULL;
			/* a restarted scheduler knows nothing: the apps register and announce again
			 * (docs/scheduler.md "Restart") */
			for (int a = 0; cr.was_lost && a < MAX_APPS; a++)
				if (cr.apps[a][0])
					appif_ctl_to(a, "{\"type\":\"scheduler_back\"}");
			cr.was_lost = 0;
		}
		else if (!strcmp(type, "clock"))
			on_clock(msg);
		else if (!strcmp(type, "expect"))
			on_expect(msg);
		else if (!strcmp(type, "error"))
			log_warn("scheduler %s refused a message: %s", cr.addr,
				 json_string_value(json_object_get(msg, "reason")) ?: "(no reason)");
		else
			log_warn("scheduler %s: message type '%s' names no app: ignored", cr.addr, type);
		return;
	}
	if ((c = find_app(app)) < 0) {
		snprintf(reason, sizeof(reason), "host %s: no application '%s' (message type '%s')",
			 dp.cluster.hosts[dp.me].name, app, type);
		log_warn("%s", reason);
		to_sched(json_pack("{s:s, s:s, s:s}", "type", "error", "app", app, "reason", reason));
		return;
	}
	char *text = json_dumps(msg, JSON_COMPACT);
	if (text)
		appif_ctl_to(c, text);
	free(text);
}

static int serve_conn(void)
{
	struct pollfd p = { .fd = cr.conn.fd, .events = POLLIN | (ctl_pending(&cr.conn) ? POLLOUT : 0) };
	char err[256];
	json_t *msg;
	long n;
	int rc, work = 0;

	if (poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR))) {
		while ((n = ctl_read(&cr.conn)) > 0)
			;
		while ((rc = ctl_next(&cr.conn, &msg, err, sizeof(err))) != 0) {
			work = 1;
			if (rc < 0) {
				log_warn("scheduler %s: %s", cr.addr, err);
				to_sched(json_pack("{s:s, s:s}", "type", "error", "reason", err));
				continue;
			}
			from_sched(msg);
			json_decref(msg);
			if (!cr.up) /* an authentication failure closed it */
				return 1;
		}
		if (n == 0 || (n < 0 && n != -EAGAIN)) {
			lost(n == 0 ? "connection closed" : strerror((int)-n));
			return 1;
		}
	}
	if (!cr.up)
		return 1;
	if (!cr.welcomed) { /* nothing but the handshake before `welcome` */
		if (ctl_pending(&cr.conn) && (rc = ctl_flush(&cr.conn)) < 0) {
			lost(strerror(-rc));
			return 1;
		}
		return work;
	}
	if (dp.clk.mono_ns - cr.last_hb_ns >= HEARTBEAT_NS) {
		cr.last_hb_ns = dp.clk.mono_ns;
		json_t *hb = json_pack("{s:s, s:s, s:f}", "type", "heartbeat", "host",
				       dp.cluster.hosts[dp.me].name, "t", clock_real_s());
		if (hb && cr.clk.known) { /* the estimate, for the scheduler to convert times */
			json_object_set_new(hb, "offset", json_real(cr.clk.offset_s));
			json_object_set_new(hb, "offset_err", json_real(cr.clk.err_s));
			json_object_set_new(hb, "offset_n", json_integer(cr.clk.n));
		}
		to_sched(hb);
	}
	if (dp.clk.mono_ns - cr.last_link_ns >= cr.t_report_ns)
		send_link();
	if (ctl_pending(&cr.conn) && (rc = ctl_flush(&cr.conn)) < 0) {
		lost(strerror(-rc));
		return 1;
	}
	if (cr.conn.overflow) { /* the output cap reached: the scheduler does not read (control.md) */
		char why[96];
		snprintf(why, sizeof(why), "it does not read (%zu bytes queued, limit %zu)",
			 ctl_pending(&cr.conn), cr.conn.out_max);
		lost(why);
		return 1;
	}
	return work;
}

int ctlrelay_wait_fds(struct pollfd *p, int max)
{
	if (!cr.enabled || max < 1)
		return 0;
	if (cr.up) {
		p[0] = (struct pollfd){ .fd = cr.conn.fd,
					.events = POLLIN | (ctl_pending(&cr.conn) ? POLLOUT : 0) };
		return 1;
	}
	if (cr.connecting_fd >= 0) {
		p[0] = (struct pollfd){ .fd = cr.connecting_fd, .events = POLLOUT };
		return 1;
	}
	return 0;
}

int ctlrelay_poll(void)
{
	if (!cr.enabled)
		return 0;
	if (cr.up)
		return serve_conn();
	if (cr.connecting_fd >= 0)
		check_connect();
	else if (dp.clk.mono_ns >= cr.next_try_ns)
		start_connect();
	return 0;
}

static void app_error(int client, const char *reason, int no_sched)
{
	json_t *e = json_pack("{s:s, s:s}", "type", "error", "reason", reason);
	char *text;

	if (no_sched)
		json_object_set_new(e, "no_scheduler", json_true());
	text = json_dumps(e, JSON_COMPACT);
	if (text)
		appif_ctl_to(client, text);
	free(text);
	json_decref(e);
}

void ctlrelay_from_app(int client, const char *text)
{
	json_error_t je;
	json_t *msg = json_loads(text, 0, &je);
	const char *app;
	char reason[256];

	if (!msg || !json_is_object(msg) || !json_is_string(json_object_get(msg, "type"))) {
		snprintf(reason, sizeof(reason), "control message from app: %s",
			 !msg ? je.text : "not an object with a string \"type\"");
		log_warn("app connection %d: %s", client, reason);
		app_error(client, reason, 0);
		json_decref(msg);
		return;
	}
	app = json_string_value(json_object_get(msg, "app"));
	if (app && client >= 0 && client < MAX_APPS && strlen(app) < APP_NAME_MAX) {
		int other = find_app(app);
		if (other >= 0 && other != client)
			cr.apps[other][0] = '\0';
		strcpy(cr.apps[client], app);
	}
	if (!cr.up) {
		snprintf(reason, sizeof(reason), "host %s: no scheduler connection (%s)",
			 dp.cluster.hosts[dp.me].name, cr.enabled ? cr.addr : "--scheduler none");
		app_error(client, reason, 1);
		json_decref(msg);
		return;
	}
	json_object_set_new(msg, "host", json_string(dp.cluster.hosts[dp.me].name));
	if (!cr.welcomed) { /* the handshake is in progress: sent after `welcome` */
		if (!cr.pending)
			cr.pending = json_array();
		if (!cr.pending || json_array_size(cr.pending) >= PENDING_MAX) {
			snprintf(reason, sizeof(reason), "host %s: the scheduler connection %s is not "
				 "authenticated yet and %d messages wait", dp.cluster.hosts[dp.me].name,
				 cr.addr, PENDING_MAX);
			app_error(client, reason, 1);
			json_decref(msg);
			return;
		}
		json_array_append_new(cr.pending, msg);
		return;
	}
	to_sched(msg);
	if (ctl_flush(&cr.conn) < 0)
		log_debug("scheduler %s: flush deferred", cr.addr);
}

void ctlrelay_client_gone(int client)
{
	char reason[160];

	if (client < 0 || client >= MAX_APPS || !cr.apps[client][0])
		return;
	if (cr.up && cr.welcomed) {
		snprintf(reason, sizeof(reason), "application %s closed its connection to the dataplane of host %s",
			 cr.apps[client], dp.cluster.hosts[dp.me].name);
		log_info("%s: scheduler told", reason);
		to_sched(json_pack("{s:s, s:s, s:s, s:s}", "type", "error", "app", cr.apps[client], "host",
				   dp.cluster.hosts[dp.me].name, "reason", reason));
		if (ctl_flush(&cr.conn) < 0)
			log_debug("scheduler %s: flush deferred", cr.addr);
	}
	cr.apps[client][0] = '\0';
}

void ctlrelay_close(void)
{
	if (cr.connecting_fd >= 0)
		close(cr.connecting_fd);
	cr.connecting_fd = -1;
	if (cr.up) {
		ctl_flush(&cr.conn);
		ctl_close(&cr.conn);
	}
	cr.up = 0;
}
