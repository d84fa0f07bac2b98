/* test_sched_repl.c - Check tests of the scheduler daemon's replication (docs/replication.md). */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ck_run.h"
#include "clock.h"
#include "ctl.h"
#include "sched_batch.h"
#include "sched_daemon.h"
#include "sched_fake.h"

/* ---- replication (docs/replication.md) ------------------------------------------------- */

/* `register` role replica from fake @f; returns the answer (`registered` or `error`). */
static json_t *reg_replica(int f, double div_max, const char *replication, uint64_t n_floats,
			   int64_t version)
{
	char app[64];
	json_t *m = json_pack("{s:s, s:s, s:s, s:s, s:f, s:I, s:i, s:I, s:f}", "type", "register",
			      "app", app_of(f, "replica", app), "role", "replica", "server", "ps",
			      "div_max", div_max, "n_floats", (json_int_t)n_floats, "bytes",
			      10001024, "version", (json_int_t)version, "momentum", 0.9);
	if (replication)
		json_object_set_new(m, "replication", json_string(replication));
	fake_send(f, m);
	double end = clock_real_s() + 2.0;
	while (clock_real_s() < end) {
		json_t *r = wait_msg(f, "registered", 0.02);
		if (r || (r = wait_msg(f, "error", 0.02)))
			return r;
	}
	return NULL;
}

static const char *jstr(json_t *m, const char *k)
{
	const char *v = json_string_value(json_object_get(m, k));
	return v ? v : "";
}

/* The answer to a replica registration is an error whose reason contains @needle. */
static void expect_refused(json_t *r, const char *needle)
{
	ck_assert_ptr_nonnull(r);
	ck_assert_str_eq(ctl_type(r), "error");
	ck_assert_msg(strstr(jstr(r, "reason"), needle), "reason '%s' lacks '%s'",
		      jstr(r, "reason"), needle);
}

START_TEST(replica_registration_refused)
{
	start_daemon(NULL);
	int r = fake_open("r0");
	expect_refused(reg_replica(r, 1.0, NULL, 2500000, 0), "no server");
	int w0;
	setup("mlfabric-a", 0, 8, 1, &w0, NULL);
	expect_refused(reg_replica(r, 1.0, NULL, 7, 0), "n_floats");
	expect_refused(reg_replica(r, 1.0, "paxos", 2500000, 0), "replication");
	json_t *ok = reg_replica(r, 1.0, NULL, 2500000, 0);
	ck_assert_str_eq(ctl_type(ok), "registered");
	int w1 = fake_open("w1");
	expect_refused(reg_replica(w1, 1.0, NULL, 2500000, 0), "already registered at r0");
	stop_daemon();
}
END_TEST

/*
 * Every command naming update @id at the worker fakes (send, drop, release): exactly one
 * without keep, and it is the last one. Returns how many sends there were.
 */
static int one_last_copy(uint64_t id)
{
	int sends = 0, finals = 0, last_final = 0;

	for (int i = 0; i < n_got; i++) {
		const char *t = ctl_type(got[i].m);
		if (strcmp(t, "send") && strcmp(t, "drop") && strcmp(t, "release"))
			continue;
		if (jid(got[i].m, "id") != id || !strcmp(jstr(got[i].m, "what"), "model"))
			continue;
		int fin = strcmp(t, "send") || !json_is_true(json_object_get(got[i].m, "keep"));
		sends += !strcmp(t, "send");
		finals += fin;
		last_final = fin;
	}
	ck_assert_msg(finals == 1 && last_final, "update %" PRIu64 ": %d final commands, last "
		      "final %d", id, finals, last_final);
	return sends;
}

/* Index in got[] of the first message of @type at fake @f, or -1. */
static int got_index(int f, const char *type)
{
	for (int i = 0; i < n_got; i++)
		if (got[i].fake == f && !strcmp(ctl_type(got[i].m), type))
			return i;
	return -1;
}

/* Is transfer @x commanded towards the replica on chan 4 (send or aggregate)? */
static int chan4_commanded(uint64_t x)
{
	for (int i = 0; i < n_got; i++) {
		json_t *m = got[i].m;
		uint64_t mx = !strcmp(ctl_type(m), "send") ? jid(m, "xfer") :
			      !strcmp(ctl_type(m), "aggregate") ? jid(m, "agg") : 0;
		if (mx == x && !strcmp(jstr(m, "dst"), "r0") &&
		    json_integer_value(json_object_get(m, "chan")) == 4)
			return 1;
	}
	return 0;
}

static void verify_each_batch(struct sched_config *c)
{
	c->verify_every = 1;
}

