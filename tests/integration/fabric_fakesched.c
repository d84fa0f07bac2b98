/* fabric_fakesched.c - a tiny scripted scheduler on lib/proto/ctl.h for tests/integration/fabric_*.sh:
 * prints every message it receives and answers with fixed commands (scenario relay, aggregate,
 * replica, chain or restart). */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <jansson.h>

#include "clock.h"
#include "ctl.h"

#define MAX_CONNS 16
#define XFER_BASE (1ULL << 62)

static volatile sig_atomic_t quit;
static void on_signal(int sig) { quit = sig; }

static struct {
	struct ctl_conn c;
	char host[32];
	int used;
} conns[MAX_CONNS];

static const char *scenario = "relay", *agg_host = "ag", *server_host = "ps", *server_app = "server@ps";
static const char *replica_host = "r1";
static json_t *weights;
static int count = 2, phantom, skip_phantom, commit_seen;
static json_t *inputs, *pulls;
static unsigned long long next_xfer = 1;
/* replica / chain scenarios */
static double send_delay = 0.05; /* s from now to the start of a commanded send */
static int n_updates, server_version, replica_commits, promoted, server_up, replica_up;
/* restart scenario */
static int die_now, restarted;
static char held_app[64];  /* after the restart: an update that came before the server */
static json_int_t held_id;

static void to_host(const char *host, json_t *msg);

/* Like the real scheduler (docs/control.md `expect`): a command that makes @src send a transfer is
 * announced to its destination first; `replica` naming a host (this fake sends it only for chain
 * replication) announces every chan-4 transfer from the server to that host, never withdrawn. */
static void announce(const char *src, json_t *msg)
{
	const char *type = json_string_value(json_object_get(msg, "type"));
	const char *dst = json_string_value(json_object_get(msg, "dst"));
	const char *at = strchr(src, '@');
	json_t *x = json_object_get(msg, type && !strcmp(type, "aggregate") ? "agg" : "xfer");

	src = at ? at + 1 : src;
	if (!type)
		return;
	if (!strcmp(type, "replica") && json_string_value(json_object_get(msg, "host")) &&
	    json_string_value(json_object_get(msg, "host"))[0]) {
		to_host(json_string_value(json_object_get(msg, "host")),
			json_pack("{s:s, s:s, s:i, s:b}", "type", "expect", "src", src, "chan", 4, "standing", 1));
		return;
	}
	if ((strcmp(type, "send") && strcmp(type, "forward") && strcmp(type, "aggregate")) || !dst ||
	    !strcmp(dst, src) || !json_is_integer(x))
		return;
	to_host(dst, json_pack("{s:s, s:s, s:O, s:[O]}", "type", "expect", "src", src, "chan",
			       json_object_get(msg, "chan"), "xfers", x));
}

/* Sends @msg (stolen) to the connection of the host named after '@' in @app (or @host). */
static void to_host(const char *host, json_t *msg)
{
	const char *at = strchr(host, '@');

	announce(host, msg);
	host = at ? at + 1 : host;
	for (int i = 0; i < MAX_CONNS; i++)
		if (conns[i].used && !strcmp(conns[i].host, host)) {
			ctl_queue(&conns[i].c, msg);
			ctl_flush(&conns[i].c);
			char *t = json_dumps(msg, JSON_COMPACT);
			printf("tx %s %s\n", host, t);
			free(t);
			fflush(stdout);
			json_decref(msg);
			return;
		}
	printf("no connection of host %s\n", host);
	json_decref(msg);
}

static void answer_pulls(void)
{
	size_t i;
	json_t *p;

	json_array_foreach(pulls, i, p)
		to_host(server_host, json_pack("{s:s, s:s, s:s, s:O, s:I, s:s, s:i, s:f, s:[]}", "type", "send",
			"app", server_app, "what", "model", "id", json_object_get(p, "id"),
			"xfer", (json_int_t)(XFER_BASE | next_xfer++), "dst", json_string_value(json_object_get(p, "host")),
			"chan", 3, "start", clock_real_s(), "steps"));
	json_array_clear(pulls);
}

