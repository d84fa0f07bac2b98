/* test_sched.c - Check tests of the scheduler daemon (all but replication), fake dataplanes. */
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
#include "proto.h"
#include "sched_batch.h"
#include "sched_cmd.h"
#include "sched_daemon.h"
#include "sched_fake.h"

START_TEST(unknown_host_refused)
{
	start_daemon(NULL);
	int f = fake_connect("zz9");
	fake_send(f, json_pack("{s:s, s:s, s:f, s:f}", "type", "hello", "host", "zz9", "up_gbps",
			       1.0, "down_gbps", 1.0));
	json_t *e = wait_msg(f, "error", 2.0);
	ck_assert_ptr_nonnull(e);
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(e, "reason")), "zz9"));
	pump(0.2);
	ck_assert_int_eq(fakes[f].open, 0); /* the scheduler closed the connection */
	stop_daemon();
}
END_TEST

START_TEST(other_protocol_version_refused)
{
	start_daemon(NULL);
	int f = fake_connect("w0");
	fake_send(f, json_pack("{s:s, s:s, s:i}", "type", "hello", "host", "w0", "proto",
			       MLF_PROTO_VERSION + 1));
	json_t *e = wait_msg(f, "error", 2.0);
	ck_assert_ptr_nonnull(e);
	char want[96];
	snprintf(want, sizeof(want), "protocol version %d, this scheduler %d", MLF_PROTO_VERSION + 1,
		 MLF_PROTO_VERSION);
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(e, "reason")), want));
	pump(0.2);
	ck_assert_int_eq(fakes[f].open, 0);
	ck_assert_int_eq(count_msgs(f, "welcome"), 0);
	int g = fake_connect("w1"); /* the same version is welcome */
	fake_send(g, json_pack("{s:s, s:s, s:i}", "type", "hello", "host", "w1", "proto",
			       MLF_PROTO_VERSION));
	ck_assert_ptr_nonnull(wait_msg(g, "welcome", 2.0));
	stop_daemon();
}
END_TEST

START_TEST(malformed_json_keeps_connection)
{
	start_daemon(NULL);
	int f = fake_open("w0");
	ck_assert_int_gt(write(fakes[f].c.fd, "{\"type\": \"update\", oops\n", 24), 0);
	json_t *e = wait_msg(f, "error", 2.0);
	ck_assert_ptr_nonnull(e);
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(e, "reason")), "JSON"));
	/* an update without "id" is refused naming the field */
	fake_send(f, json_pack("{s:s, s:s, s:s, s:i, s:i, s:f}", "type", "update", "app",
			       "worker@w0", "server", "ps", "bytes", 100, "version", 0, "norm", 1.0));
	e = wait_msg(f, "error", 2.0);
	ck_assert_ptr_nonnull(e);
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(e, "reason")), "\"id\""));
	fake_send(f, json_pack("{s:s}", "type", "bogus"));
	e = wait_msg(f, "error", 2.0);
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(e, "reason")), "bogus"));
	/* still usable: a registration goes through */
	reg(f, "worker");
	ck_assert_int_eq(fakes[f].open, 1);
	stop_daemon();
}
END_TEST

/* Three workers, aggregator a0: order first, every update exactly once, order = plan commits. */
START_TEST(batch_order_sends_aggregates)
{
	start_daemon(NULL);
	int w[3], a0, ps = setup("mlfabric-a", 100, 8, 3, w, &a0);
	uint64_t ids[3];
	for (int i = 0; i < 3; i++) {
		ids[i] = ((uint64_t)(i + 2) << 40) | 1;
		push(w[i], ids[i], 99, 10001024);
	}
	json_t *order = wait_msg(ps, "order", 2.0);
	ck_assert_ptr_nonnull(order);
	pump(0.3);
	/* the order arrived before any send or aggregate */
	int order_at = -1, first_cmd = n_got;
	for (int i = 0; i < n_got; i++) {
		const char *t = ctl_type(got[i].m);
		if (got[i].m == order)
			order_at = i;
		if ((!strcmp(t, "send") || !strcmp(t, "aggregate")) && i < first_cmd)
			first_cmd = i;
	}
	ck_assert_int_ge(order_at, 0);
	ck_assert_int_lt(order_at, first_cmd);
	ck_assert_str_eq(json_string_value(json_object_get(order, "app")), "server@ps");

	/* each update exactly once in a chan-1 send, an aggregate's inputs or a drop */
	int seen[3] = { 0 }, to_agg = 0;
	json_t *agg = NULL;
	for (int i = 0; i < n_got; i++) {
		json_t *m = got[i].m;
		const char *t = ctl_type(m);
		for (int k = 0; k < 3; k++) {
			if (!strcmp(t, "send") && jid(m, "id") == ids[k]) {
				ck_assert_int_eq(got[i].fake, w[k]);
				if (json_integer_value(json_object_get(m, "chan")) == 1) {
					seen[k]++;
					ck_assert_uint_eq(jid(m, "xfer"), ids[k]);
				} else {
					ck_assert_str_eq(json_string_value(json_object_get(m, "dst")), "a0");
					ck_assert_uint_ge(jid(m, "xfer"), 1ull << 62);
					to_agg++;
				}
				ck_assert(json_is_array(json_object_get(m, "steps")));
			}
			if (!strcmp(t, "drop") && jid(m, "id") == ids[k])
				seen[k]++;
		}
		if (!strcmp(t, "aggregate")) {
			ck_assert_int_eq(got[i].fake, a0);
			ck_assert_str_eq(json_string_value(json_object_get(m, "app")), "aggregator@a0");
			ck_assert_str_eq(json_string_value(json_object_get(m, "dst")), "ps");
			agg = m;
			size_t j;
			json_t *v;
			json_array_foreach(json_object_get(m, "inputs"), j, v)
				for (int k = 0; k < 3; k++)
					seen[k] += (uint64_t)json_integer_value(v) == ids[k];
		}
	}
	for (int k = 0; k < 3; k++)
		ck_assert_int_eq(seen[k], 1);
	/* the server's downlink is the bottleneck: the plan aggregates at a0 */
	ck_assert_ptr_nonnull(agg);
	ck_assert_int_eq(to_agg, (int)json_array_size(json_object_get(agg, "inputs")));

	/* the order is the plan's commit order */
	pthread_mutex_lock(&hook_mu);
	json_t *xs = json_object_get(order, "xfers");
	ck_assert_int_eq((int)json_array_size(xs), hook_n_commits);
	for (int c = 0; c < hook_n_commits; c++) {
		uint64_t x = (uint64_t)json_integer_value(json_array_get(xs, (size_t)c));
		if (hook_commit_parts[c] == 1 && x < (1ull << 62)) {
			ck_assert_uint_eq(x, hook_commit_first[c]);
		} else {
			ck_assert_uint_eq(x, jid(agg, "agg"));
			ck_assert_uint_eq((uint64_t)json_integer_value(json_array_get(
				json_object_get(agg, "inputs"), 0)), hook_commit_first[c]);
		}
	}
	ck_assert_int_eq(hook_v_init, 100);
	pthread_mutex_unlock(&hook_mu);

	/* records: one batch line, three update fates */
	ck_assert_int_eq(rec_count("batches.jsonl", "\"n_updates\":3"), 1);
	ck_assert_int_eq(rec_count("updates.jsonl", "\"fate\":\"aggregated\""), to_agg);
	ck_assert_int_ge(rec_count("transfers.jsonl", "\"what\":\"aggregate\""), 1);

	/* the next batch's v_init counts the planned, uncommitted updates */
	push(w[0], ((uint64_t)2 << 40) | 2, 100, 1000);
	ck_assert_ptr_nonnull(wait_msg(ps, "order", 2.0));
	pthread_mutex_lock(&hook_mu);
	ck_assert_int_eq(hook_v_init, 103);
	pthread_mutex_unlock(&hook_mu);
	stop_daemon();
}
END_TEST

