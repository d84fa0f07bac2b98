/* test_sched_capest.c - Check tests of the measured capacity estimate (MLfabric §3/§4 network monitor; sched_capest.h). */
#include <check.h>

#include "ck_run.h"
#include "sched_capest.h"

/* One 0.1 s report, the link active all of it, commanded @cmd, achieved @got (Gbit/s). */
static struct capest_obs rep(double cmd, double got, double loss, double rtt_ms)
{
	return (struct capest_obs){ .period_s = 0.1, .active_s = 0.1, .gbps = got, .cmd_gbps = cmd,
				    .loss = loss, .rtt_ms = rtt_ms };
}

/* A 1 Gbit/s downlink shaped to 0.3: transfers commanded at 0.95 achieve 0.3 with 5% loss and
 * a grown RTT. Two such reports change nothing; the third backs off to what was achieved. */
START_TEST(sustained_shortfall_backs_off)
{
	struct capest e;
	struct capest_obs base = rep(0.5, 0.5, 0, 0.2), bad = rep(0.95, 0.3, 0.05, 5.0);

	capest_init(&e, 1.0);
	ck_assert_int_eq(capest_feed(&e, CAPEST_DOWN, &base), 0); /* learns the base RTT */
	ck_assert_int_eq(capest_feed(&e, CAPEST_DOWN, &bad), 0);
	ck_assert_int_eq(capest_feed(&e, CAPEST_DOWN, &bad), 0);
	ck_assert_double_eq(e.est_gbps, 1.0);
	ck_assert_int_eq(capest_feed(&e, CAPEST_DOWN, &bad), -1);
	ck_assert_double_eq_tol(e.est_gbps, 0.3, 1e-9);
	ck_assert_uint_eq(e.backoffs, 1);
}
END_TEST

/* The RTT alone (no loss) is a congestion signal once it has grown well over the base. */
START_TEST(rtt_growth_is_a_signal)
{
	struct capest e;
	struct capest_obs base = rep(0.5, 0.5, 0, 0.5), slow = rep(0.9, 0.4, 0, 8.0);

	capest_init(&e, 1.0);
	capest_feed(&e, CAPEST_DOWN, &base);
	for (int i = 0; i < CAPEST_SUSTAIN - 1; i++)
		ck_assert_int_eq(capest_feed(&e, CAPEST_DOWN, &slow), 0);
	ck_assert_int_eq(capest_feed(&e, CAPEST_DOWN, &slow), -1);
	ck_assert_double_eq_tol(e.est_gbps, 0.4, 1e-9);
}
END_TEST

/* One noisy report between good ones never backs off, nor do two in a row broken by a good one. */
START_TEST(one_noisy_report_no_backoff)
{
	struct capest e;
	struct capest_obs good = rep(0.9, 0.9, 0, 0.2), bad = rep(0.9, 0.1, 0.2, 20.0);

	capest_init(&e, 1.0);
	for (int round = 0; round < 10; round++) {
		ck_assert_int_eq(capest_feed(&e, CAPEST_DOWN, &good), 0);
		ck_assert_int_ge(capest_feed(&e, CAPEST_DOWN, &bad), 0);
		if (round & 1)
			ck_assert_int_ge(capest_feed(&e, CAPEST_DOWN, &bad), 0);
	}
	ck_assert_double_eq(e.est_gbps, 1.0);
	ck_assert_uint_eq(e.backoffs, 0);
}
END_TEST

/* Reports with too little traffic neither count nor break a run of shortfalls. */
START_TEST(idle_reports_are_neutral)
{
	struct capest e;
	struct capest_obs bad = rep(0.9, 0.2, 0.1, 0), idle = rep(0.9, 0.9, 0, 0);

	idle.active_s = 0.01;
	capest_init(&e, 1.0);
	ck_assert_int_eq(capest_feed(&e, CAPEST_DOWN, &bad), 0);
	ck_assert_int_eq(capest_feed(&e, CAPEST_DOWN, &idle), 0);
	ck_assert_int_eq(capest_feed(&e, CAPEST_DOWN, &bad), 0);
	ck_assert_int_eq(capest_feed(&e, CAPEST_DOWN, &idle), 0);
	ck_assert_int_eq(capest_feed(&e, CAPEST_DOWN, &bad), -1);
	ck_assert_double_eq_tol(e.est_gbps, 0.2, 1e-9);
}
END_TEST

/* Attribution: a shortfall without loss or RTT growth is the sender's (uplink), one with them
 * the network's (downlink): each estimator counts only its own. */
