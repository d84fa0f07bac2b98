/* test_sched_status.c - Check tests of the scheduler's read-only `status` answer and the
 * applications' `waits` (docs/mlf-top.md), fake dataplanes (tests/unit/sched_fake.h). */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "ck_run.h"
#include "clock.h"
#include "ctl.h"
#include "sched_fake.h"

/* A viewer: a connection that never says hello and never heartbeats. */
static int viewer(void)
{
	int v = fake_connect("viewer");
	fakes[v].silent = 1;
	return v;
}

/* Ask viewer @v for the status; asserts the answer (2 s). Owned by got[]. */
static json_t *status(int v)
{
	fake_send(v, json_pack("{s:s}", "type", "status"));
	json_t *st = wait_msg(v, "status", 2.0);
	ck_assert_ptr_nonnull(st);
	return st;
}

/* The entry of array @k of @st whose field @field is @name, or NULL. */
static json_t *find(json_t *st, const char *k, const char *field, const char *name)
{
	json_t *e;
	size_t i;
	json_array_foreach(json_object_get(st, k), i, e)
		if (!strcmp(json_string_value(json_object_get(e, field)) ?: "", name))
			return e;
	return NULL;
}

static const char *str(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

/* Every cluster host is listed; link reports, registrations, transfers and held updates. */
START_TEST(status_lists_hosts_links_transfers)
{
	int w[2];
	start_daemon(NULL);
	setup(NULL, 0, 8, 2, w, NULL); /* no server: updates stay held */
	fake_send(w[0], json_pack("{s:s, s:s, s:f, s:f, s:f, s:f, s:f}", "type", "link", "host",
				  "w0", "t", clock_real_s(), "up_gbps", 2.0, "down_gbps", 4.0,
				  "tx_gbps", 1.25, "rx_gbps", 0.5));
	fake_send(w[0], json_pack("{s:s, s:s, s:f, s:f, s:f, s:f, s:f, s:{s:s, s:b, s:i, s:i, s:i}}",
				  "type", "link", "host", "w0", "t", clock_real_s(), "up_gbps", 2.0,
				  "down_gbps", 4.0, "tx_gbps", 1.25, "rx_gbps", 0.5, "port", "name",
				  "port 0 (net_memif0)", "link_up", 1, "speed_mbps", 10000, "imissed", 7,
				  "rx_nombuf", 3));
	push(w[1], ((uint64_t)3 << 40) | 1, 0, 1000);
	push(w[1], ((uint64_t)3 << 40) | 2, 0, 2000);
	pump(0.4); /* the link report is older than t_lag (0.3 s) */
	int v = viewer();
	json_t *st = status(v);

	ck_assert_str_eq(str(st, "cluster"), "sch");
	ck_assert_int_eq(json_array_size(json_object_get(st, "hosts")), 6);
	const char *names[] = { "ps", "w0", "w1", "w2", "a0", "r0" };
	for (int i = 0; i < 6; i++)
		ck_assert_ptr_nonnull(find(st, "hosts", "name", names[i]));
	json_t *h0 = find(st, "hosts", "name", "w0");
	ck_assert(json_is_true(json_object_get(h0, "alive")));
	ck_assert_double_eq_tol(json_number_value(json_object_get(h0, "up_gbps")), 2.0, 1e-9);
	ck_assert_double_eq_tol(json_number_value(json_object_get(h0, "down_gbps")), 4.0, 1e-9);
	ck_assert_double_eq_tol(json_number_value(json_object_get(h0, "tx_gbps")), 1.25, 1e-9);
	ck_assert_double_eq_tol(json_number_value(json_object_get(h0, "rx_gbps")), 0.5, 1e-9);
	ck_assert_str_eq(json_string_value(json_array_get(json_object_get(h0, "apps"), 0)),
			 "worker");
	/* the port part of the link report (docs/control.md): passed on as it came */
	json_t *pt = json_object_get(h0, "port");
	ck_assert(json_is_object(pt));
	ck_assert_str_eq(str(pt, "name"), "port 0 (net_memif0)");
	ck_assert(json_is_true(json_object_get(pt, "link_up")));
	ck_assert_int_eq(json_integer_value(json_object_get(pt, "speed_mbps")), 10000);
	ck_assert_int_eq(json_integer_value(json_object_get(pt, "imissed")), 7);
	ck_assert_int_eq(json_integer_value(json_object_get(pt, "rx_nombuf")), 3);
	ck_assert_int_eq(json_integer_value(json_object_get(pt, "oerrors")), 0); /* absent: 0 */
	ck_assert(json_is_null(json_object_get(find(st, "hosts", "name", "w1"), "port")));
	json_t *w2 = find(st, "hosts", "name", "w2"); /* never connected */
	ck_assert(json_is_false(json_object_get(w2, "alive")));
	ck_assert(json_is_null(json_object_get(w2, "silent_s")));
	ck_assert(json_is_null(json_object_get(w2, "tx_gbps")));
	json_t *wk = find(st, "workers", "worker", "w1");
	ck_assert_ptr_nonnull(wk);
	ck_assert_int_eq(json_integer_value(json_object_get(wk, "held")), 2);
	ck_assert_int_eq(json_integer_value(json_object_get(wk, "held_bytes")), 3000);
	ck_assert(json_number_value(json_object_get(wk, "held_oldest_s")) > 0.3);
	ck_assert_int_eq(json_integer_value(json_object_get(find(st, "workers", "worker", "w0"),
							    "held")), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(st, "n_transfers")), 0);
	stop_daemon();
}
END_TEST