/* Three workers push 10 MB updates (@mode server) with a caught-up replica at @div_max. */
static void replicate_three(const char *mode, double div_max, uint64_t *ids, int *ps)
{
	int w[3], a0;
	want_r0 = 1;
	*ps = setup(mode, 0, 8, 3, w, &a0);
	ck_assert_str_eq(ctl_type(reg_replica(r0, div_max, NULL, 2500000, 0)), "registered");
	for (int i = 0; i < 3; i++) {
		ids[i] = ((uint64_t)(i + 2) << 40) | 1;
		push(w[i], ids[i], 0, 10001024);
	}
	ck_assert_ptr_nonnull(wait_msg(*ps, "order", 2.0));
}

START_TEST(replica_div0_copies_ordered)
{
	uint64_t ids[3];
	int ps;

	start_daemon(verify_each_batch);
	replicate_three("mlfabric-a", 0.0, ids, &ps);
	json_t *o4 = wait_msg(r0, "order", 2.0);
	ck_assert_ptr_nonnull(o4);
	ck_assert_int_eq(json_integer_value(json_object_get(o4, "chan")), 4);
	pump(0.3);
	json_t *xs = json_object_get(o4, "xfers");
	ck_assert_int_gt(json_array_size(xs), 0);
	for (size_t k = 0; k < json_array_size(xs); k++)
		ck_assert_msg(chan4_commanded((uint64_t)json_integer_value(json_array_get(xs, k))),
			      "replica order entry %zu not commanded on chan 4", k);
	int o4_at = got_index(r0, "order");
	for (int i = 0; i < n_got; i++)
		if (!strcmp(ctl_type(got[i].m), "send") || !strcmp(ctl_type(got[i].m), "aggregate"))
			ck_assert_int_gt(i, o4_at);
	for (int i = 0; i < 3; i++)
		ck_assert_int_ge(one_last_copy(ids[i]), 2); /* server and replica copies */
	pthread_mutex_lock(&hook_mu);
	ck_assert_int_eq(hook_replica[1], 5);
	ck_assert_int_eq(hook_punted[1], 0);
	ck_assert_int_gt(hook_rcommits[1], 0);
	pthread_mutex_unlock(&hook_mu);
	ck_assert_int_eq(rec_count("updates.jsonl", "\"replica\":\"committed\""), 3);
	ck_assert_int_eq(rec_count("batches.jsonl", "\"punted\":0"), 1);
	json_t *sn = wait_msg(ps, "snapshot", 1.0), *sr = wait_msg(r0, "snapshot", 1.0);
	ck_assert_ptr_nonnull(sn);
	ck_assert_ptr_nonnull(sr);
	ck_assert_int_eq(json_integer_value(json_object_get(sn, "tag")), 1);
	ck_assert_int_eq(json_integer_value(json_object_get(sr, "tag")), 1);
	stop_daemon();
}
END_TEST

/* A large Div_max and a slow replica downlink: copies are punted, then sent as replica_only. */
START_TEST(replica_punted_copies_sent_later)
{
	uint64_t ids[3];
	int ps;

	start_daemon(NULL);
	replicate_three("mlfabric-a", 1e9, ids, &ps);
	pump(0.4);
	pthread_mutex_lock(&hook_mu);
	int punted = hook_punted[1], lag2 = hook_lag[2], batches = hook_batches;
	pthread_mutex_unlock(&hook_mu);
	ck_assert_int_gt(punted, 0);
	ck_assert_int_ge(batches, 2);
	ck_assert_int_eq(lag2, punted); /* the carried copies lead the next batch */
	ck_assert_int_ge(rec_count("updates.jsonl", "\"replica\":\"punted\""), punted);
	for (int i = 0; i < 3; i++)
		ck_assert_int_ge(one_last_copy(ids[i]), 2);
	int orders4 = 0;
	for (int i = 0; i < n_got; i++)
		if (got[i].fake == r0 && !strcmp(ctl_type(got[i].m), "order")) {
			json_t *xs = json_object_get(got[i].m, "xfers");
			orders4 += (int)json_array_size(xs);
			for (size_t k = 0; k < json_array_size(xs); k++)
				ck_assert(chan4_commanded((uint64_t)json_integer_value(
					json_array_get(xs, k))));
		}
	ck_assert_int_ge(orders4, 1);
	stop_daemon();
}
END_TEST

