/* test_sched_shard.c - Check tests of the daemon's sharded servers (§10.2, docs/scheduler.md). */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ck_run.h"
#include "clock.h"
#include "ctl.h"
#include "sched_daemon.h"
#include "sched_fake.h"

#define N_W 3
#define HALF 1000 /* floats per shard; the model has 2 * HALF */
#define UPD_BYTES (1024 + 4 * 2 * HALF)
#define LEG_BYTES (1024 + 4 * HALF)

static const char *str(json_t *m, const char *k)
{
	const char *s = json_string_value(json_object_get(m, k));
	return s ? s : "";
}

/* `register` of shard @k of 2 at fake @f (host @host): floats [k * HALF, +HALF) of 2 * HALF. */
static json_t *shard_reg(const char *host, int k, const char *mode, int64_t n_total, int64_t off)
{
	char app[64];

	snprintf(app, sizeof(app), "server@%s", host);
	return json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:i, s:f, s:i, s:i, s:i, s:I, s:I}",
			 "type", "register", "app", app, "role", "server", "mode", mode,
			 "n_floats", HALF, "bytes", LEG_BYTES, "version", 5, "tau_max", 8, "momentum",
			 0.9, "n_workers", N_W, "shard", k, "n_shards", 2, "offset", (json_int_t)off,
			 "n_total", (json_int_t)n_total);
}

/* Daemon with workers w0..w2 (@w), shard 0 at ps (returned) and shard 1 at a0 (*@s1). */
static int two_shards(int *w, int *s1)
{
	start_daemon(NULL);
	int ps = setup(NULL, 0, 0, N_W, w, NULL);
	*s1 = fake_open("a0");
	fake_send(ps, shard_reg("ps", 0, "async", 2 * HALF, 0));
	ck_assert_ptr_nonnull(wait_msg(ps, "registered", 2.0));
	fake_send(*s1, shard_reg("a0", 1, "async", 2 * HALF, HALF));
	ck_assert_ptr_nonnull(wait_msg(*s1, "registered", 2.0));
	return ps;
}

/* Index in got[] of the first message of @type to fake @f from @from on, or -1. */
static int first(int f, const char *type, const char *what, int from)
{
	for (int i = from; i < n_got; i++)
		if (got[i].fake == f && !strcmp(str(got[i].m, "type"), type) &&
		    (!what || !strcmp(str(got[i].m, "what"), what)))
			return i;
	return -1;
}

/* The ids of `order` message @i as a list of transfer ids (at most 8) in @x; returns how many. */
static int order_ids(int i, uint64_t *x)
{
	json_t *a = json_object_get(got[i].m, "xfers");
	int n = (int)json_array_size(a);

	for (int k = 0; k < n && k < 8; k++)
		x[k] = (uint64_t)json_integer_value(json_array_get(a, (size_t)k));
	return n;
}

/* Update 1001 from w0, then its leg to shard 1 (fake @s1) fails: returns that leg's id. */
static uint64_t lose_leg_to_s1(const int *w, int s1)
{
	char app[64];
	uint64_t x1[8];

	push(w[0], 1001, 5, UPD_BYTES);
	pump(0.3);
	order_ids(first(s1, "order", NULL, 0), x1);
	fake_send(w[0], json_pack("{s:s, s:s, s:I, s:i, s:s}", "type", "done", "app",
				  app_of(w[0], "worker", app), "xfer", (json_int_t)x1[0], "status",
				  -110, "reason", "peer a0 silent"));
	pump(0.3);
	return x1[0];
}

/* Pull @id from worker fake @wk: the copies from @ps and @s1 (messages from @from on) are at
 * own versions @at0 and @at1 of group version @v. */
static void pull_copies(int wk, int id, int ps, int s1, int from, int64_t at0, int64_t at1,
			int64_t v)
{
	char app[64];

	fake_send(wk, json_pack("{s:s, s:s, s:i, s:s}", "type", "pull", "app",
				app_of(wk, "worker", app), "id", id, "server", "ps"));
	pump(0.3);
	int m0 = first(ps, "send", "model", from), m1 = first(s1, "send", "model", from);
	ck_assert_int_ge(m0, 0);
	ck_assert_int_ge(m1, 0);
	ck_assert_int_eq(json_integer_value(json_object_get(got[m0].m, "at_version")), at0);
	ck_assert_int_eq(json_integer_value(json_object_get(got[m1].m, "at_version")), at1);
	ck_assert_int_eq(json_integer_value(json_object_get(got[m0].m, "version")), v);
	ck_assert_int_eq(json_integer_value(json_object_get(got[m1].m, "version")), v);
}

/*
 * Two updates and a pull in one batch: each update is sent as two legs (its slices [0, HALF) to
 * ps and [HALF, 2 HALF) to a0, `keep` on the first), both shard servers get one commit order
 * naming their legs in the same update order; each shard server sends its slice of the model
 * to the pulling worker, at the group version (5) and before the batch's order.
 */