/*
 * `send` of @what @id as transfer @xfer to @dst on @chan, unpaced, --send-delay from now (by
 * default 50 ms, so the `order` sent just before usually reaches the destination's dataplane
 * first; 0 lets data overtake it) (@keep: another copy follows).
 */
static json_t *send_cmd(const char *app, const char *what, json_int_t id, json_int_t xfer, const char *dst,
			int chan, int keep)
{
	json_t *c = json_pack("{s:s, s:s, s:s, s:I, s:I, s:s, s:i, s:f, s:[]}", "type", "send", "app", app, "what",
			      what, "id", id, "xfer", xfer, "dst", dst, "chan", chan, "start", clock_real_s() + send_delay, "steps");
	if (keep)
		json_object_set_new(c, "keep", json_true());
	return c;
}

static json_t *order_cmd(const char *app, int chan, json_int_t xfer)
{
	return json_pack("{s:s, s:s, s:i, s:[I]}", "type", "order", "app", app, "chan", chan, "xfers", xfer);
}

/*
 * Scenario replica: update 1 goes to the server (keep) and to the replica; updates 2.. only to
 * the server (update 3 with keep, then release); at server version @count the server sends its
 * state to the replica; on the state commit: snapshot tags 1..18 to both, promote; after `promoted`
 * workers are told server_moved and updates go to the promoted replica.
 * Scenario chain: the server is told its chain replica; updates go to the server only.
 */
static void replica_update(const char *app, json_t *m)
{
	json_int_t id = json_integer_value(json_object_get(m, "id"));

	n_updates++;
	if (promoted || !strcmp(scenario, "chain")) {
		to_host(server_host, order_cmd(server_app, 1, id));
		to_host(app, send_cmd(app, "update", id, id, server_host, 1, 0));
		return;
	}
	to_host(server_host, order_cmd(server_app, 1, id));
	if (n_updates == 1) {
		json_int_t x = (json_int_t)(XFER_BASE | next_xfer++);
		to_host(replica_host, order_cmd("replica@r1", 4, x));
		to_host(app, send_cmd(app, "update", id, id, server_host, 1, 1));
		to_host(app, send_cmd(app, "update", id, x, replica_host, 4, 0));
	} else if (n_updates == 3) {
		to_host(app, send_cmd(app, "update", id, id, server_host, 1, 1));
		to_host(app, json_pack("{s:s, s:s, s:I}", "type", "release", "app", app, "id", id));
	} else {
		to_host(app, send_cmd(app, "update", id, id, server_host, 1, 0));
	}
}

static void replica_commit(const char *app, json_t *m)
{
	int64_t v = json_integer_value(json_object_get(m, "version"));

	if (!strncmp(app, "replica@", 8)) {
		replica_commits++;
		if (json_is_true(json_object_get(m, "state"))) {
			for (int tag = 1; tag <= 18; tag++) { /* the library keeps the newest 16 */
				to_host(server_host, json_pack("{s:s, s:s, s:i}", "type", "snapshot", "app", server_app, "tag", tag));
				to_host(replica_host, json_pack("{s:s, s:s, s:i}", "type", "snapshot", "app", app, "tag", tag));
			}
			to_host(replica_host, json_pack("{s:s, s:s, s:I}", "type", "promote", "app", app, "version",
							(json_int_t)v));
		}
		return;
	}
	server_version = (int)v;
	if (!strcmp(scenario, "replica") && !promoted && server_version == count) {
		json_int_t x = (json_int_t)(XFER_BASE | next_xfer++);
		to_host(replica_host, order_cmd("replica@r1", 4, x));
		to_host(server_host, json_pack("{s:s, s:s, s:s, s:i, s:I, s:s, s:i, s:f, s:[]}", "type", "send", "app",
					       server_app, "what", "state", "id", 0, "xfer", x, "dst", replica_host,
					       "chan", 4, "start", clock_real_s() + send_delay, "steps"));
	}
}

