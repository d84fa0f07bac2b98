/* push_get.c - the smallest program of libmlfabric (include/mlfabric.h, paper Table 1), built out
 * of the tree against the installed library (see Makefile here: pkg-config mlfabric only).
 *
 * It opens an endpoint on this host's dataplane, registers as a worker of SERVER, pushes one
 * update of N zeros (so the server's model does not change, but its version advances by one)
 * and gets the server's model. Output, one line each:
 *   pushed id=ID n=N
 *   got version=V n=N w0=X
 * Exit 0 on success, 1 on a fabric error (the library's one-line reason on stderr, e.g. no
 * dataplane listening on the socket), 2 on a usage error.
 *
 *   push_get --cluster conf/cluster.json --host w0 --server ps [--n 1000] [--mode async]
 *            [--sock PATH] [--timeout S]
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mlfabric/mlfabric.h>

static void usage(FILE *out)
{
	fprintf(out,
		"usage: push_get --cluster FILE --host HOST --server HOST [options]\n"
		"  Opens an MLfabric endpoint on HOST's dataplane, registers as a worker of the server,\n"
		"  pushes one update of N zeros and gets the server's model.\n"
		"  --cluster FILE   cluster config (JSON) naming HOST and the server\n"
		"  --host HOST      this host's name in the config\n"
		"  --server HOST    the parameter server's host\n"
		"  --n N            model size in float32 values; must match the server's (default 1000)\n"
		"  --mode M         mlfabric-a (default), mlfabric-s or async (no scheduler)\n"
		"  --sock PATH      dataplane socket (default /run/mlfabric/<cluster>-<host>.sock)\n"
		"  --timeout S      seconds to wait for a peer or the model (default 10)\n"
		"  --help           this text\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "cluster", required_argument, NULL, 'c' }, { "host", required_argument, NULL, 'H' },
		{ "server", required_argument, NULL, 'S' },  { "n", required_argument, NULL, 'n' },
		{ "mode", required_argument, NULL, 'm' },    { "sock", required_argument, NULL, 's' },
		{ "timeout", required_argument, NULL, 't' }, { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct mlf_opts o = { .mode = MLF_MODE_MLFABRIC_A, .timeout_s = 10 };
	const char *server = NULL;
	unsigned long n = 1000;
	char err[256], *end;
	int c, rc;

	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'c': o.cluster = optarg; break;
		case 'H': o.host = optarg; break;
		case 'S': server = optarg; break;
		case 's': o.sock = optarg; break;
		case 'n':
			n = strtoul(optarg, &end, 10);
			if (*end || !*optarg || n == 0) {
				fprintf(stderr, "push_get: --n %s: not a positive count of floats\n", optarg);
				return 2;
			}
			break;
		case 't':
			o.timeout_s = strtod(optarg, &end);
			if (*end || !*optarg || o.timeout_s <= 0) {
				fprintf(stderr, "push_get: --timeout %s: not a positive number of seconds\n", optarg);
				return 2;
			}
			break;
		case 'm':
			if (mlf_mode_parse(optarg, &o.mode) < 0) {
				fprintf(stderr, "push_get: --mode %s: not mlfabric-a, mlfabric-s or async\n", optarg);
				return 2;
			}
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc || !o.cluster || !o.host || !server) {
		fprintf(stderr, "push_get: %s\n", optind < argc ? "unexpected argument" :
			"--cluster, --host and --server are required (--help)");
		return 2;
	}

	mlf_t *f = mlf_open(&o, err, sizeof(err));
	if (!f) {
		fprintf(stderr, "push_get: %s\n", err);
		return 1;
	}
	float *u = calloc(n, sizeof(float)), *w = calloc(n, sizeof(float));
	int64_t version = -1;
	if (!u || !w) {
		fprintf(stderr, "push_get: out of memory for %lu floats\n", n);
		rc = -ENOMEM;
		goto out;
	}
	if ((rc = mlf_register_as_worker(f, server)) < 0) {
		fprintf(stderr, "push_get: register as worker of %s: %s\n", server, mlf_error(f));
		goto out;
	}
	if (o.mode == MLF_MODE_MLFABRIC_S) {
		/* MLfabric-S: push and get in one step (the paper's Table 1 allreduce, §6) */
		rc = mlf_push_get(f, server, u, n, 0.0, 0, w, &version, o.timeout_s);
		if (rc < 0) {
			fprintf(stderr, "push_get: push_get: %s\n", mlf_error(f));
			goto out;
		}
		printf("pushed id=push_get n=%lu\n", n);
	} else {
		int64_t id = mlf_push(f, server, u, n, 0.0, 0); /* zero update, ||u|| = 0, from version 0 */
		if (id < 0) {
			rc = (int)id;
			fprintf(stderr, "push_get: push: %s\n", mlf_error(f));
			goto out;
		}
		printf("pushed id=%lld n=%lu\n", (long long)id, n);
		if ((rc = mlf_get(f, server, w, n, &version, o.timeout_s)) < 0) {
			fprintf(stderr, "push_get: get: %s\n", mlf_error(f));
			goto out;
		}
	}
	printf("got version=%lld n=%lu w0=%g\n", (long long)version, n, (double)w[0]);
out:
	mlf_close(f);
	free(u);
	free(w);
	return rc < 0 ? 1 : 0;
}