START_TEST(update_legs_orders_and_pull_copies)
{
	int w[N_W], s1, ps = two_shards(w, &s1);
	char app[64];

	push(w[0], 1001, 5, UPD_BYTES);
	push(w[1], 1002, 5, UPD_BYTES);
	fake_send(w[2], json_pack("{s:s, s:s, s:i, s:s}", "type", "pull", "app",
				  app_of(w[2], "worker", app), "id", 300, "server", "a0"));
	pump(0.4);
	int shard_f[2] = { ps, s1 };
	uint64_t ord[2][8];
	for (int k = 0; k < 2; k++) {
		int o = first(shard_f[k], "order", NULL, 0);
		ck_assert_int_ge(o, 0);
		ck_assert_int_eq(order_ids(o, ord[k]), 2);
		int m = first(shard_f[k], "send", "model", 0);
		ck_assert_int_ge(m, 0);
		ck_assert_int_lt(m, o); /* the copy is there before the order: no shard passes v */
		ck_assert_uint_eq(jid(got[m].m, "id"), 300);
		ck_assert_str_eq(str(got[m].m, "dst"), "w2");
		ck_assert_int_eq(json_integer_value(json_object_get(got[m].m, "at_version")), 5);
		ck_assert_int_eq(json_integer_value(json_object_get(got[m].m, "version")), 5);
		ck_assert_uint_eq(jid(got[m].m, "bytes"), LEG_BYTES);
	}
	for (int i = 0; i < 2; i++) {
		uint64_t leg[2] = { 0, 0 };
		int n = 0;
		for (int g = 0; g < n_got; g++) {
			json_t *m = got[g].m;
			if (got[g].fake != w[i] || strcmp(str(m, "type"), "send"))
				continue;
			int k = !strcmp(str(m, "dst"), "a0");
			ck_assert_uint_eq(jid(m, "id"), 1001 + (uint64_t)i);
			ck_assert_uint_eq(jid(m, "offset"), (uint64_t)(k * HALF));
			ck_assert_uint_eq(jid(m, "n_floats"), HALF);
			ck_assert_uint_eq(jid(m, "bytes"), LEG_BYTES);
			ck_assert_int_eq(json_is_true(json_object_get(m, "keep")), n == 0);
			leg[k] = jid(m, "xfer");
			n++;
		}
		ck_assert_int_eq(n, 2);
		ck_assert_uint_ne(leg[0], leg[1]);
		/* the update's legs sit at the same place of both orders */
		int p0 = leg[0] == ord[0][0] ? 0 : leg[0] == ord[0][1] ? 1 : -1;
		int p1 = leg[1] == ord[1][0] ? 0 : leg[1] == ord[1][1] ? 1 : -1;
		ck_assert_int_ge(p0, 0);
		ck_assert_int_eq(p0, p1);
	}
	stop_daemon();
}
END_TEST

/*
 * The group version is the lowest of the shards': a pull waiting for version 6 is not answered
 * while only ps committed its leg of the batch's update, and is once a0 committed too.
 */
START_TEST(group_version_waits_for_every_shard)
{
	int w[N_W], s1, ps = two_shards(w, &s1);
	char app[64];

	push(w[0], 1001, 5, UPD_BYTES);
	pump(0.3);
	int o0 = first(ps, "order", NULL, 0), o1 = first(s1, "order", NULL, 0);
	ck_assert_int_ge(o0, 0);
	ck_assert_int_ge(o1, 0);
	uint64_t x0[8], x1[8];
	order_ids(o0, x0);
	order_ids(o1, x1);
	fake_send(w[2], json_pack("{s:s, s:s, s:i, s:s, s:i}", "type", "pull", "app",
				  app_of(w[2], "worker", app), "id", 301, "server", "ps",
				  "min_version", 6));
	fake_send(ps, json_pack("{s:s, s:s, s:I, s:i, s:f, s:[i]}", "type", "commit", "app",
				"server@ps", "xfer", (json_int_t)x0[0], "version", 6, "t",
				clock_real_s(), "parts", 1001));
	pump(0.3);
	ck_assert_int_eq(first(ps, "send", "model", 0), -1);
	fake_send(s1, json_pack("{s:s, s:s, s:I, s:i, s:f, s:[i]}", "type", "commit", "app",
				"server@a0", "xfer", (json_int_t)x1[0], "version", 6, "t",
				clock_real_s(), "parts", 1001));
	pump(0.3);
	int m0 = first(ps, "send", "model", 0), m1 = first(s1, "send", "model", 0);
	ck_assert_int_ge(m0, 0);
	ck_assert_int_ge(m1, 0);
	ck_assert_int_eq(json_integer_value(json_object_get(got[m1].m, "version")), 6);
	stop_daemon();
}
END_TEST

