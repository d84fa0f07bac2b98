/* plan_perf.c - timing driver: plan_compute() on the paper's §7.4 workload, FAST vs SIMPLE. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plan.h"
#include "plangen.h"

static double mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/* Best of @reps runs of plan_compute (ms); the last plan stays in @out. */
static int time_plan(const struct plan_batch *b, enum plan_impl impl, int reps, double *ms,
		     struct plan *out)
{
	int r, rc;

	*ms = 1e300;
	for (r = 0; r < reps; r++) {
		double t0;

		if (r > 0)
			plan_free(out);
		t0 = mono_ms();
		rc = plan_compute(b, impl, out);
		if (rc)
			return rc;
		if (mono_ms() - t0 < *ms)
			*ms = mono_ms() - t0;
	}
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: plan-perf [--sizes 10,100,500,1000] [--reps N] [--seed S] [--simple]\n"
		"                 [--aggregators K] [--div-max D] [--no-replica] [--fine]\n"
		"                 [--tau-max T] [--servers S] [--pulls]\n"
		"Times plan_compute() (the whole plan: order, aggregation, replication) on random\n"
		"batches shaped like the paper's §7.4 benchmark: |U| updates, |U|/2 workers,\n"
		"deadlines Uniform(1, 2|U|), a congestion-free core, K aggregators (default 4),\n"
		"2 replica aggregators and a replica. Prints the best of N runs (default 3) of\n"
		"the FAST planner and, with --simple, the SIMPLE one and whether the plans match.\n"
		"--fine: capacities to the Mbit/s, 1..20 MB updates ready within 10 ms, 3 capacity\n"
		"changes and |U|/10 carried replica copies. --tau-max: delay bound (default |U|).\n"
		"--servers S: model sharded over S servers (§10.2). --pulls: |U| pulls answered\n"
		"through 3 distributors (§10.3). Exit status 1 when FAST and SIMPLE differ.\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "sizes", required_argument, NULL, 's' }, { "reps", required_argument, NULL, 'r' },
		{ "seed", required_argument, NULL, 'e' }, { "simple", no_argument, NULL, 'S' },
		{ "aggregators", required_argument, NULL, 'k' },
		{ "div-max", required_argument, NULL, 'd' },
		{ "no-replica", no_argument, NULL, 'n' }, { "help", no_argument, NULL, 'h' },
		{ "fine", no_argument, NULL, 'f' }, { "tau-max", required_argument, NULL, 't' },
		{ "servers", required_argument, NULL, 'v' },
		{ "pulls", no_argument, NULL, 'p' },
		{ NULL, 0, NULL, 0 }
	};
	char sizes[256] = "10,100,500,1000", *tok, *save = NULL;
	int reps = 3, simple = 0, k = 4, replica = 1, fine = 0, tau = 0, servers = 1, pulls = 0;
	int c, same, differ = 0;
	unsigned seed = 1;
	double div_max = 2.0;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			snprintf(sizes, sizeof(sizes), "%s", optarg);
			break;
		case 'r':
			reps = atoi(optarg);
			break;
		case 'e':
			seed = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'S':
			simple = 1;
			break;
		case 'k':
			k = atoi(optarg);
			break;
		case 'd':
			div_max = atof(optarg);
			break;
		case 'n':
			replica = 0;
			break;
		case 'f':
			fine = 1;
			break;
		case 't':
			tau = atoi(optarg);
			break;
		case 'v':
			servers = atoi(optarg);
			break;
		case 'p':
			pulls = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (reps < 1 || k < 0 || div_max < 0.0 || servers < 1 || servers > 64) {
		fprintf(stderr, "plan-perf: --reps must be >= 1, --aggregators and --div-max >= 0, "
			"--servers in 1..64\n");
		return 2;
	}
	for (tok = strtok_r(sizes, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		struct plangen_opts go = { 0 };
		struct plan_batch b;
		struct plan fast, slow;
		double ms_fast, ms_slow = 0.0;
		int n = atoi(tok), rc;

		go.n_updates = n;
		go.n_aggregators = k;
		go.n_replica_aggregators = replica ? 2 : 0;
		go.replica = replica;
		go.div_max = div_max;
		go.seed = seed;
		go.mode = PLAN_ASYNC;
		go.fine = fine;
		go.tau_max = tau;
		go.n_servers = servers;
		go.n_pulls = pulls ? n : 0;
		go.n_distributors = pulls ? 3 : 0;
		if (fine) {
			go.n_changes = 3;
			go.n_replica_only = replica ? n / 10 : 0;
		}
		if (n < 1 || plangen_batch(&go, &b)) {
			fprintf(stderr, "plan-perf: bad size '%s' (need >= %d updates)\n", tok, 2 * k);
			return 2;
		}
		rc = time_plan(&b, PLAN_IMPL_FAST, reps, &ms_fast, &fast);
		if (rc) {
			fprintf(stderr, "plan-perf: plan_compute failed at |U|=%d: %s\n", n, strerror(-rc));
			return 1;
		}
		printf("|U|=%-5d fast_ms=%9.3f order=%d dropped=%d aggregates=%d transfers=%d "
		       "punted=%d divergence=%.3f", n, ms_fast, fast.n_order, fast.n_dropped,
		       fast.n_aggregates, fast.n_transfers, fast.n_punted, fast.divergence_bound);
		if (simple) {
			rc = time_plan(&b, PLAN_IMPL_SIMPLE, 1, &ms_slow, &slow);
			if (rc) {
				fprintf(stderr, "\nplan-perf: SIMPLE failed: %s\n", strerror(-rc));
				return 1;
			}
			same = plan_equal(&fast, &slow);
			printf(" simple_ms=%.3f identical=%s", ms_slow, same ? "yes" : "NO");
			differ |= !same;
			plan_free(&slow);
		}
		printf("\n");
		plan_free(&fast);
		plangen_free(&b);
	}
	if (differ)
		fprintf(stderr, "plan-perf: FAST and SIMPLE plans differ\n");
	return differ;
}
