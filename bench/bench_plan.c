/* bench_plan.c - planner benchmark: plan_compute time (FAST, SIMPLE) and MLfabric vs FIFO commit times. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"

#include "fifo.h"
#include "gen_batch.h"
#include "plan_check.h"
#include "planio.h"

/*
 * Workload: the paper's §7.4 scalability experiment (gen_batch.h: |U| updates with deadlines
 * Uniform(1, 2|U|), |U|/2 worker hosts, a congestion-free core) plus aggregators, a replica and
 * capacity steps; --paper-shape and the other options change it. For each |U|, several seeded
 * batches: the median plan_compute time of each implementation, whether FAST and SIMPLE plans
 * are identical, the checker's verdict, deadline (delay bound) violations, and the mean server
 * commit time of MLfabric's plan against the FIFO fair-share baseline on the same batch.
 */

/* Workload options; a negative value keeps the shape's default. */
struct bench_opts {
	int paper_shape;  /* 1: gen_params_paper, else gen_params_default */
	int aggregators, servers, pulls, distributors, no_replica;
	double div_max;
	int64_t tau_max;
};

static const struct {
	int n;
	double paper_ms;  /* paper §7.4 (their implementation, |U| = 10 is the "< 5 ms" remark) */
	double target_ms; /* this project's target for FAST on one core */
} rows[] = {
	{ 10, 5, 0 }, { 100, 30, 3 }, { 500, 440, 44 }, { 1000, 1460, 146 },
};

