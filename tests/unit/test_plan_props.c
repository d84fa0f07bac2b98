/* test_plan_props.c - property tests: random batches and conf examples planned and checked, FAST == SIMPLE. */
#include <check.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ck_run.h"
#include "gen_batch.h"
#include "plan_check.h"
#include "planio.h"

#define N_RANDOM_BATCHES 300

/* The first top-level key of the plan documents where @x and @y differ, into @msg ("" if none). */
static void first_difference(const struct plan_batch *b, const struct plan *x,
			     const struct plan *y, char *msg, size_t len)
{
	json_t *jx = planio_plan_to_json(b, x), *jy = planio_plan_to_json(b, y), *v;
	const char *key;

	msg[0] = '\0';
	ck_assert_ptr_nonnull(jx);
	ck_assert_ptr_nonnull(jy);
	json_object_del(jx, "plan_ms");
	json_object_del(jy, "plan_ms");
	json_object_foreach(jx, key, v) {
		if (!json_equal(v, json_object_get(jy, key))) {
			char *a = json_dumps(v, JSON_COMPACT | JSON_REAL_PRECISION(6));
			char *c = json_dumps(json_object_get(jy, key), JSON_COMPACT |
					     JSON_REAL_PRECISION(6));

			snprintf(msg, len, "%s: FAST %.150s, SIMPLE %.150s", key, a, c);
			free(a);
			free(c);
			break;
		}
	}
	json_decref(jx);
	json_decref(jy);
}

/* Plan @b with both implementations, check the FAST plan, and compare the two. */
static void plan_check_both(const struct plan_batch *b, const char *what)
{
	struct plan fast, simple;
	char msg[512];
	enum plan_check_result r;

	ck_assert_msg(plan_compute(b, PLAN_IMPL_FAST, &fast) == 0, "%s: FAST failed", what);
	r = plan_check(b, &fast, msg, sizeof(msg));
	ck_assert_msg(r == PLAN_CHECK_OK, "%s: %s", what, msg);
	ck_assert_int_eq(plan_check_delay_violations(b, &fast), 0);
	ck_assert_msg(plan_compute(b, PLAN_IMPL_SIMPLE, &simple) == 0, "%s: SIMPLE failed", what);
	first_difference(b, &fast, &simple, msg, sizeof(msg));
	ck_assert_msg(msg[0] == '\0', "%s: FAST and SIMPLE plans differ: %s", what, msg);
	ck_assert_msg(plan_equal(&fast, &simple), "%s: FAST and SIMPLE plans differ", what);
	plan_free(&fast);
	plan_free(&simple);
}

#define N_VARIANTS 5 /* enum gen_variant */

/* Seed i: variant i % 5, 1..12 updates, replica on two seeds of three, 0..3 capacity steps. */
START_TEST(test_random_batches)
{
	struct gen_params gp;
	struct plan_batch b;
	char what[64];

	gen_params_default(&gp, 1 + _i % 12, (uint64_t)_i);
	gen_params_variant(&gp, (enum gen_variant)(_i % N_VARIANTS));
	gp.with_replica = _i % 3 != 0;
	gp.n_replica_only = _i % 5 == 0 ? 2 : 0;
	gp.n_capacity_changes = _i % 4;
	gp.n_aggregators = _i % 3;
	ck_assert_int_eq(gen_batch(&gp, &b), 0);
	snprintf(what, sizeof(what), "seed %d (variant %d, %d updates)", _i, _i % N_VARIANTS,
		 gp.n_updates);
	plan_check_both(&b, what);
	planio_batch_free(&b);
}
END_TEST

/* Every shipped example (conf/plan-*.json, or $MLF_CONF_DIR) plans to a plan that checks. */
START_TEST(test_conf_examples)
{
	const char *dir = getenv("MLF_CONF_DIR") ? getenv("MLF_CONF_DIR") : "conf";
	char pattern[512], err[PLANIO_ERR_MAX];
	glob_t g;

	snprintf(pattern, sizeof(pattern), "%s/plan-*.json", dir);
	ck_assert_int_eq(glob(pattern, 0, NULL, &g), 0);
	ck_assert_uint_ge(g.gl_pathc, 9);
	for (size_t i = 0; i < g.gl_pathc; i++) {
		struct plan_batch b;

		ck_assert_msg(planio_read_file(g.gl_pathv[i], &b, err, sizeof(err)) == 0, "%s",
			      err);
		plan_check_both(&b, g.gl_pathv[i]);
		planio_batch_free(&b);
	}
	globfree(&g);
}
END_TEST

