/*
 * test_sched_arrival.c - Check tests of planning on arrival and of the measured lead
 * (docs/scheduler.md "Batches" and "The lead"): an arrival is planned within the minimum replan
 * interval, not at the next tick; arrivals within the interval share one plan; a stream of
 * arrivals does not keep an early update waiting beyond --batch-ms; every capacity change
 * usable in the future comes due, not only the earliest; the lead tracks the p99 of
 * the command latency within its floor and --lead-ms. Gathering behind a busy link (§5.2,
 * docs/scheduler.md "Gathering behind a busy link"): an update that would queue behind the
 * server's busy downlink is held and aggregated with one that arrives later; one whose path is
 * free is planned at once; the hold ends --batch-ms after the arrival under a stream.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "ck_run.h"
#include "clock.h"
#include "ctl.h"
#include "sched_daemon.h"
#include "sched_arrival.h"
#include "sched_fake.h"
#include "sched_lead.h"
#include "sched_state.h"

#define UID(host, seq) (((uint64_t)(host) << 40) | (seq)) /* update id of host index @host */

/* A slow fallback tick (0.5 s) and the default replan interval, no aggregator. */
static void slow_tick(struct sched_config *c)
{
	no_agg(c);
	c->batch_s = 0.5;
}

/* A slow tick and a long replan interval (50 ms): arrivals gather. */
static void gather(struct sched_config *c)
{
	slow_tick(c);
	c->replan_s = 0.05;
}

/* The default-like timings of a run: 100 ms batches, replan 5 ms. */
static void stream(struct sched_config *c)
{
	no_agg(c);
	c->batch_s = 0.1;
	c->replan_s = 0.005;
}

/* A large lead cap (50 ms), so that its fall is measurable against the loop's jitter. */
static void big_lead(struct sched_config *c)
{
	no_agg(c);
	c->lead_s = 0.05;
}

/* Time until fake @f gets a `send` of update @id (pumping), or -1 after @timeout s. */
static double until_send(int f, uint64_t id, double timeout)
{
	double t0 = clock_real_s();
	json_t *m;

	while ((m = wait_msg(f, "send", timeout - (clock_real_s() - t0))))
		if (jid(m, "id") == id)
			return clock_real_s() - t0;
	return -1;
}

/* An update pushed right after a plan is planned within a few ms, not at the 0.5 s tick. */
START_TEST(arrival_planned_at_once)
{
	int w[1];

	start_daemon(slow_tick);
	setup("mlfabric-a", 0, 1000, 1, w, NULL);
	push(w[0], UID(2, 1), 0, 4000);
	ck_assert_double_ge(until_send(w[0], UID(2, 1), 2.0), 0);
	push(w[0], UID(2, 2), 0, 4000);
	double t = until_send(w[0], UID(2, 2), 2.0);
	ck_assert_double_ge(t, 0);
	ck_assert_msg(t < 0.1, "the update was planned after %.3f s (tick 0.5 s, replan 2 ms)", t);
	stop_daemon();
}
END_TEST

/* Three updates pushed within the replan interval (50 ms) share one plan. */
START_TEST(arrivals_coalesce)
{
	int w[3];

	start_daemon(gather);
	setup("mlfabric-a", 0, 1000, 3, w, NULL);
	pump(0.1);
	pthread_mutex_lock(&hook_mu);
	int before = hook_batches;
	pthread_mutex_unlock(&hook_mu);
	for (int i = 0; i < 3; i++)
		push(w[i], UID(2 + i, 1), 0, 4000);
	double t = until_send(w[0], UID(2, 1), 2.0);
	ck_assert_double_ge(t, 0);
	ck_assert_msg(t < 0.3, "planned after %.3f s (tick 0.5 s, replan 50 ms)", t);
	pump(0.1);
	pthread_mutex_lock(&hook_mu);
	ck_assert_int_eq(hook_batches, before + 1);
	ck_assert_int_eq(hook_n_updates, 3);
	pthread_mutex_unlock(&hook_mu);
	stop_daemon();
}
END_TEST

/*
 * Seconds from pushing update @id of worker fake @early (4000 bytes) until its first `send`,
 * while worker fake @streamer (host index @h) pushes three updates (ids UID(@h, 1000 + k)) a
 * millisecond, for at most @limit s; -1 when none came.
 */
