/* test_dp_lossresp.c - Check tests of the loss response's judgement (dataplane/core/lossresp.c) on synthetic round trips and losses. */
#include <check.h>
#include <stdint.h>

#include "lossresp.h"
#include "test_dp_main.h"

/* A deterministic uniform draw in [0, 1) (xorshift64). */
static double draw(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return (double)(*s >> 11) / 9007199254740992.0;
}

/* @frames frames with random loss @p, a round-trip sample every 16 frames from @rtt(i);
 * returns the losses judged congestion. */
static uint64_t run(struct lossresp *l, int frames, double p, double (*rtt)(int, uint64_t *), uint64_t seed)
{
	uint64_t s = seed, cong = 0;

	for (int i = 0; i < frames; i++) {
		lossresp_sent(l);
		if (i % 16 == 0)
			lossresp_rtt(l, rtt(i, &s));
		if (draw(&s) < p)
			cong += (uint64_t)lossresp_lost(l);
	}
	return cong;
}

/* a path with 100 us of round trip and up to 300 us of jitter (a busy host's scheduling) */
static double flat(int i, uint64_t *s)
{
	(void)i;
	return 100 + 300 * draw(s);
}

/* a queue that fills: the round trip grows by 20 us a sample, to 40 ms */
static double rising(int i, uint64_t *s)
{
	double q = 20.0 * (i / 16);

	return 100 + 50 * draw(s) + (q < 40000 ? q : 40000);
}

START_TEST(random_loss_with_flat_rtt_never_cuts)
{
	/* 1%, 2% and 5% random loss over 200,000 frames, 3 seeds each */
	for (uint64_t seed = 1; seed <= 3; seed++) {
		double ps[] = { 0.01, 0.02, 0.05 };
		for (int k = 0; k < 3; k++) {
			struct lossresp l = { 0 };
			ck_assert_uint_eq(run(&l, 200000, ps[k], flat, seed * 7919), 0);
			ck_assert_uint_gt(l.random, 200000 * ps[k] / 2);
		}
	}
}
END_TEST

START_TEST(jitter_spikes_are_no_queue)
{
	struct lossresp l = { 0 };

	for (int i = 0; i < 100; i++)
		lossresp_rtt(&l, 100);
	for (int i = 0; i < 5; i++)
		lossresp_rtt(&l, 20000 + 1000 * i); /* late SACKs (a descheduled receiver, a sleeping loop) */
	ck_assert_int_eq(lossresp_lost(&l), 0);
	ck_assert(lossresp_qdelay_us(&l) < LOSSRESP_QDELAY_MIN_US);
}
END_TEST

START_TEST(rising_rtt_makes_losses_congestion)
{
	struct lossresp l = { 0 };
	uint64_t s = 99;
	int first = -1;

	/* losses at 1% while the queue grows: random at first, congestion once the queue holds
	 * more than 5 ms */
	for (int i = 0; i < 100000; i++) {
		lossresp_sent(&l);
		if (i % 16 == 0)
			lossresp_rtt(&l, rising(i, &s));
		if (draw(&s) < 0.01 && lossresp_lost(&l) && first < 0)
			first = i;
	}
	ck_assert_int_ge(first, 0);
	/* the queue passes 5 ms at sample 250 (frame 4000), the lowest of the last 8 samples 8
	 * samples (128 frames) later */
	ck_assert_int_gt(first, 4000);
	ck_assert_int_lt(first, 6000);
	ck_assert_uint_gt(l.congested, l.random);
}
END_TEST

START_TEST(burst_of_losses_is_congestion_and_decays)
{
	struct lossresp l = { 0 };
	int cong = 0;

	for (int i = 0; i < 1000; i++) {
		lossresp_sent(&l);
		if (i % 16 == 0)
			lossresp_rtt(&l, 100);
	}
	/* a queue overflowing: every other one of the next 60 frames lost, round trips still flat */
	for (int i = 0; i < 60; i++) {
		lossresp_sent(&l);
		if (i % 2)
			cong += lossresp_lost(&l);
	}
	ck_assert_int_ge(cong, 1);
	ck_assert(l.loss_rate > LOSSRESP_BURST_FRAC);
	/* 400 clean frames later a single loss is random again */
	for (int i = 0; i < 400; i++)
		lossresp_sent(&l);
	ck_assert_int_eq(lossresp_lost(&l), 0);
}
END_TEST

START_TEST(slow_path_uses_its_own_base)
{
	struct lossresp l = { 0 };

	/* a 30 ms path (a long link): 10 ms of jitter is not a queue (half the base is 15 ms) */
	for (int i = 0; i < 50; i++)
		lossresp_rtt(&l, 30000 + (i % 2) * 10000);
	ck_assert_int_eq(lossresp_lost(&l), 0);
	for (int i = 0; i < 50; i++)
		lossresp_rtt(&l, 60000);
	ck_assert_int_eq(lossresp_lost(&l), 1);
	/* no samples at all (no SACK yet): only bursts count */
	struct lossresp none = { 0 };
	ck_assert_int_eq(lossresp_lost(&none), 0);
	lossresp_rtt(&none, 0);
	lossresp_rtt(&none, -5);
	ck_assert(none.base_us == 0);
}
END_TEST

int main(void)
{
	const TTest *tests[] = { random_loss_with_flat_rtt_never_cuts, jitter_spikes_are_no_queue,
				 rising_rtt_makes_losses_congestion, burst_of_losses_is_congestion_and_decays,
				 slow_path_uses_its_own_base };
	return test_dp_run("lossresp", tests, 5);
}