START_TEST(stale_update_dropped)
{
	start_daemon(NULL);
	int w0;

	setup("mlfabric-a", 100, 4, 1, &w0, NULL);
	uint64_t stale = ((uint64_t)2 << 40) | 7, fresh = ((uint64_t)2 << 40) | 8;
	push(w0, stale, 90, 1000);  /* deadline 90 + 4 - 100 < 1: can never meet the delay bound */
	push(w0, fresh, 100, 1000);
	json_t *d = wait_msg(w0, "drop", 2.0);
	ck_assert_ptr_nonnull(d);
	ck_assert_uint_eq(jid(d, "id"), stale);
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(d, "reason")), "delay bound"));
	json_t *s = wait_msg(w0, "send", 2.0);
	ck_assert_ptr_nonnull(s);
	ck_assert_uint_eq(jid(s, "id"), fresh);
	pump(0.1);
	ck_assert_int_eq(count_msgs(w0, "send"), 1);
	ck_assert_int_eq(rec_count("updates.jsonl", "\"fate\":\"dropped\""), 1);
	stop_daemon();
}
END_TEST

/* A worker that goes silent is named and its pending updates are dropped. */
START_TEST(silent_host_named_and_dropped)
{
	int w[2];
	start_daemon(NULL);
	capture_stderr();
	int ps = setup(NULL, 0, 0, 2, w, NULL); /* no server registered: updates stay pending */
	push(w[1], ((uint64_t)3 << 40) | 1, 0, 1000);
	fakes[w[1]].silent = 1;
	pump(1.0);
	ck_assert_int_eq(captured_lines("peer w1 silent for"), 1);
	ck_assert_int_eq(fakes[w[1]].open, 0);
	ck_assert_int_eq(fakes[w[0]].open, 1);
	ck_assert_int_eq(rec_count("updates.jsonl", "peer w1 dead"), 1);
	ck_assert_int_eq(fakes[ps].open, 1);
	stop_daemon();
}
END_TEST

/*
 * Daemon without aggregators, server ps (async, version 0, tau_max 8), worker w0 (*@w0); update
 * (2 << 40) | 1 of 100 kB pushed and its direct send asserted. Returns the server's fake.
 */
static int one_update_sent(int *w0)
{
	uint64_t id = ((uint64_t)2 << 40) | 1;

	start_daemon(no_agg);
	int ps = setup("mlfabric-a", 0, 8, 1, w0, NULL);
	push(*w0, id, 0, 100000);
	json_t *s = wait_msg(*w0, "send", 2.0);
	ck_assert_ptr_nonnull(s);
	ck_assert_uint_eq(jid(s, "xfer"), id);
	ck_assert_int_eq(json_integer_value(json_object_get(s, "chan")), 1);
	return ps;
}

/* A failed done: the server is told to skip the transfer, the worker gets a drop. */
START_TEST(failed_done_skips)
{
	int w0, ps = one_update_sent(&w0);
	uint64_t id = ((uint64_t)2 << 40) | 1;
	fake_send(w0, json_pack("{s:s, s:s, s:I, s:i, s:i, s:f, s:s}", "type", "done", "app",
				"worker@w0", "xfer", (json_int_t)id, "status", -110, "bytes", 0, "t",
				clock_real_s(), "reason", "receiver silent"));
	expect_skip(ps, id);
	json_t *d = wait_msg(w0, "drop", 2.0);
	ck_assert_ptr_nonnull(d);
	ck_assert_uint_eq(jid(d, "id"), id);
	ck_assert_int_eq(rec_count("updates.jsonl", "\"fate\":\"lost\""), 1);
	/* the lost update is not counted in the next v_init */
	push(w0, id + 1, 0, 1000);
	ck_assert_ptr_nonnull(wait_msg(w0, "send", 2.0));
	pthread_mutex_lock(&hook_mu);
	ck_assert_int_eq(hook_v_init, 0);
	pthread_mutex_unlock(&hook_mu);
	stop_daemon();
}
END_TEST

START_TEST(pull_gets_model)
{
	start_daemon(NULL);
	int w[2], ps = setup("mlfabric-a", 5, 8, 2, w, NULL), w1 = w[1];
	fake_send(w1, json_pack("{s:s, s:s, s:i, s:s}", "type", "pull", "app", "worker@w1", "id",
				77, "server", "ps"));
	json_t *s = wait_msg(ps, "send", 2.0);
	ck_assert_ptr_nonnull(s);
	ck_assert_str_eq(json_string_value(json_object_get(s, "what")), "model");
	ck_assert_uint_eq(jid(s, "id"), 77);
	ck_assert_str_eq(json_string_value(json_object_get(s, "dst")), "w1");
	ck_assert_int_eq(json_integer_value(json_object_get(s, "chan")), 3);
	ck_assert_uint_eq(jid(s, "bytes"), 10001024);
	stop_daemon();
}
END_TEST

