/* fabric_distapp.c - test program of fabric_distribute.sh: a server printing the hash of its model at
 * every version, and workers whose gets print the version and hash of the model they received, so a
 * model forwarded by a distributor (§10.3) can be checked byte for byte against the server's. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mlfabric.h"

static volatile sig_atomic_t quit;
static void on_signal(int sig) { quit = sig; }

/* FNV-1a of the bytes of @n floats. */
static unsigned hash(const float *w, size_t n)
{
	const unsigned char *p = (const unsigned char *)w;
	unsigned x = 2166136261u;

	for (size_t i = 0; i < n * sizeof(float); i++)
		x = (x ^ p[i]) * 16777619u;
	return x;
}

struct srv {
	float *w;
	size_t n;
	int64_t version;
};

/* w += u; prints the new version and the model's hash (every version the server ever had). */
static int64_t on_update(void *arg, const struct mlf_update *u)
{
	struct srv *s = arg;

	for (size_t i = 0; i < s->n; i++)
		s->w[i] += u->u[i];
	s->version += u->hdr->n_parts;
	printf("model version=%lld hash=%08x\n", (long long)s->version, hash(s->w, s->n));
	fflush(stdout);
	return s->version;
}

static int64_t on_request(void *arg, float *model, size_t n)
{
	struct srv *s = arg;

	memcpy(model, s->w, n * sizeof(float));
	return s->version;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cluster", 1, NULL, 'c' }, { "host", 1, NULL, 'H' }, { "server", 1, NULL, 's' },
		{ "n", 1, NULL, 'n' }, { "count", 1, NULL, 'k' }, { "gets", 1, NULL, 'g' },
		{ "timeout", 1, NULL, 't' }, { "go", 1, NULL, 'G' }, { NULL, 0, NULL, 0 } };
	struct mlf_opts o = { .mode = MLF_MODE_MLFABRIC_A };
	const char *server = NULL, *go = NULL;
	size_t n = 1000;
	long count = 1, gets = 1;
	double timeout = 20;
	char err[256];
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'c': o.cluster = optarg; break;
		case 'H': o.host = optarg; break;
		case 's': server = optarg; break;
		case 'n': n = strtoul(optarg, NULL, 10); break;
		case 'k': count = strtol(optarg, NULL, 10); break;
		case 'g': gets = strtol(optarg, NULL, 10); break;
		case 't': timeout = strtod(optarg, NULL); break;
		case 'G': go = optarg; break;
		default:
			fprintf(stderr, "usage: fabric_distapp server|worker --cluster C --host H [--server S] "
				"[--n FLOATS] [--count K] [--gets G] [--timeout S] [--go FILE]\n"
				"server: a model of n floats (w[i] = i / 1000), prints version and hash at every "
				"version until a signal;\nworker: push K updates (update j: u[i] = j + i mod 7), "
				"then G gets, printing each model's version and hash; with --go, prints \"pushed\" after\n"
				"the pushes and starts the gets once FILE exists (the workers' pulls then arrive together)\n");
			return 2;
		}
	}
	if (optind >= argc || !o.cluster || !o.host || n == 0) {
		fprintf(stderr, "fabric_distapp: server|worker, --cluster and --host are required\n");
		return 2;
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	o.timeout_s = timeout;
	mlf_t *f = mlf_open(&o, err, sizeof(err));
	if (!f) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	float *w = calloc(n, sizeof(float));
	if (!strcmp(argv[optind], "server")) {
		struct srv s = { .w = w, .n = n };
		struct mlf_params p = { .tau_max = 1000, .n_workers = 1 };
		for (size_t i = 0; i < n; i++)
			w[i] = (float)i / 1000.0f;
		if (mlf_register_as_server(f, &p, n, 0, on_update, on_request, &s) < 0) {
			fprintf(stderr, "%s\n", mlf_error(f));
			return 1;
		}
		printf("model version=0 hash=%08x\nserver ready\n", hash(w, n));
		fflush(stdout);
		while (!quit)
			usleep(10000);
		mlf_close(f);
		return 0;
	}
	if (strcmp(argv[optind], "worker") || !server || mlf_register_as_worker(f, server) < 0) {
		fprintf(stderr, "%s\n", server ? mlf_error(f) : "worker: --server is required");
		return 1;
	}
	float *u = calloc(n, sizeof(float));
	for (long j = 1; j <= count; j++) {
		for (size_t i = 0; i < n; i++)
			u[i] = (float)(j + (long)(i % 7));
		if (mlf_push(f, server, u, n, 1.0, 0) < 0) {
			fprintf(stderr, "push: %s\n", mlf_error(f));
			return 1;
		}
	}
	if (go) { /* a start line shared by the workers: their first pulls arrive together */
		printf("pushed\n");
		fflush(stdout);
		double t_end = timeout * 1e6;
		while (access(go, F_OK) && !quit && t_end > 0) {
			usleep(5000);
			t_end -= 5000;
		}
		if (access(go, F_OK)) {
			fprintf(stderr, "worker: %s did not appear within %.0f s\n", go, timeout);
			return 1;
		}
	}
	int rc = 0;
	for (long g = 0; g < gets && !quit; g++) {
		int64_t v;
		if ((rc = mlf_get(f, server, w, n, &v, timeout)) < 0) {
			fprintf(stderr, "get %ld: %s\n", g, mlf_error(f));
			break;
		}
		printf("get version=%lld hash=%08x\n", (long long)v, hash(w, n));
		fflush(stdout);
	}
	struct mlf_worker_stats ws;
	mlf_get_worker_stats(f, &ws);
	printf("worker done models=%llu\n", (unsigned long long)ws.models);
	mlf_close(f);
	return rc < 0;
}