/* A medium batch of each variant, closer to the benchmark's sizes. */
START_TEST(test_medium_batches)
{
	struct gen_params gp;
	struct plan_batch b;
	char what[64];

	gen_params_default(&gp, 60, 1000 + (uint64_t)_i);
	gen_params_variant(&gp, (enum gen_variant)_i);
	gp.n_replica_only = 3;
	ck_assert_int_eq(gen_batch(&gp, &b), 0);
	snprintf(what, sizeof(what), "medium variant %d", _i);
	plan_check_both(&b, what);
	planio_batch_free(&b);
}
END_TEST

/*
 * The checker must also reject real plans once they are broken: each seed's FAST plan is
 * corrupted in five ways (order swapped, bytes changed, a commit before its bytes arrive, an
 * update lost, a pull unanswered) and every corruption must be reported as the right invariant.
 */
START_TEST(test_checker_rejects_mutated_plans)
{
	struct gen_params gp;
	struct plan_batch b;
	struct plan p;
	char msg[512];
	int tmp;
	double at;
	uint64_t bytes;

	gen_params_default(&gp, 4 + _i % 9, 5000 + (uint64_t)_i);
	gen_params_variant(&gp, (enum gen_variant)(_i % N_VARIANTS));
	ck_assert_int_eq(gen_batch(&gp, &b), 0);
	ck_assert_int_eq(plan_compute(&b, PLAN_IMPL_FAST, &p), 0);
	ck_assert_int_eq(plan_check(&b, &p, msg, sizeof(msg)), PLAN_CHECK_OK);

	if (p.n_order >= 2) {
		tmp = p.order[0], p.order[0] = p.order[p.n_order - 1], p.order[p.n_order - 1] = tmp;
		ck_assert_int_ne(plan_check(&b, &p, msg, sizeof(msg)), PLAN_CHECK_OK);
		tmp = p.order[0], p.order[0] = p.order[p.n_order - 1], p.order[p.n_order - 1] = tmp;
	}
	bytes = p.transfers[0].bytes;
	p.transfers[0].bytes = bytes * 2;
	ck_assert_int_eq(plan_check(&b, &p, msg, sizeof(msg)), PLAN_CHECK_BYTES);
	p.transfers[0].bytes = bytes;
	if (p.n_commits > 0) {
		at = p.commits[0].at_s;
		p.commits[0].at_s = b.now_s - 1.0;
		ck_assert_int_eq(plan_check(&b, &p, msg, sizeof(msg)), PLAN_CHECK_CAUSALITY);
		p.commits[0].at_s = at;
	}
	if (p.n_order > 0) {
		p.n_order--;
		ck_assert_int_eq(plan_check(&b, &p, msg, sizeof(msg)), PLAN_CHECK_STRUCTURE);
		p.n_order++;
	}
	if (b.n_pulls > 0) {
		tmp = b.pulls[0].worker;
		b.pulls[0].worker = b.servers[0]; /* a host no model copy is sent to */
		ck_assert_int_eq(plan_check(&b, &p, msg, sizeof(msg)), PLAN_CHECK_CAUSALITY);
		b.pulls[0].worker = tmp;
		/* a pull said to be unreachable while every link stays up */
		int q = 0;
		p.unanswered = &q;
		p.n_unanswered = 1;
		ck_assert_int_ne(plan_check(&b, &p, msg, sizeof(msg)), PLAN_CHECK_OK);
		p.unanswered = NULL;
		p.n_unanswered = 0;
	}
	if (b.n_servers > 1 && b.n_pulls > 0) {
		/* a shard's pull answered with another shard's copy */
		tmp = b.pulls[0].server;
		b.pulls[0].server = (tmp + 1) % b.n_servers;
		ck_assert_int_ne(plan_check(&b, &p, msg, sizeof(msg)), PLAN_CHECK_OK);
		b.pulls[0].server = tmp;
	}
	ck_assert_int_eq(plan_check(&b, &p, msg, sizeof(msg)), PLAN_CHECK_OK);
	plan_free(&p);
	planio_batch_free(&b);
}
END_TEST

/*
 * Epoch-sized times (a scheduler that stamps batches with CLOCK_REALTIME, ~1.8e9 s): the
 * batch of seed i, every time moved by 1.7e9 s, plans relative to a whole-second origin_s
 * and passes every check, byte-exact integrals included; FAST == SIMPLE.
 */