/*
 * A model transfer lost with its server (application gone before the model left): the pull is
 * queued again and answered by the server that registers next (restarted from a checkpoint at
 * an older version); a pull whose worker is gone is not.
 */
/* --distributors 0: both pulls answered by server copies (trees: test_sched_dist.c). */
static void no_distributors(struct sched_config *c)
{
	c->distributors = 0;
}

START_TEST(lost_model_pull_answered_again)
{
	start_daemon(no_distributors);
	int w[2], ps = setup("mlfabric-a", 5, 8, 2, w, NULL);
	fake_send(w[1], json_pack("{s:s, s:s, s:i, s:s, s:i}", "type", "pull", "app", "worker@w1", "id",
				  77, "server", "ps", "min_version", 5));
	fake_send(w[0], json_pack("{s:s, s:s, s:i, s:s, s:i}", "type", "pull", "app", "worker@w0", "id",
				  78, "server", "ps", "min_version", 5));
	json_t *m1 = wait_msg(ps, "send", 2.0), *m2 = wait_msg(ps, "send", 2.0);
	ck_assert_ptr_nonnull(m1);
	ck_assert_ptr_nonnull(m2);
	/* worker w0 goes: its pull is not answered again */
	fake_send(w[0], json_pack("{s:s, s:s, s:s}", "type", "error", "app", "worker@w0", "reason",
				  "application worker@w0 closed its connection"));
	fake_send(ps, json_pack("{s:s, s:s, s:s}", "type", "error", "app", "server@ps", "reason",
				"application server@ps closed its connection to the dataplane of host ps"));
	pump(0.3);
	ck_assert_int_eq(count_msgs(ps, "send"), 2); /* no server: nothing commanded */
	reg_server(ps, "mlfabric-a", 3, 8, 2);             /* restarted from an older checkpoint */
	json_t *again = wait_msg(ps, "send", 2.0);
	ck_assert_ptr_nonnull(again);
	ck_assert_str_eq(json_string_value(json_object_get(again, "what")), "model");
	ck_assert_uint_eq(jid(again, "id"), 77);
	ck_assert_str_eq(json_string_value(json_object_get(again, "dst")), "w1");
	pump(0.3);
	ck_assert_int_eq(count_msgs(ps, "send"), 3);
	stop_daemon();
}
END_TEST

static void sync_all(struct sched_config *c)
{
	c->sync_all = 1;
}

/* MLfabric-S, --sync-batching all: no batch until every worker has an update; min_version
 * pulls wait for commits. */
START_TEST(sync_waits_for_all)
{
	start_daemon(sync_all);
	int w[3], ps = setup("mlfabric-s", 10, 8, 3, w, NULL);
	push(w[0], ((uint64_t)2 << 40) | 1, 10, 1000);
	push(w[1], ((uint64_t)3 << 40) | 1, 10, 1000);
	fake_send(w[0], json_pack("{s:s, s:s, s:i, s:s, s:i}", "type", "pull", "app", "worker@w0",
				  "id", 5, "server", "ps", "min_version", 13));
	pump(0.4);
	ck_assert_int_eq(count_msgs(ps, "order"), 0);
	ck_assert_int_eq(count_msgs(w[0], "send") + count_msgs(w[1], "send"), 0);
	push(w[2], ((uint64_t)4 << 40) | 1, 10, 1000);
	json_t *o = wait_msg(ps, "order", 2.0);
	ck_assert_ptr_nonnull(o);
	pthread_mutex_lock(&hook_mu);
	ck_assert_int_eq(hook_mode, PLAN_MLFABRIC_S);
	ck_assert_int_eq(hook_n_updates, 3);
	pthread_mutex_unlock(&hook_mu);
	pump(0.2);
	ck_assert_int_eq(count_msgs(ps, "send"), 0); /* version 13 not committed yet */
	fake_send(ps, json_pack("{s:s, s:s, s:I, s:i, s:f}", "type", "commit", "app", "server@ps",
				"xfer", json_integer_value(json_array_get(json_object_get(o, "xfers"),
									  0)),
				"version", 13, "t", clock_real_s()));
	json_t *s = wait_msg(ps, "send", 2.0);
	ck_assert_ptr_nonnull(s);
	ck_assert_uint_eq(jid(s, "id"), 5);
	stop_daemon();
}
END_TEST

/* A link report is used only once it is t_lag old. */
START_TEST(link_report_after_t_lag)
{
	start_daemon(NULL);
	int w0;

	setup("mlfabric-a", 0, 100, 1, &w0, NULL);
	fake_send(w0, json_pack("{s:s, s:s, s:f, s:f, s:f, s:f, s:f}", "type", "link", "host",
				"w0", "t", clock_real_s(), "up_gbps", 2.0, "down_gbps", 4.0, "tx_gbps", 0.0,
				"rx_gbps", 0.0));
	push(w0, ((uint64_t)2 << 40) | 1, 0, 1000);
	ck_assert_ptr_nonnull(wait_msg(w0, "send", 2.0));
	pthread_mutex_lock(&hook_mu);
	ck_assert_double_eq_tol(hook_up[1], 10 * 0.95, 1e-9); /* the config's, report too new */
	ck_assert_double_eq_tol(hook_down[0], 1 * 0.95, 1e-6);
	pthread_mutex_unlock(&hook_mu);
	pump(0.35);
	push(w0, ((uint64_t)2 << 40) | 2, 0, 1000);
	ck_assert_ptr_nonnull(wait_msg(w0, "send", 2.0));
	pthread_mutex_lock(&hook_mu);
	ck_assert_double_eq_tol(hook_up[1], 2 * 0.95, 1e-9);
	ck_assert_double_eq_tol(hook_down[1], 4 * 0.95, 1e-9);
	pthread_mutex_unlock(&hook_mu);
	stop_daemon();
}
END_TEST

