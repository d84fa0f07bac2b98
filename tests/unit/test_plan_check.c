/* test_plan_check.c - Check tests: the checker catches corrupted plans; generator; FIFO baseline. */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ck_run.h"
#include "fifo.h"
#include "gen_batch.h"
#include "plan_check.h"
#include "planio.h"

/*
 * A hand-made valid plan (every number below can be verified on paper). 10 Gbit/s links, so
 * 125 MB take 0.1 s. u0 (w0) goes direct to ps over [0, 0.1]; u1 (w1) and u2 (w3) go to the
 * aggregator w2 one after the other ([0, 0.1], [0.1, 0.2]: w2.down is shared), and aggregate a0
 * goes w2 -> ps over [0.2, 0.3]. The replica gets u0 over [0.1, 0.2]; u1 and u2 are punted.
 */
static const char *fixture_batch =
	"{\"hosts\": ["
	"  {\"name\": \"w0\", \"up_gbps\": 10, \"down_gbps\": 10},"
	"  {\"name\": \"w1\", \"up_gbps\": 10, \"down_gbps\": 10},"
	"  {\"name\": \"w2\", \"up_gbps\": 10, \"down_gbps\": 10},"
	"  {\"name\": \"w3\", \"up_gbps\": 10, \"down_gbps\": 10},"
	"  {\"name\": \"ps\", \"up_gbps\": 10, \"down_gbps\": 10},"
	"  {\"name\": \"rep\", \"up_gbps\": 10, \"down_gbps\": 10}],"
	" \"servers\": [\"ps\"], \"replica\": \"rep\", \"aggregators\": [\"w2\"],"
	" \"tau_max\": 5, \"v_init\": 1000, \"div_max\": 10,"
	" \"updates\": ["
	"  {\"id\": \"u0\", \"worker\": \"w0\", \"bytes\": 125000000, \"version\": 1000},"
	"  {\"id\": \"u1\", \"worker\": \"w1\", \"bytes\": 125000000, \"version\": 1000},"
	"  {\"id\": \"u2\", \"worker\": \"w3\", \"bytes\": 125000000, \"version\": 1000}]}";

struct fixture {
	struct plan_batch b;
	struct plan p;
	int order[3], inputs[2], punted[2];
	struct plan_rate_step rate[5][1], lead[2];
	struct plan_aggregate ag;
	struct plan_transfer tr[5];
	struct plan_commit cm[2], rcm[1];
};

static void step(struct fixture *f, int i, enum plan_carry_kind kind, int carries, int src,
		 int dst, enum plan_purpose purpose, double start)
{
	f->rate[i][0] = (struct plan_rate_step){ start, 10.0 };
	f->tr[i] = (struct plan_transfer){ .kind = kind, .carries = carries, .shard = -1,
		.src = src, .dst = dst, .bytes = 125000000, .purpose = purpose,
		.start_s = start, .end_s = start + 0.1, .n_rate = 1, .rate = f->rate[i] };
}

static void fixture_make(struct fixture *f)
{
	char err[PLANIO_ERR_MAX];

	memset(f, 0, sizeof(*f));
	ck_assert_msg(planio_read_string(fixture_batch, &f->b, err, sizeof(err)) == 0, "%s", err);
	f->order[0] = 0, f->order[1] = 1, f->order[2] = 2;
	f->inputs[0] = 1, f->inputs[1] = 2;
	f->punted[0] = 1, f->punted[1] = 2;
	f->ag = (struct plan_aggregate){ .host = 2, .target = 4, .purpose = PLAN_PURPOSE_SERVER,
					 .n_inputs = 2, .inputs = f->inputs };
	step(f, 0, PLAN_CARRY_UPDATE, 0, 0, 4, PLAN_PURPOSE_SERVER, 0.0);
	step(f, 1, PLAN_CARRY_UPDATE, 1, 1, 2, PLAN_PURPOSE_SERVER, 0.0);
	step(f, 2, PLAN_CARRY_UPDATE, 2, 3, 2, PLAN_PURPOSE_SERVER, 0.1);
	step(f, 3, PLAN_CARRY_AGGREGATE, 0, 2, 4, PLAN_PURPOSE_SERVER, 0.2);
	step(f, 4, PLAN_CARRY_UPDATE, 0, 0, 5, PLAN_PURPOSE_REPLICA, 0.1);
	f->cm[0] = (struct plan_commit){ 4, PLAN_CARRY_UPDATE, 0, 0.1, 1001 };
	f->cm[1] = (struct plan_commit){ 4, PLAN_CARRY_AGGREGATE, 0, 0.3, 1003 };
	f->rcm[0] = (struct plan_commit){ 5, PLAN_CARRY_UPDATE, 0, 0.2, 1001 };
	f->p = (struct plan){ .n_order = 3, .order = f->order, .n_aggregates = 1,
		.aggregates = &f->ag, .n_transfers = 5, .transfers = f->tr, .n_commits = 2,
		.commits = f->cm, .n_replica_commits = 1, .replica_commits = f->rcm,
		.n_punted = 2, .punted = f->punted, .divergence_bound = 2.0 };
}

