/* test_plan_props.c - property tests: random batches and conf examples planned and checked, FAST == SIMPLE. */
#include <check.h>
#include <glob.h>
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
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run(props_suite()) ? EXIT_FAILURE : EXIT_SUCCESS;
}
