/* test_dp_pacer.c - Check tests of pacing arithmetic (pacer.c) and the egress token bucket (tbucket.c). */
#include <check.h>
#include <errno.h>
#include <math.h>

#include "pacer.h"
#include "tbucket.h"
#include "test_dp_main.h"

#define HZ 1e9 /* one tick per nanosecond keeps the arithmetic readable */
#define FRAME 1514.0

/* Sends FRAME-sized frames as soon as credit allows between ticks [from, to) in 1 us steps. */
static double run(struct pacer *p, uint64_t from, uint64_t to)
{
	double sent = 0;

	for (uint64_t t = from; t < to; t += 1000) {
		pacer_advance(p, t);
		while (pacer_allow(p, FRAME))
			sent += FRAME;
	}
	return sent;
}

START_TEST(follows_rate_steps)
{
	struct pacer p;
	struct pacer_step steps[] = { { 0, 1.0 }, { 2000000, 2.5 }, { 4000000, 0.0 } };
	double sent;

	ck_assert_int_eq(pacer_init(&p, 1000000, HZ, steps, 3, 500e-6, 2 * FRAME), 0);
	/* before the start: nothing at all */
	ck_assert_double_eq(run(&p, 0, 1000000), 0);
	/* 2 ms at 1 Gbit/s = 250000 bytes, within one frame */
	sent = run(&p, 1000000, 3000000);
	ck_assert_msg(fabs(sent - 250000) <= FRAME, "1 Gbit/s step sent %.0f bytes", sent);
	/* 2 ms at 2.5 Gbit/s = 625000 bytes */
	sent = run(&p, 3000000, 5000000);
	ck_assert_msg(fabs(sent - 625000) <= 2 * FRAME, "2.5 Gbit/s step sent %.0f bytes", sent);
	/* paused: at most the leftover credit of one frame */
	sent = run(&p, 5000000, 8000000);
	ck_assert_msg(sent <= FRAME, "paused step sent %.0f bytes", sent);
	ck_assert_double_eq_tol(pacer_gbps_at(&p, 3500000, HZ), 2.5, 1e-9);
	ck_assert_double_eq(pacer_gbps_at(&p, 500000, HZ), 0);
}
END_TEST

START_TEST(burst_is_capped_after_a_stall)
{
	struct pacer p;
	struct pacer_step step = { 0, 1.0 };
	double sent = 0;

	ck_assert_int_eq(pacer_init(&p, 0, HZ, &step, 1, 500e-6, 2 * FRAME), 0);
	/* the loop stalls for 10 ms: credit must not exceed 500 us of 1 Gbit/s = 62500 bytes */
	pacer_advance(&p, 10000000);
	while (pacer_allow(&p, FRAME))
		sent += FRAME;
	ck_assert_msg(sent <= 62500 && sent >= 62500 - FRAME, "burst after stall %.0f bytes", sent);
}
END_TEST

/*
 * The dataplane's cap (16 ms): a loop descheduled for 10 ms every 40 ms still sends the whole
 * schedule, and at no tick has it sent more than the schedule's cumulative bytes (+ one frame).
 */
