/* test_sched_dist.c - Check tests of the daemon's model distribution trees (§10.3, docs/scheduler.md). */
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

static const char *str(json_t *m, const char *k)
{
	const char *s = json_string_value(json_object_get(m, k));
	return s ? s : "";
}

/*
 * Daemon (after @tweak), server ps at version 5 with its uplink reported at 0.5 Gbit/s (so a
 * 10 MB model copy from it takes 0.17 s and worker links are 20x faster), workers w0..w2 (@w):
 * each pulls (ids 100+i) with min_version 6; the commit of version 6 puts the three pulls in
 * one batch. Returns the server's fake; the batch's commands are in got[] afterwards.
 */
static int three_pulls(void (*tweak)(struct sched_config *), int *w)
{
	char app[64];

	start_daemon(tweak);
	int ps = setup("mlfabric-a", 5, 8, N_W, w, NULL);
	fake_send(ps, json_pack("{s:s, s:s, s:f, s:f, s:f, s:f, s:f}", "type", "link", "host",
				"ps", "t", clock_real_s(), "up_gbps", 0.5, "down_gbps", 1.0, "tx_gbps",
				0.0, "rx_gbps", 0.0));
	pump(0.35); /* t_lag 0.3 */
	for (int i = 0; i < N_W; i++)
		fake_send(w[i], json_pack("{s:s, s:s, s:i, s:s, s:i}", "type", "pull", "app",
					  app_of(w[i], "worker", app), "id", 100 + i, "server", "ps",
					  "min_version", 6));
	pump(0.1);
	ck_assert_int_eq(count_msgs(ps, "send"), 0); /* version 6 not committed yet */
	fake_send(ps, json_pack("{s:s, s:s, s:i, s:i, s:f}", "type", "commit", "app", "server@ps",
				"xfer", 1, "version", 6, "t", clock_real_s()));
	pump(0.3);
	return ps;
}

/* The model answers to pull @pull for host @dst in got[] from index @from on (sends + forwards). */
static int answers(int from, uint64_t pull, const char *dst, int *n_forwarded)
{
	int n = 0;

	for (int i = from; i < n_got; i++) {
		json_t *m = got[i].m;
		int fwd = !strcmp(str(m, "type"), "forward");
		if ((fwd || (!strcmp(str(m, "type"), "send") && !strcmp(str(m, "what"), "model"))) &&
		    jid(m, "id") == pull && !strcmp(str(m, "dst"), dst)) {
			n++;
			if (fwd && n_forwarded)
				(*n_forwarded)++;
		}
	}
	return n;
}

/*
 * With the server's uplink the bottleneck, the pulls are answered through a tree: the server
 * sends fewer copies than pulls, all of one batch snapshot (`keep` on all but the last); every
 * `forward` goes to a worker app that gets the named server copy (`xfer_in`, whose `forwards`
 * counts them); every pull is answered exactly once; the records name the forwarder.
 */