/*
 * Scenario restart (a scheduler killed between an `order` and its `send`s, then restarted):
 * update 1 is ordered and sent to the server; update 2 is ordered (chan 1) but never commanded,
 * and the scheduler "dies" (every connection closed; the dataplanes reconnect). After the
 * restart the worker announces update 2 again (it still holds it) and it is ordered and sent
 * under a fresh transfer id, as a restarted scheduler's plan would (an aggregate, say).
 */
static void restart_update(const char *app, json_int_t id)
{
	if (restarted && !server_up) {
		/* like the real scheduler, which plans nothing before the server registered again
		 * (its dataplane may reconnect after the worker's): kept for the registration */
		snprintf(held_app, sizeof(held_app), "%s", app);
		held_id = id;
		printf("update %lld held until the server registers again\n", (long long)id);
		return;
	}
	n_updates++;
	if (!restarted && n_updates == 1) {
		to_host(server_host, order_cmd(server_app, 1, id));
		to_host(app, send_cmd(app, "update", id, id, server_host, 1, 0));
	} else if (!restarted) {
		to_host(server_host, order_cmd(server_app, 1, id));
		die_now = 1;
	} else {
		json_int_t x = (json_int_t)(XFER_BASE | next_xfer++);
		to_host(server_host, order_cmd(server_app, 1, x));
		to_host(app, send_cmd(app, "update", id, x, server_host, 1, 0));
	}
}

