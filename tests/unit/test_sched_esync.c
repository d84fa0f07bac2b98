/* test_sched_esync.c - Check tests of ESync's State Server rule (esync.txt §4, Alg. 2). */
#include <check.h>
#include <string.h>

#include "ck_run.h"
#include "sched_esync.h"

/* Four devices, the paper's setting of fixed speeds 1:1:1:4 (one local iteration: 1 s, 4 s). */
static struct esync_rec recs[4];

static void fresh(void)
{
	memset(recs, 0, sizeof(recs));
	for (int i = 0; i < 4; i++)
		recs[i].alive = 1;
}

/* Round 0 started at t = 100: every device queried with k = 0 (Alg. 1 line 8 before training). */
static void round_start(int64_t round, double t, const double *c)
{
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(esync_query(recs, 4, i, round, 0, c[i], t, ESYNC_EPS_S), 0);
}

/* k = 0 is always NOT-READY: every device trains at least one local iteration (Alg. 2 line 5). */
START_TEST(first_iteration_not_ready)
{
	const double c[4] = { 1, 1, 1, 4 };

	fresh();
	round_start(3, 100.0, c);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(recs[i].k, 0);
}
END_TEST

/*
 * The fast devices keep training while another 1 s iteration ends before the slowest (4 s) is
 * ready: at t = 101, 102 the rest is 3 s and 2 s (NOT-READY); at t = 103 the rest is 1 s and
 * c + eps > 1 (READY): three local iterations each, the slowest's one; then the slowest at
 * t = 104 is READY because it is the slowest (line 9).
 */
START_TEST(fast_devices_fill_the_slowest_iteration)
{
	const double c[4] = { 1, 1, 1, 4 };

	fresh();
	round_start(3, 100.0, c);
	for (int k = 1; k <= 2; k++)
		for (int i = 0; i < 3; i++)
			ck_assert_msg(!esync_query(recs, 4, i, 3, k, 1.0, 100.0 + k, ESYNC_EPS_S),
				      "device %d READY after %d local iterations (rest %g s)", i, k, 4.0 - k);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(esync_query(recs, 4, i, 3, 3, 1.0, 103.0, ESYNC_EPS_S), 1);
	ck_assert_int_eq(esync_query(recs, 4, 3, 3, 1, 4.0, 104.0, ESYNC_EPS_S), 1);
	ck_assert_int_eq(recs[3].ready_round, 3);
}
END_TEST

/* Once the slowest was told READY in a round, every query of that round is READY (line 9). */
START_TEST(slowest_ready_makes_everyone_ready)
{
	const double c[4] = { 1, 1, 1, 4 };

	fresh();
	round_start(5, 10.0, c);
	ck_assert_int_eq(esync_query(recs, 4, 3, 5, 1, 4.0, 14.0, ESYNC_EPS_S), 1);
	/* device 0 with a slow iteration would otherwise see rest = 4 - 0.1 */
	ck_assert_int_eq(esync_query(recs, 4, 0, 5, 1, 0.1, 14.1, ESYNC_EPS_S), 1);
}
END_TEST

/*
 * A device already in the next round waits (NOT-READY) while the slowest has not pulled yet
 * (still in the previous round, Alg. 2 line 5), however many iterations it has done.
 */
START_TEST(waits_for_the_slowest_pull)
{
	const double c[4] = { 1, 1, 1, 4 };

	fresh();
	round_start(0, 0.0, c);
	ck_assert_int_eq(esync_query(recs, 4, 3, 0, 1, 4.0, 4.0, ESYNC_EPS_S), 1);
	ck_assert_int_eq(esync_query(recs, 4, 0, 1, 0, 1.0, 4.5, ESYNC_EPS_S), 0);
	for (int k = 1; k <= 5; k++)
		ck_assert_int_eq(esync_query(recs, 4, 0, 1, k, 1.0, 4.5 + k, ESYNC_EPS_S), 0);
	/* the slowest pulled (its k = 0 query of round 1 at 10.0): the rule applies again */
	ck_assert_int_eq(esync_query(recs, 4, 3, 1, 0, 4.0, 10.0, ESYNC_EPS_S), 0);
	ck_assert_int_eq(esync_query(recs, 4, 0, 1, 6, 1.0, 13.5, ESYNC_EPS_S), 1); /* rest 0.5 s */
}
END_TEST

/* A dead slowest device is not waited for: the next slowest live one decides. */
START_TEST(dead_slowest_ignored)
{
	const double c[4] = { 1, 2, 1, 4 };

	fresh();
	round_start(2, 50.0, c);
	recs[3].alive = 0;
	/* slowest is now device 1 (2 s): at t = 51 the rest is 1 s, so device 0 is READY */
	ck_assert_int_eq(esync_query(recs, 4, 0, 2, 1, 1.0, 51.0, ESYNC_EPS_S), 1);
	ck_assert_int_eq(esync_query(recs, 4, 1, 2, 1, 2.0, 52.0, ESYNC_EPS_S), 1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sched_esync");
	TCase *tc = tcase_create("state_server");

	tcase_add_test(tc, first_iteration_not_ready);
	tcase_add_test(tc, fast_devices_fill_the_slowest_iteration);
	tcase_add_test(tc, slowest_ready_makes_everyone_ready);
	tcase_add_test(tc, waits_for_the_slowest_pull);
	tcase_add_test(tc, dead_slowest_ignored);
	suite_add_tcase(s, tc);
	return ck_run(s);
}