static double send_under_stream(int early, uint64_t id, int streamer, int h, double limit)
{
	int before = count_msgs(early, "send");
	double t0 = clock_real_s();

	push(early, id, 0, 4000);
	for (int i = 0; i < 1000 && clock_real_s() - t0 < limit; i++) {
		for (int k = 0; k < 3; k++)
			push(streamer, UID(h, 1000 + 3 * i + k), 0, 4000);
		pump(0.001);
		if (count_msgs(early, "send") > before)
			return clock_real_s() - t0;
	}
	return -1;
}

/* A stream of updates (about one a millisecond) does not keep an early one waiting. */
START_TEST(stream_does_not_starve)
{
	int w[2];

	start_daemon(stream);
	setup("mlfabric-a", 0, 1000, 2, w, NULL);
	double t_send = send_under_stream(w[0], UID(2, 1), w[1], 3, 0.4);
	ck_assert_msg(t_send >= 0 && t_send <= 0.1 + 0.03,
		      "the early update was planned after %.3f s (batch 0.1 s)", t_send);
	stop_daemon();
}
END_TEST

/* The tracker's bounds: on-time reports bring it to the 1 ms floor, late ones to the cap. */
START_TEST(lead_bounds)
{
	struct sched_lead l;
	double t = 0;

	sched_lead_init(&l, 0.01);
	ck_assert_double_eq(l.lead_s, 0.01);
	for (int i = 0; i < 3000; i++, t += 0.001)
		sched_lead_sample(&l, t, t + 0.01, t + 0.01, t);
	ck_assert_double_eq_tol(l.lead_s, SCHED_LEAD_FLOOR_S, 1e-12);
	/* late reports of transfers planned after the last raise: each raises it, up to the cap */
	double prev = l.lead_s;
	for (int i = 0; i < 3; i++, t += 0.01) {
		sched_lead_sample(&l, t, t + 0.01, t + 0.05, t);
		ck_assert_double_gt(l.lead_s, prev);
		prev = l.lead_s;
	}
	for (int i = 0; i < 20; i++, t += 0.01)
		sched_lead_sample(&l, t, t + 0.01, t + 0.05, t);
	ck_assert_double_eq(l.lead_s, 0.01);
	/* --lead-ms 0: no lead at all */
	sched_lead_init(&l, 0);
	sched_lead_sample(&l, 1, 1.01, 2, 1);
	ck_assert_double_eq(l.lead_s, 0);
}
END_TEST

/* The late transfers of one batch (planned before the raise they caused) raise it once. */
START_TEST(lead_one_raise_per_batch)
{
	struct sched_lead l;

	sched_lead_init(&l, 0.01);
	for (int i = 0; i < 1000; i++)
		sched_lead_sample(&l, 0, 0.01, 0.01, 0);
	double low = l.lead_s;
	for (int i = 0; i < 10; i++)
		sched_lead_sample(&l, 1.0, 1.01, 1.1, 1.2);
	ck_assert_double_eq_tol(l.lead_s, low * exp(SCHED_LEAD_GAIN * SCHED_LEAD_Q), 1e-12);
	ck_assert_uint_eq(l.n_late, 10);
}
END_TEST

/* With the actual start (`t_start`), a slow wire (late ends, on-time starts) lowers the lead. */
START_TEST(lead_from_start_times)
{
	struct sched_lead l;
	double t = 0;

	sched_lead_init(&l, 0.01);
	for (int i = 0; i < 3000; i++, t += 0.001) {
		sched_lead_sample_start(&l, t, t + 0.0005, t);
		ck_assert_uint_eq(l.n_late, 0);
	}
	ck_assert_double_eq_tol(l.lead_s, SCHED_LEAD_FLOOR_S, 1e-12);
	sched_lead_sample_start(&l, t, t + 0.003, t);
	ck_assert_double_gt(l.lead_s, SCHED_LEAD_FLOOR_S);
}
END_TEST

/*
 * The tracker follows the samples: command latencies uniform in [0, 4 ms] (p99 3.96 ms) give a
 * lead near the p99 less the slack a transfer may end late by (1 ms + 10% of 5 ms), with about
 * 1% late transfers; latencies below the lead give the floor.
 */