START_TEST(attribution_up_and_down)
{
	struct capest up, down;
	struct capest_obs quiet = rep(1.0, 0.5, 0, 0), lossy = rep(1.0, 0.5, 0.05, 0);

	capest_init(&up, 1.0);
	capest_init(&down, 1.0);
	for (int i = 0; i < 5; i++) {
		capest_feed(&up, CAPEST_UP, &lossy);
		capest_feed(&down, CAPEST_DOWN, &quiet);
	}
	ck_assert_double_eq(up.est_gbps, 1.0);
	ck_assert_double_eq(down.est_gbps, 1.0);
	for (int i = 0; i < CAPEST_SUSTAIN; i++) {
		capest_feed(&up, CAPEST_UP, &quiet);
		capest_feed(&down, CAPEST_DOWN, &lossy);
	}
	ck_assert_double_eq_tol(up.est_gbps, 0.5, 1e-9);
	ck_assert_double_eq_tol(down.est_gbps, 0.5, 1e-9);
}
END_TEST

/* After a back-off to 0.2, transfers commanded at the estimate achieve it without loss: the
 * estimate rises multiplicatively, step by step, and stops at the declared maximum. A report
 * with loss or commanded far below the estimate does not probe. */
START_TEST(probes_back_up_to_the_maximum)
{
	struct capest e;
	struct capest_obs bad = rep(1.0, 0.2, 0.1, 0);
	double last;
	int steps = 0;

	capest_init(&e, 1.0);
	for (int i = 0; i < CAPEST_SUSTAIN; i++)
		capest_feed(&e, CAPEST_DOWN, &bad);
	ck_assert_double_eq_tol(e.est_gbps, 0.2, 1e-9);
	struct capest_obs lossy = rep(0.2, 0.2, 0.05, 0), low = rep(0.02, 0.02, 0, 0);
	for (int i = 0; i < 6; i++) {
		ck_assert_int_eq(capest_feed(&e, CAPEST_DOWN, &lossy), 0);
		ck_assert_int_eq(capest_feed(&e, CAPEST_DOWN, &low), 0);
	}
	ck_assert_double_eq_tol(e.est_gbps, 0.2, 1e-9);
	last = e.est_gbps;
	for (int i = 0; i < 100 && e.est_gbps < 1.0; i++) {
		struct capest_obs ok = rep(0.95 * e.est_gbps, 0.95 * e.est_gbps, 0, 0);
		int r = capest_feed(&e, CAPEST_DOWN, &ok);
		ck_assert_int_ge(r, 0);
		if (r == 1) {
			steps++;
			ck_assert_double_le(e.est_gbps, last * CAPEST_PROBE_MUL + 1e-12);
			ck_assert_double_gt(e.est_gbps, last);
			last = e.est_gbps;
		}
	}
	ck_assert_double_eq(e.est_gbps, 1.0);
	ck_assert_int_ge(steps, 5); /* gradual: 0.2 -> 1.0 at x1.25 takes ceil(log 5 / log 1.25) = 8 */
	struct capest_obs ok = rep(0.95, 0.95, 0, 0);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(capest_feed(&e, CAPEST_DOWN, &ok), 0);
	ck_assert_double_eq(e.est_gbps, 1.0);
}
END_TEST

/* Unpaced transfers count as commanded at the maximum; a declared change moves an estimate
 * at the maximum with it, caps one above; bad figures change nothing. */
START_TEST(unpaced_max_and_bad_input)
{
	struct capest e;
	struct capest_obs unp = rep(-1, 0.4, 0, 0), nan = rep(1.0, 0.0 / 0.0, 0, 0);

	capest_init(&e, 1.0);
	nan.loss = 0.5;
	for (int i = 0; i < 10; i++)
		ck_assert_int_eq(capest_feed(&e, CAPEST_DOWN, &nan), 0);
	capest_set_max(&e, 2.0);
	ck_assert_double_eq(e.est_gbps, 2.0);
	for (int i = 0; i < CAPEST_SUSTAIN; i++)
		capest_feed(&e, CAPEST_UP, &unp);
	ck_assert_double_eq_tol(e.est_gbps, 0.4, 1e-9);
	capest_set_max(&e, 0.3);
	ck_assert_double_eq_tol(e.est_gbps, 0.3, 1e-9);
	capest_set_max(&e, 1.0); /* at the old maximum: follows it */
	ck_assert_double_eq(e.est_gbps, 1.0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sched_capest");
	TCase *tc = tcase_create("estimate");

	tcase_add_test(tc, sustained_shortfall_backs_off);
	tcase_add_test(tc, rtt_growth_is_a_signal);
	tcase_add_test(tc, one_noisy_report_no_backoff);
	tcase_add_test(tc, idle_reports_are_neutral);
	tcase_add_test(tc, attribution_up_and_down);
	tcase_add_test(tc, probes_back_up_to_the_maximum);
	tcase_add_test(tc, unpaced_max_and_bad_input);
	suite_add_tcase(s, tc);
	return ck_run(s);
}