/*
 * A leg that fails is skipped at its own shard server only; that shard's own version then
 * stays one behind the group's, so the next pull's copy from it waits for version - 1.
 */
START_TEST(lost_leg_skipped_at_its_shard)
{
	int w[N_W], s1, ps = two_shards(w, &s1);
	uint64_t x1 = lose_leg_to_s1(w, s1);

	int sk = first(s1, "skip", NULL, 0);
	ck_assert_int_ge(sk, 0);
	ck_assert_uint_eq((uint64_t)json_integer_value(json_array_get(json_object_get(got[sk].m,
			  "xfers"), 0)), x1);
	ck_assert_int_eq(first(ps, "skip", NULL, 0), -1);
	pull_copies(w[2], 302, ps, s1, 0, 6, 5, 6);
	stop_daemon();
}
END_TEST

/*
 * A shard that skipped a leg and registers again (its host was taken for dead, its dataplane
 * reconnected) joins at its own version, one behind the group's: accepted with lag 1, so the
 * next pull's copy from it is at its own version 5 for group version 6. Refusing it (as the
 * daemon did) left the group without shard 1 and every pull failing for good. A shard ahead of
 * a complete group is refused, naming the version.
 */
START_TEST(lagging_shard_rejoins)
{
	int w[N_W], s1, ps = two_shards(w, &s1);
	uint64_t x1 = lose_leg_to_s1(w, s1);

	json_t *r = shard_reg("a0", 1, "async", 2 * HALF, HALF);
	json_object_set_new(r, "version", json_integer(7));
	int from = n_got;
	fake_send(s1, r);
	json_t *e = wait_msg(s1, "error", 2.0);
	ck_assert_ptr_nonnull(e);
	ck_assert_ptr_nonnull(strstr(str(e, "reason"), "ahead"));
	ck_assert_int_eq(first(s1, "registered", NULL, from), -1);
	from = n_got;
	fake_send(s1, shard_reg("a0", 1, "async", 2 * HALF, HALF)); /* its own version: 5 */
	ck_assert_ptr_nonnull(wait_msg(s1, "registered", 2.0));
	/* the skip of the leg lost while it was away is sent again */
	int sk = first(s1, "skip", NULL, from);
	ck_assert_int_ge(sk, 0);
	ck_assert_uint_eq((uint64_t)json_integer_value(json_array_get(json_object_get(got[sk].m,
			  "xfers"), 0)), x1);
	pull_copies(w[2], 302, ps, s1, n_got, 6, 5, 6);
	stop_daemon();
}
END_TEST

/*
 * A leg declared lost (lag 1 at a0) that a0 commits after all (delivered before the failure was
 * declared): its part leaves the lag, so the next pull's copy from a0 is at its own version 6,
 * not 5 (the copy would find a0 past it for good).
 */
START_TEST(skipped_leg_committed_after_all)
{
	int w[N_W], s1, ps = two_shards(w, &s1);
	uint64_t x1 = lose_leg_to_s1(w, s1);

	fake_send(s1, json_pack("{s:s, s:s, s:I, s:i, s:f, s:[i]}", "type", "commit", "app",
				"server@a0", "xfer", (json_int_t)x1, "version", 6, "t",
				clock_real_s(), "parts", 1001));
	pump(0.3);
	pull_copies(w[2], 303, ps, s1, n_got, 6, 6, 6);
	stop_daemon();
}
END_TEST

/*
 * After a scheduler restart the lagging shard may register first: the second, ahead of it,
 * lifts the (still incomplete, unplanned) group to its version and the first lags by the
 * difference, so a pull gets copies at own versions 5 and 7 of group version 7.
 */
START_TEST(shard_ahead_lifts_incomplete_group)
{
	int w[N_W];

	start_daemon(NULL);
	int ps = setup(NULL, 0, 0, N_W, w, NULL);
	int s1 = fake_open("a0");
	fake_send(ps, shard_reg("ps", 0, "async", 2 * HALF, 0));
	ck_assert_ptr_nonnull(wait_msg(ps, "registered", 2.0));
	json_t *r = shard_reg("a0", 1, "async", 2 * HALF, HALF);
	json_object_set_new(r, "version", json_integer(7));
	fake_send(s1, r);
	ck_assert_ptr_nonnull(wait_msg(s1, "registered", 2.0));
	pull_copies(w[1], 402, ps, s1, 0, 5, 7, 7);
	stop_daemon();
}
END_TEST

/*
 * Aggregation per shard (§5.2 with eq. 18): with the shard servers' downlinks the bottleneck,
 * three updates go through aggregator a0: each worker sends both slices there (chan 2, with
 * offsets), a0 gets one `aggregate` per shard (same inputs, `offset` of the shard, to that
 * shard's server), and each shard server's order names its own aggregate.
 */