START_TEST(catches_up_after_deschedules_never_ahead)
{
	struct pacer p;
	struct pacer_step step = { 0, 5.0 };
	double sent = 0, worst_ahead = -1e18;

	ck_assert_int_eq(pacer_init(&p, 0, HZ, &step, 1, 16e-3, 2 * FRAME), 0);
	for (uint64_t t = 0; t < 200000000; t += 1000) {
		if (t % 40000000 >= 30000000)
			continue; /* descheduled */
		pacer_advance(&p, t);
		while (pacer_allow(&p, FRAME))
			sent += FRAME;
		double ahead = sent - 5e9 / 8 * (double)t / HZ;
		if (ahead > worst_ahead)
			worst_ahead = ahead;
	}
	/* the last tick the loop ran is 190 ms - 1 us: 5 Gbit/s for that long */
	ck_assert_msg(fabs(sent - 5e9 / 8 * 0.189999) <= 2 * FRAME, "sent %.0f bytes, schedule %.0f",
		      sent, 5e9 / 8 * 0.189999);
	ck_assert_msg(worst_ahead <= FRAME, "ahead of the schedule by %.0f bytes", worst_ahead);
	/* the old 2 ms cap loses 8 ms of every 10 ms stall */
	ck_assert_int_eq(pacer_init(&p, 0, HZ, &step, 1, 2e-3, 2 * FRAME), 0);
	sent = 0;
	for (uint64_t t = 0; t < 200000000; t += 1000) {
		if (t % 40000000 >= 30000000)
			continue;
		pacer_advance(&p, t);
		while (pacer_allow(&p, FRAME))
			sent += FRAME;
	}
	ck_assert_msg(sent < 5e9 / 8 * 0.189999 * 0.85, "2 ms cap sent %.0f bytes", sent);
}
END_TEST

START_TEST(unpaced_and_invalid)
{
	struct pacer p;
	struct pacer_step bad[] = { { 0, 1.0 }, { 0, 2.0 } }, neg = { 0, -1.0 };

	ck_assert_int_eq(pacer_init(&p, 100, HZ, NULL, 0, 500e-6, FRAME), 0);
	pacer_advance(&p, 50);
	ck_assert_int_eq(pacer_allow(&p, FRAME), 0);
	pacer_advance(&p, 100);
	for (int i = 0; i < 1000; i++)
		ck_assert_int_eq(pacer_allow(&p, FRAME), 1);
	ck_assert_int_eq(pacer_init(&p, 0, HZ, bad, 2, 500e-6, FRAME), -EINVAL);
	ck_assert_int_eq(pacer_init(&p, 0, HZ, &neg, 1, 500e-6, FRAME), -EINVAL);
	ck_assert_int_eq(pacer_init(&p, 0, HZ, bad, PACER_MAX_STEPS + 1, 500e-6, FRAME), -EINVAL);
}
END_TEST

START_TEST(token_bucket_rate_and_runtime_change)
{
	struct tbucket tb;
	double sent = 0;

	tbucket_init(&tb, 1.0, 16384, HZ, 0);
	/* 10 ms at 1 Gbit/s: 1.25 MB plus the initial depth */
	for (uint64_t t = 0; t < 10000000; t += 1000) {
		tbucket_refill(&tb, t);
		while (tbucket_take(&tb, 1514))
			sent += 1514;
	}
	ck_assert_msg(fabs(sent - (1250000 + 16384)) <= 2 * 1514, "1 Gbit/s bucket passed %.0f", sent);
	ck_assert_uint_gt(tb.held, 0);
	/* rate raised to 4 Gbit/s at run time: the next 10 ms pass 4x as much */
	tbucket_set_rate(&tb, 4.0, 10000000);
	sent = 0;
	for (uint64_t t = 10000000; t < 20000000; t += 1000) {
		tbucket_refill(&tb, t);
		while (tbucket_take(&tb, 1514))
			sent += 1514;
	}
	ck_assert_msg(fabs(sent - 5000000) <= 16384 + 2 * 1514, "4 Gbit/s bucket passed %.0f", sent);
	/* forced frames go into debt and delay the following data */
	tbucket_force(&tb, 100000);
	ck_assert_int_eq(tbucket_take(&tb, 1514), 0);
	/* off: everything passes */
	tbucket_set_rate(&tb, 0, 20000000);
	ck_assert_int_eq(tbucket_take(&tb, 1514), 1);
}
END_TEST

/*
 * pacer_wait_ticks (docs/dataplane.md "Idle behaviour": the loop sleeps until the next frame is due): a loop that sleeps
 * exactly the returned ticks, then sends what is allowed, follows the schedule (steps and a
 * pause) within a frame, wakes once per frame at most, and never finds nothing to send unless
 * the schedule has ended.
 */
