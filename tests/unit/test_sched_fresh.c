/*
 * test_sched_fresh.c - Check tests of fresh pulls (docs/scheduler.md "Fresh pulls"): a pull
 * naming the update its worker pushed before it (`after`) is answered by a copy planned after
 * that update's planned commit, at a server version that includes it (`at_version`); a pull
 * whose update was dropped, or is committed already, does not wait for it; a planned update
 * lost before the pull lowers the version it waits for.
 */
#include <check.h>
#include <string.h>

#include "ck_run.h"
#include "ctl.h"
#include "sched_daemon.h"
#include "sched_fake.h"

#define N_W 2
#define UPD_BYTES 50000000ull /* 50 MB: 40 ms at 10 Gbit/s */

static void no_dist(struct sched_config *c)
{
	c->distributors = 0;
}

/* Daemon without distributors, server ps (mlfabric-a at @version, @tau_max), workers (@w). */
static int start(int64_t version, int64_t tau_max, int *w)
{
	start_daemon(no_dist);
	return setup("mlfabric-a", version, tau_max, N_W, w, NULL);
}

static const char *str(json_t *m, const char *k)
{
	const char *s = json_string_value(json_object_get(m, k));
	return s ? s : "";
}

static double num(json_t *m, const char *k)
{
	return json_number_value(json_object_get(m, k));
}

/* Worker fake @f pulls (@id) from ps, naming update @after (0: none). */
static void pull_after(int f, uint64_t id, uint64_t after)
{
	char app[64];
	json_t *m = json_pack("{s:s, s:s, s:I, s:s}", "type", "pull", "app",
			      app_of(f, "worker", app), "id", (json_int_t)id, "server", "ps");

	if (after)
		json_object_set_new(m, "after", json_integer((json_int_t)after));
	fake_send(f, m);
}

/* The first `send` of @what at fake @f whose id is @id in got[], or NULL. */
static json_t *find_send(int f, const char *what, uint64_t id)
{
	for (int i = 0; i < n_got; i++)
		if (got[i].fake == f && !strcmp(str(got[i].m, "type"), "send") &&
		    !strcmp(str(got[i].m, "what"), what) && jid(got[i].m, "id") == id)
			return got[i].m;
	return NULL;
}

/* The update send's planned end: its start plus its bytes at 10 Gbit/s (the fakes' links). */
static double update_end(json_t *u)
{
	return num(u, "start") + (double)UPD_BYTES * 8 / 10e9;
}

/*
 * The copy answering pull @pull (a `send` at the server's fake @ps) waits for the update whose
 * `send` is @u: it carries at_version @v and starts no earlier than the update's planned end.
 */
static void expect_fresh_copy(int ps, uint64_t pull, json_t *u, int64_t v)
{
	json_t *m = find_send(ps, "model", pull);

	ck_assert_ptr_nonnull(u);
	ck_assert_ptr_nonnull(m);
	ck_assert_int_eq(json_integer_value(json_object_get(m, "at_version")), v);
	ck_assert_double_ge(num(m, "start"), update_end(u) - 1e-3);
}

/*
 * A pull right after its own push: w0 pushes update 1 (version 5, server at 5) and at once
 * pulls naming it. The copy answering the pull is planned to start after the update's planned
 * commit (its transfer's end) and carries at_version 6, the version once it is applied. Before,
 * the copy was planned at once and took the model as it stood (version 5, without the update).
 */
START_TEST(pull_after_own_push)
{
	int w[N_W];

	int ps = start(5, 8, w);
	push(w[0], 1, 5, UPD_BYTES);
	pull_after(w[0], 100, 1);
	pump(0.2);
	expect_fresh_copy(ps, 100, find_send(w[0], "update", 1), 6);
	stop_daemon();
}
END_TEST

/*
 * The update planned in an earlier batch and not committed yet: the pull's copy starts after its
 * planned commit, at its version. Two updates of w1 planned before (versions 6, 7), then w0's
 * (8): w0's pull waits for version 8.
 */
START_TEST(pull_after_planned_update)
{
	int w[N_W];

	int ps = start(5, 8, w);
	push(w[1], 11, 5, UPD_BYTES);
	push(w[1], 12, 5, UPD_BYTES);
	pump(0.1);
	push(w[0], 1, 5, UPD_BYTES);
	pump(0.1);
	json_t *u = find_send(w[0], "update", 1);
	ck_assert_ptr_nonnull(u);
	pull_after(w[0], 100, 1);
	pump(0.1);
	expect_fresh_copy(ps, 100, u, 8);
	stop_daemon();
}
END_TEST

/*
 * A pull whose update was dropped (delay bound: computed on version 0, the server at 20, tau_max
 * 2) does not wait for it: answered in the next batch with the model as it stands.
 */