START_TEST(pulls_answered_through_tree)
{
	int w[N_W], ps = three_pulls(NULL, w), n_srv = 0, n_fwd = 0, last_keep = -1;
	int64_t batch = -1;

	for (int i = 0; i < n_got; i++) {
		json_t *m = got[i].m;
		if (got[i].fake == ps && !strcmp(str(m, "type"), "send")) {
			ck_assert_str_eq(str(m, "what"), "model");
			ck_assert_int_eq(json_integer_value(json_object_get(m, "chan")), 3);
			if (batch < 0)
				batch = json_integer_value(json_object_get(m, "batch"));
			ck_assert_int_eq(json_integer_value(json_object_get(m, "batch")), batch);
			last_keep = json_is_true(json_object_get(m, "keep"));
			n_srv++;
			continue;
		}
		if (strcmp(str(m, "type"), "forward"))
			continue;
		n_fwd++;
		ck_assert_int_ne(got[i].fake, ps);
		/* the incoming copy: a server send to this fake's host naming the forwards */
		int found = 0, of = 0;
		for (int k = 0; k < n_got; k++)
			if (got[k].fake == ps && !strcmp(str(got[k].m, "type"), "send") &&
			    jid(got[k].m, "xfer") == jid(m, "xfer_in")) {
				ck_assert_str_eq(str(got[k].m, "dst"), fakes[got[i].fake].host);
				of = (int)json_integer_value(json_object_get(got[k].m, "forwards"));
				found = 1;
			}
		ck_assert_msg(found, "forward %" PRIu64 " names no server copy", jid(m, "xfer"));
		ck_assert_int_eq(json_integer_value(json_object_get(m, "forwards")), of);
		ck_assert_int_ne(jid(m, "xfer"), jid(m, "xfer_in"));
		ck_assert_str_ne(str(m, "dst"), fakes[got[i].fake].host);
		ck_assert_int_eq(json_integer_value(json_object_get(m, "chan")), 3);
		ck_assert(json_is_array(json_object_get(m, "steps")));
	}
	ck_assert_int_ge(n_fwd, 1);            /* a tree, not three server copies */
	ck_assert_int_lt(n_srv, N_W);
	ck_assert_int_eq(last_keep, 0);        /* the last server copy releases the snapshot */
	for (int i = 0; i < N_W; i++) {
		char name[8];
		snprintf(name, sizeof(name), "w%d", i);
		ck_assert_int_eq(answers(0, 100 + (uint64_t)i, name, NULL), 1);
	}
	/* every server copy but the last keeps the snapshot */
	int seen = 0;
	for (int i = 0; i < n_got; i++)
		if (got[i].fake == ps && !strcmp(str(got[i].m, "type"), "send"))
			ck_assert_int_eq(json_is_true(json_object_get(got[i].m, "keep")), ++seen < n_srv);
	ck_assert_int_eq(rec_count("transfers.jsonl", "\"forwarded_by\""), n_fwd);
	ck_assert_int_eq(rec_count("transfers.jsonl", "\"from_xfer\""), n_fwd);
	ck_assert_int_ge(rec_count("transfers.jsonl", "\"forwards\""), 1);
	stop_daemon();
}
END_TEST

static void no_distributors(struct sched_config *c)
{
	c->distributors = 0;
}

/* --distributors 0: the server sends every copy itself, one per pull, as before. */
START_TEST(distributors_off_direct_copies)
{
	int w[N_W], ps = three_pulls(no_distributors, w);

	ck_assert_int_eq(count_msgs(ps, "send"), N_W);
	for (int i = 0; i < N_W; i++) {
		char name[8];
		snprintf(name, sizeof(name), "w%d", i);
		ck_assert_int_eq(count_msgs(w[i], "forward"), 0);
		ck_assert_int_eq(answers(0, 100 + (uint64_t)i, name, NULL), 1);
	}
	ck_assert_int_eq(rec_count("transfers.jsonl", "\"forwarded_by\""), 0);
	stop_daemon();
}
END_TEST

/* The first `forward` in got[]: its fake in *@d; asserts there is one. */
static json_t *first_forward(int *d)
{
	for (int i = 0; i < n_got; i++)
		if (!strcmp(str(got[i].m, "type"), "forward")) {
			*d = got[i].fake;
			return got[i].m;
		}
	ck_abort_msg("no forward commanded");
	return NULL;
}

/*
 * A distributor whose worker application goes mid-forward: the pulls it was to answer are
 * answered again (by the server or another distributor), its own pull is not.
 */
START_TEST(dead_distributor_pulls_replanned)
{
	int w[N_W], d, from;
	char app[64], why[128];

	three_pulls(NULL, w);
	json_t *fw = first_forward(&d);
	uint64_t pull = jid(fw, "id");
	char dst[16];
	snprintf(dst, sizeof(dst), "%s", str(fw, "dst"));
	from = n_got;
	snprintf(why, sizeof(why), "application %s closed its connection", app_of(d, "worker", app));
	fake_send(d, json_pack("{s:s, s:s, s:s}", "type", "error", "app", app, "reason", why));
	pump(0.5);
	int n_fwd = 0;
	ck_assert_int_eq(answers(from, pull, dst, &n_fwd), 1);
	for (int i = from; i < n_got; i++) /* nothing from or to the gone worker */
		if (!strcmp(str(got[i].m, "type"), "forward") || !strcmp(str(got[i].m, "type"), "send")) {
			ck_assert_int_ne(got[i].fake, d);
			ck_assert_str_ne(str(got[i].m, "dst"), fakes[d].host);
		}
	ck_assert_int_ge(rec_count("transfers.jsonl", str(fw, "dst")), 2);
	stop_daemon();
}
END_TEST

