/* torch_pushget.c - `make bench-torch`: time N push+get round trips of an n-float update through include/mlfabric/mlfabric.h (the C side of the Python-overhead comparison). */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mlfabric.h"

/* Seconds of CLOCK_MONOTONIC. */
static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bench-torch-pushget --cluster C.json --host H --server S [--mode async|mlfabric-a]\n"
		"                           [--n FLOATS] [--rounds N] [--warmup W] [--sock PATH] [--timeout S]\n"
		"Registers as a worker of S and times N rounds of mlf_push (an n-float update, default 61706:\n"
		"the LeNet-5 of examples/torch_fashion_mnist.py) followed by mlf_get of the model, after W\n"
		"untimed rounds (default 20). Prints one JSON line: program, n, rounds, mean_s, p50_s, min_s,\n"
		"max_s (seconds per round trip). Exit status 0, 1 on a fabric error (named), 2 bad usage.\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "cluster", 1, NULL, 'c' }, { "host", 1, NULL, 'H' }, { "server", 1, NULL, 'S' },
		{ "mode", 1, NULL, 'm' }, { "n", 1, NULL, 'n' }, { "rounds", 1, NULL, 'r' },
		{ "warmup", 1, NULL, 'w' }, { "sock", 1, NULL, 's' }, { "timeout", 1, NULL, 't' },
		{ "help", 0, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	struct mlf_opts o = { .mode = MLF_MODE_DIRECT };
	const char *server = NULL, *mode = "async";
	long n = 61706, rounds = 200, warmup = 20;
	double timeout = 10, sum = 0;
	char err[256];
	int c;

	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'c': o.cluster = optarg; break;
		case 'H': o.host = optarg; break;
		case 'S': server = optarg; break;
		case 'm': mode = optarg; break;
		case 'n': n = atol(optarg); break;
		case 'r': rounds = atol(optarg); break;
		case 'w': warmup = atol(optarg); break;
		case 's': o.sock = optarg; break;
		case 't': timeout = atof(optarg); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!o.cluster || !o.host || !server || n < 1 || rounds < 1 || warmup < 0 || timeout <= 0) {
		fprintf(stderr, "bench-torch-pushget: --cluster, --host, --server required; --n, --rounds, --timeout > 0\n");
		return 2;
	}
	if (mlf_mode_parse(mode, &o.mode)) {
		fprintf(stderr, "bench-torch-pushget: unknown --mode '%s' (async, mlfabric-a)\n", mode);
		return 2;
	}
	o.timeout_s = timeout;
	mlf_t *f = mlf_open(&o, err, sizeof(err));
	if (!f) {
		fprintf(stderr, "bench-torch-pushget: %s\n", err);
		return 1;
	}
	float *u = malloc(sizeof(float) * (size_t)n), *w = malloc(sizeof(float) * (size_t)n);
	double *t = malloc(sizeof(double) * (size_t)rounds);
	int64_t version = 0;
	int rc = 0;

	if (!u || !w || !t) {
		fprintf(stderr, "bench-torch-pushget: no memory for %ld floats\n", n);
		return 1;
	}
	for (long i = 0; i < n; i++)
		u[i] = 1e-6f;
	if (mlf_register_as_worker(f, server) < 0) {
		fprintf(stderr, "bench-torch-pushget: register as worker of %s: %s\n", server, mlf_error(f));
		return 1;
	}
	for (long r = 0; r < warmup + rounds; r++) {
		double t0 = now_s();
		int64_t id = mlf_push(f, server, u, (size_t)n, 1e-6 * sqrt((double)n), version);

		if (id < 0 || (rc = mlf_get(f, server, w, (size_t)n, &version, timeout)) < 0) {
			fprintf(stderr, "bench-torch-pushget: round %ld: %s to %s failed: %s\n", r,
				id < 0 ? "push" : "get", server, mlf_error(f));
			mlf_close(f);
			return 1;
		}
		if (r >= warmup)
			t[r - warmup] = now_s() - t0;
	}
	mlf_close(f);
	for (long r = 0; r < rounds; r++)
		sum += t[r];
	qsort(t, (size_t)rounds, sizeof(double), cmp_double);
	printf("{\"program\":\"c\",\"n\":%ld,\"rounds\":%ld,\"mean_s\":%.9f,\"p50_s\":%.9f,\"min_s\":%.9f,\"max_s\":%.9f}\n",
	       n, rounds, sum / (double)rounds, t[(rounds - 1) / 2], t[0], t[rounds - 1]);
	free(u);
	free(w);
	free(t);
	return 0;
}