/* A running transfer's reservation is carried: the next batch sees less capacity. */
START_TEST(running_transfer_carried)
{
	start_daemon(no_agg);
	int w0;

	setup("mlfabric-a", 0, 100, 1, &w0, NULL);
	push(w0, ((uint64_t)2 << 40) | 1, 0, 100000000); /* 100 MB over 0.95 Gbit/s: ~0.84 s */
	ck_assert_ptr_nonnull(wait_msg(w0, "send", 2.0));
	pump(0.1);
	push(w0, ((uint64_t)2 << 40) | 2, 0, 1000);
	ck_assert_ptr_nonnull(wait_msg(w0, "send", 2.0));
	pthread_mutex_lock(&hook_mu);
	ck_assert_double_lt(hook_down[0], 0.01);   /* ps.down fully reserved by the first */
	ck_assert_double_lt(hook_up[1], 10 * 0.95 - 0.9);
	ck_assert_int_ge(hook_n_changes, 2);       /* both links come back when it ends */
	pthread_mutex_unlock(&hook_mu);
	stop_daemon();
}
END_TEST

/*
 * Daemon, server ps, workers w0 and w1 (@w), aggregator a0 (*@a0); both workers push a 10 MB
 * update and the plan aggregates them at a0 (the server's downlink is the bottleneck).
 * Returns the `aggregate` command; *@ps is the server's fake.
 */
static json_t *aggregate_planned(int *w, int *a0, int *ps)
{
	start_daemon(NULL);
	*ps = setup("mlfabric-a", 0, 8, 2, w, a0);
	push(w[0], ((uint64_t)2 << 40) | 1, 0, 10001024);
	push(w[1], ((uint64_t)3 << 40) | 1, 0, 10001024);
	json_t *ag = wait_msg(*a0, "aggregate", 2.0);
	ck_assert_ptr_nonnull(ag);
	return ag;
}

/* A disconnected aggregator: its aggregate is skipped at the server, its inputs dropped. */
START_TEST(dead_aggregator_skips_aggregate)
{
	int w[2], a0, ps;
	json_t *ag = aggregate_planned(w, &a0, &ps);
	ctl_close(&fakes[a0].c);
	fakes[a0].open = 0;
	expect_skip(ps, jid(ag, "agg"));
	size_t n_in = json_array_size(json_object_get(ag, "inputs"));
	int drops = 0;
	for (int i = 0; i < 2; i++)
		drops += wait_msg(w[i], "drop", 1.0) != NULL;
	ck_assert_int_eq(drops, (int)n_in);
	ck_assert_int_eq(rec_count("updates.jsonl", "peer a0 dead"), (int)n_in);
	/* no aggregator left: the next updates go directly */
	push(w[0], ((uint64_t)2 << 40) | 2, 0, 10001024);
	json_t *s = wait_msg(w[0], "send", 2.0);
	while (s && json_integer_value(json_object_get(s, "chan")) != 1)
		s = wait_msg(w[0], "send", 2.0);
	ck_assert_ptr_nonnull(s);
	ck_assert_str_eq(json_string_value(json_object_get(s, "dst")), "ps");
	stop_daemon();
}
END_TEST

static void short_sync(struct sched_config *c)
{
	c->sync_timeout_s = 0.3;
	c->sync_all = 1;
}

/*
 * MLfabric-S, --sync-batching all, with a missing worker: after --sync-timeout the batch goes
 * without it, named, and the server is told the iteration's size.
 */
START_TEST(sync_timeout_names_missing)
{
	start_daemon(short_sync);
	capture_stderr();
	int w[3], ps = setup("mlfabric-s", 0, 8, 3, w, NULL);
	push(w[0], ((uint64_t)2 << 40) | 1, 0, 1000);
	push(w[2], ((uint64_t)4 << 40) | 1, 0, 1000);
	pump(0.15);
	ck_assert_int_eq(count_msgs(ps, "order"), 0);
	ck_assert_ptr_nonnull(wait_msg(ps, "order", 2.0));
	json_t *st = wait_msg(ps, "sync_step", 1.0);
	ck_assert_ptr_nonnull(st);
	ck_assert_int_eq(jid(st, "version"), 0);
	ck_assert_int_eq(jid(st, "parts"), 2);
	ck_assert_int_eq(captured_lines("missing: w1"), 1);
	pthread_mutex_lock(&hook_mu);
	ck_assert_int_eq(hook_n_updates, 2);
	pthread_mutex_unlock(&hook_mu);
	stop_daemon();
}
END_TEST

static void short_eager(struct sched_config *c)
{
	c->sync_timeout_s = 0.5;
}

/* The updates of worker fake @f commanded so far (`send` what update). */
static int update_sends(int f)
{
	int n = 0;

	for (int i = 0; i < n_got; i++)
		if (got[i].fake == f && !strcmp(json_string_value(json_object_get(got[i].m, "type")),
						"send"))
			n++;
	return n;
}

/*
 * MLfabric-S eager (§6): with 4 registered workers and 2 updates ready, a tick plans those 2
 * (they leave before the last worker reports); an update of the next iteration (version >=
 * 10 + 4) waits; a third worker's update is planned when it comes; after --sync-timeout the
 * iteration ends without the fourth (named, `sync_step` version 10 parts 3) and the waiting
 * update goes in the next iteration.
 */
