/* test_clocksync.c - Check tests of the clock offset estimate (lib/proto/clocksync.c) and the test
 * skew of CLOCK_REALTIME (lib/base/clock.c, MLF_CLOCK_SKEW_MS). */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "ck_run.h"
#include "clock.h"
#include "clocksync.h"

#define T0 1.8e9 /* a CLOCK_REALTIME of 2027, s (a double resolves 0.24 us there: tolerances 1 us) */

/*
 * One exchange between a host whose clock reads true time - @theta (so the scheduler's clock
 * minus the host's is @theta) at true time @t: @d_out s to the scheduler, @proc s there, @d_back s
 * back.
 */
static int exchange(struct clocksync *c, double t, double theta, double d_out, double proc,
		    double d_back)
{
	double t1 = t - theta, t2 = t + d_out, t3 = t2 + proc, t4 = t3 + d_back - theta;
	return clocksync_sample(c, t1, t2, t3, t4);
}

START_TEST(symmetric_path_exact)
{
	struct clocksync c;

	clocksync_init(&c);
	ck_assert(!c.known);
	ck_assert_int_eq(exchange(&c, T0, 0.050, 0.0002, 0.0001, 0.0002), 0);
	ck_assert(c.known);
	ck_assert_double_eq_tol(c.offset_s, 0.050, 1e-6);
	ck_assert_double_eq_tol(c.err_s, 0.0002, 1e-6); /* half of the 0.4 ms round trip */
}
END_TEST

/* Queueing on one path only biases that exchange by half the queueing; the filter takes the least
 * delayed of the window, and the true offset is always within +- err of the estimate. */
START_TEST(min_delay_filter_and_bound)
{
	struct clocksync c;
	unsigned seed = 7;

	clocksync_init(&c);
	for (int i = 0; i < CLOCKSYNC_SAMPLES; i++) {
		double q = i == 5 ? 0 : 0.001 + 0.02 * rand_r(&seed) / RAND_MAX;
		int outbound = rand_r(&seed) & 1;
		ck_assert_int_eq(exchange(&c, T0 + i * 0.25, -0.030, 0.0001 + (outbound ? q : 0),
					  0.00005, 0.0001 + (outbound ? 0 : q)), 0);
		ck_assert_msg(fabs(c.offset_s - -0.030) <= c.err_s + 1e-6,
			      "true offset outside the estimate's bound after sample %d: %.6f +- %.6f", i,
			      c.offset_s, c.err_s);
	}
	ck_assert_double_eq_tol(c.offset_s, -0.030, 1e-6); /* the clean exchange (i = 5) won */
	ck_assert_double_eq_tol(c.err_s, 0.0001, 1e-6);
}
END_TEST

/* A clock step: once a full window of new exchanges came, the old clean one is forgotten. */
START_TEST(window_follows_a_step)
{
	struct clocksync c;

	clocksync_init(&c);
	ck_assert_int_eq(exchange(&c, T0, 0.0, 0.00001, 0, 0.00001), 0);
	for (int i = 1; i <= CLOCKSYNC_SAMPLES; i++)
		ck_assert_int_eq(exchange(&c, T0 + i, 0.2, 0.0005, 0, 0.0005), 0);
	ck_assert_double_eq_tol(c.offset_s, 0.2, 1e-6);
	ck_assert_int_eq(c.n, CLOCKSYNC_SAMPLES);
}
END_TEST

START_TEST(impossible_exchanges_refused)
{
	struct clocksync c;

	clocksync_init(&c);
	ck_assert_int_eq(clocksync_sample(&c, T0, T0, T0, T0 - 1), -EINVAL);  /* t4 < t1 */
	ck_assert_int_eq(clocksync_sample(&c, T0, T0 + 1, T0, T0 + 2), -EINVAL); /* t3 < t2 */
	ck_assert_int_eq(clocksync_sample(&c, T0, T0, T0 + 1, T0 + 0.5), -EINVAL); /* delay < 0 */
	ck_assert_int_eq(clocksync_sample(&c, NAN, T0, T0, T0), -EINVAL);
	ck_assert_int_eq(clocksync_sample(&c, T0, INFINITY, INFINITY, T0), -EINVAL);
	ck_assert_int_eq(clocksync_sample(&c, 0, T0, T0, 1), -EINVAL);
	ck_assert(!c.known);
	ck_assert_int_eq(c.n, 0);
}
END_TEST

/* MLF_CLOCK_SKEW_MS shifts this process's CLOCK_REALTIME (each test runs in its own process). */
START_TEST(skew_from_environment)
{
	struct timespec ts;

	setenv("MLF_CLOCK_SKEW_MS", "-50.5", 1);
	ck_assert_int_eq(clock_skew_ns(), -50500000);
	clock_gettime(CLOCK_REALTIME, &ts);
	double real = (double)ts.tv_sec + ts.tv_nsec * 1e-9, skewed = clock_real_s();
	ck_assert_msg(skewed - real > -0.0515 && skewed - real < -0.0495, "skewed - real = %f",
		      skewed - real);
	ck_assert_msg((double)clock_real_ns() / 1e9 - real < -0.0495, "clock_real_ns not skewed");
}
END_TEST

START_TEST(skew_malformed_ignored)
{
	setenv("MLF_CLOCK_SKEW_MS", "50ms", 1);
	ck_assert_int_eq(clock_skew_ns(), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("clocksync");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, symmetric_path_exact);
	tcase_add_test(tc, min_delay_filter_and_bound);
	tcase_add_test(tc, window_follows_a_step);
	tcase_add_test(tc, impossible_exchanges_refused);
	tcase_add_test(tc, skew_from_environment);
	tcase_add_test(tc, skew_malformed_ignored);
	suite_add_tcase(s, tc);
	return ck_run(s);
}