static void handle(int i, json_t *m)
{
	const char *type = ctl_type(m), *app = json_string_value(json_object_get(m, "app"));
	char *t = json_dumps(m, JSON_COMPACT);

	printf("rx %s %s\n", conns[i].host[0] ? conns[i].host : "?", t);
	fflush(stdout);
	free(t);
	if (!strcmp(type, "hello")) {
		snprintf(conns[i].host, sizeof(conns[i].host), "%s", json_string_value(json_object_get(m, "host")) ?: "?");
		to_host(conns[i].host, json_pack("{s:s, s:s, s:f, s:i}", "type", "welcome", "host", conns[i].host,
						 "t_lag", 0.2, "batch_ms", 100));
	} else if (!strcmp(type, "register") && app && !strncmp(app, "replica@", 8) && !server_up) {
		to_host(app, json_pack("{s:s, s:s, s:s}", "type", "error", "app", app, "reason",
				       "replica refused: no server is registered"));
	} else if (!strcmp(type, "register") && app) {
		if (promoted && !strncmp(app, "worker@", 7)) /* before registered: the worker maps at once */
			to_host(app, json_pack("{s:s, s:s, s:s}", "type", "server_moved", "app", app, "server", server_host));
		to_host(app, json_pack("{s:s, s:s, s:I}", "type", "registered", "app", app, "xfer_base", (json_int_t)XFER_BASE));
		server_up |= !strncmp(app, "server@", 7);
		replica_up |= !strncmp(app, "replica@", 8);
		if (held_id && server_up) { /* scenario restart: the update that came first */
			json_int_t id = held_id;
			held_id = 0;
			restart_update(held_app, id);
		}
		if (!strcmp(scenario, "chain") && server_up && replica_up &&
		    (!strncmp(app, "server@", 7) || !strncmp(app, "replica@", 8)))
			to_host(server_host, json_pack("{s:s, s:s, s:s, s:s}", "type", "replica", "app", server_app,
						       "host", replica_host, "replication", "chain"));
		if (!strcmp(scenario, "relay")) {
			to_host(app, json_pack("{s:s, s:s, s:i, s:s}", "type", "drop", "app", app, "id", 12345, "reason", "test"));
			to_host(app, json_pack("{s:s, s:s, s:i, s:s}", "type", "drop", "app", "nobody@x", "id", 1, "reason", "test"));
		}
	} else if (!strcmp(type, "update") && !strcmp(scenario, "aggregate")) {
		json_array_append(inputs, json_object_get(m, "id"));
		to_host(app, json_pack("{s:s, s:s, s:s, s:O, s:I, s:s, s:i, s:f, s:[]}", "type", "send", "app", app,
				       "what", "update", "id", json_object_get(m, "id"),
				       "xfer", (json_int_t)(XFER_BASE | next_xfer++), "dst", agg_host, "chan", 2,
				       "start", clock_real_s(), "steps"));
		if ((int)json_array_size(inputs) == count) {
			json_int_t agg = (json_int_t)(XFER_BASE | 1000);
			json_t *cmd;
			if (phantom)
				json_array_append_new(inputs, json_integer(999999));
			to_host(server_host, json_pack("{s:s, s:s, s:i, s:[I]}", "type", "order", "app", "server@ps",
						       "chan", 1, "xfers", agg));
			cmd = json_pack("{s:s, s:s, s:I, s:O, s:s, s:i, s:f, s:[[f,f]]}", "type", "aggregate",
					"app", "aggregator@ag", "agg", agg, "inputs", inputs, "dst", server_host, "chan", 1,
					"start", clock_real_s() + 0.05, "steps", 0.0, 1.0);
			if (weights)
				json_object_set(cmd, "weights", weights);
			to_host(agg_host, cmd);
			if (skip_phantom) /* the phantom will never arrive: the aggregator need not wait */
				to_host(agg_host, json_pack("{s:s, s:s, s:i, s:[i]}", "type", "skip", "app",
							    "aggregator@ag", "chan", 2, "xfers", 999999));
		}
	} else if (!strcmp(type, "update") && (!strcmp(scenario, "replica") || !strcmp(scenario, "chain"))) {
		replica_update(app, m);
	} else if (!strcmp(type, "update") && !strcmp(scenario, "restart")) {
		restart_update(app, json_integer_value(json_object_get(m, "id")));
	} else if (!strcmp(type, "promoted") && app) {
		promoted = 1;
		server_host = replica_host;
		server_app = "server@r1";
	} else if (!strcmp(type, "commit") && app && (!strcmp(scenario, "replica") || !strcmp(scenario, "chain"))) {
		replica_commit(app, m);
		if (strncmp(app, "replica@", 8)) {
			commit_seen = 1;
			answer_pulls();
		}
	} else if (!strcmp(type, "pull")) {
		json_array_append(pulls, m);
		if (commit_seen)
			answer_pulls();
	} else if (!strcmp(type, "commit")) {
		commit_seen = 1;
		answer_pulls();
	}
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "listen", 1, NULL, 'l' }, { "scenario", 1, NULL, 's' }, { "count", 1, NULL, 'n' },
		{ "weights", 1, NULL, 'w' }, { "phantom", 0, NULL, 'p' }, { "time-limit", 1, NULL, 't' },
		{ "send-delay", 1, NULL, 'd' }, { "skip-phantom", 0, NULL, 'k' }, { "help", 0, NULL, 'h' },
		{ "inject-file", 1, NULL, 'i' }, { NULL, 0, NULL, 0 },
	};
	FILE *inject = NULL;
	char line[4096];
	const char *listen_at = "0.0.0.0:7070";
	double limit = 60, t0 = clock_real_s();
	char err[256];
	int c, lfd;

	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'l': listen_at = optarg; break;
		case 's': scenario = optarg; break;
		case 'n': count = atoi(optarg); break;
		case 'w': weights = json_loads(optarg, 0, NULL); break;
		case 'p': phantom = 1; break;
		case 'k': phantom = skip_phantom = 1; break;
		case 't': limit = atof(optarg); break;
		case 'd': send_delay = atof(optarg); break;
		case 'i':
			if (!(inject = fopen(optarg, "a+"))) {
				fprintf(stderr, "fabric_fakesched: --inject-file %s: %s\n", optarg, strerror(errno));
				return 2;
			}
			break;
		default:
			printf("usage: fabric_fakesched [--listen IP:PORT] [--scenario relay|aggregate|replica|chain|restart] [--count N]\n"
			       "         [--weights JSON-ARRAY] [--phantom] [--skip-phantom] [--time-limit S] [--send-delay S]\n"
			       "         [--inject-file PATH]\n"
			       "--inject-file: each line 'HOST JSON' appended to PATH is sent to HOST's dataplane as is.\n"
			       "relay: answer register with registered + a drop, and send a command to an unknown app.\n"
			       "aggregate: route N updates to aggregator host ag, then order + aggregate them to ps;\n"
			       "           --phantom adds an input that never arrives; --skip-phantom also tells the\n"
			       "           aggregator so (skip, chan 2). Pulls are answered after a commit.\n"
			       "replica: update 1 to server ps (keep) and replica r1, the others to ps; at ps version N\n"
			       "         a state send to r1, then snapshot tags 1..18 and promote r1; later workers go to r1.\n"
			       "chain: ps is told to chain-replicate to r1; updates go to ps.\n"
			       "restart: update 1 ordered and sent to ps; update 2 ordered but never sent, then every\n"
			       "         connection closed ('restart t=...'); after the reconnect update 2 is ordered\n"
			       "         and sent again under a fresh transfer id. Pulls wait for a commit of each life.\n");
			return c == 'h' ? 0 : 2;
		}
	}
	inputs = json_array();
	pulls = json_array();
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if ((lfd = ctl_listen(listen_at, err, sizeof(err))) < 0) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	printf("listening %s\n", listen_at);
	fflush(stdout);
	while (!quit && clock_real_s() - t0 < limit) {
		struct pollfd p[MAX_CONNS + 1] = { { .fd = lfd, .events = POLLIN } };
		while (inject && fgets(line, sizeof(line), inject)) {
			char *sp = strchr(line, ' ');
			json_t *m = sp ? json_loads(sp + 1, 0, NULL) : NULL;
			if (sp)
				*sp = '\0';
			if (m)
				to_host(line, m);
			else
				printf("inject: bad line for %s\n", line);
			fflush(stdout);
		}
		if (inject)
			clearerr(inject); /* read what is appended later */
		for (int i = 0; i < MAX_CONNS; i++)
			p[i + 1] = (struct pollfd){ .fd = conns[i].used ? conns[i].c.fd : -1, .events = POLLIN };
		if (poll(p, MAX_CONNS + 1, 100) <= 0)
			continue;
		if (p[0].revents & POLLIN) {
			int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
			for (int i = 0; fd >= 0 && i < MAX_CONNS; i++)
				if (!conns[i].used) {
					ctl_init(&conns[i].c, fd);
					conns[i].used = 1;
					conns[i].host[0] = '\0';
					break;
				}
		}
		for (int i = 0; i < MAX_CONNS; i++) {
			json_t *m;
			long n;
			int rc;
			if (!conns[i].used || !(p[i + 1].revents & (POLLIN | POLLHUP)))
				continue;
			while ((n = ctl_read(&conns[i].c)) > 0)
				;
			while ((rc = ctl_next(&conns[i].c, &m, err, sizeof(err))) != 0) {
				if (rc < 0) {
					printf("bad line from %s: %s\n", conns[i].host, err);
					continue;
				}
				handle(i, m);
				json_decref(m);
			}
			if (n == 0 || (n < 0 && n != -EAGAIN)) {
				printf("closed %s\n", conns[i].host);
				fflush(stdout);
				ctl_close(&conns[i].c);
				conns[i].used = 0;
			}
		}
		if (die_now) { /* scenario restart: the scheduler "dies"; its successor knows nothing */
			/* FIN after what was sent (a close with unread input would reset the connection
			 * and could lose the last `order`); closed when the dataplane closes its end, and
			 * nameless until then so that commands go to the new connections */
			for (int i = 0; i < MAX_CONNS; i++)
				if (conns[i].used && conns[i].host[0]) {
					shutdown(conns[i].c.fd, SHUT_WR);
					conns[i].host[0] = '\0';
				}
			die_now = 0;
			restarted = 1;
			commit_seen = 0;
			server_up = 0;
			json_array_clear(pulls);
			printf("restart t=%.6f\n", clock_real_s());
			fflush(stdout);
		}
	}
	return 0;
}
