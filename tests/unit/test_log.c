/* test_log.c - Check tests of the rate limits of repeated errors and warnings and of a family of lines (token bucket) (lib/base/log.c). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ck_run.h"
#include "clock.h"
#include "log.h"

static char path[64];
static int saved_fd = -1;

/* Send stderr to a fresh file until lines(). */
static void capture(void)
{
	snprintf(path, sizeof(path), "/tmp/test_log.%d", (int)getpid());
	fflush(stderr);
	saved_fd = dup(2);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	dup2(fileno(f), 2);
	fclose(f);
}

/* Restore stderr; the number of captured lines containing @needle ("" = every line). */
static int lines(const char *needle)
{
	char buf[512];
	int n = 0;

	fflush(stderr);
	dup2(saved_fd, 2);
	close(saved_fd);
	FILE *f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(buf, sizeof(buf), f))
		n += strstr(buf, needle) != NULL;
	fclose(f);
	return n;
}

/* One call site, called in a loop. */
static void spam(int i)
{
	log_warn("bad line %d", i);
}

START_TEST(repeated_warning_limited_per_call_site)
{
	log_rl_burst = 5;
	log_rl_window_s = 0.2;
	capture();
	for (int i = 0; i < 1000; i++)
		spam(i);
	log_warn("another call site"); /* not limited by spam()'s count */
	usleep(250000);
	spam(1000); /* a new window: the count of the suppressed ones first, then the line */
	ck_assert_int_eq(lines("bad line"), 6);
	capture();
	spam(1001);
	int total = lines("");
	ck_assert_int_eq(total, 1);
	/* the order and text of a window change, from a fresh window */
	usleep(250000);
	capture();
	for (int i = 0; i < 7; i++)
		spam(i);
	usleep(250000);
	spam(7);
	fflush(stderr);
	dup2(saved_fd, 2);
	close(saved_fd);
	FILE *f = fopen(path, "r");
	char buf[512], last2[2][512] = { "", "" };
	int n = 0;
	while (fgets(buf, sizeof(buf), f)) {
		snprintf(last2[0], sizeof(last2[0]), "%s", last2[1]);
		snprintf(last2[1], sizeof(last2[1]), "%s", buf);
		n++;
	}
	fclose(f);
	ck_assert_int_eq(n, 5 + 2); /* a burst of 5, the suppressed line, the new window's line */
	ck_assert_ptr_nonnull(strstr(last2[0], "WARN"));
	ck_assert_ptr_nonnull(strstr(last2[0], "suppressed 2 similar messages"));
	ck_assert_ptr_nonnull(strstr(last2[0], "test_log.c:"));
	ck_assert_ptr_nonnull(strstr(last2[1], "bad line 7"));
	unlink(path);
	log_rl_burst = LOG_RL_BURST;
	log_rl_window_s = LOG_RL_WINDOW_S;
}
END_TEST

START_TEST(other_call_sites_and_levels_independent)
{
	log_rl_burst = 3;
	log_rl_window_s = 10;
	capture();
	for (int i = 0; i < 50; i++) {
		log_err("err site %d", i);
		log_info("info %d", i); /* not limited */
		log_debug("debug %d", i); /* below the threshold: neither printed nor counted */
	}
	ck_assert_int_eq(lines("err site"), 3);
	capture();
	for (int i = 0; i < 50; i++)
		log_info("info %d", i);
	ck_assert_int_eq(lines("info"), 50);
	unlink(path);
	log_rl_burst = LOG_RL_BURST;
	log_rl_window_s = LOG_RL_WINDOW_S;
}
END_TEST

/*
 * A token bucket of 100 lines per second, bursts of 50, under a burst of 20,000 lines from two
 * call sites: at most 50 + 100 per second elapsed are printed, the rest counted; once a token is
 * back, the next line is preceded by one "suppressed" line whose count and the printed lines
 * add up to the burst.
 */
START_TEST(bucket_bounds_a_family_of_lines)
{
	struct log_bucket b = LOG_BUCKET_INIT(100, 50);
	int n = 20000;

	capture();
	double t0 = clock_mono_s();
	for (int i = 0; i < n; i++) {
		if (i % 2)
			log_printf_bucket(&b, "transfers", LOG_INFO, "xfer %d: to b", i);
		else
			log_printf_bucket(&b, "transfers", LOG_INFO, "xfer %d from b complete", i);
	}
	double dt = clock_mono_s() - t0;
	usleep(20000); /* two tokens back */
	log_printf_bucket(&b, "transfers", LOG_INFO, "xfer last: to b");
	int printed = lines("xfer "), summaries = lines("suppressed");
	FILE *f = fopen(path, "r");
	char buf[512];
	unsigned long k = 0, sum = 0;
	while (fgets(buf, sizeof(buf), f))
		if (strstr(buf, "suppressed")) {
			ck_assert_int_eq(sscanf(strstr(buf, "suppressed"), "suppressed %lu lines of transfers",
						&k), 1);
			sum += k;
		}
	fclose(f);
	capture();
	lines("");
	ck_assert_msg(printed - 1 <= 50 + 100 * dt + 1, "%d lines printed of %d in %.3f s",
		      printed - 1, n, dt);
	ck_assert_int_ge(printed - 1, 50);
	/* one summary, and one more per token that came back while the loop still ran (a loaded
	 * machine stretches the loop: 3 summaries under make test-under-load's load) */
	ck_assert_int_ge(summaries, 1);
	ck_assert_msg(summaries <= 1 + 100 * dt + 1, "%d summaries in %.3f s", summaries, dt);
	ck_assert_int_eq((int)sum + printed - 1, n);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("log");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, repeated_warning_limited_per_call_site);
	tcase_add_test(tc, other_call_sites_and_levels_independent);
	tcase_add_test(tc, bucket_bounds_a_family_of_lines);
	suite_add_tcase(s, tc);
	return ck_run(s);
}