START_TEST(lead_follows_samples)
{
	struct sched_lead l;
	uint64_t x = 88172645463325252ull;
	double t = 0, sum = 0;
	int n = 40000, late = 0, n_avg = 0;

	sched_lead_init(&l, 0.01);
	for (int i = 0; i < n; i++, t += 0.001) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		double lat = 0.004 * (double)(x >> 11) / (double)(1ull << 53);
		double lead = l.lead_s, dur = 0.005;
		/* the command arrives @lat after the plan: the transfer starts at max(plan + lead,
		 * plan + lat) and ends dur later; planned plan + lead .. + dur */
		double start = t + lead, actual_end = t + (lat > lead ? lat : lead) + dur;
		if (i >= n / 2) {
			late += lat > lead + SCHED_LEAD_SLACK_S + SCHED_LEAD_SLACK_FRAC * dur;
			sum += lead;
			n_avg++;
		}
		sched_lead_sample(&l, start, start + dur, actual_end, t);
	}
	double mean = sum / n_avg;
	ck_assert_msg(mean > 0.002 && mean < 0.0055, "mean lead %.4f s (latencies U[0, 4 ms])", mean);
	ck_assert_msg(late < n_avg / 20, "%d of %d transfers late", late, n_avg);
	sched_lead_init(&l, 0.01);
	for (int i = 0; i < 2000; i++, t += 0.001)
		sched_lead_sample(&l, t + l.lead_s, t + l.lead_s + 0.005, t + l.lead_s + 0.005, t);
	ck_assert_double_eq_tol(l.lead_s, SCHED_LEAD_FLOOR_S, 1e-12);
}
END_TEST

/*
 * The lead the daemon planned update @id with (seconds): read from the daemon itself (hook_lead,
 * set on its thread right after each plan), not from start - receipt, which a loaded machine
 * stretches (a `send` read 16 ms late made a 50 ms lead look like 34 ms under stress-ng). The
 * `send`'s start goes to @start.
 */
static double lead_seen(int w0, uint64_t id, double *start)
{
	json_t *m = NULL;
	double t_end = clock_real_s() + 2.0;

	while (clock_real_s() < t_end && (m = wait_msg(w0, "send", 2.0)) && jid(m, "id") != id)
		;
	ck_assert_ptr_nonnull(m);
	*start = json_number_value(json_object_get(m, "start"));
	pthread_mutex_lock(&hook_mu);
	double lead = hook_lead;
	pthread_mutex_unlock(&hook_mu);
	return lead;
}

/*
 * In the daemon: `done` reports at the planned start (on time) lower the lead of the next
 * commands from the 50 ms cap; a late one raises it again.
 */
START_TEST(lead_follows_done_reports)
{
	int w[1];
	double start;

	start_daemon(big_lead);
	setup("mlfabric-a", 0, 100000, 1, w, NULL);
	push(w[0], UID(2, 1), 0, 4000);
	double first = lead_seen(w[0], UID(2, 1), &start);
	ck_assert_msg(fabs(first - 0.05) < 1e-9, "first lead %.4f s (cap 50 ms)", first);
	for (int i = 0; i < 200; i++) {
		uint64_t id = UID(2, 2 + i);
		push(w[0], id, 0, 4000);
		lead_seen(w[0], id, &start);
		fake_send(w[0], json_pack("{s:s, s:s, s:I, s:i, s:i, s:f}", "type", "done", "app",
					  "worker@w0", "xfer", (json_int_t)id, "status", 0, "bytes",
					  4000, "t", start));
	}
	pump(0.05);
	push(w[0], UID(2, 500), 0, 4000);
	double low = lead_seen(w[0], UID(2, 500), &start);
	ck_assert_msg(low < 0.03, "lead %.4f s after 200 on-time transfers (50 ms x e^-1 = 18 ms)",
		      low);
	fake_send(w[0], json_pack("{s:s, s:s, s:I, s:i, s:i, s:f}", "type", "done", "app",
				  "worker@w0", "xfer", (json_int_t)UID(2, 500), "status", 0, "bytes",
				  4000, "t", start + 0.5));
	pump(0.05);
	push(w[0], UID(2, 501), 0, 4000);
	double high = lead_seen(w[0], UID(2, 501), &start);
	ck_assert_msg(high > low + 0.005, "lead %.4f s after a late transfer (before %.4f s)", high,
		      low);
	/* a late end with an on-time `t_start` is a slow wire: the lead does not rise */
	fake_send(w[0], json_pack("{s:s, s:s, s:I, s:i, s:i, s:f, s:f}", "type", "done", "app",
				  "worker@w0", "xfer", (json_int_t)UID(2, 501), "status", 0, "bytes",
				  4000, "t", start + 0.5, "t_start", start));
	pump(0.05);
	push(w[0], UID(2, 502), 0, 4000);
	double after = lead_seen(w[0], UID(2, 502), &start);
	/* a slow wire is an on-time sample: the lead falls again, it does not rise */
	ck_assert_msg(after < high,
		      "lead %.4f s after a slow wire (before %.4f s; a late transfer raised it from %.4f s)",
		      after, high, low);
	stop_daemon();
}
END_TEST