/* The server's copy to a distributor fails (`done` < 0): its forwards' pulls are answered again. */
START_TEST(failed_copy_fails_forwards)
{
	int w[N_W], d, from, ps;

	ps = three_pulls(NULL, w);
	json_t *fw = first_forward(&d);
	uint64_t pull = jid(fw, "id"), in = jid(fw, "xfer_in");
	char dst[16];
	snprintf(dst, sizeof(dst), "%s", str(fw, "dst"));
	from = n_got;
	fake_send(ps, json_pack("{s:s, s:s, s:I, s:i, s:s}", "type", "done", "app", "server@ps",
				"xfer", (json_int_t)in, "status", -110, "reason", "peer silent"));
	pump(0.5);
	ck_assert_int_eq(answers(from, pull, dst, NULL), 1);
	/* the distributor's own pull (if its copy answered one) is answered again too */
	json_t *srv = NULL;
	for (int i = 0; i < from; i++)
		if (got[i].fake == ps && jid(got[i].m, "xfer") == in)
			srv = got[i].m;
	ck_assert_ptr_nonnull(srv);
	if (jid(srv, "id"))
		ck_assert_int_eq(answers(from, jid(srv, "id"), fakes[d].host, NULL), 1);
	stop_daemon();
}
END_TEST

/*
 * Daemon (config @tweak, may be NULL) with server ps (uplink reported at 0.5 Gbit/s: a 10 MB
 * copy takes 0.17 s) and w0..w2.
 */
static int busy_uplink(int *w, void (*tweak)(struct sched_config *))
{
	start_daemon(tweak);
	int ps = setup("mlfabric-a", 5, 8, N_W, w, NULL);
	fake_send(ps, json_pack("{s:s, s:s, s:f, s:f, s:f, s:f, s:f}", "type", "link", "host",
				"ps", "t", clock_real_s(), "up_gbps", 0.5, "down_gbps", 1.0, "tx_gbps",
				0.0, "rx_gbps", 0.0));
	pump(0.35);
	return ps;
}

/* Worker fake @f pulls (@id) from ps. */
static void pull(int f, int id)
{
	char app[64];

	fake_send(f, json_pack("{s:s, s:s, s:i, s:s}", "type", "pull", "app",
			       app_of(f, "worker", app), "id", id, "server", "ps"));
}

/*
 * Daemon (config @tweak) with ps's uplink at 0.5 Gbit/s: w0 pulls; 50 ms later, while its copy
 * is under way, w1 and w2 pull: held (one server copy so far), then answered together, through
 * a tree (one more server copy and a forward), within 0.4 s.
 */
static void held_then_tree(void (*tweak)(struct sched_config *))
{
	int w[N_W], n_fwd = 0;
	int ps = busy_uplink(w, tweak);

	pull(w[0], 100);
	pump(0.05); /* its copy (0.17 s) is under way */
	pull(w[1], 101);
	pull(w[2], 102);
	pump(0.05);
	ck_assert_int_eq(count_msgs(ps, "send"), 1); /* held */
	for (int i = 0; i < 40 && count_msgs(ps, "send") < 2; i++)
		pump(0.01);
	pump(0.05);
	ck_assert_int_eq(count_msgs(ps, "send"), 2); /* w0's, then one for w1 and w2 together */
	for (int i = 0; i < N_W; i++) {
		char name[8];
		snprintf(name, sizeof(name), "w%d", i);
		ck_assert_int_eq(answers(0, 100 + (uint64_t)i, name, &n_fwd), 1);
	}
	ck_assert_int_ge(n_fwd, 1); /* from w1 or w2 (its own copy) */
	stop_daemon();
}

/*
 * The hold rule (docs/scheduler.md "Distribution trees"): two pulls that arrive together while
 * the server's uplink is busy with an earlier copy are held, since a tree planned when it frees
 * (one server copy at 0.5 Gbit/s, one forward at 10) answers both sooner than two direct copies
 * queued behind it, and are planned together once it frees: a tree, not one server copy per
 * pull.
 */