/* A commanded transfer without `done` past its planned end names its source as late. */
START_TEST(late_transfer_names_source)
{
	uint64_t id = ((uint64_t)2 << 40) | 1;
	int w0;
	start_daemon(no_agg);
	setup("mlfabric-a", 0, 8, 1, &w0, NULL);
	push(w0, id, 0, 100000);
	ck_assert_ptr_nonnull(wait_msg(w0, "send", 2.0));
	int v = viewer();
	json_t *st = status(v);
	json_t *x = find(st, "transfers", "src", "w0");
	ck_assert_ptr_nonnull(x);
	ck_assert_uint_eq((uint64_t)json_integer_value(json_object_get(x, "xfer")), id);
	ck_assert_str_eq(str(x, "dst"), "ps");
	ck_assert_str_eq(str(x, "what"), "update");
	ck_assert_int_eq(json_integer_value(json_object_get(x, "bytes")), 100000);
	ck_assert(json_number_value(json_object_get(x, "t_end")) > clock_real_s() - 1.0);
	pump(0.3); /* 100 kB at <= 10 Gbit/s ends well before */
	st = status(v);
	x = find(st, "late", "peer", "w0");
	ck_assert_ptr_nonnull(x);
	ck_assert_ptr_nonnull(strstr(str(x, "what"), "update transfer"));
	ck_assert(json_number_value(json_object_get(x, "wait_s")) > 0.1);
	ck_assert_ptr_null(find(st, "late", "peer", "ps"));
	/* done: no longer in flight, nobody late */
	char app[64];
	fake_send(w0, json_pack("{s:s, s:s, s:I, s:i}", "type", "done", "app",
				app_of(w0, "worker", app), "xfer", (json_int_t)id, "status", 0));
	pump(0.1);
	st = status(v);
	ck_assert_int_eq(json_integer_value(json_object_get(st, "n_transfers")), 0);
	ck_assert_ptr_null(find(st, "late", "peer", "w0"));
	stop_daemon();
}
END_TEST

/* A silent dataplane is named before and after the scheduler declares it dead. */
START_TEST(silent_dataplane_named)
{
	int w[2];
	start_daemon(NULL);
	setup(NULL, 0, 8, 2, w, NULL);
	int v = viewer();
	ck_assert_ptr_null(find(status(v), "late", "peer", "w1"));
	fakes[w[1]].silent = 1;
	pump(1.0); /* peer timeout 0.5 s */
	json_t *st = status(v);
	json_t *l = find(st, "late", "peer", "w1");
	ck_assert_ptr_nonnull(l);
	ck_assert_ptr_nonnull(strstr(str(l, "what"), "dead"));
	ck_assert(json_number_value(json_object_get(l, "wait_s")) > 0.5);
	ck_assert(json_is_false(json_object_get(find(st, "hosts", "name", "w1"), "alive")));
	ck_assert_ptr_null(find(st, "late", "peer", "w0"));
	stop_daemon();
}
END_TEST

