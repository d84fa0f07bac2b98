/* fabric_app.c - test program of tests/integration/fabric_*.sh: a worker, a server, a replica or a raw control client on include/mlfabric/mlfabric.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "dpclient.h"
#include "log.h"
#include "mlfabric.h"

static volatile sig_atomic_t quit;
static void on_signal(int sig) { quit = sig; }

struct server_state {
	float *w, *h;   /* model and momentum history */
	size_t n;
	double g;       /* momentum (0: a plain sum) */
	int64_t version;
	long applied, expect_next, out_of_order;
};

/* FNV-1a of the bytes of w then h: equal hashes mean bit-identical states. */
static unsigned state_hash(const struct server_state *s)
{
	unsigned x = 2166136261u;
	const unsigned char *p[2] = { (const unsigned char *)s->w, (const unsigned char *)s->h };

	for (int k = 0; k < 2; k++)
		for (size_t i = 0; i < s->n * sizeof(float); i++)
			x = (x ^ p[k][i]) * 16777619u;
	return x;
}

/* Applies u with momentum g (h = g h + u, w += h; g = 0: a plain sum); checks updates carry 1, 2, 3, ... in order. */
static int64_t on_update(void *arg, const struct mlf_update *u)
{
	struct server_state *s = arg;

	for (size_t i = 0; i < s->n; i++) {
		s->h[i] = (float)s->g * s->h[i] + u->u[i];
		s->w[i] += s->h[i];
	}
	s->version += u->hdr->n_parts;
	s->applied++;
	if (u->hdr->n_parts == 1 && u->u[0] != (float)s->expect_next)
		s->out_of_order++;
	s->expect_next = (long)u->u[0] + 1;
	printf("update xfer=%llx src=%s parts=%u first=%g last=%g version=%lld w0=%g hash=%08x\n",
	       (unsigned long long)u->xfer, u->src, u->hdr->n_parts, (double)u->u[0], (double)u->u[u->n - 1],
	       (long long)s->version, (double)s->w[0], state_hash(s));
	fflush(stdout);
	return s->version;
}

static int64_t get_state(void *arg, float *w, float *h, size_t n)
{
	struct server_state *s = arg;

	memcpy(w, s->w, n * sizeof(float));
	memcpy(h, s->h, n * sizeof(float));
	printf("state version=%lld w0=%g h0=%g hash=%08x\n", (long long)s->version, (double)s->w[0],
	       (double)s->h[0], state_hash(s));
	fflush(stdout);
	return s->version;
}

static int set_state(void *arg, const float *w, const float *h, size_t n, int64_t version)
{
	struct server_state *s = arg;

	memcpy(s->w, w, n * sizeof(float));
	memcpy(s->h, h, n * sizeof(float));
	s->version = version;
	s->expect_next = version + 1;
	printf("installed version=%lld w0=%g h0=%g hash=%08x\n", (long long)version, (double)s->w[0],
	       (double)s->h[0], state_hash(s));
	fflush(stdout);
	return 0;
}

static int64_t on_request(void *arg, float *model, size_t n)
{
	struct server_state *s = arg;

	memcpy(model, s->w, n * sizeof(float));
	return s->version;
}

/* getpar: one thread's gets of one server's model (tests/integration/fabric_getpar.sh). */
struct getpar {
	mlf_t *f;
	const char *server;
	float *w;
	size_t n;
	long rounds;
	double timeout;
	int64_t version;
	int rc, wrong; /* wrong: gets whose model was not all server's value */
	float want;
	char err[256];
};

/* @arg's @rounds gets of its server's model (each until version >= 1), checking every value. */
static void *getpar_thread(void *arg)
{
	struct getpar *g = arg;

	for (long r = 0; r < g->rounds && g->rc == 0; r++) {
		g->version = -1;
		for (int tries = 0; tries < 100 && g->version < 1; tries++) {
			memset(g->w, 0, g->n * sizeof(float));
			if ((g->rc = mlf_get(g->f, g->server, g->w, g->n, &g->version, g->timeout)) < 0) {
				snprintf(g->err, sizeof(g->err), "%s", mlf_error(g->f));
				return NULL;
			}
			if (g->version < 1)
				usleep(20000);
		}
		for (size_t k = 0; k < g->n; k++)
			if (g->w[k] != g->want) {
				g->wrong++;
				break;
			}
	}
	return NULL;
}

