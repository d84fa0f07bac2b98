/* bench_plan.c - planner benchmark: plan_compute time (FAST, SIMPLE) and MLfabric vs FIFO commit times. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fifo.h"
#include "gen_batch.h"
#include "plan_check.h"
#include "planio.h"

/*
 * Workload: the paper's §7.4 scalability experiment (gen_batch.h: |U| updates with deadlines
 * Uniform(1, 2|U|), |U|/2 worker hosts, a congestion-free core) plus aggregators, a replica and
 * capacity steps. For each |U|, several seeded batches: the median plan_compute time of each
 * implementation, whether FAST and SIMPLE plans are identical, the checker's verdict, deadline
 * (delay bound) violations, and the mean server commit time of MLfabric's plan against the FIFO
 * fair-share baseline on the same batch.
 */

static const struct {
	int n;
	double paper_ms;  /* paper §7.4 (their implementation, |U| = 10 is the "< 5 ms" remark) */
	double target_ms; /* this project's target for FAST on one core */
} rows[] = {
	{ 10, 5, 0 }, { 100, 30, 3 }, { 500, 440, 44 }, { 1000, 1460, 146 },
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
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

/* Plans equal up to plan_ms: compared through their JSON documents. */
static int same_plan(const struct plan_batch *b, struct plan *x, struct plan *y)
{
	json_t *jx, *jy;
	int same;

	x->plan_ms = y->plan_ms = 0;
	jx = planio_plan_to_json(b, x);
	jy = planio_plan_to_json(b, y);
	same = jx && jy && json_equal(jx, jy);
	json_decref(jx);
	json_decref(jy);
	return same;
}

struct row_result {
	double fast_ms, simple_ms, mlf_commit_s, fifo_commit_s, fifo_same_s;
	int identical, check_failures, violations, fifo_violations, dropped;
};

static int run_row(int n, enum gen_variant variant, int seeds, int with_simple,
		   struct row_result *r)
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

		gen_params_default(&gp, n, 424242 + (uint64_t)s);
		gp.variant = variant;
		if (gen_batch(&gp, &b))
			return -ENOMEM;
		t0 = now_ms();
		if (plan_compute(&b, PLAN_IMPL_FAST, &pf)) {
			fprintf(stderr, "bench-plan: plan_compute FAST failed (|U| %d seed %d)\n", n, s);
			return -EINVAL;
		}
		tf[s] = now_ms() - t0;
		if (with_simple) {
			t0 = now_ms();
			if (plan_compute(&b, PLAN_IMPL_SIMPLE, &ps)) {
				fprintf(stderr, "bench-plan: SIMPLE failed (|U| %d seed %d)\n", n, s);
				return -EINVAL;
			}
			ts[s] = now_ms() - t0;
			r->identical &= same_plan(&b, &pf, &ps);
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
static int run_variants(int seeds, int with_simple, int max_n)
{
	static const char *const names[] = { "async", "sync", "sharded", "pulls" };
	int bad = 0;

	if (max_n < 100)
		return 0;
	printf("variants at |U| = 100:\n%8s %9s %9s %9s %5s %4s %7s\n", "variant", "fast_ms",
	       "simple_ms", "identical", "check", "viol", "dropped");
	for (int v = GEN_SYNC; v <= GEN_PULLS; v++) {
		struct row_result r;

		if (run_row(100, (enum gen_variant)v, seeds, with_simple, &r))
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
		"usage: bench-plan [--seeds N] [--max-updates N] [--no-simple] [--help]\n"
		"Times plan_compute (FAST and SIMPLE) on the paper's §7.4 workload for |U| = 10, 100,\n"
		"500, 1000 (median over N seeded batches, default 7), checks every\n"
		"plan with the independent checker, and compares the mean server commit time with the\n"
		"FIFO fair-share baseline; then the sync, sharded and pull variants at |U| = 100.\n"
		"Runs on one core (pinned). Exit status 1 if a check, the delay bound, FAST ==\n"
		"SIMPLE or a target fails.\n"
		"  --seeds N        batches per |U| (default 7)\n"
		"  --max-updates N  skip rows with |U| > N\n"
		"  --no-simple      time FAST only\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seeds", required_argument, NULL, 's' },
		{ "max-updates", required_argument, NULL, 'm' },
		{ "no-simple", no_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int seeds = 7, max_n = 1000, with_simple = 1, c, bad = 0;
	cpu_set_t one;

	while ((c = getopt_long(argc, argv, "s:m:nh", opts, NULL)) != -1) {
		switch (c) {
		case 's': seeds = atoi(optarg); break;
		case 'm': max_n = atoi(optarg); break;
		case 'n': with_simple = 0; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (seeds < 1) {
		fprintf(stderr, "bench-plan: --seeds must be >= 1\n");
		return 2;
	}
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu() >= 0 ? sched_getcpu() : 0, &one);
	sched_setaffinity(0, sizeof(one), &one);

	printf("%6s %9s %9s %8s %8s %9s %5s %4s %7s %5s %7s %7s %7s %6s\n", "|U|", "fast_ms",
	       "simple_ms", "paper_ms", "target", "identical", "check", "viol", "dropped",
	       "seeds", "mlf_s", "fifo_s", "fifo_all", "fifo_v");
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct row_result r;
		int n = rows[i].n, k = seeds;
		char target[16];

		if (n > max_n)
			continue;
		if (run_row(n, GEN_ASYNC, k, with_simple, &r)) {
			fprintf(stderr, "bench-plan: |U| %d failed\n", n);
			return 1;
		}
		if (rows[i].target_ms > 0)
			snprintf(target, sizeof(target), "<= %g", rows[i].target_ms);
		else
			snprintf(target, sizeof(target), "-");
		printf("%6d %9.3f %9.3f %8g %8s %9s %5s %4d %7d %5d %7.4f %7.4f %7.4f %6d\n", n,
		       r.fast_ms, r.simple_ms, rows[i].paper_ms, target,
		       with_simple ? (r.identical ? "yes" : "NO") : "-",
		       r.check_failures ? "FAIL" : "ok", r.violations, r.dropped, k,
		       r.mlf_commit_s, r.fifo_same_s, r.fifo_commit_s, r.fifo_violations);
		fflush(stdout);
		bad |= r.check_failures || r.violations || !r.identical ||
		       (rows[i].target_ms > 0 && r.fast_ms > rows[i].target_ms);
	}
	bad |= run_variants(seeds, with_simple, max_n);
	printf("columns: median plan_compute ms (FAST, SIMPLE); paper §7.4 ms; target for FAST;\n"
	       "FAST == SIMPLE plans; checker verdict; delay-bound violations of MLfabric plans\n"
	       "(must be 0); updates dropped (all batches); batches; mean server commit time in s\n"
	       "after now_s: MLfabric over its committed updates, FIFO fair share over the same\n"
	       "updates and over all updates; FIFO delay-bound violations (all batches).\n");
	return bad ? 1 : 0;
}
