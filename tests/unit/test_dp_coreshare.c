/* test_dp_coreshare.c - Check tests of the loop's verdict on its core (dataplane/core/coreshare.c) on synthetic scheduler counters. */
#include <check.h>
#include <stdint.h>

#include "coreshare.h"
#include "test_dp_main.h"

#define MS 1000000ULL

/* @n samples 10 ms apart, each adding @run and @wait ns to the counters; returns verdict changes */
static int feed(struct coreshare *c, uint64_t *now, uint64_t *run, uint64_t *wait, int n, uint64_t drun,
		uint64_t dwait)
{
	int changes = 0;

	for (int i = 0; i < n; i++) {
		*now += 10 * MS;
		*run += drun;
		*wait += dwait;
		changes += coreshare_sample(c, *run, *wait, *now);
	}
	return changes;
}

START_TEST(own_core_stays_own)
{
	struct coreshare c = { 0 };
	uint64_t now = 0, run = 0, wait = 0;

	/* a polling loop that always has the core, and one that sleeps and is woken at once */
	ck_assert_int_eq(feed(&c, &now, &run, &wait, 500, 10 * MS, 0), 0);
	ck_assert_int_eq(feed(&c, &now, &run, &wait, 500, MS / 10, MS / 1000), 0);
	ck_assert_int_eq(c.shared, 0);
}
END_TEST

START_TEST(polling_on_a_shared_core_is_shared)
{
	struct coreshare c = { 0 };
	uint64_t now = 0, run = 0, wait = 0;

	/* two threads polling on one core: each runs half of the time and waits the other half */
	ck_assert_int_eq(feed(&c, &now, &run, &wait, 10, 5 * MS, 5 * MS), 1);
	ck_assert_int_eq(c.shared, 1);
}
END_TEST

START_TEST(sleeping_on_a_busy_core_stays_shared)
{
	struct coreshare c = { 0 };
	uint64_t now = 0, run = 0, wait = 0;

	feed(&c, &now, &run, &wait, 10, 5 * MS, 5 * MS);
	ck_assert_int_eq(c.shared, 1);
	/* now sleeping between events: it wants the core 0.3 ms per 10 ms and waits 0.1 of them
	 * for it. Of wall time that is 1% (which swung the first version back to "own" and to
	 * polling, and so to shared again, every 0.1-0.3 s); of the time it wanted the core, 33% */
	ck_assert_int_eq(feed(&c, &now, &run, &wait, 500, MS / 5, MS / 10), 0);
	ck_assert_int_eq(c.shared, 1);
}
END_TEST

START_TEST(own_again_only_after_the_hold)
{
	struct coreshare c = { 0 };
	uint64_t now = 0, run = 0, wait = 0, t0;

	feed(&c, &now, &run, &wait, 10, 5 * MS, 5 * MS);
	t0 = now;
	/* the other thread is gone: the share decays below 1% within ~0.2 s, but the verdict holds
	 * for CORESHARE_HOLD_NS after the last sample above CORESHARE_ON */
	ck_assert_int_eq(feed(&c, &now, &run, &wait, 50, 10 * MS, 0), 0);
	ck_assert(c.frac < CORESHARE_OFF);
	ck_assert_int_eq(c.shared, 1);
	ck_assert_int_eq(feed(&c, &now, &run, &wait, 60, 10 * MS, 0), 1);
	ck_assert_int_eq(c.shared, 0);
	ck_assert(now - t0 >= CORESHARE_HOLD_NS);
}
END_TEST

START_TEST(counters_that_do_not_move_are_no_sample)
{
	struct coreshare c = { 0 };

	ck_assert_int_eq(coreshare_sample(&c, 100, 100, 0), 0); /* the first sample only sets a base */
	ck_assert_int_eq(coreshare_sample(&c, 100, 100, 10 * MS), 0);
	ck_assert_int_eq(coreshare_sample(&c, 50, 1000, 20 * MS), 0); /* run went backwards */
	ck_assert(c.frac == 0);
	ck_assert_int_eq(c.shared, 0);
}
END_TEST

int main(void)
{
	const TTest *tests[] = { own_core_stays_own, polling_on_a_shared_core_is_shared,
				 sleeping_on_a_busy_core_stays_shared, own_again_only_after_the_hold,
				 counters_that_do_not_move_are_no_sample };
	return test_dp_run("coreshare", tests, 5);
}