START_TEST(sync_eager_plans_ready_updates)
{
	start_daemon(short_eager);
	capture_stderr();
	int w[3], ps = setup(NULL, 0, 0, 3, w, NULL);
	reg_server(ps, "mlfabric-s", 10, 8, 4);
	push(w[0], ((uint64_t)2 << 40) | 1, 10, 1000);
	push(w[1], ((uint64_t)3 << 40) | 1, 10, 1000);
	ck_assert_ptr_nonnull(wait_msg(ps, "order", 1.0));
	pump(0.1);
	pthread_mutex_lock(&hook_mu);
	ck_assert_int_eq(hook_mode, PLAN_MLFABRIC_S);
	ck_assert_int_eq(hook_n_updates, 2);
	int batches = hook_batches;
	pthread_mutex_unlock(&hook_mu);
	ck_assert_int_eq(update_sends(w[0]), 1);
	ck_assert_int_eq(update_sends(w[1]), 1);
	/* w0 again, from the version after this iteration: not mixed in */
	push(w[0], ((uint64_t)2 << 40) | 2, 14, 1000);
	pump(0.15);
	pthread_mutex_lock(&hook_mu);
	ck_assert_int_eq(hook_batches, batches);
	pthread_mutex_unlock(&hook_mu);
	ck_assert_int_eq(update_sends(w[0]), 1);
	/* w2's update of this iteration is planned on its own */
	push(w[2], ((uint64_t)4 << 40) | 1, 10, 1000);
	ck_assert_ptr_nonnull(wait_msg(ps, "order", 1.0));
	pthread_mutex_lock(&hook_mu);
	ck_assert_int_eq(hook_n_updates, 1);
	ck_assert_uint_eq(hook_commit_first[0], ((uint64_t)4 << 40) | 1);
	pthread_mutex_unlock(&hook_mu);
	ck_assert_int_eq(count_msgs(ps, "sync_step"), 0);
	/* the fourth worker never reports: the iteration ends with 3, then w0's next update */
	json_t *st = wait_msg(ps, "sync_step", 1.5);
	ck_assert_ptr_nonnull(st);
	ck_assert_int_eq(jid(st, "version"), 10);
	ck_assert_int_eq(jid(st, "parts"), 3);
	ck_assert_ptr_nonnull(wait_msg(ps, "order", 1.0));
	pthread_mutex_lock(&hook_mu);
	ck_assert_int_eq(hook_n_updates, 1);
	ck_assert_uint_eq(hook_commit_first[0], ((uint64_t)2 << 40) | 2);
	pthread_mutex_unlock(&hook_mu);
	ck_assert_int_eq(captured_lines("waited"), 1);
	stop_daemon();
}
END_TEST

static void long_eager(struct sched_config *c)
{
	c->sync_timeout_s = 30;
}

/* A failed done from worker fake @f for its transfer @id. */
static void failed_done(int f, uint64_t id)
{
	char app[64];

	fake_send(f, json_pack("{s:s, s:s, s:I, s:i, s:i, s:f, s:s}", "type", "done", "app",
			       app_of(f, "worker", app), "xfer", (json_int_t)id, "status", -110,
			       "bytes", 0, "t", clock_real_s(), "reason", "receiver silent"));
}

/* Daemon (config changed by @tweak) with workers w0, w1 (@w), a0 as aggregator when @a0 is not
 * NULL, and server ps in MLfabric-S at version 10 with 2 workers; returns the server's fake. */
static int sync_server_of_two(void (*tweak)(struct sched_config *), int *w, int *a0)
{
	start_daemon(tweak);
	int ps = setup(NULL, 0, 0, 2, w, a0);
	reg_server(ps, "mlfabric-s", 10, 8, 2);
	return ps;
}

/* The next `sync_step` at the server's fake @ps (2 s) names @version and @parts. */
static void expect_sync_step(int ps, int64_t version, int64_t parts)
{
	json_t *st = wait_msg(ps, "sync_step", 2.0);

	ck_assert_msg(st != NULL, "no sync_step (version %lld, parts %lld): the server waits for ever",
		      (long long)version, (long long)parts);
	ck_assert_int_eq(jid(st, "version"), version);
	ck_assert_int_eq(jid(st, "parts"), parts);
}

/*
 * MLfabric-S past a lost part (docs/scheduler.md "MLfabric-S"): an iteration of 2 workers
 * (version 10) whose update of w0 is lost after it was planned and the iteration closed
 * completes without it: w0 gets a drop, the server a skip and `sync_step` version 10 parts
 * 1; the next iteration (from version 11) is planned at once without a sync timeout (30 s),
 * and a loss in it, while it is still open, makes its close name version 11 parts 1.
 */
START_TEST(sync_lost_update_steps)
{
	int w[2], ps = sync_server_of_two(long_eager, w, NULL);
	uint64_t a = ((uint64_t)2 << 40) | 1, b = ((uint64_t)3 << 40) | 1;
	push(w[0], a, 10, 1000);
	push(w[1], b, 10, 1000);
	ck_assert_ptr_nonnull(wait_msg(w[0], "send", 2.0));
	ck_assert_ptr_nonnull(wait_msg(w[1], "send", 2.0));
	ck_assert_int_eq(count_msgs(ps, "sync_step"), 0);
	failed_done(w[0], a);
	expect_skip(ps, a);
	json_t *d = wait_msg(w[0], "drop", 2.0);
	ck_assert_ptr_nonnull(d);
	ck_assert_uint_eq(jid(d, "id"), a);
	expect_sync_step(ps, 10, 1);
	/* the next iteration, from version 11: w1's update goes and is lost, w0's goes after */
	push(w[1], b + 1, 11, 1000);
	ck_assert_ptr_nonnull(wait_msg(w[1], "send", 2.0));
	failed_done(w[1], b + 1);
	expect_skip(ps, b + 1);
	ck_assert_ptr_nonnull(wait_msg(w[1], "drop", 2.0));
	push(w[0], a + 1, 11, 1000);
	ck_assert_ptr_nonnull(wait_msg(w[0], "send", 2.0));
	expect_sync_step(ps, 11, 1);
	stop_daemon();
}
END_TEST

/*
 * MLfabric-S past a lost aggregator input (issue 37 item 4): the iteration of w0 and w1
 * (version 10) is planned as one aggregate at a0; w0 goes away, a0 sends the aggregate without
 * its input (`partial`): the server gets `sync_step` version 10 parts 1, else it waits for a
 * second part that never comes (apps_shards_lost.sh stalled so, both shards at version 12 while
 * the workers waited for 14).
 */
START_TEST(sync_partial_aggregate_steps)
{
	int w[2], a0, ps = sync_server_of_two(long_eager, w, &a0);
	uint64_t id0 = ((uint64_t)2 << 40) | 1;
	push(w[0], id0, 10, 10001024);
	push(w[1], ((uint64_t)3 << 40) | 1, 10, 10001024);
	json_t *ag = wait_msg(a0, "aggregate", 2.0);
	ck_assert_ptr_nonnull(ag);
	ck_assert_int_eq(json_array_size(json_object_get(ag, "inputs")), 2);
	fake_send(w[0], json_pack("{s:s, s:s, s:s}", "type", "error", "app", "worker@w0", "reason",
				  "application worker@w0 closed its connection to the dataplane of host w0"));
	ck_assert_ptr_nonnull(wait_msg(a0, "skip", 2.0));
	fake_send(a0, json_pack("{s:s, s:s, s:I, s:[I]}", "type", "partial", "app", "aggregator@a0",
				"agg", (json_int_t)jid(ag, "agg"), "missing", (json_int_t)id0));
	expect_sync_step(ps, 10, 1);
	stop_daemon();
}
END_TEST

