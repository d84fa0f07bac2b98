/*
 * test_sched_ssp.c - Check tests of stale-synchronous parallel in the scheduler (--ssp S, issue
 * 12; asp-ieee-access2018 §III): a worker's pull (its next iteration) waits while the worker is
 * more than S iterations (announced updates) ahead of the slowest live worker, and is answered
 * as soon as the slowest catches up; a dead worker holds nobody back; --ssp off holds nothing.
 */
#include <check.h>
#include <string.h>

#include "ck_run.h"
#include "ctl.h"
#include "sched_daemon.h"
#include "sched_fake.h"
#include "sched_select.h"
#include "sched_state.h"

/*
 * SSP with s = 1, no distributors, and a 10 s peer timeout instead of the harness's 0.5 s: the
 * fakes heartbeat only while the test thread pumps, so on a loaded machine a stall of the test
 * thread past 0.5 s took a waiting worker for dead and opened the gate early (a failure in a
 * parallel `make unit-test`); a dead dataplane is still seen at once, by its closed connection.
 */
static void ssp1(struct sched_config *c)
{
	c->ssp_s = 1;
	c->distributors = 0;
	c->peer_timeout_s = 10;
}

static void no_dist(struct sched_config *c)
{
	c->distributors = 0;
}

static void pull(int f, const char *host, uint64_t id)
{
	char app[64];

	snprintf(app, sizeof(app), "worker@%s", host);
	fake_send(f, json_pack("{s:s, s:s, s:I, s:s}", "type", "pull", "app", app, "id", (json_int_t)id,
			       "server", "ps"));
}

/* the next `send` of the model at the server's fake @ps within @t s: its destination, or "" */
static const char *model_sent_to(int ps, double t, char *buf, size_t len)
{
	json_t *m;

	buf[0] = '\0';
	while ((m = wait_msg(ps, "send", t))) {
		if (!strcmp(json_string_value(json_object_get(m, "what")), "model")) {
			snprintf(buf, len, "%s", json_string_value(json_object_get(m, "dst")));
			return buf;
		}
	}
	return buf;
}

/* The paper's rule with s = 1: w0 two iterations ahead of w1 waits; one update of w1 frees it. */
START_TEST(ahead_worker_waits_for_slowest)
{
	char dst[32];
	int w[2], ps;

	start_daemon(ssp1);
	ps = setup("mlfabric-a", 0, 1000, 2, w, NULL);
	push(w[0], 101, 0, 4000);
	push(w[0], 102, 0, 4000);
	pull(w[0], "w0", 900);
	ck_assert_str_eq(model_sent_to(ps, 1.0, dst, sizeof(dst)), ""); /* 2 > 0 + 1: held */
	pull(w[1], "w1", 901);
	ck_assert_str_eq(model_sent_to(ps, 2.0, dst, sizeof(dst)), "w1"); /* the slowest never waits */
	push(w[1], 201, 0, 4000);
	ck_assert_str_eq(model_sent_to(ps, 2.0, dst, sizeof(dst)), "w0"); /* 2 <= 1 + 1: answered */
	stop_daemon();
}
END_TEST

/* A worker whose dataplane is gone does not hold the others at its clock. */
START_TEST(dead_worker_holds_nobody)
{
	char dst[32];
	int w[2], ps;

	start_daemon(ssp1);
	ps = setup("mlfabric-a", 0, 1000, 2, w, NULL);
	push(w[0], 101, 0, 4000);
	push(w[0], 102, 0, 4000);
	pull(w[0], "w0", 900);
	ck_assert_str_eq(model_sent_to(ps, 1.0, dst, sizeof(dst)), "");
	ctl_close(&fakes[w[1]].c); /* w1's dataplane dies: w0 is the only live worker */
	fakes[w[1]].open = 0;
	ck_assert_str_eq(model_sent_to(ps, 3.0, dst, sizeof(dst)), "w0");
	stop_daemon();
}
END_TEST

/* Without --ssp the same pull is answered at once (the gate is the only difference). */
START_TEST(off_holds_nothing)
{
	char dst[32];
	int w[2], ps;

	start_daemon(no_dist);
	ps = setup("mlfabric-a", 0, 1000, 2, w, NULL);
	push(w[0], 101, 0, 4000);
	push(w[0], 102, 0, 4000);
	pull(w[0], "w0", 900);
	ck_assert_str_eq(model_sent_to(ps, 2.0, dst, sizeof(dst)), "w0");
	stop_daemon();
}
END_TEST