static enum plan_check_result check(struct fixture *f, char *msg)
{
	return plan_check(&f->b, &f->p, msg, 512);
}

START_TEST(test_valid_plan_passes)
{
	struct fixture f;
	char msg[512];

	fixture_make(&f);
	ck_assert_msg(check(&f, msg) == PLAN_CHECK_OK, "%s", msg);
	ck_assert_str_eq(msg, "");
	ck_assert_int_eq(plan_check_delay_violations(&f.b, &f.p), 0);
	planio_batch_free(&f.b);
}
END_TEST

/* Move transfer @i to start at @start keeping its length and rate. */
static void shift(struct fixture *f, int i, double start)
{
	f->tr[i].start_s = f->rate[i][0].from_s = start;
	f->tr[i].end_s = start + 0.1;
}

/* One corruption per loop index, with the invariant it must be reported as. */
static enum plan_check_result corrupt(struct fixture *f, int which, const char **what)
{
	struct plan_capacity_change *ch;

	switch (which) {
	case 0:
		*what = "u2 overlaps u1 on w2.down";
		shift(f, 2, 0.05);
		return PLAN_CHECK_CAPACITY;
	case 1:
		*what = "ps.down drops to 5 Gbit/s while u0 is sent at 10";
		ch = calloc(1, sizeof(*ch));
		*ch = (struct plan_capacity_change){ .host = 4, .dir = PLAN_DOWN, .at_s = 0.05,
						     .gbps = 5.0 };
		f->b.changes = ch;
		f->b.n_changes = 1;
		return PLAN_CHECK_CAPACITY;
	case 2:
		*what = "order lists u1 first";
		f->order[0] = 1, f->order[1] = 0;
		return PLAN_CHECK_ORDER;
	case 3:
		*what = "aggregate leaves before u2 arrived";
		shift(f, 3, 0.15);
		return PLAN_CHECK_CAUSALITY;
	case 4:
		*what = "u0 sent before ready_s";
		f->b.updates[0].ready_s = 0.05;
		return PLAN_CHECK_CAUSALITY;
	case 5:
		*what = "tau_max 0: the aggregate is applied with delay 1";
		f->b.tau_max = 0;
		return PLAN_CHECK_DELAY;
	case 6:
		*what = "t0 claims more bytes than its rate integral";
		f->tr[0].bytes = 200000000;
		return PLAN_CHECK_BYTES;
	case 7:
		*what = "u2 in neither order nor dropped";
		f->p.n_order = 2;
		return PLAN_CHECK_STRUCTURE;
	case 8:
		*what = "divergence bound above div_max";
		f->p.divergence_bound = 10.5;
		return PLAN_CHECK_DIVERGENCE;
	case 9:
		*what = "replica version skips one";
		f->rcm[0].version = 1002;
		return PLAN_CHECK_REPLICA;
	case 10:
		*what = "u2 neither replicated nor punted";
		f->p.n_punted = 1;
		return PLAN_CHECK_REPLICA;
	case 11:
		*what = "u0 committed before it arrived";
		f->cm[0].at_s = 0.05;
		return PLAN_CHECK_CAUSALITY;
	case 12:
		*what = "server commit version wrong";
		f->cm[1].version = 1002;
		return PLAN_CHECK_ORDER;
	case 13:
		*what = "a transfer before now_s";
		f->b.now_s = 0.01;
		return PLAN_CHECK_CAUSALITY;
	case 14:
		*what = "rate step goes negative";
		f->rate[0][0].gbps = -10;
		return PLAN_CHECK_STRUCTURE;
	case 15:
		*what = "sync mode with a dropped update";
		f->b.mode = PLAN_MLFABRIC_S;
		f->p.dropped = &f->order[2];
		f->p.n_dropped = 1;
		f->p.n_order = 2;
		return PLAN_CHECK_STRUCTURE;
	case 16:
		*what = "replica copy t4 starts with a zero-rate step (waits from 0.0 to 0.1)";
		f->lead[0] = (struct plan_rate_step){ 0.0, 0.0 };
		f->lead[1] = (struct plan_rate_step){ 0.1, 10.0 };
		f->tr[4].rate = f->lead;
		f->tr[4].n_rate = 2;
		f->tr[4].start_s = 0.0;
		return PLAN_CHECK_STRUCTURE;
	default:
		*what = "u0 sent from the wrong host";
		f->tr[0].src = 3;
		return PLAN_CHECK_CAUSALITY;
	}
}

