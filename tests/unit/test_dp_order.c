/* test_dp_order.c - Check tests of commit-order delivery bookkeeping (order.c). */
#include <check.h>

#include "order.h"
#include "test_dp_main.h"

START_TEST(holds_early_arrivals)
{
	struct order_list o = { 0 };
	uint64_t ids[] = { 30, 50, 70 };

	ck_assert_int_eq(order_add(&o, ids, 3, 1), 0);
	/* 70 and 50 arrived first: both wait for 30 */
	ck_assert_int_eq(order_may_deliver(&o, 70), 0);
	ck_assert_int_eq(order_may_deliver(&o, 50), 0);
	ck_assert_int_eq(order_may_deliver(&o, 30), 1);
	/* ids outside the order are never held */
	ck_assert_int_eq(order_may_deliver(&o, 99), 1);
	order_mark_done(&o, 30);
	ck_assert_int_eq(order_may_deliver(&o, 50), 1);
	ck_assert_int_eq(order_may_deliver(&o, 70), 0);
	order_mark_done(&o, 50);
	ck_assert_int_eq(order_may_deliver(&o, 70), 1);
	order_free(&o);
}
END_TEST

START_TEST(append_and_replace)
{
	struct order_list o = { 0 };
	uint64_t a[] = { 1, 2 }, b[] = { 3 }, c[] = { 9, 8 };

	ck_assert_int_eq(order_add(&o, a, 2, 0), 0);
	ck_assert_int_eq(order_add(&o, b, 1, 0), 0);
	ck_assert_int_eq(o.n, 3);
	order_mark_done(&o, 1);
	ck_assert_int_eq(order_may_deliver(&o, 3), 0); /* 2 still missing */
	order_mark_done(&o, 2);
	ck_assert_int_eq(order_may_deliver(&o, 3), 1);
	/* a new batch replaces the order: 8 waits for 9, the old ids are free */
	ck_assert_int_eq(order_add(&o, c, 2, 1), 0);
	ck_assert_int_eq(o.n, 2);
	ck_assert_int_eq(order_may_deliver(&o, 8), 0);
	ck_assert_int_eq(order_may_deliver(&o, 3), 1);
	order_free(&o);
	ck_assert_ptr_null(o.ids);
}
END_TEST

int main(void)
{
	const TTest *tests[] = { holds_early_arrivals, append_and_replace };
	return test_dp_run("order", tests, 2);
}