START_TEST(wait_ticks_drives_a_sleeping_loop)
{
	struct pacer p;
	struct pacer_step steps[] = { { 0, 0.1 }, { 3000000, 0.0 }, { 5000000, 1.0 }, { 8000000, 0.0 } };
	uint64_t t = 500000, w;
	double sent = 0;
	int wakes = 0, empty = 0;

	ck_assert_int_eq(pacer_init(&p, 1000000, HZ, steps, 4, 16e-3, 2 * FRAME), 0);
	pacer_advance(&p, t);
	/* before the start: the ticks to the start */
	ck_assert_uint_eq(pacer_wait_ticks(&p, FRAME), 500000);
	for (;;) {
		int n = 0;
		pacer_advance(&p, t);
		while (pacer_allow(&p, FRAME)) {
			sent += FRAME;
			n++;
		}
		w = pacer_wait_ticks(&p, FRAME);
		if (w == UINT64_MAX)
			break;
		ck_assert_uint_gt(w, 0);
		empty += n == 0 && t > 1000000;
		wakes++;
		t += w;
		ck_assert_uint_lt(t, 20000000);
	}
	/* 3 ms at 0.1 Gbit/s + 3 ms at 1 Gbit/s = 37500 + 375000 bytes */
	ck_assert_msg(fabs(sent - 412500) <= 2 * FRAME, "sent %.0f bytes", sent);
	ck_assert_int_le(wakes, (int)(412500 / FRAME) + 3);
	ck_assert_int_le(empty, 2); /* the start and the pause's end, no idle wake-ups */
	/* the pause: the wait crosses it to the next nonzero step */
	ck_assert_int_eq(pacer_init(&p, 0, HZ, steps, 4, 16e-3, 2 * FRAME), 0);
	pacer_advance(&p, 3000000);
	while (pacer_allow(&p, FRAME))
		;
	w = pacer_wait_ticks(&p, FRAME);
	ck_assert_uint_ge(w, 2000000);
	ck_assert_uint_le(w, 2000000 + 12200); /* the pause, then at most a frame at 1 Gbit/s */
	/* unpaced: due now once started */
	ck_assert_int_eq(pacer_init(&p, 100, HZ, NULL, 0, 16e-3, 2 * FRAME), 0);
	pacer_advance(&p, 200);
	ck_assert_uint_eq(pacer_wait_ticks(&p, FRAME), 0);
}
END_TEST

START_TEST(token_bucket_wait_ticks)
{
	struct tbucket tb;

	tbucket_init(&tb, 1.0, 3028, HZ, 0);
	ck_assert_uint_eq(tbucket_wait_ticks(&tb, 1514), 0);
	ck_assert_int_eq(tbucket_take(&tb, 1514), 1);
	ck_assert_int_eq(tbucket_take(&tb, 1514), 1);
	/* empty: 1514 bytes at 1 Gbit/s take 12112 ns */
	ck_assert_uint_ge(tbucket_wait_ticks(&tb, 1514), 12112);
	ck_assert_uint_le(tbucket_wait_ticks(&tb, 1514), 12113);
	tbucket_refill(&tb, tbucket_wait_ticks(&tb, 1514));
	ck_assert_int_eq(tbucket_take(&tb, 1514), 1);
	tbucket_set_rate(&tb, 0, 20000);
	ck_assert_uint_eq(tbucket_wait_ticks(&tb, 1514), 0);
}
END_TEST

/*
 * Loss response: a loss halves the pacing rate (once per RTT), down to PACER_MIN_SCALE; acked
 * progress regains PACER_AI_STEP of the commanded rate per loss-free RTT, up to the commanded
 * rate; pacer_wait_ticks follows the slower rate; unpaced transfers are never cut.
 */