START_TEST(test_epoch_times)
{
	const double epoch = 1.7e9;
	struct gen_params gp;
	struct plan_batch b;
	struct plan p;
	char what[80];

	gen_params_default(&gp, 1 + _i % 12, 7000 + (uint64_t)_i);
	gen_params_variant(&gp, (enum gen_variant)(_i % N_VARIANTS));
	gp.with_replica = _i % 2;
	gp.n_capacity_changes = _i % 4;
	ck_assert_int_eq(gen_batch(&gp, &b), 0);
	b.now_s += epoch + 0.123456789;
	for (int i = 0; i < b.n_updates; i++)
		b.updates[i].ready_s += epoch + 0.123456789;
	for (int i = 0; i < b.n_pulls; i++)
		b.pulls[i].ready_s += epoch + 0.123456789;
	for (int i = 0; i < b.n_changes; i++)
		b.changes[i].at_s += epoch + 0.123456789;
	snprintf(what, sizeof(what), "epoch seed %d (variant %d)", _i, _i % N_VARIANTS);
	plan_check_both(&b, what);
	ck_assert_int_eq(plan_compute(&b, PLAN_IMPL_FAST, &p), 0);
	ck_assert_double_eq(p.origin_s, epoch);
	plan_free(&p);
	planio_batch_free(&b);
}
END_TEST

/*
 * Why origin_s: one 1000-byte update at 10 Gbit/s (0.8 us) at now_s = 1.7e9 + 0.1 s. Planned
 * relative to origin_s its integral is exact; moved to the batch's time base (what the
 * planner returned before origin_s), the ends round to 2.4e-7 s and the integral misses the
 * bytes by far more than the checker's tolerance.
 */
START_TEST(test_epoch_small_transfer)
{
	const char *doc = "{\"now_s\": 1700000000.1, \"hosts\": [{\"name\": \"w0\", \"up_gbps\": 10, "
		"\"down_gbps\": 10}, {\"name\": \"ps\", \"up_gbps\": 10, \"down_gbps\": 10}], "
		"\"servers\": [\"ps\"], \"tau_max\": 5, \"v_init\": 10, \"updates\": [{\"id\": "
		"\"u0\", \"worker\": \"w0\", \"bytes\": 1000, \"version\": 9, \"norm\": 1, "
		"\"ready_s\": 1700000000.1}]}";
	char err[PLANIO_ERR_MAX], msg[512];
	struct plan_batch b;
	struct plan p;

	ck_assert_int_eq(planio_read_string(doc, &b, err, sizeof(err)), 0);
	ck_assert_int_eq(plan_compute(&b, PLAN_IMPL_FAST, &p), 0);
	ck_assert_double_eq(p.origin_s, 1700000000.0);
	ck_assert_int_eq(p.n_transfers, 1);
	ck_assert_msg(plan_check(&b, &p, msg, sizeof(msg)) == PLAN_CHECK_OK, "%s", msg);
	plan_to_batch_time(&p);
	ck_assert_double_eq(p.origin_s, 0.0);
	ck_assert_int_eq(plan_check(&b, &p, msg, sizeof(msg)), PLAN_CHECK_BYTES);
	plan_free(&p);
	planio_batch_free(&b);
}
END_TEST

/*
 * A pull whose worker's downlink is at 0 Gbit/s for good (conf/plan-pulls-down.json) is listed
 * in `unanswered`; every other pull of the batch is still answered, and the plan checks. Before,
 * the one unreachable pull made the whole distribution infeasible: no pull got a copy.
 */
START_TEST(test_unreachable_pull_unanswered)
{
	const char *dir = getenv("MLF_CONF_DIR") ? getenv("MLF_CONF_DIR") : "conf";
	char path[512], err[PLANIO_ERR_MAX], msg[512];
	struct plan_batch b;
	struct plan p;

	snprintf(path, sizeof(path), "%s/plan-pulls-down.json", dir);
	ck_assert_msg(planio_read_file(path, &b, err, sizeof(err)) == 0, "%s", err);
	plan_check_both(&b, path);
	ck_assert_int_eq(plan_compute(&b, PLAN_IMPL_FAST, &p), 0);
	ck_assert_int_eq(p.n_unanswered, 1);
	ck_assert_str_eq(b.pulls[p.unanswered[0]].id, "p1");
	for (int q = 0; q < b.n_pulls; q++) {
		int n = 0;

		for (int i = 0; i < p.n_transfers; i++)
			n += p.transfers[i].kind == PLAN_CARRY_MODEL && p.transfers[i].carries == q &&
			     p.transfers[i].dst == b.pulls[q].worker;
		ck_assert_int_eq(n, strcmp(b.pulls[q].id, "p1") ? 1 : 0);
	}
	/* not listing it is a missing answer */
	p.n_unanswered = 0;
	ck_assert_int_eq(plan_check(&b, &p, msg, sizeof(msg)), PLAN_CHECK_CAUSALITY);
	plan_free(&p);
	planio_batch_free(&b);
}
END_TEST