/* Generator parameters of batch @seed of size @n: the shape, the options, then @variant. */
static void bench_params(const struct bench_opts *o, int n, uint64_t seed,
			 enum gen_variant variant, struct gen_params *gp)
{
	if (o->paper_shape)
		gen_params_paper(gp, n, seed);
	else
		gen_params_default(gp, n, seed);
	if (o->aggregators >= 0)
		gp->n_aggregators = o->aggregators;
	if (o->servers > 0)
		gp->n_servers = o->servers;
	if (o->pulls >= 0)
		gp->n_pulls = o->pulls;
	if (o->distributors >= 0)
		gp->n_distributors = o->distributors;
	else if (gp->n_pulls > 0)
		gp->n_distributors = 2;
	if (o->no_replica)
		gp->with_replica = 0;
	if (o->div_max >= 0)
		gp->div_max = o->div_max;
	if (o->tau_max > 0)
		gp->tau_max = o->tau_max;
	if (variant != GEN_ASYNC)
		gen_params_variant(gp, variant);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(double), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Mean over the updates in the order of (server commit time - now_s), s: an aggregate's inputs
 * commit with it; with shards an update is committed when its last shard is. */
static double mlfabric_mean_commit(const struct plan_batch *b, const struct plan *p)
{
	double *at = calloc((size_t)b->n_updates + 1, sizeof(double)), sum = 0;

	for (int i = 0; at && i < p->n_commits; i++) {
		const struct plan_commit *c = &p->commits[i];
		const int *in = &c->carries;
		int m = 1;

		if (c->kind == PLAN_CARRY_AGGREGATE) {
			in = p->aggregates[c->carries].inputs;
			m = p->aggregates[c->carries].n_inputs;
		}
		for (int j = 0; j < m; j++)
			if (c->at_s > at[in[j]])
				at[in[j]] = c->at_s;
	}
	for (int i = 0; at && i < p->n_order; i++)
		sum += at[p->order[i]] - b->now_s;
	free(at);
	return p->n_order ? sum / p->n_order : 0;
}

/* Mean FIFO commit time (s after now_s) over the updates @order (those MLfabric committed). */
static double fifo_mean_over(const struct plan_batch *b, const struct fifo_result *fr,
			     const int *order, int n)
{
	double sum = 0;

	for (int i = 0; i < n; i++)
		sum += fr->commit_s[order[i]] - b->now_s;
	return n ? sum / n : 0;
}

struct row_result {
	double fast_ms, simple_ms, mlf_commit_s, fifo_commit_s, fifo_same_s;
	int identical, check_failures, violations, fifo_violations, dropped;
};

static int run_row(const struct bench_opts *o, int n, enum gen_variant variant, int seeds,
		   int with_simple, struct row_result *r)
{
	double *tf = calloc((size_t)seeds, sizeof(double));
	double *ts = calloc((size_t)seeds, sizeof(double));

	memset(r, 0, sizeof(*r));
	r->identical = 1;
	if (!tf || !ts) {
		free(tf);
		free(ts);
		return -ENOMEM;
	}
	for (int s = 0; s < seeds; s++) {
		struct gen_params gp;
		struct plan_batch b;
		struct plan pf, ps;
		struct fifo_result fr;
		char msg[512];
		double t0;

		bench_params(o, n, 424242 + (uint64_t)s, variant, &gp);
		if (gen_batch(&gp, &b)) {
			fprintf(stderr, "bench-plan: cannot generate |U| %d (bad workload options)\n", n);
			return -EINVAL;
		}
		t0 = 1e3 * clock_mono_s();
		if (plan_compute(&b, PLAN_IMPL_FAST, &pf)) {
			fprintf(stderr, "bench-plan: plan_compute FAST failed (|U| %d seed %d)\n", n, s);
			return -EINVAL;
		}
		tf[s] = 1e3 * clock_mono_s() - t0;
		if (with_simple) {
			t0 = 1e3 * clock_mono_s();
			if (plan_compute(&b, PLAN_IMPL_SIMPLE, &ps)) {
				fprintf(stderr, "bench-plan: SIMPLE failed (|U| %d seed %d)\n", n, s);
				return -EINVAL;
			}
			ts[s] = 1e3 * clock_mono_s() - t0;
			r->identical &= plan_equal(&pf, &ps);
			plan_free(&ps);
		}
		if (plan_check(&b, &pf, msg, sizeof(msg)) != PLAN_CHECK_OK) {
			r->check_failures++;
			fprintf(stderr, "bench-plan: |U| %d seed %d: %s\n", n, s, msg);
		}
		r->violations += plan_check_delay_violations(&b, &pf);
		r->dropped += pf.n_dropped;
		r->mlf_commit_s += mlfabric_mean_commit(&b, &pf) / seeds;
		if (fifo_simulate(&b, &fr) == 0) {
			r->fifo_commit_s += fr.mean_commit_s / seeds;
			r->fifo_same_s += fifo_mean_over(&b, &fr, pf.order, pf.n_order) / seeds;
			r->fifo_violations += fr.delay_violations;
			fifo_result_free(&fr);
		}
		plan_free(&pf);
		planio_batch_free(&b);
	}
	r->fast_ms = median(tf, seeds);
	r->simple_ms = with_simple ? median(ts, seeds) : NAN;
	free(tf);
	free(ts);
	return 0;
}

/* The other batch kinds at |U| = 100: time, FAST == SIMPLE and the checker. Returns 1 if bad. */
static int run_variants(const struct bench_opts *o, int seeds, int with_simple, int max_n)
{
	static const char *const names[] = { "async", "sync", "sharded", "pulls" };
	int bad = 0;

	if (max_n < 100)
		return 0;
	printf("variants at |U| = 100:\n%8s %9s %9s %9s %5s %4s %7s\n", "variant", "fast_ms",
	       "simple_ms", "identical", "check", "viol", "dropped");
	for (int v = GEN_SYNC; v <= GEN_PULLS; v++) {
		struct row_result r;

		if (run_row(o, 100, (enum gen_variant)v, seeds, with_simple, &r))
			return 1;
		printf("%8s %9.3f %9.3f %9s %5s %4d %7d\n", names[v], r.fast_ms, r.simple_ms,
		       with_simple ? (r.identical ? "yes" : "NO") : "-",
		       r.check_failures ? "FAIL" : "ok", r.violations, r.dropped);
		bad |= r.check_failures || r.violations || !r.identical;
	}
	return bad;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bench-plan [--seeds N] [--sizes LIST] [--max-updates N] [--no-simple]\n"
		"                  [--paper-shape] [--aggregators K] [--servers S] [--pulls P]\n"
		"                  [--distributors D] [--no-replica] [--div-max D] [--tau-max T]\n"
		"Times plan_compute (FAST and SIMPLE) on the paper's §7.4 workload for |U| = 10, 100,\n"
		"500, 1000 (median over N seeded batches, default 7), checks every\n"
		"plan with the independent checker, and compares the mean server commit time with the\n"
		"FIFO fair-share baseline; then the sync, sharded and pull variants at |U| = 100.\n"
		"Runs on one core (pinned). Exit status 1 if a check, the delay bound, FAST ==\n"
		"SIMPLE or a target fails; 2 for a bad option.\n"
		"  --seeds N         batches per |U| (default 7)\n"
		"  --sizes LIST      comma-separated |U| values (default 10,100,500,1000)\n"
		"  --max-updates N   skip rows with |U| > N\n"
		"  --no-simple       time FAST only\n"
		"workload (default: gen_params_default, the fine shape; see tests/gen_batch.h):\n"
		"  --paper-shape     the paper's numbers: whole 1..10 Gbit/s links, 10 Gbit/s servers,\n"
		"                    1..64 MB updates (a quarter up to 50 ms late), tau_max |U|,\n"
		"                    no capacity steps, div_max 2\n"
		"  --aggregators K   aggregators (default 4)\n"
		"  --servers S       model sharded over S servers, 1..%d (§10.2; default 1)\n"
		"  --pulls P         model pulls through distributors (§10.3; default 0)\n"
		"  --distributors D  distributors (default 2 with pulls)\n"
		"  --no-replica      no replica (default: a replica with 2 replica aggregators)\n"
		"  --div-max D       divergence bound (default: drawn per batch; paper shape 2)\n"
		"  --tau-max T       delay bound in updates (default 30; paper shape |U|)\n",
		GEN_MAX_SERVERS);
}