/* MLfabric-S with a replica: the sync batch carries the replica copies too. */
START_TEST(replica_sync_mode)
{
	uint64_t ids[3];
	int ps;

	start_daemon(NULL);
	replicate_three("mlfabric-s", 0.0, ids, &ps);
	json_t *o4 = wait_msg(r0, "order", 2.0);
	ck_assert_ptr_nonnull(o4);
	pump(0.2);
	for (int i = 0; i < 3; i++)
		ck_assert_int_ge(one_last_copy(ids[i]), 2);
	pthread_mutex_lock(&hook_mu);
	ck_assert_int_eq(hook_mode, PLAN_MLFABRIC_S);
	ck_assert_int_eq(hook_replica[1], 5);
	ck_assert_int_eq(hook_punted[1], 0);
	pthread_mutex_unlock(&hook_mu);
	stop_daemon();
}
END_TEST

/* The state snapshot of a catch-up: order chan 4 at r0, then `send what:"state"` at ps. */
static uint64_t expect_state_send(int ps)
{
	json_t *st = wait_msg(ps, "send", 2.0);
	ck_assert_ptr_nonnull(st);
	ck_assert_str_eq(jstr(st, "what"), "state");
	ck_assert_str_eq(jstr(st, "dst"), "r0");
	ck_assert_int_eq(json_integer_value(json_object_get(st, "chan")), 4);
	json_t *o = wait_msg(r0, "order", 1.0);
	ck_assert_ptr_nonnull(o);
	ck_assert_uint_eq(jid(st, "xfer"), (uint64_t)json_integer_value(
		json_array_get(json_object_get(o, "xfers"), 0)));
	return jid(st, "xfer");
}

static void commit_at(int f, const char *app, uint64_t xfer, int64_t version, int state)
{
	json_t *m = json_pack("{s:s, s:s, s:I, s:I, s:f}", "type", "commit", "app", app, "xfer",
			      (json_int_t)xfer, "version", (json_int_t)version, "t", clock_real_s());
	if (state) {
		json_object_set_new(m, "state", json_true());
		json_object_set_new(m, "history_norm", json_real(0.5));
	}
	fake_send(f, m);
}

/* A replica joining late catches up; a lost replica copy makes it stale: skip, then catch-up. */
START_TEST(replica_catchup_and_stale)
{
	int w0;

	start_daemon(no_agg);
	want_r0 = 1;
	int ps = setup("mlfabric-a", 100, 8, 1, &w0, NULL);
	ck_assert_str_eq(ctl_type(reg_replica(r0, 0.0, NULL, 2500000, 0)), "registered");
	uint64_t sx = expect_state_send(ps);
	uint64_t id = ((uint64_t)2 << 40) | 1;
	push(w0, id, 100, 1000);
	pump(0.15);
	ck_assert_int_eq(count_msgs(ps, "order"), 0); /* planning paused */
	commit_at(r0, "replica@r0", sx, 100, 1);
	ck_assert_ptr_nonnull(wait_msg(ps, "order", 2.0));
	ck_assert_ptr_nonnull(wait_msg(r0, "order", 2.0));
	pump(0.1);
	json_t *rs = NULL;
	for (int i = 0; i < n_got; i++)
		if (got[i].fake == w0 && !strcmp(ctl_type(got[i].m), "send") &&
		    !strcmp(jstr(got[i].m, "dst"), "r0"))
			rs = got[i].m;
	ck_assert_ptr_nonnull(rs);
	ck_assert_int_eq(one_last_copy(id), 2);
	fake_send(w0, json_pack("{s:s, s:s, s:I, s:i}", "type", "done", "app", "worker@w0",
				"xfer", (json_int_t)jid(rs, "xfer"), "status", -5));
	json_t *k = wait_msg(r0, "skip", 2.0);
	ck_assert_ptr_nonnull(k);
	ck_assert_int_eq(json_integer_value(json_object_get(k, "chan")), 4);
	ck_assert_uint_eq((uint64_t)json_integer_value(json_array_get(json_object_get(k, "xfers"),
								      0)), jid(rs, "xfer"));
	pump(0.15);
	ck_assert_int_eq(count_msgs(ps, "send"), 1); /* the server has not committed yet */
	commit_at(ps, "server@ps", id, 101, 0);
	uint64_t sx2 = expect_state_send(ps);
	ck_assert_uint_ne(sx2, sx);
	ck_assert_int_eq(rec_count("updates.jsonl", "\"replica\":\"lost\""), 1);
	stop_daemon();
}
END_TEST

static void short_catchup(struct sched_config *c)
{
	c->catchup_timeout_s = 0.2;
}