START_TEST(test_checker_catches_corruption)
{
	struct fixture f;
	const char *what;
	enum plan_check_result want, got;
	char msg[512];

	fixture_make(&f);
	want = corrupt(&f, _i, &what);
	got = check(&f, msg);
	ck_assert_msg(got == want, "%s: got %s (%s), want %s", what, plan_check_name(got), msg,
		      plan_check_name(want));
	ck_assert_msg(strncmp(msg, plan_check_name(want), strlen(plan_check_name(want))) == 0,
		      "message must name the invariant: %s", msg);
	planio_batch_free(&f.b);
}
END_TEST

START_TEST(test_delay_violations_counted)
{
	struct fixture f;

	fixture_make(&f);
	f.b.tau_max = 0;
	ck_assert_int_eq(plan_check_delay_violations(&f.b, &f.p), 2); /* both aggregate inputs */
	f.b.mode = PLAN_MLFABRIC_S;
	ck_assert_int_eq(plan_check_delay_violations(&f.b, &f.p), 0);
	planio_batch_free(&f.b);
}
END_TEST

/* ---- generator ---- */

static char *batch_text(const struct plan_batch *b)
{
	json_t *doc = planio_batch_to_json(b);
	char *s = json_dumps(doc, JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));

	json_decref(doc);
	return s;
}

START_TEST(test_generator_valid_and_seeded)
{
	static const enum gen_variant variants[] = { GEN_ASYNC, GEN_SYNC, GEN_SHARDED, GEN_PULLS };

	for (int v = 0; v < 4; v++) {
		for (int n = 1; n <= 40; n += 13) {
			struct gen_params gp;
			struct plan_batch a, b, c;
			char err[PLANIO_ERR_MAX], *ta, *tb, *tc;

			gen_params_default(&gp, n, 7);
			gen_params_variant(&gp, variants[v]);
			gp.n_replica_only = 2;
			ck_assert_int_eq(gen_batch(&gp, &a), 0);
			ck_assert_int_eq(gen_batch(&gp, &b), 0);
			gp.seed = 8;
			ck_assert_int_eq(gen_batch(&gp, &c), 0);
			ta = batch_text(&a), tb = batch_text(&b), tc = batch_text(&c);
			ck_assert_str_eq(ta, tb);
			ck_assert_str_ne(ta, tc);
			planio_batch_free(&b);
			/* What the generator makes passes the reader's validation unchanged. */
			ck_assert_msg(planio_read_string(ta, &b, err, sizeof(err)) == 0,
				      "variant %d n %d: %s", v, n, err);
			free(tb);
			tb = batch_text(&b);
			ck_assert_str_eq(ta, tb);
			ck_assert_int_eq(b.n_updates, n + 2);
			for (int i = 0; i < n; i++) {
				int64_t dl = a.updates[i].version + a.tau_max - a.v_init;

				if (v == GEN_SYNC)
					ck_assert_int_eq(a.updates[i].version, a.v_init);
				else
					ck_assert(dl >= 1 && dl <= 2 * n);
			}
			ck_assert_int_eq(a.n_servers, v == GEN_SHARDED ? 3 : 1);
			ck_assert_int_eq(a.n_pulls > 0, v == GEN_PULLS);
			free(ta), free(tb), free(tc);
			planio_batch_free(&a), planio_batch_free(&b), planio_batch_free(&c);
		}
	}
}
END_TEST

START_TEST(test_generator_rejects_bad_params)
{
	struct gen_params gp;
	struct plan_batch b;

	gen_params_default(&gp, 0, 1);
	ck_assert_int_eq(gen_batch(&gp, &b), -EINVAL);
	gen_params_default(&gp, 10, 1);
	gp.min_gbps = 20;
	ck_assert_int_eq(gen_batch(&gp, &b), -EINVAL);
	gen_params_default(&gp, 10, 1);
	gp.n_servers = 0;
	ck_assert_int_eq(gen_batch(&gp, &b), -EINVAL);
	gp.n_servers = GEN_MAX_SERVERS + 1;
	ck_assert_int_eq(gen_batch(&gp, &b), -EINVAL);
}
END_TEST