/*
 * ASP's threshold (asp-ieee-access2018 §III.C, eq. 4) on a hand-made state: 3 live workers and a
 * server host. Similar rates (alpha < 1.5): the weak threshold; alpha = 3.2: ceil(alpha) = 4;
 * alpha = 10: capped at S = 6; a dead slow worker does not count; a worker without a rate yet:
 * the weak threshold. The rates come from sched_ssp_count (EWMA of 1 / the update interval).
 */
START_TEST(asp_threshold_follows_rates)
{
	struct sched_host h[4] = { { .alive = 1, .apps = SCHED_ROLE_SERVER } };
	struct sched s;
	double alpha;

	memset(&s, 0, sizeof(s));
	s.cl.n_hosts = 4;
	s.hosts = h;
	s.cfg.ssp_s = 6;
	s.cfg.asp = 1;
	s.cfg.asp_w = 1;
	for (int i = 1; i < 4; i++)
		h[i] = (struct sched_host){ .alive = 1, .apps = SCHED_ROLE_WORKER };
	ck_assert_int_eq(sched_ssp_threshold(&s, &alpha), 1); /* no rates yet */
	/* every worker pushes every 0.1 s, the third every 0.12 s: alpha 1.2 */
	for (int k = 0; k <= 10; k++) {
		sched_ssp_count(&s, 1, 100 + k * 0.1);
		sched_ssp_count(&s, 2, 100 + k * 0.1);
		sched_ssp_count(&s, 3, 100 + k * 0.12);
	}
	ck_assert_uint_eq(h[1].n_pushed, 11);
	ck_assert(h[1].iter_rate > 9.9 && h[1].iter_rate < 10.1);
	ck_assert_int_eq(sched_ssp_threshold(&s, &alpha), 1);
	ck_assert(alpha > 1.19 && alpha < 1.21);
	/* a fast worker held 5 s at the gate: its model is sent at 106, its update comes 0.1 s
	 * later: the sample is 10/s (working time), not 1 / 5.1 s */
	h[1].t_pull_planned = 106.0;
	sched_ssp_count(&s, 1, 106.1);
	ck_assert(h[1].iter_rate > 9.9 && h[1].iter_rate < 10.1);
	h[3].iter_rate = 10 / 3.2; /* an interfering load on the third worker: alpha 3.2 */
	ck_assert_int_eq(sched_ssp_threshold(&s, &alpha), 4);
	h[3].iter_rate = 1; /* alpha 10: at most S */
	ck_assert_int_eq(sched_ssp_threshold(&s, &alpha), 6);
	h[3].alive = 0; /* the slow worker died: the others are similar again */
	ck_assert_int_eq(sched_ssp_threshold(&s, &alpha), 1);
	s.cfg.asp = 0; /* plain SSP: S whatever the rates */
	ck_assert_int_eq(sched_ssp_threshold(&s, NULL), 6);
	s.cfg.ssp_s = -1;
	ck_assert_int_eq(sched_ssp_threshold(&s, NULL), -1);
}
END_TEST

/* state_query from worker @f: its answer (`state`, whose seq must match): 1 READY, 0 NOT-READY */
static int query(int f, int64_t seq, int64_t round, int k, double c)
{
	char app[64];
	json_t *m;

	fake_send(f, json_pack("{s:s, s:s, s:I, s:I, s:i, s:f}", "type", "state_query", "app",
			       app_of(f, "worker", app), "seq", (json_int_t)seq, "round",
			       (json_int_t)round, "k", k, "c", c));
	m = wait_msg(f, "state", 2.0);
	ck_assert_ptr_nonnull(m);
	ck_assert_int_eq(json_integer_value(json_object_get(m, "seq")), seq);
	ck_assert(json_is_boolean(json_object_get(m, "ready")));
	return json_is_true(json_object_get(m, "ready"));
}

/*
 * ESync's State Server in the daemon (esync.txt Alg. 2): k = 0 is NOT-READY; a fast
 * worker (c 0.5 s) is NOT-READY while the slowest (c 2 s) has 2 s to go; the slowest is READY
 * after its first local iteration, and then so is the fast one; a bad field is refused with an
 * error naming it and no answer.
 */
START_TEST(esync_state_server)
{
	int w[2], ps;
	char app[64];

	start_daemon(no_dist);
	ps = setup("mlfabric-s", 0, 1000, 2, w, NULL);
	(void)ps;
	ck_assert_int_eq(query(w[0], 1, 0, 0, 0.0), 0);
	ck_assert_int_eq(query(w[1], 1, 0, 0, 2.0), 0); /* its iterations take 2 s */
	ck_assert_int_eq(query(w[0], 2, 0, 1, 0.5), 0);
	/* w1, the slowest, is READY after one local iteration, and then so is w0 */
	ck_assert_int_eq(query(w[1], 2, 0, 1, 2.0), 1);
	ck_assert_int_eq(query(w[0], 3, 0, 2, 0.5), 1);
	fake_send(w[0], json_pack("{s:s, s:s, s:i, s:i, s:i, s:s}", "type", "state_query", "app",
				  app_of(w[0], "worker", app), "seq", 4, "round", 1, "k", 0, "c", "x"));
	json_t *e = wait_msg(w[0], "error", 2.0);
	ck_assert_ptr_nonnull(e);
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(e, "reason")), "\"c\""));
	ck_assert_ptr_null(wait_msg(w[0], "state", 0.3));
	stop_daemon();
}
END_TEST

