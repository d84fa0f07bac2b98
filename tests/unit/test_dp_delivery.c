/* test_dp_delivery.c - Check tests of commit-order delivery bookkeeping (dataplane/core/delivery.c). */
#include <check.h>

#include "delivery.h"
#include "test_dp_main.h"

START_TEST(holds_early_arrivals)
{
	struct delivery_list o = { 0 };
	uint64_t ids[] = { 30, 50, 70 };

	ck_assert_int_eq(delivery_add(&o, ids, 3, 1), 0);
	/* 70 and 50 arrived first: both wait for 30 */
	ck_assert_int_eq(delivery_may_deliver(&o, 70), 0);
	ck_assert_int_eq(delivery_may_deliver(&o, 50), 0);
	ck_assert_int_eq(delivery_may_deliver(&o, 30), 1);
	/* ids outside the order are never held */
	ck_assert_int_eq(delivery_may_deliver(&o, 99), 1);
	delivery_mark_done(&o, 30);
	ck_assert_int_eq(delivery_may_deliver(&o, 50), 1);
	ck_assert_int_eq(delivery_may_deliver(&o, 70), 0);
	delivery_mark_done(&o, 50);
	ck_assert_int_eq(delivery_may_deliver(&o, 70), 1);
	delivery_free(&o);
}
END_TEST

START_TEST(append_and_replace)
{
	struct delivery_list o = { 0 };
	uint64_t a[] = { 1, 2 }, b[] = { 3 }, c[] = { 9, 8 };

	ck_assert_int_eq(delivery_add(&o, a, 2, 0), 0);
	ck_assert_int_eq(delivery_add(&o, b, 1, 0), 0);
	ck_assert_int_eq(o.n, 3);
	delivery_mark_done(&o, 1);
	ck_assert_int_eq(delivery_may_deliver(&o, 3), 0); /* 2 still missing */
	delivery_mark_done(&o, 2);
	ck_assert_int_eq(delivery_may_deliver(&o, 3), 1);
	/* a new batch replaces the order: 8 waits for 9, the old ids are free */
	ck_assert_int_eq(delivery_add(&o, c, 2, 1), 0);
	ck_assert_int_eq(o.n, 2);
	ck_assert_int_eq(delivery_may_deliver(&o, 8), 0);
	ck_assert_int_eq(delivery_may_deliver(&o, 3), 1);
	delivery_free(&o);
	ck_assert_ptr_null(o.ids);
}
END_TEST

START_TEST(done_head_entries_dropped)
{
	struct delivery_list o = { 0 };
	uint64_t ids[1000];

	for (int i = 0; i < 1000; i++)
		ids[i] = (uint64_t)i + 1;
	ck_assert_int_eq(delivery_add(&o, ids, 1000, 0), 0);
	delivery_mark_done(&o, 2); /* out of order: 1 still awaited, nothing can go */
	ck_assert_int_eq(o.n, 1000);
	delivery_mark_done(&o, 1);
	ck_assert_int_eq(o.n, 998);
	ck_assert_uint_eq(o.ids[0], 3);
	for (int i = 3; i <= 1000; i++)
		delivery_mark_done(&o, (uint64_t)i);
	ck_assert_int_eq(o.n, 0);
	/* appending after a full drain still orders */
	ck_assert_int_eq(delivery_add(&o, ids, 2, 0), 0);
	ck_assert_int_eq(delivery_may_deliver(&o, 2), 0);
	delivery_free(&o);
}
END_TEST

START_TEST(stalled_head_reported)
{
	struct delivery_list o = { 0 };
	uint64_t ids[] = { 7, 8 }, id = 0;
	const uint64_t S = 1000000000ULL;

	ck_assert_int_eq(delivery_add(&o, ids, 2, 0), 0);
	ck_assert_int_eq(delivery_waits_for(&o, 7), 1);
	ck_assert_int_eq(delivery_waits_for(&o, 9), 0);
	ck_assert_int_eq(delivery_stalled(&o, 1 * S, 3 * S, 0, &id), 0);
	ck_assert_int_eq(delivery_stalled(&o, 3 * S, 3 * S, 0, &id), 0);
	/* being received restarts the clock */
	ck_assert_int_eq(delivery_stalled(&o, 3 * S, 3 * S, 1, &id), 0);
	ck_assert_int_eq(delivery_stalled(&o, 5 * S, 3 * S, 0, &id), 0);
	ck_assert_int_eq(delivery_stalled(&o, 7 * S, 3 * S, 0, &id), 1);
	ck_assert_uint_eq(id, 7);
	delivery_mark_done(&o, 7);
	ck_assert_int_eq(delivery_waits_for(&o, 7), 0);
	/* a new head gets its own hold time */
	ck_assert_int_eq(delivery_stalled(&o, 8 * S, 3 * S, 0, &id), 0);
	ck_assert_int_eq(delivery_stalled(&o, 11 * S + 1, 3 * S, 0, &id), 1);
	ck_assert_uint_eq(id, 8);
	delivery_free(&o);
}
END_TEST

/*
 * An ordered channel (a scheduler gave it an order) holds a finished transfer no order named yet
 * (its data came before its `order`, delivery.h): delivery_unknown_waits says so; a channel never
 * ordered, or one whose orders were emptied (a lost scheduler), does not. Before, such an arrival
 * was handed over at once and applied ahead of transfers planned before it.
 */
START_TEST(unknown_ids_wait_on_ordered_channel)
{
	struct delivery_list o = { 0 };
	uint64_t a[] = { 30, 50 }, b[] = { 70 };

	ck_assert_int_eq(delivery_unknown_waits(&o, 70), 0); /* never ordered */
	ck_assert_int_eq(delivery_add(&o, a, 2, 0), 0);
	ck_assert_int_eq(delivery_unknown_waits(&o, 70), 1); /* 70's order is still on its way */
	ck_assert_int_eq(delivery_unknown_waits(&o, 50), 0); /* named: delivery_may_deliver rules */
	delivery_mark_done(&o, 30);
	delivery_mark_done(&o, 50);
	ck_assert_int_eq(o.n, 0);
	ck_assert_int_eq(delivery_unknown_waits(&o, 70), 1); /* still ordered with nothing awaited */
	ck_assert_int_eq(delivery_add(&o, b, 1, 0), 0); /* its order came */
	ck_assert_int_eq(delivery_unknown_waits(&o, 70), 0);
	ck_assert_int_eq(delivery_may_deliver(&o, 70), 1);
	ck_assert_int_eq(delivery_add(&o, NULL, 0, 1), 0); /* emptied: no scheduler orders it now */
	ck_assert_int_eq(delivery_unknown_waits(&o, 90), 0);
	ck_assert_int_eq(delivery_add(&o, NULL, 0, 0), 0); /* an empty append changes nothing */
	ck_assert_int_eq(delivery_unknown_waits(&o, 90), 0);
	delivery_free(&o);
}
END_TEST

int main(void)
{
	const TTest *tests[] = { holds_early_arrivals, append_and_replace, done_head_entries_dropped,
				 stalled_head_reported, unknown_ids_wait_on_ordered_channel };
	return test_dp_run("delivery", tests, 5);
}