/* The paper's §7.4 shape: whole Gbit/s, 10 Gbit/s servers, tau_max |U|, some updates late. */
START_TEST(test_generator_paper_shape)
{
	struct gen_params gp;
	struct plan_batch b;
	int late = 0;

	gen_params_paper(&gp, 80, 3);
	gp.n_servers = 2;
	gp.n_pulls = 5;
	gp.n_distributors = 3;
	ck_assert_int_eq(gen_batch(&gp, &b), 0);
	ck_assert_int_eq(b.tau_max, 80);
	ck_assert_int_eq(b.n_servers, 2);
	/* sharded: one pull entry per shard, each that shard's slice, answered directly */
	ck_assert_int_eq(b.n_pulls, 10);
	ck_assert_int_eq(b.n_distributors, 0);
	for (int q = 0; q < b.n_pulls; q++) {
		ck_assert_int_eq(b.pulls[q].server, q % 2);
		ck_assert_int_eq(b.pulls[q].worker, b.pulls[q - q % 2].worker);
		ck_assert_uint_eq(b.pulls[q].bytes, b.model_bytes / 2 + 1);
	}
	ck_assert_int_eq(b.n_changes, 0);
	ck_assert_double_eq(b.div_max, 2.0);
	for (int h = 0; h < b.n_hosts; h++) {
		const struct plan_host *ho = &b.hosts[h];

		ck_assert_double_eq(ho->up_gbps, round(ho->up_gbps));
		ck_assert(ho->up_gbps >= 1 && ho->up_gbps <= 10);
		ck_assert(ho->down_gbps >= 1 && ho->down_gbps <= 10);
		if (h >= 40)
			ck_assert_double_eq(ho->down_gbps, 10.0);
	}
	for (int i = 0; i < b.n_updates; i++) {
		ck_assert_int_eq(b.updates[i].n_shards, 2);
		ck_assert(b.updates[i].bytes <= 64000000 + 2);
		ck_assert(b.updates[i].ready_s <= 0.05);
		late += b.updates[i].ready_s > 0;
	}
	/* A quarter of 80 are late: far from none and from all. */
	ck_assert_int_ge(late, 8);
	ck_assert_int_le(late, 35);
	planio_batch_free(&b);
}
END_TEST

/* ---- FIFO fair-share baseline ---- */

static void two_workers(struct plan_batch *b, double up0, double up1)
{
	char doc[1024], err[PLANIO_ERR_MAX];

	snprintf(doc, sizeof(doc),
		 "{\"hosts\": [{\"name\": \"w0\", \"up_gbps\": %g, \"down_gbps\": 10},"
		 " {\"name\": \"w1\", \"up_gbps\": %g, \"down_gbps\": 10},"
		 " {\"name\": \"ps\", \"up_gbps\": 10, \"down_gbps\": 10}],"
		 " \"servers\": [\"ps\"], \"tau_max\": 0, \"v_init\": 10,"
		 " \"updates\": [{\"id\": \"old\", \"worker\": \"w0\", \"bytes\": 125000000,"
		 "   \"version\": 10},"
		 "  {\"id\": \"new\", \"worker\": \"w1\", \"bytes\": 125000000, \"version\": 10}]}",
		 up0, up1);
	ck_assert_msg(planio_read_string(doc, b, err, sizeof(err)) == 0, "%s", err);
}

START_TEST(test_fifo_fair_share)
{
	struct plan_batch b;
	struct fifo_result r;

	/* Equal uplinks: both share ps.down at 5 Gbit/s and end together at 0.2 s. */
	two_workers(&b, 10, 10);
	ck_assert_int_eq(fifo_simulate(&b, &r), 0);
	ck_assert_double_eq_tol(r.commit_s[0], 0.2, 1e-9);
	ck_assert_double_eq_tol(r.commit_s[1], 0.2, 1e-9);
	ck_assert_double_eq_tol(r.mean_commit_s, 0.2, 1e-9);
	ck_assert_int_eq(r.delay_violations, 1); /* second commit: delay 1 > tau_max 0 */
	fifo_result_free(&r);
	planio_batch_free(&b);

	/* Max-min: w0 is capped by its 2 Gbit/s uplink, w1 takes the remaining 8 Gbit/s until
	 * it ends at 0.125 s; w0 then has 1e9 - 0.25e9 bits left at 2 Gbit/s: ends at 0.5 s. */
	two_workers(&b, 2, 10);
	ck_assert_int_eq(fifo_simulate(&b, &r), 0);
	ck_assert_double_eq_tol(r.commit_s[1], 0.125, 1e-9);
	ck_assert_double_eq_tol(r.commit_s[0], 0.5, 1e-9);
	ck_assert_int_eq(r.order[0], 1);
	ck_assert_int_eq(r.order[1], 0);
	fifo_result_free(&r);
	planio_batch_free(&b);
}
END_TEST