/* A catch-up that timed out: an update the server commits after the snapshot -> again. */
START_TEST(catchup_timeout_late_commit)
{
	int w0;
	uint64_t id = ((uint64_t)2 << 40) | 1;

	start_daemon(short_catchup);
	want_r0 = 1;
	int ps = setup("mlfabric-a", 100, 8, 1, &w0, NULL);
	push(w0, id, 100, 1000);
	ck_assert_ptr_nonnull(wait_msg(ps, "order", 2.0));
	ck_assert_str_eq(ctl_type(reg_replica(r0, 0.0, NULL, 2500000, 100)), "registered");
	pump(0.1);
	ck_assert_int_eq(count_msgs(r0, "order"), 0); /* waits for the server's commit */
	uint64_t sx = expect_state_send(ps);          /* ... at most --catchup-timeout */
	commit_at(r0, "replica@r0", sx, 100, 1);
	pump(0.1);
	commit_at(ps, "server@ps", id, 101, 0);       /* not in the snapshot */
	ck_assert_uint_ne(expect_state_send(ps), sx);
	stop_daemon();
}
END_TEST

/* The server's application dies: promote the replica, redirect the workers, count the losses. */
START_TEST(failover_promotes_replica)
{
	int w[2];
	uint64_t u1 = ((uint64_t)2 << 40) | 1, u2 = ((uint64_t)3 << 40) | 1;

	start_daemon(no_agg);
	want_r0 = 1;
	int ps = setup("mlfabric-a", 0, 8, 2, w, NULL);
	ck_assert_str_eq(ctl_type(reg_replica(r0, 0.0, NULL, 2500000, 0)), "registered");
	push(w[0], u1, 0, 1000);
	push(w[1], u2, 0, 1000);
	ck_assert_ptr_nonnull(wait_msg(ps, "order", 2.0));
	ck_assert_ptr_nonnull(wait_msg(r0, "order", 2.0));
	pump(0.1);
	commit_at(ps, "server@ps", u1, 1, 0);
	pump(0.05);
	fake_send(ps, json_pack("{s:s, s:s, s:s}", "type", "error", "app", "server@ps", "reason",
				"application gone"));
	json_t *pr = wait_msg(r0, "promote", 2.0);
	ck_assert_ptr_nonnull(pr);
	ck_assert_int_eq(json_integer_value(json_object_get(pr, "version")), 0);
	ck_assert_ptr_nonnull(wait_msg(r0, "skip", 1.0));
	json_t *d = wait_msg(w[1], "drop", 1.0);
	ck_assert_ptr_nonnull(d);
	ck_assert_str_eq(jstr(d, "reason"), "server failed");
	ck_assert_int_eq(rec_count("updates.jsonl", "server failed: not replicated"), 1);
	fake_send(r0, json_pack("{s:s, s:s, s:i, s:f}", "type", "promoted", "app", "replica@r0",
				"version", 0, "history_norm", 0.0));
	for (int i = 0; i < 2; i++) {
		json_t *mv = wait_msg(w[i], "server_moved", 2.0);
		ck_assert_ptr_nonnull(mv);
		ck_assert_str_eq(jstr(mv, "server"), "r0");
	}
	uint64_t u3 = ((uint64_t)2 << 40) | 2;
	push(w[0], u3, 5, 1000); /* still names "ps" */
	json_t *o = wait_msg(r0, "order", 2.0);
	ck_assert_ptr_nonnull(o);
	ck_assert_int_eq(json_integer_value(json_object_get(o, "chan")), 1);
	ck_assert_str_eq(jstr(o, "app"), "replica@r0");
	json_t *s3 = wait_msg(w[0], "send", 2.0);
	while (s3 && jid(s3, "id") != u3)
		s3 = wait_msg(w[0], "send", 2.0);
	ck_assert_ptr_nonnull(s3);
	ck_assert_str_eq(jstr(s3, "dst"), "r0");
	pthread_mutex_lock(&hook_mu);
	ck_assert_int_eq(hook_v_init, 0);
	pthread_mutex_unlock(&hook_mu);
	commit_at(r0, "replica@r0", u3, 1, 0);
	pump(0.1);
	ck_assert_int_eq(rec_count("failover.jsonl", "\"old_server\":\"ps\""), 1);
	ck_assert_int_eq(rec_count("failover.jsonl", "\"new_server\":\"r0\""), 1);
	ck_assert_int_eq(rec_count("failover.jsonl", "\"lost_committed\":1"), 1);
	ck_assert_int_eq(rec_count("failover.jsonl", "\"lost_planned\":1"), 1);
	ck_assert_int_eq(rec_count("failover.jsonl", "\"t_first_commit\":null"), 0);
	stop_daemon();
}
END_TEST

