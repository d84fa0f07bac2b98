/* test_sched_shard.c - Check tests of the daemon's sharded servers (§10.2, docs/scheduler.md). */
#include <check.h>
#include <inttypes.h>
#include <math.h>
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

/*
 * Daemon (config changed by @tweak, may be NULL) with workers w0..w2 (@w), shard 0 at ps
 * (returned; version 5) and then shard 1 at a0 (*@s1; version @v1), both registered in @mode
 * ("mlfabric-a" or "mlfabric-s").
 */
static int two_shards_in(int *w, int *s1, const char *mode, void (*tweak)(struct sched_config *),
			 int64_t v1)
{
	start_daemon(tweak);
	int ps = setup(NULL, 0, 0, N_W, w, NULL);
	*s1 = fake_open("a0");
	fake_send(ps, shard_reg("ps", 0, mode, 2 * HALF, 0));
	ck_assert_ptr_nonnull(wait_msg(ps, "registered", 2.0));
	json_t *r = shard_reg("a0", 1, mode, 2 * HALF, HALF);
	json_object_set_new(r, "version", json_integer(v1));
	fake_send(*s1, r);
	ck_assert_ptr_nonnull(wait_msg(*s1, "registered", 2.0));
	return ps;
}

/* two_shards_in() for MLfabric-A with the test config, both shards at version 5. */
static int two_shards(int *w, int *s1)
{
	return two_shards_in(w, s1, "mlfabric-a", NULL, 5);
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

/* A `pull` @id from worker fake @wk to @server, with @min_version (MLfabric-S) when >= 0. */
static void send_pull(int wk, int id, const char *server, int64_t min_version)
{
	char app[64];
	json_t *m = json_pack("{s:s, s:s, s:i, s:s}", "type", "pull", "app", app_of(wk, "worker", app),
			      "id", id, "server", server);

	if (min_version >= 0)
		json_object_set_new(m, "min_version", json_integer(min_version));
	fake_send(wk, m);
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
	send_pull(wk, id, "ps", -1);
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

	push(w[0], 1001, 5, UPD_BYTES);
	push(w[1], 1002, 5, UPD_BYTES);
	send_pull(w[2], 300, "a0", -1);
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

	push(w[0], 1001, 5, UPD_BYTES);
	pump(0.3);
	int o0 = first(ps, "order", NULL, 0), o1 = first(s1, "order", NULL, 0);
	ck_assert_int_ge(o0, 0);
	ck_assert_int_ge(o1, 0);
	uint64_t x0[8], x1[8];
	order_ids(o0, x0);
	order_ids(o1, x1);
	send_pull(w[2], 301, "ps", 6);
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

	json_t *r = shard_reg("a0", 1, "mlfabric-a", 2 * HALF, HALF);
	json_object_set_new(r, "version", json_integer(7));
	int from = n_got;
	fake_send(s1, r);
	json_t *e = wait_msg(s1, "error", 2.0);
	ck_assert_ptr_nonnull(e);
	ck_assert_ptr_nonnull(strstr(str(e, "reason"), "ahead"));
	ck_assert_int_eq(first(s1, "registered", NULL, from), -1);
	from = n_got;
	fake_send(s1, shard_reg("a0", 1, "mlfabric-a", 2 * HALF, HALF)); /* its own version: 5 */
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
	int w[N_W], s1, ps = two_shards_in(w, &s1, "mlfabric-a", NULL, 7);

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
	json_t *r = shard_reg("ps", 0, "mlfabric-a", 2 * HALF * 1000, 0);
	json_object_set_new(r, "n_floats", json_integer(HALF * 1000));
	fake_send(ps, r);
	ck_assert_ptr_nonnull(wait_msg(ps, "registered", 2.0));
	r = shard_reg("r0", 1, "mlfabric-a", 2 * HALF * 1000, HALF);
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

/* A slow fallback tick (2 s): what is held waits for its release, not for a tick. */
static void slow_tick(struct sched_config *c)
{
	c->batch_s = 2.0;
}

/*
 * Gathering behind a busy link with shards (docs/scheduler.md "Gathering behind a busy link"):
 * an update starts with its first leg. Shards at ps (1 Gbit/s down) and a0 (10): w0's 200 MB
 * update reserves ps's downlink for 0.84 s and a0's for a tenth of that; w1's update, pushed
 * 0.3 s later, has a0's downlink free, so it is planned at once (a leg to a0 goes now), not held
 * until ps's downlink frees.
 */
START_TEST(sharded_update_starts_with_first_free_leg)
{
	const int64_t K = 25000; /* 100 MB per leg */
	int w[N_W];

	start_daemon(slow_tick);
	int ps = setup(NULL, 0, 0, N_W, w, NULL);
	int s1 = fake_open("a0");
	for (int k = 0; k < 2; k++) {
		json_t *r = shard_reg(k ? "a0" : "ps", k, "mlfabric-a", 2 * HALF * K, k * HALF * K);
		json_object_set_new(r, "n_floats", json_integer(HALF * K));
		fake_send(k ? s1 : ps, r);
		ck_assert_ptr_nonnull(wait_msg(k ? s1 : ps, "registered", 2.0));
	}
	push(w[0], 3001, 5, 1024 + 4 * 2 * HALF * K);
	ck_assert_ptr_nonnull(wait_msg(w[0], "send", 2.0));
	pump(0.3);
	double t0 = clock_real_s();
	push(w[1], 3002, 5, 1024 + 4 * 2 * HALF * K);
	json_t *m = wait_msg(w[1], "send", 2.0);
	double t = clock_real_s() - t0;
	ck_assert_ptr_nonnull(m);
	ck_assert_msg(t < 0.42, "w1's update planned %.3f s after its push: held until ps's "
		      "downlink frees (0.84 s after w0's), though a0's was free", t);
	stop_daemon();
}
END_TEST

/* The planned start or end (CLOCK_REALTIME s) of transfer @x in transfers.jsonl; asserts it. */
static double rec_time(uint64_t x, const char *k)
{
	json_t *r = rec_find("transfers.jsonl", "xfer", x);
	ck_assert_msg(r != NULL, "transfer %" PRIu64 " not in transfers.jsonl", x);
	double v = json_number_value(json_object_get(r, k));
	json_decref(r);
	return v;
}

static int wait_mode;
static void set_copy_wait(struct sched_config *c)
{
	c->copy_wait = wait_mode;
}

/*
 * --copy-wait and the aggregate legs: three updates of 40 MB (two 20 MB legs each) aggregated
 * at a0, then a pull from w0 while the aggregate to ps is still in flight. The pull's copy
 * from ps carries the version that includes the aggregate, so with `legs` it is planned to
 * start once the aggregate's planned end is reached; with `updates` (before 2026-11-26) it was
 * planned at once and the shard, waiting for that version, started it late.
 */
static void copy_after_aggregate(int mode, int waits)
{
	int w[N_W], a0;
	const int64_t nf = (int64_t)HALF * 5000; /* floats per shard: 20 MB legs */

	wait_mode = mode;
	start_daemon(set_copy_wait);
	int ps = setup(NULL, 0, 0, N_W, w, &a0);
	int s1 = fake_open("r0");
	for (int k = 0; k < 2; k++) {
		json_t *r = shard_reg(k ? "r0" : "ps", k, "mlfabric-a", 2 * nf, k * nf);
		json_object_set_new(r, "n_floats", json_integer(nf));
		fake_send(k ? s1 : ps, r);
		ck_assert_ptr_nonnull(wait_msg(k ? s1 : ps, "registered", 2.0));
	}
	for (int i = 0; i < N_W; i++)
		push(w[i], 3001 + (uint64_t)i, 5, 1024 + 4 * 2 * (uint64_t)nf);
	json_t *ag = NULL;
	while ((ag = wait_msg(a0, "aggregate", 2.0)) && strcmp(str(ag, "dst"), "ps"))
		;
	ck_assert_ptr_nonnull(ag);
	uint64_t aggx = jid(ag, "agg");
	send_pull(w[0], 310, "ps", -1);
	json_t *cp = wait_msg(ps, "send", 2.0);
	ck_assert_ptr_nonnull(cp);
	ck_assert_str_eq(str(cp, "what"), "model");
	double agg_end = rec_time(aggx, "end"), copy_start = rec_time(jid(cp, "xfer"), "start");
	double batch_t = json_number_value(json_object_get(cp, "start"));
	ck_assert_msg(fabs(batch_t - copy_start) < 1e-3, "send start %.4f, record %.4f", batch_t,
		      copy_start);
	if (waits)
		ck_assert_msg(copy_start >= agg_end - 1e-3, "copy planned at %.4f, before the "
			      "aggregate's planned end %.4f", copy_start, agg_end);
	else
		ck_assert_msg(copy_start < agg_end - 0.02, "copy planned at %.4f, aggregate's "
			      "planned end %.4f: the pull came too late to show the old rule",
			      copy_start, agg_end);
	stop_daemon();
}

START_TEST(copy_waits_for_aggregate_legs)
{
	copy_after_aggregate(SCHED_COPY_WAIT_LEGS, 1);
}
END_TEST

START_TEST(copy_waits_for_aggregate_legs_learned)
{
	copy_after_aggregate(SCHED_COPY_WAIT_LEARNED, 1);
}
END_TEST

START_TEST(copy_wait_updates_ignores_aggregates)
{
	copy_after_aggregate(SCHED_COPY_WAIT_UPDATES, 0);
}
END_TEST

/*
 * --copy-wait learned (the default): shard ps commits a leg @wait_s after it was ordered (its
 * lateness: that minus the leg's planned duration, counted at most SCHED_LATE_MAX); a later
 * pull's copy from ps is planned that much after the planned end of the leg still in flight to
 * ps, while a0's copy (a0 committed nothing: no lateness learned) is not held back. With
 * @done_first the in-flight leg's sender reports `done` before the pull: the leg still holds
 * the copy, as its shard has not applied it.
 */
static void learned_copy(double wait_s, int done_first)
{
	int w[N_W], s1, ps = two_shards(w, &s1);
	char app[64];
	uint64_t x0[8], x1[8];

	push(w[0], 1001, 5, UPD_BYTES);
	pump(wait_s);
	int o0 = first(ps, "order", NULL, 0);
	ck_assert_int_ge(o0, 0);
	order_ids(o0, x0);
	double end0 = rec_time(x0[0], "end"), t_commit = clock_real_s();
	fake_send(ps, json_pack("{s:s, s:s, s:I, s:i, s:f, s:[i]}", "type", "commit", "app",
				"server@ps", "xfer", (json_int_t)x0[0], "version", 6, "t",
				t_commit, "parts", 1001));
	pump(0.1);
	double late = t_commit - end0; /* the daemon measured at least this */
	ck_assert_double_gt(late, 0.15);
	if (late > SCHED_LATE_MAX)
		late = SCHED_LATE_MAX;
	int from = n_got;
	push(w[1], 1002, 6, UPD_BYTES);
	for (int i = 0; i < 200 && first(ps, "order", NULL, from) < 0; i++)
		pump(0.01);
	int oi = first(ps, "order", NULL, from);
	ck_assert_int_ge(oi, 0);
	order_ids(oi, x1);
	if (done_first)
		fake_send(w[1], json_pack("{s:s, s:s, s:I, s:i}", "type", "done", "app",
					  app_of(w[1], "worker", app), "xfer", (json_int_t)x1[0],
					  "status", 0));
	send_pull(w[2], 311, "ps", -1);
	pump(0.3);
	int m0 = first(ps, "send", "model", from), m1 = first(s1, "send", "model", from);
	ck_assert_int_ge(m0, 0);
	ck_assert_int_ge(m1, 0);
	double end1 = rec_time(x1[0], "end");
	double c0 = json_number_value(json_object_get(got[m0].m, "start"));
	double c1 = json_number_value(json_object_get(got[m1].m, "start"));
	ck_assert_msg(c0 >= end1 + late - 0.01, "ps copy at %.4f, leg end %.4f + late %.3f", c0,
		      end1, late);
	ck_assert_msg(c0 < end1 + SCHED_LATE_MAX + 0.1, "ps copy at %.4f: more than leg end %.4f "
		      "+ %.1f s", c0, end1, SCHED_LATE_MAX);
	ck_assert_msg(c1 < c0 - 0.1, "a0 copy at %.4f held back like ps's (%.4f)", c1, c0);
	stop_daemon();
}

START_TEST(copy_waits_for_learned_lateness)
{
	learned_copy(0.3, 0);
}
END_TEST

START_TEST(copy_waits_for_leg_done_not_applied)
{
	learned_copy(0.3, 1);
}
END_TEST

/* A leg committed 1.2 s late teaches at most SCHED_LATE_MAX (0.5 s). */
START_TEST(copy_lateness_is_bounded)
{
	learned_copy(1.2, 0);
}
END_TEST

/* Registrations that do not fit the group are refused, naming the field. */
START_TEST(bad_shard_registrations_refused)
{
	int w[N_W];

	start_daemon(NULL);
	int ps = setup(NULL, 0, 0, N_W, w, NULL);
	int s1 = fake_open("a0");
	fake_send(ps, shard_reg("ps", 0, "mlfabric-a", 2 * HALF, 0));
	ck_assert_ptr_nonnull(wait_msg(ps, "registered", 2.0));
	/* the shards of one model serve one mode */
	fake_send(s1, shard_reg("a0", 1, "mlfabric-s", 2 * HALF, HALF));
	json_t *e = wait_msg(s1, "error", 2.0);
	ck_assert_ptr_nonnull(e);
	ck_assert_ptr_nonnull(strstr(str(e, "reason"), "mode"));
	fake_send(s1, shard_reg("a0", 1, "mlfabric-a", 3 * HALF, HALF));
	e = wait_msg(s1, "error", 2.0);
	ck_assert_ptr_nonnull(e);
	ck_assert_ptr_nonnull(strstr(str(e, "reason"), "n_total"));
	fake_send(s1, shard_reg("a0", 1, "mlfabric-a", 2 * HALF, HALF / 2));
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

/* Every transfer id the `order`s to fake @f named so far, in order, into @x (at most @max). */
static int all_order_ids(int f, uint64_t *x, int max)
{
	int n = 0;

	for (int i = 0; i < n_got; i++) {
		if (got[i].fake != f || strcmp(str(got[i].m, "type"), "order"))
			continue;
		json_t *a = json_object_get(got[i].m, "xfers");
		for (size_t k = 0; k < json_array_size(a) && n < max; k++)
			x[n++] = (uint64_t)json_integer_value(json_array_get(a, k));
	}
	return n;
}

/* --sync-timeout 3 s: far above the pumps between a test's first planned update and its check
 * that no sync_step came yet (under a second), on a loaded machine too */
static void short_sync_shards(struct sched_config *c)
{
	c->sync_timeout_s = 3.0;
}

/* --sync-timeout 30 s: an iteration that ends does so without it */
static void long_sync_shards(struct sched_config *c)
{
	c->sync_timeout_s = 30.0;
}

/*
 * MLfabric-S over two shard servers (§6 over §10.2). The three updates of the iteration from
 * version 5 are ordered to both shards. w1's pull for version 8 (the iteration's end) is
 * planned once they are, before either shard applied them: each shard's copy waits for its
 * step (at_version 8). Each shard then steps once (version 8, its legs' commits). w0's update
 * of the next iteration is ordered too (the group has 9 ordered), and w2's pull gets copies at
 * version 8 from both shards: an iteration boundary every shard sits at, not the ordered count
 * (a shard never sits at 9: its copy would wait for a version it jumps past, and fail). The
 * next iteration misses w1 and w2: after --sync-timeout both shard servers get `sync_step`
 * (version 8, parts 1), not only the first.
 */
START_TEST(sync_shards_step_together)
{
	int w[N_W], s1, ps = two_shards_in(w, &s1, "mlfabric-s", short_sync_shards, 5);

	for (int i = 0; i < N_W; i++)
		push(w[i], 1001 + (uint64_t)i, 5, UPD_BYTES);
	pump(0.3);
	int shard_f[2] = { ps, s1 };
	uint64_t x[2][8];
	for (int k = 0; k < 2; k++)
		ck_assert_int_eq(all_order_ids(shard_f[k], x[k], 8), N_W);
	/* the pull of the iteration's end, planned before any step */
	send_pull(w[1], 302, "ps", 8);
	pump(0.3);
	for (int k = 0; k < 2; k++) {
		int m = first(shard_f[k], "send", "model", 0);
		ck_assert_int_ge(m, 0);
		ck_assert_uint_eq(jid(got[m].m, "id"), 302);
		ck_assert_int_eq(json_integer_value(json_object_get(got[m].m, "at_version")), 8);
		ck_assert_int_eq(json_integer_value(json_object_get(got[m].m, "version")), 8);
		for (int j = 0; j < N_W; j++) /* the shard's iteration step: every leg at version 8 */
			fake_send(shard_f[k], json_pack("{s:s, s:s, s:I, s:i, s:f, s:[i]}", "type",
				  "commit", "app", k ? "server@a0" : "server@ps", "xfer",
				  (json_int_t)x[k][j], "version", 8, "t", clock_real_s(), "parts",
				  1001 + j));
	}
	pump(0.2);
	push(w[0], 1004, 8, UPD_BYTES); /* the next iteration's first update */
	pump(0.3);
	for (int k = 0; k < 2; k++)
		ck_assert_int_eq(all_order_ids(shard_f[k], x[k], 8), N_W + 1);
	int from = n_got;
	pull_copies(w[2], 303, ps, s1, from, 8, 8, 8);
	ck_assert_int_eq(count_msgs(ps, "sync_step"), 0);
	for (int k = 0; k < 2; k++) {
		json_t *st = wait_msg(shard_f[k], "sync_step", 4.0);
		ck_assert_ptr_nonnull(st);
		ck_assert_int_eq(jid(st, "version"), 8);
		ck_assert_int_eq(jid(st, "parts"), 1);
	}
	stop_daemon();
}
END_TEST

/*
 * A sharded MLfabric-S group whose lagging shard registered first (a restarted scheduler): ps
 * at version 5, then a0 at 8. The group moves up to 8 (ps lags by 3), and so does the iteration:
 * updates computed from version 8 are planned (with the iteration still at 5 they waited for
 * good). The iteration misses w2: each shard's `sync_step` names its own start version (ps 5,
 * a0 8; the library steps a short iteration only at its exact version), and a pull of its end
 * gets copies at each shard's own version of it (ps 7, a0 10).
 */
START_TEST(sync_shards_lagging_shard)
{
	int w[N_W], s1, ps = two_shards_in(w, &s1, "mlfabric-s", short_sync_shards, 8);

	push(w[0], 1001, 8, UPD_BYTES);
	push(w[1], 1002, 8, UPD_BYTES);
	pump(0.3);
	int shard_f[2] = { ps, s1 };
	uint64_t x[8];
	for (int k = 0; k < 2; k++)
		ck_assert_int_eq(all_order_ids(shard_f[k], x, 8), 2);
	for (int k = 0; k < 2; k++) {
		json_t *st = wait_msg(shard_f[k], "sync_step", 4.0);
		ck_assert_ptr_nonnull(st);
		ck_assert_int_eq(jid(st, "version"), (k ? 8 : 5));
		ck_assert_int_eq(jid(st, "parts"), 2);
	}
	send_pull(w[0], 305, "ps", 10);
	pump(0.3);
	for (int k = 0; k < 2; k++) {
		int m = first(shard_f[k], "send", "model", 0);
		ck_assert_int_ge(m, 0);
		ck_assert_int_eq(json_integer_value(json_object_get(got[m].m, "at_version")), (k ? 10 : 7));
		ck_assert_int_eq(json_integer_value(json_object_get(got[m].m, "version")), 10);
	}
	stop_daemon();
}
END_TEST

/* The worker fake of @w[0..N_W) commanded to send transfer @x, or -1. */
static int sender_of(const int *w, uint64_t x)
{
	for (int i = 0; i < n_got; i++)
		for (int k = 0; k < N_W; k++)
			if (got[i].fake == w[k] && !strcmp(str(got[i].m, "type"), "send") &&
			    jid(got[i].m, "xfer") == x)
				return w[k];
	return -1;
}

/*
 * MLfabric-S over two shards past a lost leg (docs/scheduler.md "MLfabric-S", Lost parts):
 * the iteration from version 5 gets all three updates planned (no sync_step); then one leg to
 * shard 1 (a0) fails: a0 gets a skip and `sync_step` version 5 parts 2, ps nothing. The next
 * iteration (group version 8) is planned at once, without --sync-timeout (30 s); a0, 1 behind,
 * is told it starts at its own version 7 with 3 parts, ps still nothing.
 */
START_TEST(sync_shards_lost_leg_steps)
{
	int w[N_W], s1, ps = two_shards_in(w, &s1, "mlfabric-s", long_sync_shards, 5);
	uint64_t x[8];
	char app[64];

	for (int i = 0; i < N_W; i++)
		push(w[i], 1001 + (uint64_t)i, 5, UPD_BYTES);
	pump(0.3);
	ck_assert_int_eq(all_order_ids(s1, x, 8), N_W);
	int wl = sender_of(w, x[0]);
	ck_assert_int_ge(wl, 0);
	fake_send(wl, json_pack("{s:s, s:s, s:I, s:i, s:s}", "type", "done", "app",
				app_of(wl, "worker", app), "xfer", (json_int_t)x[0], "status", -110,
				"reason", "peer a0 silent"));
	json_t *st = wait_msg(s1, "sync_step", 2.0);
	ck_assert_ptr_nonnull(st);
	ck_assert_int_eq(jid(st, "version"), 5);
	ck_assert_int_eq(jid(st, "parts"), 2);
	ck_assert_int_ge(first(s1, "skip", NULL, 0), 0);
	ck_assert_ptr_nonnull(wait_msg(wl, "drop", 1.0));
	for (int i = 0; i < N_W; i++)
		push(w[i], 1011 + (uint64_t)i, 8, UPD_BYTES);
	st = wait_msg(s1, "sync_step", 2.0);
	ck_assert_ptr_nonnull(st);
	ck_assert_int_eq(jid(st, "version"), 7);
	ck_assert_int_eq(jid(st, "parts"), 3);
	ck_assert_int_eq(all_order_ids(ps, x, 8), 2 * N_W);
	ck_assert_int_eq(count_msgs(ps, "sync_step"), 0);
	stop_daemon();
}
END_TEST

/* --sync-timeout 30 s, and transfer records kept 1.5 s instead of 60 s (an absence that
 * outlives them, fast) */
#define SHORT_KEEP_S 1.5
static void long_sync_short_records(struct sched_config *c)
{
	c->sync_timeout_s = 30.0;
	c->xfer_keep_s = SHORT_KEEP_S;
}

/* The leg to fake @f of the @i-th (from 0) update ordered to @f, its sender among @w and that
 * sender's report of it with @status (0: delivered). */
static uint64_t leg_done(const int *w, int f, int i, int status)
{
	uint64_t x[64];
	char app[64];
	int n = all_order_ids(f, x, 64);

	ck_assert_int_gt(n, i);
	int wl = sender_of(w, x[i]);
	ck_assert_int_ge(wl, 0);
	fake_send(wl, json_pack("{s:s, s:s, s:I, s:i, s:I, s:f, s:s}", "type", "done", "app",
				app_of(wl, "worker", app), "xfer", (json_int_t)x[i], "status", status,
				"bytes", (json_int_t)(status ? 0 : LEG_BYTES), "t", clock_real_s(),
				"reason", status ? "peer a0 silent" : ""));
	return x[i];
}

/*
 * MLfabric-S: a shard that comes back after an absence longer than the transfer records (item
 * 5 of issue 37). The iteration from version 5 has its three legs ordered to a0; one is
 * delivered (a0 holds it, waiting for the other two), then a0's dataplane disconnects and a0 is
 * taken for dead: the other two legs are lost and the `sync_step` (version 5, 1 part) goes
 * nowhere. The records of those legs are forgotten (1.5 s here, 60 s in the daemon: no `skip`
 * is sent again). a0 comes back at version 5 and
 * registers again: it is told that iteration's size (sync_step version 5, parts 1), so it
 * steps with the part it holds instead of waiting for the two lost ones for ever. ps, which
 * lost nothing, gets no sync_step.
 */
START_TEST(sync_shard_back_gets_lost_iteration_size)
{
	int w[N_W], s1, ps = two_shards_in(w, &s1, "mlfabric-s", long_sync_short_records, 5);

	for (int i = 0; i < N_W; i++)
		push(w[i], 1001 + (uint64_t)i, 5, UPD_BYTES);
	pump(0.3);
	ck_assert_int_eq(count_msgs(s1, "order") > 0, 1);
	leg_done(w, s1, 0, 0);
	pump(0.05);
	ctl_close(&fakes[s1].c); /* a0's dataplane goes away: a0 is taken for dead at once */
	fakes[s1].open = 0;
	for (int t = 0; t < 50 && rec_count("updates.jsonl", "peer a0 dead") < 2; t++)
		pump(0.1);
	/* the updates are lost there (the two legs not delivered failed while their records
	 * were kept: sync_step below says 1 part) */
	ck_assert_int_ge(rec_count("updates.jsonl", "peer a0 dead"), 2);
	pump(SHORT_KEEP_S + 0.5); /* then their records are forgotten */
	int a = fake_open("a0"), from = n_got;
	fake_send(a, shard_reg("a0", 1, "mlfabric-s", 2 * HALF, HALF)); /* at version 5 */
	ck_assert_ptr_nonnull(wait_msg(a, "registered", 2.0));
	json_t *st = wait_msg(a, "sync_step", 2.0);
	ck_assert_msg(st != NULL, "a0 came back and was not told the size of the iteration it holds");
	ck_assert_int_eq(jid(st, "version"), 5);
	ck_assert_int_eq(jid(st, "parts"), 1);
	ck_assert_int_eq(first(a, "skip", NULL, from), -1); /* the records are gone: no skips */
	ck_assert_int_eq(count_msgs(ps, "sync_step"), 0);
	stop_daemon();
}
END_TEST

/*
 * A shard whose version is below its start of the oldest MLfabric-S iteration the scheduler
 * remembers (8) cannot be told the sizes of the iterations it missed: its registration is
 * refused, naming the version. Nine iterations each lose one leg to a0; a0 registering again
 * at version 5 is refused; at its version after them (5 + 9 x 2 = 23) it is accepted.
 */
START_TEST(sync_shard_behind_remembered_iterations_refused)
{
	int w[N_W], s1, ps = two_shards_in(w, &s1, "mlfabric-s", long_sync_shards, 5);

	for (int it = 0; it < SCHED_SYNC_RING + 1; it++) {
		for (int i = 0; i < N_W; i++)
			push(w[i], 1001 + (uint64_t)(10 * it + i), 5 + 3 * it, UPD_BYTES);
		pump(0.3);
		ck_assert_int_eq(all_order_ids(ps, (uint64_t[64]){ 0 }, 64), N_W * (it + 1));
		leg_done(w, s1, N_W * it, -110);
		ck_assert_ptr_nonnull(wait_msg(s1, "sync_step", 2.0));
	}
	int from = n_got;
	fake_send(s1, shard_reg("a0", 1, "mlfabric-s", 2 * HALF, HALF)); /* at version 5 */
	json_t *e = wait_msg(s1, "error", 2.0);
	ck_assert_ptr_nonnull(e);
	ck_assert_msg(strstr(str(e, "reason"), "oldest MLfabric-S iteration") != NULL, "reason: %s",
		      str(e, "reason"));
	ck_assert_int_eq(first(s1, "registered", NULL, from), -1);
	json_t *r = shard_reg("a0", 1, "mlfabric-s", 2 * HALF, HALF);
	json_object_set_new(r, "version", json_integer(5 + 2 * (SCHED_SYNC_RING + 1)));
	fake_send(s1, r);
	ck_assert_ptr_nonnull(wait_msg(s1, "registered", 2.0));
	stop_daemon();
}
END_TEST

/*
 * Fresh pulls over shards (docs/scheduler.md "Fresh pulls"): a pull naming w0's update pushed
 * just before it waits for the batch after the one that plans the update, so its copies carry
 * the group version that includes the update (6), not the one before it (5).
 */
START_TEST(fresh_pull_after_its_update)
{
	int w[N_W], s1;
	int ps = two_shards(w, &s1);
	char app[64];

	push(w[0], 1, 5, UPD_BYTES);
	fake_send(w[0], json_pack("{s:s, s:s, s:i, s:s, s:i}", "type", "pull", "app",
				  app_of(w[0], "worker", app), "id", 100, "server", "ps", "after", 1));
	pump(0.3);
	int m0 = first(ps, "send", "model", 0), m1 = first(s1, "send", "model", 0);
	ck_assert_int_ge(m0, 0);
	ck_assert_int_ge(m1, 0);
	ck_assert_int_eq(json_integer_value(json_object_get(got[m0].m, "version")), 6);
	ck_assert_int_eq(json_integer_value(json_object_get(got[m1].m, "version")), 6);
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
	tcase_add_test(tc, sharded_update_starts_with_first_free_leg);
	tcase_add_test(tc, copy_waits_for_aggregate_legs);
	tcase_add_test(tc, copy_waits_for_aggregate_legs_learned);
	tcase_add_test(tc, copy_wait_updates_ignores_aggregates);
	tcase_add_test(tc, copy_waits_for_learned_lateness);
	tcase_add_test(tc, copy_waits_for_leg_done_not_applied);
	tcase_add_test(tc, copy_lateness_is_bounded);
	tcase_add_test(tc, sync_shards_step_together);
	tcase_add_test(tc, sync_shards_lagging_shard);
	tcase_add_test(tc, sync_shards_lost_leg_steps);
	tcase_add_test(tc, fresh_pull_after_its_update);
	tcase_add_test(tc, sync_shard_back_gets_lost_iteration_size);
	tcase_add_test(tc, sync_shard_behind_remembered_iterations_refused);
	suite_add_tcase(s, tc);
	return ck_run(s);
}
