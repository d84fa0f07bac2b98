/* test_dp_announce.c - Check tests of the receiver's announcement table (dataplane/core/announce.c). */
#include <check.h>
#include <errno.h>

#include "announce.h"
#include "test_dp_main.h"

#define S 1000000000ULL

START_TEST(announced_once_from_its_peer_on_its_channel)
{
	struct announce a;

	ck_assert_int_eq(announce_init(&a, 4, 60 * S), 0);
	ck_assert_int_eq(announce_take(&a, 1, 1, 0x77, 0), 0); /* nothing announced */
	ck_assert_int_eq(announce_add(&a, 1, 1, 0x77, 0), 0);
	/* another sender, another channel: refused, and the entry stays for the real one */
	ck_assert_int_eq(announce_take(&a, 2, 1, 0x77, S), -1);
	ck_assert_int_eq(announce_take(&a, 1, 3, 0x77, S), -1);
	ck_assert_int_eq(announce_take(&a, 1, 1, 0x78, S), 0);
	ck_assert_int_eq(announce_take(&a, 1, 1, 0x77, S), 1);
	/* an id is received once */
	ck_assert_int_eq(announce_take(&a, 1, 1, 0x77, S), 0);
	ck_assert_uint_eq(a.added, 1);
	announce_free(&a);
	announce_free(&a); /* twice is safe */
}
END_TEST

START_TEST(expires_after_ttl)
{
	struct announce a;

	ck_assert_int_eq(announce_init(&a, 2, 10 * S), 0);
	ck_assert_int_eq(announce_add(&a, 0, 3, 5, 1 * S), 0);
	ck_assert_int_eq(announce_add(&a, 0, 3, 6, 1 * S), 0);
	ck_assert_int_eq(announce_take(&a, 0, 3, 5, 11 * S - 1), 1);
	ck_assert_int_eq(announce_take(&a, 0, 3, 6, 11 * S), 0); /* expired exactly at ttl */
	announce_free(&a);
}
END_TEST

START_TEST(full_table_forgets_oldest)
{
	struct announce a;

	ck_assert_int_eq(announce_init(&a, 2, 60 * S), 0);
	for (uint64_t id = 1; id <= ANNOUNCE_CAP + 10; id++)
		ck_assert_int_eq(announce_add(&a, 1, 2, id, 0), 0);
	ck_assert_uint_eq(a.evicted, 10);
	ck_assert_int_eq(a.n, ANNOUNCE_CAP);
	for (uint64_t id = 1; id <= 10; id++)
		ck_assert_int_eq(announce_take(&a, 1, 2, id, 1), 0);
	ck_assert_int_eq(announce_take(&a, 1, 2, 11, 1), 1);
	ck_assert_int_eq(announce_take(&a, 1, 2, ANNOUNCE_CAP + 10, 1), 1);
	/* a taken slot overwritten later is not an eviction */
	ck_assert_int_eq(announce_add(&a, 1, 2, 999999, 2), 0);
	ck_assert_uint_eq(a.evicted, 10);
	announce_free(&a);
}
END_TEST

START_TEST(standing_permission_per_peer_and_channel)
{
	struct announce a;

	ck_assert_int_eq(announce_init(&a, 3, 60 * S), 0);
	ck_assert_int_eq(announce_standing(&a, 2, 4, 1), 0);
	ck_assert_int_eq(announce_take(&a, 2, 4, 123, 0), 1);
	ck_assert_int_eq(announce_take(&a, 2, 4, 124, 0), 1); /* every id, not consumed */
	ck_assert_int_eq(announce_take(&a, 1, 4, 123, 0), 0);
	ck_assert_int_eq(announce_take(&a, 2, 1, 123, 0), 0);
	ck_assert_int_eq(announce_standing(&a, 2, 4, 0), 0);
	ck_assert_int_eq(announce_take(&a, 2, 4, 125, 0), 0);
	announce_free(&a);
}
END_TEST

START_TEST(bad_arguments_store_nothing)
{
	struct announce a;

	ck_assert_int_eq(announce_init(&a, 0, S), -EINVAL);
	ck_assert_int_eq(announce_init(&a, 2, 0), -EINVAL);
	ck_assert_int_eq(announce_init(&a, 2, S), 0);
	ck_assert_int_eq(announce_add(&a, 2, 1, 5, 0), -EINVAL);
	ck_assert_int_eq(announce_add(&a, -1, 1, 5, 0), -EINVAL);
	ck_assert_int_eq(announce_add(&a, 1, 64, 5, 0), -EINVAL);
	ck_assert_int_eq(announce_add(&a, 1, 1, 0, 0), -EINVAL);
	ck_assert_int_eq(announce_standing(&a, 5, 1, 1), -EINVAL);
	ck_assert_int_eq(announce_standing(&a, 1, 64, 1), -EINVAL);
	ck_assert_int_eq(a.n, 0);
	ck_assert_int_eq(announce_take(&a, 7, 1, 5, 0), 0);
	announce_free(&a);
	/* a zeroed (never initialised) table announces nothing */
	ck_assert_int_eq(announce_take(&a, 0, 1, 5, 0), 0);
	ck_assert_int_eq(announce_add(&a, 0, 1, 5, 0), -EINVAL);
}
END_TEST

int main(void)
{
	const TTest *tests[] = { announced_once_from_its_peer_on_its_channel, expires_after_ttl,
				 full_table_forgets_oldest, standing_permission_per_peer_and_channel,
				 bad_arguments_store_nothing };
	return test_dp_run("announce", tests, 5);
}
