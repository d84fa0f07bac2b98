/* fabric_initmodel.c - test program of tests/integration/fabric_init_model.sh: mlf_send_model / mlf_recv_model (docs/api.md "Initial model"). */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mlfabric.h"

/*
 * send: register as a worker of --server, send a model of --n random floats (seed --seed) at
 *       version 0 with mlf_send_model, get it back with mlf_get (byte-exact, version 0), push
 *       one update u and get until the model is w + u (version 1: the server's eq. 2 step
 *       from a model without momentum history is exactly w + u in float32).
 *       Prints "sent n=N", "get0 version=V exact=1", "get1 version=V exact=1".
 *       With --only-send it only sends (a model from a host the server does not expect); with
 *       --no-send it does all but the send (a server started with --init-file F of `write`).
 * write: write the model `send` would send to --file F (raw float32) and exit.
 * recv: mlf_recv_model from --from (or any host) within --timeout; prints
 *       "recv rc=R n=N version=V secs=S err=..." .
 */

struct opts {
	const char *cmd, *cluster, *host, *server, *from, *mode, *file;
	size_t n;
	unsigned seed;
	double timeout;
	int only_send, no_send;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* xorshift32 floats in [-1, 1) (any bit patterns of ordinary floats will do). */
static float rnd(unsigned *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return (float)((double)*s / 2147483648.0 - 1.0);
}

static int run_send(mlf_t *f, const struct opts *o)
{
	float *w = malloc(o->n * sizeof(float)), *u = malloc(o->n * sizeof(float)),
	      *g = malloc(o->n * sizeof(float)), *e = malloc(o->n * sizeof(float));
	unsigned s = o->seed ? o->seed : 1;
	int64_t v = -1;
	double deadline;
	int rc;

	if (!w || !u || !g || !e)
		return fprintf(stderr, "out of memory\n"), 1;
	for (size_t i = 0; i < o->n; i++) {
		w[i] = rnd(&s);
		u[i] = rnd(&s) / 64;
		e[i] = w[i] + u[i];
	}
	if (o->file) {
		FILE *out = fopen(o->file, "wb");
		if (!out || fwrite(w, sizeof(float), o->n, out) != o->n || fclose(out))
			return fprintf(stderr, "cannot write %s\n", o->file), 1;
		return 0;
	}
	if (!o->only_send && (rc = mlf_register_as_worker(f, o->server)) < 0)
		return fprintf(stderr, "register as worker: %s\n", mlf_error(f)), 1;
	if (!o->no_send && (rc = mlf_send_model(f, o->server, w, o->n, 0, o->timeout)) < 0)
		return fprintf(stderr, "send model: rc=%d %s\n", rc, mlf_error(f)), 1;
	printf("sent n=%zu\n", o->n);
	fflush(stdout);
	if (o->only_send)
		return 0;
	if ((rc = mlf_get(f, o->server, g, o->n, &v, o->timeout)) < 0)
		return fprintf(stderr, "get: rc=%d %s\n", rc, mlf_error(f)), 1;
	printf("get0 version=%lld exact=%d\n", (long long)v, !memcmp(g, w, o->n * sizeof(float)));
	fflush(stdout);
	if (mlf_push(f, o->server, u, o->n, 1.0, v) < 0)
		return fprintf(stderr, "push: %s\n", mlf_error(f)), 1;
	deadline = now_s() + o->timeout;
	do {
		if ((rc = mlf_get(f, o->server, g, o->n, &v, o->timeout)) < 0)
			return fprintf(stderr, "get: rc=%d %s\n", rc, mlf_error(f)), 1;
	} while (v < 1 && now_s() < deadline);
	printf("get1 version=%lld exact=%d\n", (long long)v, !memcmp(g, e, o->n * sizeof(float)));
	free(w);
	free(u);
	free(g);
	free(e);
	return 0;
}

static int run_recv(mlf_t *f, const struct opts *o)
{
	float *w = NULL;
	size_t n = 0;
	int64_t v = -1;
	double t = now_s();
	int rc = mlf_recv_model(f, o->from, &w, &n, &v, o->timeout);

	printf("recv rc=%d n=%zu version=%lld secs=%.2f err=%s\n", rc, n, (long long)v, now_s() - t,
	       rc ? mlf_error(f) : "");
	free(w);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "cluster", 1, 0, 'c' }, { "host", 1, 0, 'H' }, { "server", 1, 0, 'p' },
		{ "from", 1, 0, 'f' }, { "mode", 1, 0, 'm' }, { "n", 1, 0, 'n' },
		{ "seed", 1, 0, 's' }, { "timeout", 1, 0, 't' }, { "only-send", 0, 0, 'o' },
		{ "no-send", 0, 0, 'N' }, { "file", 1, 0, 'F' },
		{ 0, 0, 0, 0 },
	};
	struct opts o = { .mode = "async", .n = 61706, .timeout = 10 };
	struct mlf_opts fo = { 0 };
	char err[256];
	mlf_t *f;
	int c, rc;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'c': o.cluster = optarg; break;
		case 'H': o.host = optarg; break;
		case 'p': o.server = optarg; break;
		case 'f': o.from = optarg; break;
		case 'm': o.mode = optarg; break;
		case 'n': o.n = strtoul(optarg, NULL, 10); break;
		case 's': o.seed = (unsigned)strtoul(optarg, NULL, 10); break;
		case 't': o.timeout = atof(optarg); break;
		case 'o': o.only_send = 1; break;
		case 'N': o.no_send = 1; break;
		case 'F': o.file = optarg; break;
		default: return 2;
		}
	}
	if (optind != argc - 1 || (strcmp(argv[optind], "write") &&
				   (!o.cluster || !o.host || (!strcmp(argv[optind], "send") && !o.server))))
		return fprintf(stderr, "usage: fabric_initmodel send|recv|write --cluster C --host H [--server PS] "
			       "[--from H] [--mode M] [--n N] [--seed S] [--timeout S] [--only-send] [--no-send] "
			       "[--file F]\n"), 2;
	o.cmd = argv[optind];
	if (!strcmp(o.cmd, "write")) {
		if (!o.file)
			return fprintf(stderr, "write needs --file F\n"), 2;
		return run_send(NULL, &o);
	}
	fo.cluster = o.cluster;
	fo.host = o.host;
	fo.timeout_s = o.timeout;
	if (mlf_mode_parse(o.mode, &fo.mode) < 0)
		return fprintf(stderr, "unknown mode %s\n", o.mode), 2;
	if (!(f = mlf_open(&fo, err, sizeof(err))))
		return fprintf(stderr, "mlf_open: %s\n", err), 1;
	rc = !strcmp(o.cmd, "send") ? run_send(f, &o) : run_recv(f, &o);
	mlf_close(f);
	return rc;
}