/* getpar: push n_i copies of 10 (i + 1) to each server of the comma-separated @servers (server
 * i serves n_i = @n (i + 1) floats), then get every server's model at once from one thread each,
 * @rounds times; prints one line per server. 0 when every get returned its own server's model. */
static int getpar(mlf_t *f, char *servers, size_t n, long rounds, double timeout)
{
	struct getpar g[8];
	pthread_t th[8];
	int m = 0, bad = 0;
	char first[64];

	snprintf(first, sizeof(first), "%.*s", (int)strcspn(servers, ","), servers);
	if (mlf_register_as_worker(f, first) < 0) {
		fprintf(stderr, "%s\n", mlf_error(f));
		return 1;
	}

	for (char *sv, *save = NULL, *list = servers; m < 8 && (sv = strtok_r(list, ",", &save)); list = NULL, m++) {
		g[m] = (struct getpar){ .f = f, .server = sv, .n = n * (size_t)(m + 1), .rounds = rounds,
					.timeout = timeout, .want = (float)(10 * (m + 1)) };
		g[m].w = malloc(g[m].n * sizeof(float));
		for (size_t k = 0; g[m].w && k < g[m].n; k++)
			g[m].w[k] = g[m].want;
		if (!g[m].w || mlf_push(f, sv, g[m].w, g[m].n, 1.0, 0) < 0) {
			fprintf(stderr, "push to %s: %s\n", sv, g[m].w ? mlf_error(f) : "no memory");
			return 1;
		}
	}
	for (int i = 0; i < m; i++)
		if (pthread_create(&th[i], NULL, getpar_thread, &g[i]) != 0) {
			fprintf(stderr, "getpar: cannot start a thread\n");
			return 1;
		}
	for (int i = 0; i < m; i++) {
		pthread_join(th[i], NULL);
		printf("getpar server=%s n=%zu version=%lld rc=%d wrong=%d%s%s\n", g[i].server, g[i].n,
		       (long long)g[i].version, g[i].rc, g[i].wrong, g[i].rc ? " err=" : "", g[i].err);
		bad |= g[i].rc != 0 || g[i].wrong != 0;
		free(g[i].w);
	}
	return bad;
}

static void usage(void)
{
	printf("usage: fabric_app server|replica|worker|ctl --cluster C --host H [--mode mlfabric-a|mlfabric-s|async] [--server S]\n"
	       "         [--workers W] [--n FLOATS] [--count K] [--first F] [--sock P] [--app NAME --send JSON --expect TYPE]\n"
	       "         [--momentum G] [--stay] [--verify DIR] [--replication mlfabric|chain] [--delay S]\n"
	       "server: serve a model of n floats (0), print every update, exit at version K (--stay: at a signal);\n"
	       "        updates are applied with momentum G (h = G h + u, w += h; default 0).\n"
	       "replica: keep a replica of --server S (same apply), print updates, state installs, promotion;\n"
	       "        exit at a signal.\n"
	       "worker: push K updates (update i = F..F+K-1 is n copies of i), get until version >= F+K-1\n"
	       "        (--until-version V: until V, e.g. every worker's updates);\n"
	       "        --mode mlfabric-s: K push_get iterations instead (--workers: the server's n_workers),\n"
	       "        each after --delay S seconds (a straggler), printing its push time (push t=...).\n"
	       "ctl:    send one raw control JSON as app NAME and print the first reply of type TYPE.\n"
	       "getpar: --server S1,S2,..: push n (i + 1) copies of 10 (i + 1) to server i, then get every\n"
	       "        server's model at once, one thread each, K times (--count); exit 0 when each get\n"
	       "        returned its own server's model.\n");
}