START_TEST(loss_halves_rate_progress_regains_it)
{
	struct pacer p, u;
	struct pacer_step step = { 0, 1.0 };
	const uint64_t rtt = 1000000; /* 1 ms */
	double sent;

	ck_assert_int_eq(pacer_init(&p, 0, HZ, &step, 1, 500e-6, 2 * FRAME), 0);
	sent = run(&p, 0, 2000000); /* 2 ms at 1 Gbit/s: 250000 bytes */
	ck_assert_msg(fabs(sent - 250000) <= FRAME, "before any loss: %.0f bytes", sent);
	ck_assert_int_eq(pacer_on_loss(&p, 2000000, rtt), 1);
	ck_assert_int_eq(pacer_on_loss(&p, 2500000, rtt), 0); /* same loss episode */
	sent = run(&p, 2000000, 4000000); /* at 0.5 Gbit/s: 125000 bytes */
	ck_assert_msg(fabs(sent - 125000) <= 2 * FRAME, "after one cut: %.0f bytes", sent);
	/* at half rate the missing credit accrues at 0.0625 bytes/ns, not 0.125 */
	double want = ceil((FRAME - p.credit) / 0.0625);
	ck_assert_double_eq_tol((double)pacer_wait_ticks(&p, FRAME), want, 1.0);
	/* progress within one RTT of the cut changes nothing; after it, +1/8 per RTT */
	pacer_on_progress(&p, 2900000, rtt);
	ck_assert_double_eq_tol(p.scale, 0.5, 1e-12);
	pacer_on_progress(&p, 4000000, rtt);
	ck_assert_double_eq_tol(p.scale, 0.5 + PACER_AI_STEP, 1e-12);
	pacer_on_progress(&p, 4500000, rtt); /* within an RTT of the last increase */
	ck_assert_double_eq_tol(p.scale, 0.5 + PACER_AI_STEP, 1e-12);
	for (uint64_t t = 5000000; t < 20000000; t += rtt)
		pacer_on_progress(&p, t, rtt);
	ck_assert_double_eq_tol(p.scale, 1.0, 1e-12); /* never above the commanded rate */
	pacer_advance(&p, 20000000);
	while (pacer_allow(&p, FRAME)) /* drain the burst accrued while nothing was sent */
		;
	sent = run(&p, 20000000, 22000000);
	ck_assert_msg(fabs(sent - 250000) <= 2 * FRAME, "recovered: %.0f bytes in 2 ms", sent);
	/* repeated losses stop at PACER_MIN_SCALE */
	for (uint64_t t = 30000000; t < 60000000; t += rtt)
		pacer_on_loss(&p, t, rtt);
	ck_assert_double_eq_tol(p.scale, PACER_MIN_SCALE, 1e-12);
	ck_assert_uint_eq(p.cuts, 1 + 30);
	pacer_advance(&p, 60000000);
	while (pacer_allow(&p, FRAME))
		;
	sent = run(&p, 60000000, 76000000); /* 16 ms at 1/16 Gbit/s: 125000 bytes */
	ck_assert_msg(fabs(sent - 125000) <= 2 * FRAME, "at the floor: %.0f bytes", sent);
	/* the commanded rate is still what pacer_gbps_at reports */
	ck_assert_double_eq_tol(pacer_gbps_at(&p, 70000000, HZ), 1.0, 1e-9);
	/* unpaced: no cut */
	ck_assert_int_eq(pacer_init(&u, 0, HZ, NULL, 0, 500e-6, 2 * FRAME), 0);
	ck_assert_int_eq(pacer_on_loss(&u, 1000, rtt), 0);
	pacer_advance(&u, 2000);
	ck_assert_int_eq(pacer_allow(&u, FRAME), 1);
}
END_TEST

int main(void)
{
	const TTest *tests[] = { follows_rate_steps, burst_is_capped_after_a_stall,
				 catches_up_after_deschedules_never_ahead, unpaced_and_invalid,
				 token_bucket_rate_and_runtime_change, wait_ticks_drives_a_sleeping_loop,
				 token_bucket_wait_ticks, loss_halves_rate_progress_regains_it };
	return test_dp_run("pacer", tests, 8);
}