static void adsp_fixed2(struct sched_config *c)
{
	c->distributors = 0;
	c->adsp = (struct adsp_cfg){ .gamma_s = 0.2, .eval_s = 0.2, .fixed_r = 2, .max_lag_r = 4 };
}

/* the next `commit_rate` at @f within @t s whose "c" (the worker's commits) is @c, or NULL */
static json_t *rate_with_c(int f, int64_t c, double t)
{
	json_t *m;

	while ((m = wait_msg(f, "commit_rate", t)))
		if (json_integer_value(json_object_get(m, "c")) == c)
			return m;
	return NULL;
}

/*
 * ADSP in the daemon (adsp-aaai2020 §3): every check period each live worker gets
 * `commit_rate` with ΔC_i = C_target - c_i (c_i: its updates so far), capped at max_lag x r; the
 * worker ahead (w0, 3 commits) owes fewer than the one behind (w1, none). The server's `loss`
 * is accepted; a worker's, or a bad number, is refused with an error naming it.
 */
START_TEST(adsp_commit_rates)
{
	int w[2], ps;
	char app[64];

	start_daemon(adsp_fixed2);
	ps = setup("mlfabric-a", 0, 1000, 2, w, NULL);
	for (uint64_t i = 1; i <= 3; i++)
		push(w[0], 100 + i, 0, 4000);
	json_t *m0 = rate_with_c(w[0], 3, 3.0);
	ck_assert_ptr_nonnull(m0);
	int64_t check = json_integer_value(json_object_get(m0, "check"));
	int64_t target = json_integer_value(json_object_get(m0, "c_target"));
	ck_assert_int_eq(json_integer_value(json_object_get(m0, "r")), 2);
	ck_assert_double_eq_tol(json_number_value(json_object_get(m0, "period_s")), 0.2, 1e-9);
	ck_assert_int_ge(target, 3 + 2);
	ck_assert_int_eq(json_integer_value(json_object_get(m0, "delta")), target - 3 > 8 ? 8 : target - 3);
	/* w1 at the same checkpoint: nothing committed, it owes C_target capped at 4 x 2 */
	json_t *m1;
	while ((m1 = wait_msg(w[1], "commit_rate", 2.0)) &&
	       json_integer_value(json_object_get(m1, "check")) < check)
		;
	ck_assert_ptr_nonnull(m1);
	ck_assert_int_eq(json_integer_value(json_object_get(m1, "check")), check);
	ck_assert_int_eq(json_integer_value(json_object_get(m1, "c")), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(m1, "delta")), target > 8 ? 8 : target);
	/* loss reports: the server's is accepted, a worker's and a bad one are refused */
	fake_send(ps, json_pack("{s:s, s:s, s:f, s:f, s:i}", "type", "loss", "app",
				app_of(ps, "server", app), "t", 1.7e9, "loss", 0.9, "version", 3));
	ck_assert_ptr_null(wait_msg(ps, "error", 0.3));
	fake_send(w[0], json_pack("{s:s, s:s, s:f, s:f, s:i}", "type", "loss", "app",
				  app_of(w[0], "worker", app), "t", 1.7e9, "loss", 0.9, "version", 3));
	json_t *e = wait_msg(w[0], "error", 2.0);
	ck_assert_ptr_nonnull(e);
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(e, "reason")), "only the server"));
	fake_send(ps, json_pack("{s:s, s:s, s:f, s:s, s:i}", "type", "loss", "app",
				app_of(ps, "server", app), "t", 1.7e9, "loss", "high", "version", 3));
	e = wait_msg(ps, "error", 2.0);
	ck_assert_ptr_nonnull(e);
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(e, "reason")), "\"loss\""));
	stop_daemon();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sched_ssp");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, ahead_worker_waits_for_slowest);
	tcase_add_test(tc, dead_worker_holds_nobody);
	tcase_add_test(tc, off_holds_nothing);
	tcase_add_test(tc, asp_threshold_follows_rates);
	tcase_add_test(tc, esync_state_server);
	tcase_add_test(tc, adsp_commit_rates);
	suite_add_tcase(s, tc);
	return ck_run(s);
}