/*
 * MLfabric-S: an iteration that ends short (here --sync-timeout 0.5 s with one of 2 workers)
 * ends at version 11, not 12: w0's pull for min_version 12 (mlf_push_get: its update's version
 * + the workers) is answered once the server is at 11. Before, it waited for a version only
 * the next iteration's parts bring, while every worker waited in its get (apps_shards_lost.sh:
 * the workers' 30 s get timeout after w2 was killed).
 */
START_TEST(sync_short_iteration_answers_its_pulls)
{
	int w[2], ps = sync_server_of_two(short_eager, w, NULL);
	uint64_t a = ((uint64_t)2 << 40) | 1;
	push(w[0], a, 10, 1000);
	fake_send(w[0], json_pack("{s:s, s:s, s:i, s:s, s:i}", "type", "pull", "app", "worker@w0", "id", 77,
				  "server", "ps", "min_version", 12));
	json_t *snd = wait_msg(w[0], "send", 2.0);
	ck_assert_ptr_nonnull(snd);
	pump(0.5); /* --sync-timeout: the iteration ends with w0's update alone */
	expect_sync_step(ps, 10, 1);
	fake_send(ps, json_pack("{s:s, s:s, s:I, s:i, s:f, s:[I]}", "type", "commit", "app", "server@ps",
				"xfer", (json_int_t)jid(snd, "xfer"), "version", 11, "t", clock_real_s(),
				"parts", (json_int_t)a));
	json_t *m = wait_msg(ps, "send", 2.0);
	ck_assert_msg(m != NULL, "the pull for the short iteration's end was never answered");
	ck_assert_str_eq(json_string_value(json_object_get(m, "what")), "model");
	ck_assert_uint_eq(jid(m, "id"), 77);
	stop_daemon();
}
END_TEST

/* Steps: offsets from the start; more than 256 steps merged with the bytes kept. */
START_TEST(steps_merged_keep_bytes)
{
	struct plan_rate_step r[1000];
	struct plan_transfer t = { .start_s = 5.0, .end_s = 5.0 + 1000 * 0.001, .n_rate = 1000,
				   .rate = r };
	double bits = 0;

	for (int i = 0; i < 1000; i++) {
		r[i] = (struct plan_rate_step){ .from_s = 5.0 + i * 0.001, .gbps = 1 + i % 7 };
		bits += r[i].gbps * 0.001;
	}
	json_t *a = sched_cmd_steps(&t);
	ck_assert_int_le((int)json_array_size(a), 256);
	ck_assert_int_ge((int)json_array_size(a), 200);
	double got_bits = 0, prev = -1;
	for (size_t i = 0; i < json_array_size(a); i++) {
		double off = json_real_value(json_array_get(json_array_get(a, i), 0));
		double g = json_real_value(json_array_get(json_array_get(a, i), 1));
		double next = i + 1 < json_array_size(a) ?
			json_real_value(json_array_get(json_array_get(a, i + 1), 0)) : 1.0;
		ck_assert_double_gt(off, prev);
		prev = off;
		got_bits += g * (next - off);
	}
	ck_assert_double_eq_tol(json_real_value(json_array_get(json_array_get(a, 0), 0)), 0, 1e-12);
	ck_assert_double_eq_tol(got_bits, bits, 1e-9);
	json_decref(a);
	/* few steps: unchanged */
	t.n_rate = 2;
	t.end_s = 5.002;
	a = sched_cmd_steps(&t);
	ck_assert_int_eq((int)json_array_size(a), 2);
	ck_assert_double_eq_tol(json_real_value(json_array_get(json_array_get(a, 1), 0)), 0.001,
				1e-12);
	ck_assert_double_eq(json_real_value(json_array_get(json_array_get(a, 1), 1)), 2);
	json_decref(a);
	/* float noise: a step 0.1 ns long, one a hair before the start, a rate of -1e-15 */
	r[0] = (struct plan_rate_step){ .from_s = 5.0 - 1e-12, .gbps = 3 };
	r[1] = (struct plan_rate_step){ .from_s = 5.0 + 1e-10, .gbps = -1e-15 };
	r[2] = (struct plan_rate_step){ .from_s = 5.0 + 2e-10, .gbps = 1 };
	r[3] = (struct plan_rate_step){ .from_s = 5.001, .gbps = 2 };
	t.n_rate = 4;
	a = sched_cmd_steps(&t);
	ck_assert_int_eq((int)json_array_size(a), 2);
	ck_assert_double_eq(json_real_value(json_array_get(json_array_get(a, 0), 0)), 0);
	ck_assert_double_eq(json_real_value(json_array_get(json_array_get(a, 0), 1)), 1);
	ck_assert_double_eq_tol(json_real_value(json_array_get(json_array_get(a, 1), 0)), 0.001,
				1e-12);
	json_decref(a);
}
END_TEST