/* `waits` replaces the application's list; an empty list clears it; bad input is named. */
START_TEST(waits_reported_and_cleared)
{
	int w0;
	char app[64];
	start_daemon(NULL);
	int ps = setup("mlfabric-a", 0, 8, 1, &w0, NULL);
	int v = viewer();
	double since = clock_real_s() - 2.5;
	json_t *ws = json_pack("[{s:s, s:s, s:f}]", "what", "model (get)", "peer", "ps", "since",
			       since);
	fake_send(w0, json_pack("{s:s, s:s, s:o}", "type", "waits", "app",
				app_of(w0, "worker", app), "waits", ws));
	pump(0.1);
	json_t *st = status(v);
	json_t *e = find(st, "waits", "app", "worker@w0");
	ck_assert_ptr_nonnull(e);
	ck_assert_str_eq(str(e, "peer"), "ps");
	ck_assert_str_eq(str(e, "host"), "w0");
	ck_assert_str_eq(str(e, "what"), "model (get)");
	ck_assert(json_number_value(json_object_get(e, "wait_s")) >= 2.5);
	fake_send(w0, json_pack("{s:s, s:s, s:[]}", "type", "waits", "app", app, "waits"));
	pump(0.1);
	ck_assert_int_eq(json_array_size(json_object_get(status(v), "waits")), 0);
	fake_send(ps, json_pack("{s:s, s:s, s:[{s:s}]}", "type", "waits", "app",
				app_of(ps, "server", app), "waits", "what", "order"));
	json_t *err = wait_msg(ps, "error", 2.0);
	ck_assert_ptr_nonnull(err);
	ck_assert_ptr_nonnull(strstr(str(err, "reason"), "\"peer\""));
	ck_assert_int_eq(json_array_size(json_object_get(status(v), "waits")), 0);
	stop_daemon();
}
END_TEST

/* A viewer stays connected without hello, and cannot change the state. */
START_TEST(viewer_is_read_only)
{
	int w0;
	start_daemon(NULL);
	setup(NULL, 0, 8, 1, &w0, NULL);
	int v = viewer();
	status(v);
	pump(1.0); /* longer than the peer timeout (0.5 s) for connections without hello */
	ck_assert_int_eq(fakes[v].open, 1);
	json_t *st = status(v);
	ck_assert(json_is_false(json_object_get(find(st, "hosts", "name", "w2"), "alive")));
	/* a hello on a viewer connection is refused and closes it: w2 does not come alive */
	fake_send(v, json_pack("{s:s, s:s, s:f, s:f}", "type", "hello", "host", "w2", "up_gbps",
			       10.0, "down_gbps", 10.0));
	json_t *err = wait_msg(v, "error", 2.0);
	ck_assert_ptr_nonnull(err);
	ck_assert_ptr_nonnull(strstr(str(err, "reason"), "read-only"));
	pump(0.3);
	ck_assert_int_eq(fakes[v].open, 0);
	ck_assert_int_eq(count_msgs(v, "welcome"), 0);
	int v2 = viewer();
	st = status(v2);
	ck_assert(json_is_false(json_object_get(find(st, "hosts", "name", "w2"), "alive")));
	/* an update sent on a viewer connection is refused; nothing is held */
	fake_send(v2, json_pack("{s:s, s:s, s:I, s:s, s:i, s:i, s:f}", "type", "update", "app",
				"worker@w0", "id", (json_int_t)(((uint64_t)2 << 40) | 9), "server",
				"ps", "bytes", 1000, "version", 0, "norm", 1.0));
	ck_assert_ptr_nonnull(wait_msg(v2, "error", 2.0));
	int v3 = viewer();
	st = status(v3);
	ck_assert_int_eq(json_integer_value(json_object_get(find(st, "workers", "worker", "w0"),
							    "held")), 0);
	stop_daemon();
}
END_TEST

/*
 * One `link` report of @host (fake @f) at @t whose `paths` name one tx path to each of @peers:
 * commanded @cmd, achieved @got Gbit/s over a fully active 0.1 s, RTT @rtt ms, no loss.
 */