/*
 * Carried copies already in flight (random commit times, some before now_s, some after the
 * batch's last server commit), momentum 0 or 0.9, div_max from 0 to loose: every plan checks
 * (the replica's holdings at T_last re-derived from the commit times) and FAST == SIMPLE.
 */
START_TEST(test_random_inflight)
{
	struct gen_params gp;
	struct plan_batch b;
	char what[64];
	uint64_t r = 0x9e3779b97f4a7c15ull * (uint64_t)(_i + 1);

	gen_params_default(&gp, 2 + _i % 10, 9000 + (uint64_t)_i);
	gen_params_variant(&gp, (enum gen_variant)(_i % 2 ? GEN_ASYNC : GEN_SHARDED));
	gp.with_replica = 1;
	gp.n_replica_only = 1 + _i % 4;
	gp.div_max = _i % 5 == 0 ? 0.0 : _i % 5 == 1 ? -1.0 : 0.3 * (_i % 7);
	ck_assert_int_eq(gen_batch(&gp, &b), 0);
	b.momentum = _i % 3 == 0 ? 0.9 : 0.0;
	for (int i = 0, k = 0; i < b.n_updates; i++) {
		if (!b.updates[i].replica_only || k++ >= 1 + _i % 3)
			continue;
		r = r * 6364136223846793005ull + 1442695040888963407ull;
		b.updates[i].inflight = 1;
		b.updates[i].inflight_s = (double)(r >> 40) / (double)(1ull << 24) * 0.4 - 0.05;
	}
	snprintf(what, sizeof(what), "inflight seed %d", _i);
	plan_check_both(&b, what);
	planio_batch_free(&b);
}
END_TEST

/*
 * Lazy replication over a run of batches (§3.3, §5.3): 4 workers, 2 of them aggregators, a
 * server and a replica at 10 Gbit/s; every 0.1 s two 1 MB updates of norm 1 (momentum 0, as
 * with momentum at the workers). Each batch carries what the last left (plan_carry_next: the
 * punted copies and the ones in flight with their commit times, moved 0.1 s earlier as the
 * next batch starts 0.1 s later). Every plan checks (the checker re-derives the divergence
 * at T_last from the norms); bytes to the replica over 60 batches: at Div_max 16 (16 update
 * norms) at most a third of those at Div_max 0.
 */
#define LAZY_BATCHES 60