/* Every bad message gets an error that names the field; nothing crashes. */
START_TEST(bad_fields_named)
{
	static const struct { const char *line, *names; } bad[] = {
		{ "{\"type\":\"register\",\"app\":\"server@w0\",\"role\":\"server\",\"mode\":\"x\"}", "mode" },
		{ "{\"type\":\"register\",\"app\":\"server@w0\",\"role\":\"server\",\"mode\":\"mlfabric-a\"}", "n_floats" },
		{ "{\"type\":\"register\",\"app\":\"server@w0\",\"role\":\"server\",\"mode\":\"async\"}", "now spelled mlfabric-a" },
		{ "{\"type\":\"register\",\"app\":\"server@w0\",\"role\":\"server\",\"mode\":\"sync\"}", "now spelled mlfabric-s" },
		{ "{\"type\":\"register\",\"app\":\"w@w0\",\"role\":\"painter\"}", "role" },
		{ "{\"type\":\"register\",\"app\":\"worker@w1\",\"role\":\"worker\",\"server\":\"ps\"}", "app" },
		{ "{\"type\":\"register\",\"role\":\"worker\",\"server\":\"ps\"}", "app" },
		{ "{\"type\":\"register\",\"app\":\"worker@w0\",\"role\":\"worker\",\"server\":\"nope\"}", "nope" },
		{ "{\"type\":\"update\",\"app\":\"worker@w0\",\"id\":-3}", "id" },
		{ "{\"type\":\"update\",\"app\":\"worker@w0\",\"id\":3,\"server\":\"ps\",\"bytes\":\"x\"}", "bytes" },
		{ "{\"type\":\"update\",\"app\":\"worker@w0\",\"id\":3,\"server\":\"ps\",\"bytes\":9,\"version\":1}", "norm" },
		{ "{\"type\":\"pull\",\"app\":\"worker@w0\",\"id\":3,\"server\":\"ps\",\"min_version\":1.5}", "min_version" },
		{ "{\"type\":\"done\",\"app\":\"worker@w0\",\"xfer\":12345,\"status\":0}", "12345" },
		{ "{\"type\":\"done\",\"app\":\"worker@w0\",\"xfer\":1}", "status" },
		{ "{\"type\":\"commit\",\"app\":\"server@w0\",\"xfer\":1,\"version\":2}", "server" },
		{ "{\"type\":\"partial\",\"app\":\"aggregator@w0\",\"agg\":1}", "missing" },
		{ "{\"type\":\"link\",\"host\":\"w0\",\"t\":1,\"up_gbps\":-1,\"down_gbps\":1}", "up_gbps" },
		{ "[1,2]", "object" },
		{ "{\"type\":\"hello\",\"host\":\"w1\"}", "already" },
	};
	start_daemon(NULL);
	int f = fake_open("w0");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_gt(write(fakes[f].c.fd, bad[i].line, strlen(bad[i].line)), 0);
		ck_assert_int_eq(write(fakes[f].c.fd, "\n", 1), 1);
		json_t *e = wait_msg(f, "error", 2.0);
		ck_assert_msg(e != NULL, "no error for %s", bad[i].line);
		const char *r = json_string_value(json_object_get(e, "reason"));
		ck_assert_msg(strstr(r, bad[i].names) != NULL, "%s: reason '%s' does not name %s",
			      bad[i].line, r, bad[i].names);
	}
	reg(f, "worker");
	ck_assert_int_eq(count_msgs(f, "error"), (int)(sizeof(bad) / sizeof(bad[0])));
	stop_daemon();
}
END_TEST

/* A dead server: planned updates lost (drop to the workers), new updates dropped at once. */
START_TEST(dead_server_loses_planned)
{
	int w0, ps = one_update_sent(&w0);
	uint64_t id = ((uint64_t)2 << 40) | 1;
	ctl_close(&fakes[ps].c);
	fakes[ps].open = 0;
	json_t *d = wait_msg(w0, "drop", 2.0);
	ck_assert_ptr_nonnull(d);
	ck_assert_uint_eq(jid(d, "id"), id);
	push(w0, id + 1, 0, 100000);
	d = wait_msg(w0, "drop", 2.0);
	ck_assert_ptr_nonnull(d);
	ck_assert_uint_eq(jid(d, "id"), id + 1);
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(d, "reason")), "ps"));
	ck_assert_int_eq(rec_count("updates.jsonl", "\"fate\":\"lost\""), 1);
	ck_assert_int_eq(rec_count("updates.jsonl", "\"fate\":\"dropped\""), 1);
	stop_daemon();
}
END_TEST

/* The program: a subprocess on 127.0.0.1 accepts a dataplane and exits 0 on SIGTERM. */
START_TEST(program_runs_and_stops)
{
	char d[64], path[128], rec[128], listen[64], err[128];
	snprintf(d, sizeof(d), "/tmp/test_sched_prog.XXXXXX");
	ck_assert_msg(mkdtemp(d) != NULL, "mkdtemp: %s", strerror(errno));
	snprintf(path, sizeof(path), "%s/cluster.json", d);
	snprintf(rec, sizeof(rec), "%s/rec", d);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(cluster_json, f);
	fclose(f);
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", 20000 + (int)((getpid() * 13) % 30000));
	pid_t pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		dup2(null, 2);
		execl("build/mlf-scheduler", "mlf-scheduler", "--cluster", path, "--listen", listen,
		      "--records", rec, "--batch-ms", "20", (char *)NULL);
		_exit(127);
	}
	int fd = -1;
	for (int i = 0; i < 100 && fd < 0; i++) {
		fd = ctl_connect(listen, err, sizeof(err));
		if (fd < 0)
			usleep(20000);
	}
	ck_assert_msg(fd >= 0, "%s", err);
	struct ctl_conn c;
	ctl_init(&c, fd);
	json_t *h = json_pack("{s:s, s:s}", "type", "hello", "host", "w2");
	ck_assert_int_ge(ctl_send(&c, h), 0);
	json_decref(h);
	json_t *w = NULL;
	for (int i = 0; i < 100 && !w; i++) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		poll(&pf, 1, 20);
		ctl_read(&c);
		ctl_next(&c, &w, err, sizeof(err));
	}
	ck_assert_ptr_nonnull(w);
	ck_assert_str_eq(ctl_type(w), "welcome");
	ck_assert_double_eq_tol(json_number_value(json_object_get(w, "batch_ms")), 20, 1e-9);
	json_decref(w);
	ctl_close(&c);
	kill(pid, SIGTERM);
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	char bpath[256];
	snprintf(bpath, sizeof(bpath), "%s/batches.jsonl", rec);
	ck_assert_int_eq(access(bpath, F_OK), 0);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", d);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* A dataplane's error naming a gone application: it is unregistered, its aggregate skipped. */