START_TEST(aggregates_per_shard)
{
	int w[N_W], a0;

	start_daemon(NULL);
	int ps = setup(NULL, 0, 0, N_W, w, &a0);
	int s1 = fake_open("r0");
	json_t *r = shard_reg("ps", 0, "async", 2 * HALF * 1000, 0);
	json_object_set_new(r, "n_floats", json_integer(HALF * 1000));
	fake_send(ps, r);
	ck_assert_ptr_nonnull(wait_msg(ps, "registered", 2.0));
	r = shard_reg("r0", 1, "async", 2 * HALF * 1000, HALF);
	json_object_set_new(r, "offset", json_integer(HALF * 1000));
	json_object_set_new(r, "n_floats", json_integer(HALF * 1000));
	fake_send(s1, r);
	ck_assert_ptr_nonnull(wait_msg(s1, "registered", 2.0));
	for (int i = 0; i < N_W; i++)
		push(w[i], 2001 + (uint64_t)i, 5, 1024 + 4 * 2 * HALF * 1000);
	pump(0.4);
	int n_agg = 0;
	uint64_t aggx[2] = { 0, 0 };
	for (int g = 0; g < n_got; g++) {
		json_t *m = got[g].m;
		if (got[g].fake != a0 || strcmp(str(m, "type"), "aggregate"))
			continue;
		int k = !strcmp(str(m, "dst"), "r0");
		ck_assert_uint_eq(jid(m, "offset"), (uint64_t)k * HALF * 1000);
		ck_assert_int_eq((int)json_array_size(json_object_get(m, "inputs")), N_W);
		aggx[k] = jid(m, "agg");
		n_agg++;
	}
	ck_assert_int_eq(n_agg, 2);
	ck_assert_uint_ne(aggx[0], aggx[1]);
	int shard_f[2] = { ps, s1 };
	for (int k = 0; k < 2; k++) {
		uint64_t ord[8];
		ck_assert_int_eq(order_ids(first(shard_f[k], "order", NULL, 0), ord), 1);
		ck_assert_uint_eq(ord[0], aggx[k]);
	}
	for (int i = 0; i < N_W; i++) {
		int n = 0;
		for (int g = 0; g < n_got; g++)
			if (got[g].fake == w[i] && !strcmp(str(got[g].m, "type"), "send")) {
				ck_assert_str_eq(str(got[g].m, "dst"), "a0");
				ck_assert_int_eq((int)jid(got[g].m, "chan"), 2);
				n++;
			}
		ck_assert_int_eq(n, 2);
	}
	stop_daemon();
}
END_TEST

/* Registrations that do not fit the group are refused, naming the field. */
START_TEST(bad_shard_registrations_refused)
{
	int w[N_W];

	start_daemon(NULL);
	int ps = setup(NULL, 0, 0, N_W, w, NULL);
	int s1 = fake_open("a0");
	fake_send(ps, shard_reg("ps", 0, "sync", 2 * HALF, 0));
	json_t *e = wait_msg(ps, "error", 2.0);
	ck_assert_ptr_nonnull(e);
	ck_assert_ptr_nonnull(strstr(str(e, "reason"), "mode"));
	fake_send(ps, shard_reg("ps", 0, "async", 2 * HALF, 0));
	ck_assert_ptr_nonnull(wait_msg(ps, "registered", 2.0));
	fake_send(s1, shard_reg("a0", 1, "async", 3 * HALF, HALF));
	e = wait_msg(s1, "error", 2.0);
	ck_assert_ptr_nonnull(e);
	ck_assert_ptr_nonnull(strstr(str(e, "reason"), "n_total"));
	fake_send(s1, shard_reg("a0", 1, "async", 2 * HALF, HALF / 2));
	e = wait_msg(s1, "error", 2.0);
	ck_assert_ptr_nonnull(e);
	ck_assert_ptr_nonnull(strstr(str(e, "reason"), "overlap"));
	/* incomplete group: nothing is planned */
	push(w[0], 1001, 5, UPD_BYTES);
	pump(0.3);
	ck_assert_int_eq(count_msgs(w[0], "send"), 0);
	stop_daemon();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sched_shard");
	TCase *tc = tcase_create("shards");

	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, update_legs_orders_and_pull_copies);
	tcase_add_test(tc, group_version_waits_for_every_shard);
	tcase_add_test(tc, lost_leg_skipped_at_its_shard);
	tcase_add_test(tc, lagging_shard_rejoins);
	tcase_add_test(tc, skipped_leg_committed_after_all);
	tcase_add_test(tc, shard_ahead_lifts_incomplete_group);
	tcase_add_test(tc, bad_shard_registrations_refused);
	tcase_add_test(tc, aggregates_per_shard);
	suite_add_tcase(s, tc);
	return ck_run(s);
}