static void report_paths(int f, const char *host, double t, const char *const *peers, int n,
			 double cmd, double got, double rtt)
{
	json_t *a = json_array();

	for (int i = 0; i < n; i++)
		json_array_append_new(a, json_pack("{s:s, s:s, s:I, s:f, s:f, s:f, s:I, s:I, s:f}",
			"peer", peers[i], "dir", "tx", "bytes", (json_int_t)(got * 1e9 * 0.1 / 8),
			"active_s", 0.1, "gbps", got, "cmd_gbps", cmd, "segs", (json_int_t)1000,
			"retx", (json_int_t)0, "rtt_ms", rtt));
	json_t *m = json_pack("{s:s, s:s, s:f, s:f, s:f}", "type", "link", "host", host, "t", t,
			      "up_gbps", 10.0, "down_gbps", strcmp(host, "ps") ? 10.0 : 1.0);
	json_object_set_new(m, "paths", a);
	fake_send(f, m);
	pump(0.01); /* handled before the next report (on another connection) is sent */
}

static double est(json_t *st, const char *host, const char *k)
{
	json_t *h = find(st, "hosts", "name", host);
	ck_assert_ptr_nonnull(h);
	return json_number_value(json_object_get(h, k));
}

/*
 * Measured capacities (docs/scheduler.md "Measured capacities"): two workers each sending to
 * ps alone fall short with a grown RTT for three windows: ps's downlink estimate drops to what
 * they achieved together (0.6 of 1.0 declared), their uplinks stay (a shortfall with congestion
 * signals is the network's). The server sending to three workers, every path short with a grown
 * RTT: its own queue explains it, the workers' downlinks stay at 10.
 */
START_TEST(measured_estimates_in_status)
{
	int w[3];
	const char *to_ps[] = { "ps" }, *to_ws[] = { "w0", "w1", "w2" };
	double t = clock_real_s() - 2.0;

	start_daemon(NULL);
	int ps = setup(NULL, 0, 8, 3, w, NULL);
	for (int k = 0; k < 7; k++, t += 0.101) { /* just over a window (0.1 s) apart */
		int base = k < 2; /* two rounds on plan with a small RTT: the base (a host's first report has no period) */
		report_paths(w[0], "w0", t, to_ps, 1, base ? 0.4 : 0.9, base ? 0.4 : 0.3, base ? 0.2 : 10);
		report_paths(w[1], "w1", t + 0.01, to_ps, 1, base ? 0.4 : 0.9, base ? 0.4 : 0.3, base ? 0.2 : 10);
		report_paths(ps, "ps", t + 0.02, to_ws, 3, base ? 1.0 : 3.0, 1.0, base ? 0.2 : 10);
	}
	pump(0.2);
	json_t *st = status(viewer());
	ck_assert_double_eq_tol(est(st, "ps", "est_down_gbps"), 0.6, 1e-6);
	ck_assert_double_eq_tol(est(st, "w0", "est_up_gbps"), 10.0, 1e-9);
	ck_assert_double_eq_tol(est(st, "w1", "est_up_gbps"), 10.0, 1e-9);
	for (int i = 0; i < 3; i++)
		ck_assert_double_eq_tol(est(st, to_ws[i], "est_down_gbps"), 10.0, 1e-9);
	ck_assert_double_eq_tol(est(st, "ps", "est_up_gbps"), 10.0, 1e-9);
	/* the plan's capacity stays the declared one (--capacity declared, the default) */
	ck_assert_double_eq_tol(est(st, "ps", "down_gbps"), 1.0, 1e-9);
	stop_daemon();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sched_status");
	TCase *tc = tcase_create("status");

	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, status_lists_hosts_links_transfers);
	tcase_add_test(tc, late_transfer_names_source);
	tcase_add_test(tc, silent_dataplane_named);
	tcase_add_test(tc, waits_reported_and_cleared);
	tcase_add_test(tc, viewer_is_read_only);
	tcase_add_test(tc, measured_estimates_in_status);
	suite_add_tcase(s, tc);
	return ck_run(s);
}