START_TEST(pulls_held_while_uplink_busy)
{
	held_then_tree(NULL);
}
END_TEST

/* A slow fallback tick (0.5 s): what is held is planned on its release, not at a tick. */
static void slow_tick(struct sched_config *c)
{
	c->batch_s = 0.5;
}

/*
 * Under planning on arrival the hold needs no tick (docs/scheduler.md "Distribution trees"):
 * with a 0.5 s fallback tick, longer than the 0.17 s copy under way, two pulls that arrive while
 * the uplink is busy are still held, and are planned as one tree when it frees (the release is
 * a future arrival), well before the tick. Before, a hold needed the uplink busy past the next
 * tick, so each pull got its own server copy queued behind the first.
 */
START_TEST(pulls_held_until_uplink_frees)
{
	held_then_tree(slow_tick);
}
END_TEST

/*
 * The hold rule: one pull alone while the uplink is busy is not held (a tree for one pull is no
 * sooner than its direct copy): it is commanded in the next batch, queued behind the copy under
 * way, not a second later.
 */
START_TEST(lone_pull_not_held)
{
	int w[N_W];
	int ps = busy_uplink(w, NULL);

	pull(w[0], 100);
	pump(0.05);
	pull(w[1], 101);
	pump(0.06);
	ck_assert_int_eq(count_msgs(ps, "send"), 2);
	ck_assert_int_eq(answers(0, 101, "w1", NULL), 1);
	stop_daemon();
}
END_TEST

/*
 * A worker whose downlink is reported at 0 Gbit/s: the planner lists its pull as unanswered,
 * so the batch answers the other pulls and no copy is commanded towards it; the pull stays
 * queued, and once the link is reported up again the next batch answers it. Before, an
 * unreachable pull made the plan answer no pull at all and the daemon sent every copy
 * unplanned.
 */
START_TEST(unreachable_pull_stays_queued)
{
	int w[N_W];
	char app[64];

	start_daemon(NULL);
	int ps = setup("mlfabric-a", 5, 8, N_W, w, NULL);
	fake_send(w[1], json_pack("{s:s, s:s, s:f, s:f, s:f, s:f, s:f}", "type", "link", "host",
				  "w1", "t", clock_real_s(), "up_gbps", 1.0, "down_gbps", 0.0,
				  "tx_gbps", 0.0, "rx_gbps", 0.0));
	pump(0.35); /* t_lag 0.3 */
	for (int i = 0; i < N_W; i++)
		fake_send(w[i], json_pack("{s:s, s:s, s:i, s:s}", "type", "pull", "app",
					  app_of(w[i], "worker", app), "id", 100 + i, "server", "ps"));
	pump(0.5);
	ck_assert_int_eq(answers(0, 100, "w0", NULL), 1);
	ck_assert_int_eq(answers(0, 102, "w2", NULL), 1);
	ck_assert_int_eq(answers(0, 101, "w1", NULL), 0);
	int mark = n_got;
	fake_send(w[1], json_pack("{s:s, s:s, s:f, s:f, s:f, s:f, s:f}", "type", "link", "host",
				  "w1", "t", clock_real_s(), "up_gbps", 1.0, "down_gbps", 1.0,
				  "tx_gbps", 0.0, "rx_gbps", 0.0));
	pump(0.6);
	ck_assert_int_eq(answers(mark, 101, "w1", NULL), 1);
	ck_assert_int_eq(answers(mark, 100, "w0", NULL), 0); /* answered once */
	(void)ps;
	stop_daemon();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sched_dist");
	TCase *tc = tcase_create("distribution");

	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, pulls_answered_through_tree);
	tcase_add_test(tc, distributors_off_direct_copies);
	tcase_add_test(tc, dead_distributor_pulls_replanned);
	tcase_add_test(tc, failed_copy_fails_forwards);
	tcase_add_test(tc, pulls_held_while_uplink_busy);
	tcase_add_test(tc, pulls_held_until_uplink_frees);
	tcase_add_test(tc, lone_pull_not_held);
	tcase_add_test(tc, unreachable_pull_stays_queued);
	suite_add_tcase(s, tc);
	return ck_run(s);
}