START_TEST(gone_app_unregistered)
{
	int w[2], a0, ps;
	json_t *ag = aggregate_planned(w, &a0, &ps);
	fake_send(a0, json_pack("{s:s, s:s, s:s}", "type", "error", "app", "aggregator@a0",
				"reason", "host a0: no application 'aggregator@a0'"));
	expect_skip(ps, jid(ag, "agg"));
	ck_assert_int_eq(fakes[a0].open, 1);
	ck_assert_int_eq(count_msgs(a0, "error"), 0); /* no error answered to an error */
	push(w[0], ((uint64_t)2 << 40) | 2, 0, 10001024);
	push(w[1], ((uint64_t)3 << 40) | 2, 0, 10001024);
	ck_assert_ptr_nonnull(wait_msg(ps, "order", 2.0));
	ck_assert_ptr_nonnull(wait_msg(ps, "order", 2.0));
	pump(0.1);
	ck_assert_int_eq(count_msgs(a0, "aggregate"), 1);
	stop_daemon();
}
END_TEST

/*
 * A gone worker whose update feeds an aggregate: the aggregator is told at once (`skip` with
 * chan 2 and the update id) and the aggregate is still awaited at the server; once the other
 * input is gone too, the aggregate itself is skipped at the server.
 */
START_TEST(gone_worker_input_skipped_at_aggregator)
{
	int w[2], a0, ps;
	json_t *ag = aggregate_planned(w, &a0, &ps);
	uint64_t id0 = ((uint64_t)2 << 40) | 1, agg = jid(ag, "agg");
	ck_assert_int_eq(json_array_size(json_object_get(ag, "inputs")), 2);
	fake_send(w[0], json_pack("{s:s, s:s, s:s}", "type", "error", "app", "worker@w0", "reason",
				  "application worker@w0 closed its connection to the dataplane of host w0"));
	json_t *k = wait_msg(a0, "skip", 2.0);
	ck_assert_ptr_nonnull(k);
	ck_assert_int_eq(json_integer_value(json_object_get(k, "chan")), 2);
	ck_assert_uint_eq((uint64_t)json_integer_value(json_array_get(json_object_get(k, "xfers"), 0)), id0);
	pump(0.2);
	ck_assert_int_eq(count_msgs(ps, "skip"), 0); /* the partial aggregate still comes */
	ck_assert_int_eq(rec_count("updates.jsonl", "\"fate\":\"lost\""), 1);
	fake_send(w[1], json_pack("{s:s, s:s, s:s}", "type", "error", "app", "worker@w1", "reason",
				  "application worker@w1 closed its connection to the dataplane of host w1"));
	expect_skip(ps, agg);
	ck_assert_int_eq(count_msgs(a0, "skip"), 1); /* no input left: the aggregate is failed instead */
	ck_assert_int_eq(rec_count("updates.jsonl", "\"fate\":\"lost\""), 2);
	stop_daemon();
}
END_TEST

/* An aggregator that got no input reports a failed done: skipped without --xfer-timeout. */
START_TEST(empty_aggregate_done_skips)
{
	int w[2], a0, ps;
	json_t *ag = aggregate_planned(w, &a0, &ps);
	uint64_t agg = jid(ag, "agg");
	fake_send(a0, json_pack("{s:s, s:s, s:I, s:i, s:I, s:f, s:s}", "type", "done", "app",
				"aggregator@a0", "xfer", (json_int_t)agg, "status", -61, "bytes", (json_int_t)0,
				"t", clock_real_s(), "reason", "no input of the aggregate arrived"));
	expect_skip(ps, agg);
	stop_daemon();
}
END_TEST

static void short_xfer_timeout(struct sched_config *c)
{
	no_agg(c);
	c->xfer_timeout_s = 0.3;
}

/* A commanded transfer nobody reports on is lost after --xfer-timeout: nothing waits forever. */
START_TEST(unreported_transfer_times_out)
{
	start_daemon(short_xfer_timeout);
	int w0, ps = setup("mlfabric-a", 0, 8, 1, &w0, NULL);
	uint64_t id = ((uint64_t)2 << 40) | 1, done_id = id + 1;
	push(w0, id, 0, 1000);
	push(w0, done_id, 0, 1000);
	ck_assert_ptr_nonnull(wait_msg(w0, "send", 2.0));
	ck_assert_ptr_nonnull(wait_msg(w0, "send", 2.0));
	fake_send(w0, json_pack("{s:s, s:s, s:I, s:i}", "type", "done", "app", "worker@w0", "xfer",
				(json_int_t)done_id, "status", 0));
	pump(0.1);
	ck_assert_int_eq(count_msgs(ps, "skip"), 0);
	expect_skip(ps, id);
	json_t *d = wait_msg(w0, "drop", 1.0);
	ck_assert_ptr_nonnull(d);
	ck_assert_uint_eq(jid(d, "id"), id);
	pump(0.5);
	ck_assert_int_eq(count_msgs(ps, "skip"), 1); /* the reported one is not skipped */
	stop_daemon();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sched");
	TCase *tc = tcase_create("daemon");

	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, unknown_host_refused);
	tcase_add_test(tc, other_protocol_version_refused);
	tcase_add_test(tc, malformed_json_keeps_connection);
	tcase_add_test(tc, batch_order_sends_aggregates);
	tcase_add_test(tc, stale_update_dropped);
	tcase_add_test(tc, silent_host_named_and_dropped);
	tcase_add_test(tc, failed_done_skips);
	tcase_add_test(tc, pull_gets_model);
	tcase_add_test(tc, lost_model_pull_answered_again);
	tcase_add_test(tc, sync_waits_for_all);
	tcase_add_test(tc, link_report_after_t_lag);
	tcase_add_test(tc, running_transfer_carried);
	tcase_add_test(tc, dead_aggregator_skips_aggregate);
	tcase_add_test(tc, sync_timeout_names_missing);
	tcase_add_test(tc, sync_eager_plans_ready_updates);
	tcase_add_test(tc, sync_lost_update_steps);
	tcase_add_test(tc, sync_partial_aggregate_steps);
	tcase_add_test(tc, sync_short_iteration_answers_its_pulls);
	tcase_add_test(tc, steps_merged_keep_bytes);
	tcase_add_test(tc, bad_fields_named);
	tcase_add_test(tc, dead_server_loses_planned);
	tcase_add_test(tc, program_runs_and_stops);
	tcase_add_test(tc, gone_app_unregistered);
	tcase_add_test(tc, gone_worker_input_skipped_at_aggregator);
	tcase_add_test(tc, empty_aggregate_done_skips);
	tcase_add_test(tc, unreported_transfer_times_out);
	suite_add_tcase(s, tc);
	return ck_run(s);
}