static double lazy_replica_bytes(double div_max, int *max_inflight)
{
	struct plan_batch b;
	struct plan_carry carry = { 0 };
	int hosts_w = 4, aggs[2] = { 0, 1 }, servers[1] = { 4 }, next_id = 0;
	char carried_id[64][PLAN_NAME_MAX];
	int n_carried = 0;
	double carried_s[64], total = 0.0;

	*max_inflight = 0;
	for (int k = 0; k < LAZY_BATCHES; k++) {
		struct plan_host hosts[6];
		struct plan_update up[66];
		struct plan p;
		char msg[512];
		int n = 0;

		memset(&b, 0, sizeof(b));
		memset(up, 0, sizeof(up));
		for (int h = 0; h < 6; h++) {
			snprintf(hosts[h].name, PLAN_NAME_MAX, h < hosts_w ? "w%d" : h == 4 ? "ps" : "rep", h);
			hosts[h].up_gbps = hosts[h].down_gbps = 10.0;
		}
		b.mode = PLAN_MLFABRIC_A;
		b.now_s = 0.0;
		b.hosts = hosts;
		b.n_hosts = 6;
		b.servers = servers;
		b.n_servers = 1;
		b.replica = 5;
		b.aggregators = aggs;
		b.n_aggregators = 2;
		b.replica_aggregators = aggs;
		b.n_replica_aggregators = 2;
		b.tau_max = 50;
		b.v_init = 1000 + 2 * k;
		b.momentum = 0.0;
		b.div_max = div_max;
		b.history_norm = carry.history_norm;
		b.replica_lag = n_carried;
		for (int i = 0; i < n_carried; i++, n++) {
			snprintf(up[n].id, PLAN_NAME_MAX, "%s", carried_id[i]);
			up[n].worker = 2 + n % 2;
			up[n].bytes = 1000000;
			up[n].version = b.v_init - 1;
			up[n].norm = 1.0;
			up[n].replica_only = 1;
			if (carried_s[i] >= 0) {
				up[n].inflight = 1;
				up[n].inflight_s = carried_s[i] - 0.1;
			}
		}
		for (int i = 0; i < 2; i++, n++) {
			snprintf(up[n].id, PLAN_NAME_MAX, "u%d", next_id++);
			up[n].worker = 2 + i;
			up[n].bytes = 1000000;
			up[n].version = b.v_init - 1;
			up[n].norm = 1.0;
		}
		b.updates = up;
		b.n_updates = n;
		ck_assert_msg(plan_compute(&b, PLAN_IMPL_FAST, &p) == 0, "batch %d: %s", k, p.error);
		ck_assert_msg(plan_check(&b, &p, msg, sizeof(msg)) == PLAN_CHECK_OK, "div_max %g batch %d: %s",
			      div_max, k, msg);
		for (int t = 0; t < p.n_transfers; t++)
			if (p.transfers[t].dst == b.replica)
				total += (double)p.transfers[t].bytes;
		if (p.n_inflight > 0) {
			/* the checker catches a plan that forgets the copies under way, or
			 * claims less divergence than the norms give */
			int keep = p.n_inflight;
			double d = p.divergence_bound;

			p.n_inflight = 0;
			ck_assert_int_eq(plan_check(&b, &p, msg, sizeof(msg)), PLAN_CHECK_REPLICA);
			p.n_inflight = keep;
			p.divergence_bound = d / 2;
			ck_assert_int_eq(plan_check(&b, &p, msg, sizeof(msg)),
					 d > 0 ? PLAN_CHECK_DIVERGENCE : PLAN_CHECK_OK);
			p.divergence_bound = d;
		}
		if (p.n_inflight > *max_inflight)
			*max_inflight = p.n_inflight;
		plan_carry_free(&carry);
		ck_assert_int_eq(plan_carry_next(&b, &p, &carry), 0);
		ck_assert_int_le(carry.n_carried, 64);
		for (int i = 0; i < carry.n_carried; i++) {
			snprintf(carried_id[i], PLAN_NAME_MAX, "%s", up[carry.carried[i]].id);
			carried_s[i] = carry.carried_s[i];
		}
		n_carried = carry.n_carried;
		plan_free(&p);
	}
	plan_carry_free(&carry);
	return total;
}

START_TEST(test_lazy_replication_fewer_bytes)
{
	int in0, in16;
	double b0 = lazy_replica_bytes(0.0, &in0), b16 = lazy_replica_bytes(16.0, &in16);

	if (getenv("MLF_TEST_VERBOSE"))
		fprintf(stderr, "lazy replication: %.0f bytes to the replica at Div_max 0, %.0f at 16 "
			"(%.2fx fewer); at most %d copies in flight\n", b0, b16, b0 / b16, in16);
	ck_assert_msg(b0 > 0 && b16 * 3 <= b0, "bytes to the replica: %.0f at Div_max 0, %.0f at 16",
		      b0, b16);
	ck_assert_int_eq(in0, 0);   /* Div_max 0: the replica holds everything by T_last */
	ck_assert_int_gt(in16, 0);  /* catch-ups commit after T_last */
}
END_TEST

static Suite *props_suite(void)
{
	Suite *s = suite_create("plan_props");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_random_batches, 0, N_RANDOM_BATCHES);
	tcase_add_test(tc, test_conf_examples);
	tcase_add_loop_test(tc, test_medium_batches, 0, 4);
	tcase_add_loop_test(tc, test_checker_rejects_mutated_plans, 0, 40);
	tcase_add_loop_test(tc, test_epoch_times, 0, 40);
	tcase_add_test(tc, test_epoch_small_transfer);
	tcase_add_test(tc, test_unreachable_pull_unanswered);
	tcase_add_test(tc, test_lazy_replication_fewer_bytes);
	tcase_add_loop_test(tc, test_random_inflight, 0, 60);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run(props_suite()) ? EXIT_FAILURE : EXIT_SUCCESS;
}
