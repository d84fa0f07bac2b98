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

static void ssp1(struct sched_config *c)
{
	c->ssp_s = 1;
	c->distributors = 0;
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
	ps = setup("async", 0, 1000, 2, w, NULL);
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
	ps = setup("async", 0, 1000, 2, w, NULL);
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
	ps = setup("async", 0, 1000, 2, w, NULL);
	push(w[0], 101, 0, 4000);
	push(w[0], 102, 0, 4000);
	pull(w[0], "w0", 900);
	ck_assert_str_eq(model_sent_to(ps, 2.0, dst, sizeof(dst)), "w0");
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
	suite_add_tcase(s, tc);
	return ck_run(s);
}