static int ctl_probe(const char *sock, const char *text, const char *expect, double timeout)
{
	char err[256];
	mlfabric_t *m = mlfabric_connect(sock, err, sizeof(err));
	struct mlfabric_event ev;
	struct timespec t0, t;

	if (!m) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	if (mlfabric_ctl_send(m, text) < 0) {
		fprintf(stderr, "cannot send control message\n");
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int rc = mlfabric_poll(m, &ev, 100);
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (rc == 1 && ev.kind == MLFABRIC_EV_CTL) {
			json_t *o = json_loads(ev.ctl, 0, NULL);
			const char *ty = json_string_value(json_object_get(o, "type"));
			printf("ctl %s\n", ev.ctl);
			fflush(stdout);
			if (ty && !strcmp(ty, expect)) {
				json_decref(o);
				mlfabric_event_release(&ev);
				break;
			}
			json_decref(o);
		}
		if (rc == 1)
			mlfabric_event_release(&ev);
		if (rc < 0 || (double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) * 1e-9 > timeout) {
			fprintf(stderr, "no '%s' control message within %.1f s\n", expect, timeout);
			mlfabric_close(m);
			return 1;
		}
	}
	mlfabric_close(m);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "cluster", 1, NULL, 'c' }, { "host", 1, NULL, 'H' }, { "mode", 1, NULL, 'm' },
		{ "server", 1, NULL, 'S' }, { "n", 1, NULL, 'n' }, { "count", 1, NULL, 'k' },
		{ "sock", 1, NULL, 's' }, { "send", 1, NULL, 'j' }, { "expect", 1, NULL, 'e' },
		{ "timeout", 1, NULL, 't' }, { "first", 1, NULL, 'f' }, { "help", 0, NULL, 'h' },
		{ "workers", 1, NULL, 'W' }, { "momentum", 1, NULL, 'g' }, { "stay", 0, NULL, 'y' },
		{ "verify", 1, NULL, 'v' }, { "replication", 1, NULL, 'r' },
		{ "until-version", 1, NULL, 'u' }, { "delay", 1, NULL, 'd' }, { NULL, 0, NULL, 0 },
	};
	struct mlf_opts o = { .mode = MLF_MODE_DIRECT };
	const char *server = NULL, *send = NULL, *expect = NULL, *what;
	size_t n = 1000;
	long count = 10, first = 1, until = -1; /* until: worker gets until this version (default first + count - 1) */
	int workers = 1, stay = 0;
	double timeout = 10, momentum = 0, delay = 0; /* delay: a sync worker's straggling, s */
	enum mlf_replication repl = MLF_REPL_MLFABRIC;
	char err[256];
	int c;
	mlf_t *f;

	if (argc < 2) {
		usage();
		return 2;
	}
	what = argv[1];
	optind = 2;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'c': o.cluster = optarg; break;
		case 'H': o.host = optarg; break;
		case 'm':
			if (!strcmp(optarg, "direct") || !strcmp(optarg, "sync")) {
				fprintf(stderr, "fabric_app: --mode %s is the old spelling: use --mode %s\n", optarg,
					optarg[0] == 'd' ? "async" : "mlfabric-s");
				return 2;
			}
			if (mlf_mode_parse(optarg, &o.mode) < 0) {
				fprintf(stderr, "fabric_app: unknown --mode %s (mlfabric-a, mlfabric-s or async)\n", optarg);
				return 2;
			}
			break;
		case 'W': workers = atoi(optarg); break;
		case 'S': server = optarg; break;
		case 'n': n = strtoul(optarg, NULL, 10); break;
		case 'k': count = strtol(optarg, NULL, 10); break;
		case 's': o.sock = optarg; break;
		case 'j': send = optarg; break;
		case 'e': expect = optarg; break;
		case 't': timeout = strtod(optarg, NULL); break;
		case 'f': first = strtol(optarg, NULL, 10); break;
		case 'u': until = strtol(optarg, NULL, 10); break;
		case 'g': momentum = strtod(optarg, NULL); break;
		case 'd': delay = strtod(optarg, NULL); break;
		case 'y': stay = 1; break;
		case 'v': o.verify_dir = optarg; break;
		case 'r': repl = strcmp(optarg, "chain") ? MLF_REPL_MLFABRIC : MLF_REPL_CHAIN; break;
		case 'h': usage(); return 0;
		default: usage(); return 2;
		}
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	log_component = what;
	if (!strcmp(what, "ctl"))
		return send && expect && o.sock ? ctl_probe(o.sock, send, expect, timeout) : (usage(), 2);
	o.timeout_s = timeout;
	if (!(f = mlf_open(&o, err, sizeof(err)))) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	if (!strcmp(what, "server") || (!strcmp(what, "replica") && server)) {
		struct server_state s = { .w = calloc(n, sizeof(float)), .h = calloc(n, sizeof(float)), .n = n,
					  .expect_next = 1, .g = momentum };
		struct mlf_params p = { .tau_max = 8, .n_workers = workers, .momentum = momentum, .div_max = 1 };
		int replica = !strcmp(what, "replica");
		int rc, tries = 0;
		mlf_set_state_callbacks(f, get_state, set_state, &s);
		/* a replica refused (no server yet) registers again on the same endpoint */
		while ((rc = replica ? mlf_register_as_replica(f, server, &p, n, 0, repl, on_update, on_request, &s)
				     : mlf_register_as_server(f, &p, n, 0, on_update, on_request, &s)) == -EINVAL &&
		       replica && ++tries < 40 && !quit) {
			printf("refused: %s\n", mlf_error(f));
			fflush(stdout);
			usleep(250000);
		}
		if (rc < 0) {
			fprintf(stderr, "%s\n", mlf_error(f));
			return 1;
		}
		printf("%s ready role=%s\n", what, mlf_role(f));
		fflush(stdout);
		while (!quit && (stay || replica || s.version < count))
			usleep(10000);
		if (!stay && !replica)
			sleep(1); /* answer the workers' last gets */
		printf("%s applied=%ld version=%lld out_of_order=%ld w0=%g role=%s hash=%08x\n", what, s.applied,
		       (long long)s.version, s.out_of_order, (double)s.w[0], mlf_role(f), state_hash(&s));
		mlf_close(f);
		return 0;
	}
	if (!strcmp(what, "getpar") && server) {
		char *list = strdup(server);
		int rc = list ? getpar(f, list, n, count, timeout) : 1;
		free(list);
		mlf_close(f);
		return rc;
	}
	if (!strcmp(what, "worker") && server) {
		float *u = calloc(n, sizeof(float)), *w = calloc(n, sizeof(float));
		int64_t v = -1;
		int rc = 0;
		struct mlf_worker_stats ws;
		if (mlf_register_as_worker(f, server) < 0) {
			fprintf(stderr, "%s\n", mlf_error(f));
			return 1;
		}
		for (long i = first; i < first + count && o.mode == MLF_MODE_MLFABRIC_S; i++) {
			for (size_t k = 0; k < n; k++)
				u[k] = (float)i;
			if (delay > 0)
				usleep((useconds_t)(delay * 1e6));
			struct timespec now;
			clock_gettime(CLOCK_REALTIME, &now);
			printf("push t=%.6f\n", (double)now.tv_sec + (double)now.tv_nsec * 1e-9);
			if ((rc = mlf_push_get(f, server, u, n, 1.0, v < 0 ? 0 : v, w, &v, timeout)) < 0) {
				fprintf(stderr, "%s\n", mlf_error(f));
				return 1;
			}
			printf("push_get version=%lld w0=%g\n", (long long)v, (double)w[0]);
		}
		for (long i = first; i < first + count && o.mode != MLF_MODE_MLFABRIC_S; i++) {
			for (size_t k = 0; k < n; k++)
				u[k] = (float)i;
			/* ||u||_2 of n copies of i: the planner's divergence bound (Div_max) uses it */
			int64_t id = mlf_push(f, server, u, n, (double)i * sqrt((double)n), i - 1);
			if (id < 0) {
				fprintf(stderr, "push: %s\n", mlf_error(f));
				return 1;
			}
			printf("push id=%lld\n", (long long)id);
		}
		fflush(stdout);
		if (until < 0)
			until = first + count - 1;
		for (int tries = 0; tries < 100 && v < until && o.mode != MLF_MODE_MLFABRIC_S; tries++) {
			if ((rc = mlf_get(f, server, w, n, &v, timeout)) < 0) {
				fprintf(stderr, "%s\n", mlf_error(f));
				break;
			}
			if (v < until)
				usleep(50000);
		}
		mlf_get_worker_stats(f, &ws);
		printf("get version=%lld w0=%g wlast=%g pushed=%llu sent=%llu models=%llu\n", (long long)v,
		       (double)w[0], (double)w[n - 1], (unsigned long long)ws.pushed, (unsigned long long)ws.sent,
		       (unsigned long long)ws.models);
		mlf_close(f);
		return rc < 0;
	}
	usage();
	return 2;
}