/* Parse a non-negative integer option; -1 when malformed. */
static long opt_count(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);

	return *s && !*end && v >= 0 ? v : -1;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seeds", required_argument, NULL, 's' },
		{ "sizes", required_argument, NULL, 'z' },
		{ "max-updates", required_argument, NULL, 'm' },
		{ "no-simple", no_argument, NULL, 'n' },
		{ "paper-shape", no_argument, NULL, 'P' },
		{ "aggregators", required_argument, NULL, 'k' },
		{ "servers", required_argument, NULL, 'v' },
		{ "pulls", required_argument, NULL, 'p' },
		{ "distributors", required_argument, NULL, 'D' },
		{ "no-replica", no_argument, NULL, 'R' },
		{ "div-max", required_argument, NULL, 'd' },
		{ "tau-max", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct bench_opts o = { 0, -1, -1, -1, -1, 0, -1.0, -1 };
	char sizes[256] = "10,100,500,1000", *tok, *save = NULL, *end;
	int seeds = 7, max_n = 1 << 30, with_simple = 1, c, bad = 0;
	cpu_set_t one;

	while ((c = getopt_long(argc, argv, "s:m:nh", opts, NULL)) != -1) {
		switch (c) {
		case 's': seeds = (int)opt_count(optarg); break;
		case 'z': snprintf(sizes, sizeof(sizes), "%s", optarg); break;
		case 'm': max_n = (int)opt_count(optarg); break;
		case 'n': with_simple = 0; break;
		case 'P': o.paper_shape = 1; break;
		case 'k': if ((o.aggregators = (int)opt_count(optarg)) < 0) bad = 1; break;
		case 'v': if ((o.servers = (int)opt_count(optarg)) < 1) bad = 1; break;
		case 'p': if ((o.pulls = (int)opt_count(optarg)) < 0) bad = 1; break;
		case 'D': if ((o.distributors = (int)opt_count(optarg)) < 0) bad = 1; break;
		case 'R': o.no_replica = 1; break;
		case 'd':
			o.div_max = strtod(optarg, &end);
			if (*end || !(o.div_max >= 0))
				bad = 1;
			break;
		case 't': if ((o.tau_max = opt_count(optarg)) < 1) bad = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (seeds < 1 || max_n < 0 || bad || o.servers > GEN_MAX_SERVERS || optind < argc) {
		fprintf(stderr, "bench-plan: bad option: --seeds, --servers and --tau-max must be "
			">= 1 (--servers <= %d), counts and --div-max >= 0, no operands "
			"(see --help)\n", GEN_MAX_SERVERS);
		return 2;
	}
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu() >= 0 ? sched_getcpu() : 0, &one);
	sched_setaffinity(0, sizeof(one), &one);

	printf("%6s %9s %9s %8s %8s %9s %5s %4s %7s %5s %7s %7s %7s %6s\n", "|U|", "fast_ms",
	       "simple_ms", "paper_ms", "target", "identical", "check", "viol", "dropped",
	       "seeds", "mlf_s", "fifo_s", "fifo_all", "fifo_v");
	for (tok = strtok_r(sizes, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		struct row_result r;
		long n = opt_count(tok);
		double paper_ms = 0, target_ms = 0;
		char target[16], paper[16];

		if (n < 1 || n > 1000000) {
			fprintf(stderr, "bench-plan: --sizes: bad |U| '%s' (need 1..1000000)\n", tok);
			return 2;
		}
		if (n > max_n)
			continue;
		for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
			if (rows[i].n == n)
				paper_ms = rows[i].paper_ms, target_ms = rows[i].target_ms;
		if (run_row(&o, (int)n, GEN_ASYNC, seeds, with_simple, &r)) {
			fprintf(stderr, "bench-plan: |U| %ld failed\n", n);
			return 1;
		}
		snprintf(target, sizeof(target), target_ms > 0 ? "<= %g" : "-", target_ms);
		snprintf(paper, sizeof(paper), paper_ms > 0 ? "%g" : "-", paper_ms);
		printf("%6ld %9.3f %9.3f %8s %8s %9s %5s %4d %7d %5d %7.4f %7.4f %7.4f %6d\n", n,
		       r.fast_ms, r.simple_ms, paper, target,
		       with_simple ? (r.identical ? "yes" : "NO") : "-",
		       r.check_failures ? "FAIL" : "ok", r.violations, r.dropped, seeds,
		       r.mlf_commit_s, r.fifo_same_s, r.fifo_commit_s, r.fifo_violations);
		fflush(stdout);
		bad |= r.check_failures || r.violations || !r.identical ||
		       (target_ms > 0 && r.fast_ms > target_ms);
	}
	bad |= run_variants(&o, seeds, with_simple, max_n);
	printf("columns: median plan_compute ms (FAST, SIMPLE); paper §7.4 ms; target for FAST;\n"
	       "FAST == SIMPLE plans; checker verdict; delay-bound violations of MLfabric plans\n"
	       "(must be 0); updates dropped (all batches); batches; mean server commit time in s\n"
	       "after now_s: MLfabric over its committed updates, FIFO fair share over the same\n"
	       "updates and over all updates; FIFO delay-bound violations (all batches).\n");
	return bad ? 1 : 0;
}