START_TEST(pull_after_dropped_update)
{
	int w[N_W];

	int ps = start(20, 2, w);
	push(w[0], 1, 0, UPD_BYTES);
	pull_after(w[0], 100, 1);
	ck_assert_ptr_nonnull(wait_msg(w[0], "drop", 1.0));
	json_t *m = wait_msg(ps, "send", 1.0);
	ck_assert_ptr_nonnull(m);
	ck_assert_int_eq(jid(m, "id"), 100);
	ck_assert_ptr_null(json_object_get(m, "at_version"));
	stop_daemon();
}
END_TEST

/* A pull whose update is committed already, or that names none: the model as it stands. */
START_TEST(pull_after_committed_update)
{
	int w[N_W];

	int ps = start(5, 8, w);
	push(w[0], 1, 5, UPD_BYTES);
	ck_assert_ptr_nonnull(wait_msg(w[0], "send", 1.0));
	fake_send(ps, json_pack("{s:s, s:s, s:i, s:i, s:f}", "type", "commit", "app", "server@ps",
				"xfer", 1, "version", 6, "t", 0.0));
	pump(0.1);
	pull_after(w[0], 100, 1);
	pull_after(w[1], 101, 0);
	pump(0.1);
	json_t *m0 = find_send(ps, "model", 100), *m1 = find_send(ps, "model", 101);
	ck_assert_ptr_nonnull(m0);
	ck_assert_ptr_nonnull(m1);
	ck_assert_ptr_null(json_object_get(m0, "at_version"));
	ck_assert_ptr_null(json_object_get(m1, "at_version"));
	stop_daemon();
}
END_TEST

/*
 * With distribution trees on, the batch's copies (server copies and forwards) all start after
 * the commit the batch's pulls wait for: every server copy carries at_version 6.
 */
START_TEST(fresh_pulls_through_tree)
{
	int w[N_W], n_srv = 0;

	start_daemon(NULL);
	int ps = setup("mlfabric-a", 5, 8, N_W, w, NULL);
	push(w[0], 1, 5, UPD_BYTES);
	pull_after(w[0], 100, 1);
	pull_after(w[1], 101, 0);
	pump(0.2);
	json_t *u = find_send(w[0], "update", 1);
	ck_assert_ptr_nonnull(u);
	for (int i = 0; i < n_got; i++) {
		json_t *m = got[i].m;
		if (got[i].fake == ps && !strcmp(str(m, "type"), "send") &&
		    !strcmp(str(m, "what"), "model")) {
			ck_assert_int_eq(json_integer_value(json_object_get(m, "at_version")), 6);
			ck_assert_double_ge(num(m, "start"), update_end(u) - 1e-3);
			n_srv++;
		} else if (!strcmp(str(m, "type"), "forward")) {
			ck_assert_double_ge(num(m, "start"), update_end(u) - 1e-3);
		}
	}
	ck_assert_int_ge(n_srv, 1);
	stop_daemon();
}
END_TEST

/*
 * A planned update lost before the pull (its transfer failed): the versions planned after it
 * come one earlier. w1's update 11 (version 6) and w0's update 1 (7) are planned; 11's transfer
 * fails; w0's pull naming update 1 waits for version 6, which the server reaches, not 7, which
 * it reaches only when some other update is applied.
 */
START_TEST(pull_after_update_planned_behind_a_lost_one)
{
	int w[N_W];

	int ps = start(5, 8, w);
	push(w[1], 11, 5, UPD_BYTES);
	pump(0.1);
	push(w[0], 1, 5, UPD_BYTES);
	pump(0.1);
	json_t *u11 = find_send(w[1], "update", 11), *u = find_send(w[0], "update", 1);
	ck_assert_ptr_nonnull(u11);
	ck_assert_ptr_nonnull(u);
	fake_send(w[1], json_pack("{s:s, s:s, s:I, s:i, s:i, s:s}", "type", "done", "app",
				  "worker@w1", "xfer", (json_int_t)jid(u11, "xfer"), "status", -110,
				  "bytes", 0, "reason", "peer silent"));
	pump(0.05);
	pull_after(w[0], 100, 1);
	pump(0.1);
	expect_fresh_copy(ps, 100, u, 6);
	stop_daemon();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sched_fresh");
	TCase *tc = tcase_create("fresh");

	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, pull_after_own_push);
	tcase_add_test(tc, pull_after_planned_update);
	tcase_add_test(tc, pull_after_dropped_update);
	tcase_add_test(tc, pull_after_committed_update);
	tcase_add_test(tc, fresh_pulls_through_tree);
	tcase_add_test(tc, pull_after_update_planned_behind_a_lost_one);
	suite_add_tcase(s, tc);
	return ck_run(s);
}