/* A `link` report of host 0 at @t changing its capacities to @gbps, noted as on_link does. */
static void link_report(struct sched *s, double t, double gbps)
{
	struct sched_host *h = &s->hosts[0];

	h->reports[h->next_report] = (struct sched_link_report){ .t = t, .up_gbps = gbps,
								 .down_gbps = gbps };
	h->next_report = (h->next_report + 1) % SCHED_LINK_HIST;
	if (h->n_reports < SCHED_LINK_HIST)
		h->n_reports++;
	sched_arrival_note(s, t + s->cfg.t_lag_s);
}

/*
 * Two capacity changes usable in the future (a report's t + t_lag), 50 ms apart: each becomes
 * an arrival when its time comes, the later one too after the earlier one was planned.
 */
START_TEST(future_arrivals_all_come_due)
{
	struct sched s;
	struct sched_host host;
	double now = clock_real_s();

	memset(&s, 0, sizeof(s));
	memset(&host, 0, sizeof(host));
	sched_daemon_defaults(&s.cfg);
	s.cl.n_hosts = 1;
	s.hosts = &host;
	link_report(&s, now - s.cfg.t_lag_s + 0.05, 10);
	link_report(&s, now - s.cfg.t_lag_s + 0.1, 5);
	ck_assert_double_eq_tol(s.arrival_later, now + 0.05, 1e-6);
	ck_assert_double_eq(s.arrival_at, 0);
	usleep(60000);
	sched_arrival_due(&s, clock_real_s());
	ck_assert_double_eq_tol(s.arrival_at, now + 0.05, 1e-6);
	s.arrival_at = 0; /* planned */
	ck_assert_double_eq_tol(s.arrival_later, now + 0.1, 1e-6);
	usleep(60000);
	sched_arrival_due(&s, clock_real_s());
	ck_assert_double_eq_tol(s.arrival_at, now + 0.1, 1e-6);
	ck_assert_double_eq(s.arrival_later, 0);
}
END_TEST

/* A slow tick and the default replan interval; aggregator a0 allowed. */
static void gather_agg(struct sched_config *c)
{
	c->batch_s = 2.0;
}

/* A 0.3 s bound on the hold, no aggregator. */
static void short_bound(struct sched_config *c)
{
	no_agg(c);
	c->batch_s = 0.3;
}

#define BIG (100ull * 1000 * 1000) /* 100 MB: 0.84 s on ps's 1 Gbit/s downlink at headroom 0.95 */

/* The `send` of update @id at fake @f (pumping up to @timeout s), or NULL. */
static json_t *send_of(int f, uint64_t id, double timeout)
{
	double t0 = clock_real_s();
	json_t *m;

	while ((m = wait_msg(f, "send", timeout - (clock_real_s() - t0))))
		if (jid(m, "id") == id)
			return m;
	return NULL;
}

/* Whether JSON array @a holds integer @v. */
static int holds(json_t *a, uint64_t v)
{
	for (size_t i = 0; i < json_array_size(a); i++)
		if ((uint64_t)json_integer_value(json_array_get(a, i)) == v)
			return 1;
	return 0;
}

/*
 * w0's 100 MB update occupies ps's downlink for 0.84 s. w1's update, pushed while it is busy,
 * is held (planned on arrival it would have gone alone, within 2 ms); w2's, pushed 20 ms
 * later, joins it, and the plan aggregates the two at a0 when the downlink frees.
 */