/* Daemon, server ps, worker *@w0, chain replica r0; returns ps (told `replica` in *@told). */
static int chain_setup(int *w0, json_t **told)
{
	start_daemon(NULL);
	want_r0 = 1;
	int ps = setup("mlfabric-a", 0, 8, 1, w0, NULL);
	ck_assert_str_eq(ctl_type(reg_replica(r0, 0.0, "chain", 2500000, 0)), "registered");
	*told = wait_msg(ps, "replica", 2.0);
	ck_assert_ptr_nonnull(*told);
	return ps;
}

/* A silent server host (no replica copies pending): promotion after --peer-timeout. */
START_TEST(failover_on_silent_server_host)
{
	int w0;
	json_t *t;
	int ps = chain_setup(&w0, &t);

	fakes[ps].silent = 1;
	json_t *pr = wait_msg(r0, "promote", 2.0);
	ck_assert_ptr_nonnull(pr);
	fake_send(r0, json_pack("{s:s, s:s, s:i, s:f}", "type", "promoted", "app", "server@r0",
				"version", 0, "history_norm", 0.0));
	json_t *mv = wait_msg(w0, "server_moved", 2.0);
	ck_assert_ptr_nonnull(mv);
	ck_assert_str_eq(jstr(mv, "server"), "r0");
	push(w0, ((uint64_t)2 << 40) | 1, 0, 1000);
	json_t *o = wait_msg(r0, "order", 2.0);
	ck_assert_ptr_nonnull(o);
	ck_assert_str_eq(jstr(o, "app"), "server@r0");
	commit_at(r0, "server@r0", ((uint64_t)2 << 40) | 1, 1, 0);
	pump(0.1);
	ck_assert_int_eq(rec_count("failover.jsonl", "\"lost_committed\":0"), 1);
	ck_assert_int_eq(rec_count("failover.jsonl", "\"new_server\":\"r0\""), 1);
	stop_daemon();
}
END_TEST

/* A chain replica: the server is told, nothing is planned to it; told again when it goes. */
START_TEST(chain_replica_told_not_planned)
{
	int w0;
	json_t *t;
	int ps = chain_setup(&w0, &t);

	ck_assert_str_eq(jstr(t, "host"), "r0");
	ck_assert_str_eq(jstr(t, "replication"), "chain");
	push(w0, ((uint64_t)2 << 40) | 1, 0, 1000);
	ck_assert_ptr_nonnull(wait_msg(w0, "send", 2.0));
	pump(0.1);
	ck_assert_int_eq(count_msgs(r0, "order"), 0);
	for (int i = 0; i < n_got; i++)
		ck_assert_str_ne(jstr(got[i].m, "dst"), "r0");
	ck_assert_int_eq(one_last_copy(((uint64_t)2 << 40) | 1), 1);
	/* a failed chain forward breaks the chain: catch-up, then the server is told again */
	fake_send(ps, json_pack("{s:s, s:s, s:I, s:i}", "type", "done", "app", "server@ps",
				"xfer", (json_int_t)(((uint64_t)2 << 40) | 1), "status", -5));
	commit_at(ps, "server@ps", ((uint64_t)2 << 40) | 1, 1, 0);
	uint64_t sx = expect_state_send(ps);
	ck_assert_int_eq(count_msgs(w0, "drop"), 0); /* the update itself is not lost */
	commit_at(r0, "replica@r0", sx, 1, 1);
	t = wait_msg(ps, "replica", 2.0);
	ck_assert_ptr_nonnull(t);
	ck_assert_str_eq(jstr(t, "host"), "r0");
	fake_send(r0, json_pack("{s:s, s:s, s:s}", "type", "error", "app", "replica@r0", "reason",
				"application gone"));
	t = wait_msg(ps, "replica", 2.0);
	ck_assert_ptr_nonnull(t);
	ck_assert_str_eq(jstr(t, "host"), "");
	stop_daemon();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sched_repl");
	TCase *tc = tcase_create("replication");

	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, replica_registration_refused);
	tcase_add_test(tc, replica_div0_copies_ordered);
	tcase_add_test(tc, replica_punted_copies_sent_later);
	tcase_add_test(tc, replica_sync_mode);
	tcase_add_test(tc, replica_catchup_and_stale);
	tcase_add_test(tc, catchup_timeout_late_commit);
	tcase_add_test(tc, failover_promotes_replica);
	tcase_add_test(tc, chain_replica_told_not_planned);
	tcase_add_test(tc, failover_on_silent_server_host);
	suite_add_tcase(s, tc);
	return ck_run(s);
}
