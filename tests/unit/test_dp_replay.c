/* test_dp_replay.c - Check tests of transfer stamps and the receiver's window (dataplane/core/replay.c). */
#include <check.h>

#include "replay.h"
#include "test_dp_main.h"

#define MS 1000000ULL
#define T0 ((REPLAY_EPOCH_UNIX_MS + 1000) * MS) /* a wall clock 1 s after the stamps' epoch */

/* Accept @s under @w if fresh; returns the verdict. */
static enum replay_verdict open_one(struct replay_win *w, uint64_t s)
{
	enum replay_verdict v = replay_check(w, s);

	if (v == REPLAY_FRESH)
		replay_mark(w, s);
	return v;
}

START_TEST(stamps_increase_across_restarts_and_wraps)
{
	struct replay_tx t = { 0 }, later = { 0 };
	uint64_t a = replay_next(&t, T0), b = replay_next(&t, T0), c;

	ck_assert_uint_eq(a, 1000ULL << REPLAY_SEQ_BITS);
	ck_assert_uint_eq(b, a + 1);
	/* a restart 1 ms later stamps above everything the old run did */
	ck_assert_uint_gt(replay_next(&later, T0 + MS), b);
	/* the sequence runs out: the epoch moves on by at least 1 ms, even with the clock standing still */
	t.seq = (1U << REPLAY_SEQ_BITS) - 1;
	c = replay_next(&t, T0);
	ck_assert_uint_eq(c, (1000ULL << REPLAY_SEQ_BITS) + (1U << REPLAY_SEQ_BITS) - 1);
	ck_assert_uint_eq(replay_next(&t, T0), 1001ULL << REPLAY_SEQ_BITS);
	ck_assert_uint_ne(replay_next(&(struct replay_tx){ 0 }, 0), 0); /* never 0, even before the epoch */
}
END_TEST

START_TEST(each_stamp_opens_once)
{
	struct replay_win w = { 0 };
	uint64_t base = 1000ULL << REPLAY_SEQ_BITS;

	ck_assert_int_eq(open_one(&w, base), REPLAY_FRESH);
	ck_assert_int_eq(open_one(&w, base), REPLAY_SEEN);
	/* out of order within the window: each once */
	ck_assert_int_eq(open_one(&w, base + 5), REPLAY_FRESH);
	ck_assert_int_eq(open_one(&w, base + 3), REPLAY_FRESH);
	ck_assert_int_eq(open_one(&w, base + 3), REPLAY_SEEN);
	ck_assert_int_eq(open_one(&w, base + 4), REPLAY_FRESH);
	ck_assert_int_eq(open_one(&w, base + 5), REPLAY_SEEN);
	ck_assert_int_eq(open_one(&w, base), REPLAY_SEEN);
	ck_assert_int_eq(replay_check(&w, 0), REPLAY_ZERO);
	/* check alone changes nothing */
	ck_assert_int_eq(replay_check(&w, base + 9), REPLAY_FRESH);
	ck_assert_int_eq(replay_check(&w, base + 9), REPLAY_FRESH);
	ck_assert_uint_eq(w.top, base + 5);
}
END_TEST

START_TEST(window_slides_and_forgets_nothing_inside)
{
	struct replay_win w = { 0 };
	uint64_t base = 7ULL << REPLAY_SEQ_BITS;

	/* every other stamp of 3 windows, in order: each remembered as long as it is inside */
	for (uint64_t i = 0; i < 3 * REPLAY_WINDOW; i += 2)
		ck_assert_int_eq(open_one(&w, base + i), REPLAY_FRESH);
	for (uint64_t i = 3 * REPLAY_WINDOW - 2 - (REPLAY_WINDOW - 2); i < 3 * REPLAY_WINDOW; i++)
		ck_assert_int_eq(replay_check(&w, base + i), i % 2 ? REPLAY_FRESH : REPLAY_SEEN);
	/* the edge: top - (WINDOW - 1) is inside, top - WINDOW is not */
	ck_assert_int_eq(replay_check(&w, w.top - (REPLAY_WINDOW - 1)), REPLAY_FRESH);
	ck_assert_int_eq(replay_check(&w, w.top - REPLAY_WINDOW), REPLAY_STALE);
	ck_assert_int_eq(replay_check(&w, base), REPLAY_STALE);
	/* a slide by 1, 63, 64 and 65 keeps the marks in place */
	uint64_t top = w.top;
	for (uint64_t d = 1; d <= 65; d += d == 1 ? 62 : 1) {
		top += d;
		ck_assert_int_eq(open_one(&w, top), REPLAY_FRESH);
		ck_assert_int_eq(replay_check(&w, top - d), REPLAY_SEEN);
		ck_assert_int_eq(replay_check(&w, top - 1 - (d > 1)), d > 1 ? REPLAY_FRESH : REPLAY_SEEN);
	}
}
END_TEST

START_TEST(new_epoch_refuses_the_old_one)
{
	struct replay_win w = { 0 };
	struct replay_tx run1 = { 0 }, run2 = { 0 };
	uint64_t old[3], s;

	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(open_one(&w, old[i] = replay_next(&run1, T0)), REPLAY_FRESH);
	/* the sender restarts 5 s later: its first stamp slides the window past the old run */
	s = replay_next(&run2, T0 + 5000 * MS);
	ck_assert_int_eq(open_one(&w, s), REPLAY_FRESH);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(replay_check(&w, old[i]), REPLAY_STALE);
	ck_assert_int_eq(open_one(&w, replay_next(&run2, T0 + 5001 * MS)), REPLAY_FRESH);
	ck_assert_int_eq(open_one(&w, s), REPLAY_SEEN);
	ck_assert_str_eq(replay_verdict_name(REPLAY_STALE), "stale");
}
END_TEST

int main(void)
{
	const TTest *tests[] = { stamps_increase_across_restarts_and_wraps, each_stamp_opens_once,
				 window_slides_and_forgets_nothing_inside, new_epoch_refuses_the_old_one };
	return test_dp_run("replay", tests, 4);
}