START_TEST(test_fifo_capacity_step_and_ready)
{
	struct plan_batch b;
	struct fifo_result r;
	struct plan_capacity_change ch = { .host = 2, .dir = PLAN_DOWN, .at_s = 0.05, .gbps = 2.5 };

	/* One update alone (w1's starts late): 10 Gbit/s for 0.05 s = 62.5 MB, the remaining
	 * 62.5 MB at 2.5 Gbit/s take 0.2 s: ends at 0.25 s. */
	two_workers(&b, 10, 10);
	b.updates[1].ready_s = 10.0;
	b.changes = malloc(sizeof(ch));
	*b.changes = ch;
	b.n_changes = 1;
	ck_assert_int_eq(fifo_simulate(&b, &r), 0);
	ck_assert_double_eq_tol(r.commit_s[0], 0.25, 1e-9);
	ck_assert_double_eq_tol(r.commit_s[1], 10.4, 1e-9); /* 1e9 bits at 2.5 Gbit/s */
	fifo_result_free(&r);
	planio_batch_free(&b);
}
END_TEST

/*
 * Checker and planner agree on mode mlfabric-s's one drop (docs/plan-format.md "What must always
 * hold"). w1's uplink dies for good at 0.01 s, before its 125 MB can leave: the planner drops it
 * and the checker accepts that; the same plan checked against the batch without the link failure
 * (the update deliverable) is refused, so a checker that refused every such drop fails here.
 */
START_TEST(test_sync_drop_only_undeliverable)
{
	const char *doc =
		"{\"mode\": \"mlfabric-s\", \"hosts\": [{\"name\": \"w0\", \"up_gbps\": 10, \"down_gbps\": 10},"
		" {\"name\": \"w1\", \"up_gbps\": 10, \"down_gbps\": 10},"
		" {\"name\": \"ps\", \"up_gbps\": 10, \"down_gbps\": 10}], \"servers\": [\"ps\"], \"v_init\": 3,"
		" \"capacity_changes\": [{\"link\": \"w1.up\", \"at_s\": 0.01, \"gbps\": 0}],"
		" \"updates\": [{\"id\": \"a\", \"worker\": \"w0\", \"bytes\": 125000000},"
		"  {\"id\": \"b\", \"worker\": \"w1\", \"bytes\": 125000000}]}";
	struct plan_batch b;
	struct plan p;
	char err[PLANIO_ERR_MAX], msg[512];

	ck_assert_msg(planio_read_string(doc, &b, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(plan_compute(&b, PLAN_IMPL_FAST, &p), 0);
	ck_assert_int_eq(p.n_dropped, 1);
	ck_assert_int_eq(p.dropped[0], 1);
	ck_assert_msg(plan_check(&b, &p, msg, sizeof(msg)) == PLAN_CHECK_OK, "%s", msg);
	b.n_changes = 0; /* the same plan for a batch where w1's link stays up: the drop is wrong */
	ck_assert_int_eq(plan_check(&b, &p, msg, sizeof(msg)), PLAN_CHECK_STRUCTURE);
	ck_assert_ptr_nonnull(strstr(msg, "drops no update it can deliver"));
	plan_free(&p);
	planio_batch_free(&b);
}
END_TEST

static Suite *check_suite(void)
{
	Suite *s = suite_create("plan_check");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_valid_plan_passes);
	tcase_add_loop_test(tc, test_checker_catches_corruption, 0, 18);
	tcase_add_test(tc, test_delay_violations_counted);
	tcase_add_test(tc, test_generator_valid_and_seeded);
	tcase_add_test(tc, test_generator_rejects_bad_params);
	tcase_add_test(tc, test_generator_paper_shape);
	tcase_add_test(tc, test_fifo_fair_share);
	tcase_add_test(tc, test_fifo_capacity_step_and_ready);
	tcase_add_test(tc, test_sync_drop_only_undeliverable);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run(check_suite()) ? EXIT_FAILURE : EXIT_SUCCESS;
}