START_TEST(busy_link_held_and_aggregated)
{
	int w[3], a0;

	start_daemon(gather_agg);
	setup("mlfabric-a", 0, 1000, 3, w, &a0);
	push(w[0], UID(2, 1), 0, BIG);
	json_t *first = send_of(w[0], UID(2, 1), 2.0);
	ck_assert_ptr_nonnull(first);
	double start = json_number_value(json_object_get(first, "start"));
	push(w[1], UID(3, 1), 0, BIG);
	pump(0.02);
	push(w[2], UID(4, 1), 0, BIG);
	json_t *ag = wait_msg(a0, "aggregate", 4.0);
	ck_assert_msg(ag != NULL, "no aggregate: w1's and w2's updates were not planned together");
	json_t *in = json_object_get(ag, "inputs");
	ck_assert_msg(holds(in, UID(3, 1)) && holds(in, UID(4, 1)) && !holds(in, UID(2, 1)),
		      "the aggregate's inputs are not w1's and w2's updates");
	/* held until the downlink frees: the aggregate leaves a0 once w0's copy has ended */
	double agg_start = json_number_value(json_object_get(ag, "start"));
	ck_assert_msg(agg_start >= start + 0.84 * 0.9,
		      "the aggregate starts %.3f s after w0's copy (that copy takes 0.84 s)",
		      agg_start - start);
	ck_assert_int_eq(rec_count("updates.jsonl", "\"aggregated\""), 2);
	stop_daemon();
}
END_TEST

/*
 * An update whose path is free is planned at once: w0's 100 MB copy reserved ps's downlink,
 * its `done` frees it early, and w1's update then pushed is planned right away, not when the
 * reservation would have ended (0.84 s).
 */
START_TEST(free_link_planned_at_once)
{
	int w[2];

	start_daemon(gather_agg);
	setup("mlfabric-a", 0, 1000, 2, w, NULL);
	push(w[0], UID(2, 1), 0, BIG);
	json_t *first = send_of(w[0], UID(2, 1), 2.0);
	ck_assert_ptr_nonnull(first);
	double start = json_number_value(json_object_get(first, "start"));
	fake_send(w[0], json_pack("{s:s, s:s, s:I, s:i, s:I, s:f}", "type", "done", "app",
				  "worker@w0", "xfer", (json_int_t)UID(2, 1), "status", 0, "bytes",
				  (json_int_t)BIG, "t", start));
	pump(0.05);
	double t0 = clock_real_s();
	push(w[1], UID(3, 1), 0, BIG);
	json_t *m = send_of(w[1], UID(3, 1), 2.0);
	double t = clock_real_s() - t0;
	ck_assert_ptr_nonnull(m);
	ck_assert_msg(json_number_value(json_object_get(m, "start")) < start + 0.84 / 2,
		      "w1's copy starts %.3f s after w0's: planned as if w0's were still running",
		      json_number_value(json_object_get(m, "start")) - start);
	ck_assert_msg(t < 0.42, "planned after %.3f s, the downlink being free", t);
	stop_daemon();
}
END_TEST

/*
 * The hold is bounded: with ps's downlink reserved for 8.4 s (1 GB), w1's update is held only
 * until --batch-ms (0.3 s) after its arrival, then planned, while w0 pushes three updates a
 * millisecond.
 */
START_TEST(hold_bounded_under_stream)
{
	int w[2];

	start_daemon(short_bound);
	setup("mlfabric-a", 0, 1000, 2, w, NULL);
	push(w[0], UID(2, 1), 0, 10 * BIG);
	ck_assert_ptr_nonnull(send_of(w[0], UID(2, 1), 2.0));
	double t_send = send_under_stream(w[1], UID(3, 1), w[0], 2, 1.0);
	ck_assert_msg(t_send >= 0.3 - 0.01, "planned after %.3f s: not held behind the busy "
		      "downlink (bound 0.3 s)", t_send);
	ck_assert_msg(t_send <= 0.3 + 0.15, "planned after %.3f s (bound --batch-ms 0.3 s)", t_send);
	stop_daemon();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sched_arrival");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, arrival_planned_at_once);
	tcase_add_test(tc, arrivals_coalesce);
	tcase_add_test(tc, stream_does_not_starve);
	tcase_add_test(tc, lead_bounds);
	tcase_add_test(tc, lead_one_raise_per_batch);
	tcase_add_test(tc, lead_from_start_times);
	tcase_add_test(tc, lead_follows_samples);
	tcase_add_test(tc, lead_follows_done_reports);
	tcase_add_test(tc, future_arrivals_all_come_due);
	tcase_add_test(tc, busy_link_held_and_aggregated);
	tcase_add_test(tc, free_link_planned_at_once);
	tcase_add_test(tc, hold_bounded_under_stream);
	suite_add_tcase(s, tc);
	return ck_run(s);
}
