/* test_plan_paper.c - the planner against the paper's worked examples (figs. 1, 4-6, eqs. 6-8) and invariants. */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_batch.h"
#include "ck_run.h"
#include "netstate.h"
#include "plan.h"
#include "plan_check.h"
#include "planio.h"
#include "replicate.h"

#define MB 1000000ULL
#define GBIT 125000000ULL /* bytes in 1 Gbit */

/* A small hand-made batch: storage for up to 16 hosts and 16 updates. */
struct tb {
	struct plan_batch b;
	struct plan_host hosts[16];
	struct plan_capacity_change changes[16];
	struct plan_update updates[16];
	struct plan_pull pulls[16];
	int servers[4], aggs[8], raggs[8], dists[8];
	struct plan_shard shards[16][4];
};

static void tb_init(struct tb *t, enum plan_mode mode)
{
	memset(t, 0, sizeof(*t));
	t->b.mode = mode;
	t->b.hosts = t->hosts;
	t->b.changes = t->changes;
	t->b.updates = t->updates;
	t->b.pulls = t->pulls;
	t->b.servers = t->servers;
	t->b.aggregators = t->aggs;
	t->b.replica_aggregators = t->raggs;
	t->b.distributors = t->dists;
	t->b.replica = -1;
	t->b.tau_max = 1000;
	t->b.v_init = 100;
	t->b.momentum = 0.9;
}

static int tb_host(struct tb *t, const char *name, double up, double down)
{
	int h = t->b.n_hosts++;

	snprintf(t->hosts[h].name, PLAN_NAME_MAX, "%s", name);
	t->hosts[h].up_gbps = up;
	t->hosts[h].down_gbps = down;
	return h;
}

static int tb_update(struct tb *t, int worker, uint64_t bytes, int64_t version)
{
	int u = t->b.n_updates++;

	snprintf(t->updates[u].id, PLAN_NAME_MAX, "u%d", u);
	t->updates[u].worker = worker;
	t->updates[u].bytes = bytes;
	t->updates[u].version = version;
	t->updates[u].norm = 1.0;
	return u;
}

static void tb_change(struct tb *t, int host, enum plan_link_dir dir, double at, double gbps)
{
	struct plan_capacity_change *c = &t->changes[t->b.n_changes++];

	c->host = host;
	c->dir = dir;
	c->at_s = at;
	c->gbps = gbps;
}

/* The independent checker (tests/plan_check.c): every invariant of plan-format.md. */
static void check_plan(const struct plan_batch *b, const struct plan *p)
{
	char msg[512];

	ck_assert_msg(plan_check(b, p, msg, sizeof(msg)) == PLAN_CHECK_OK, "%s", msg);
}

/* plan_compute with both implementations: identical plans, invariants hold. */
static void plan_both(const struct plan_batch *b, struct plan *out)
{
	struct plan simple;

	ck_assert_int_eq(plan_compute(b, PLAN_IMPL_FAST, out), 0);
	ck_assert_int_eq(plan_compute(b, PLAN_IMPL_SIMPLE, &simple), 0);
	ck_assert_msg(plan_equal(out, &simple), "FAST and SIMPLE plans differ");
	plan_free(&simple);
	check_plan(b, out);
}

/* ---------- fig. 4: t_en over a stepped residual ---------- */

/*
 * 30 MB (240 Mbit) over a path whose residual is 40 Mbit/s on [0, 2), 0 on [2, 5) and
 * 80 Mbit/s from 5: 80 Mbit by t=2, nothing until 5, the last 160 Mbit take 2 s: t_en = 7.
 */
START_TEST(test_fig4_tend)
{
	struct tb t;
	struct netstate ns;
	struct netstate_profile prof = { 0 };
	int w, s;
	double end;

	tb_init(&t, PLAN_MLFABRIC_A);
	w = tb_host(&t, "w", 0.04, 10);
	s = tb_host(&t, "ps", 10, 1);
	tb_change(&t, w, PLAN_UP, 2.0, 0.0);
	tb_change(&t, w, PLAN_UP, 5.0, 0.08);
	ck_assert_int_eq(netstate_init(&ns, &t.b), 0);
	end = netstate_tend(&ns, w, s, 0.0, 30 * MB, &prof);
	ck_assert_double_eq_tol(end, 7.0, 1e-9);
	ck_assert_int_eq(prof.n, 3);
	ck_assert_double_eq_tol(prof.steps[1].gbps, 0.0, 1e-12);
	ck_assert_double_eq_tol(prof.steps[2].from_s, 5.0, 1e-12);
	/* NetUp (fig. 4c): the uplink is full during the transfer, its residual returns after. */
	ck_assert_int_eq(netstate_reserve(&ns, w, s, &prof), 0);
	ck_assert_double_eq_tol(netstate_gbps_at(&ns, netstate_up(w), 1.0), 0.0, 1e-12);
	ck_assert_double_eq_tol(netstate_gbps_at(&ns, netstate_up(w), 6.0), 0.0, 1e-12);
	ck_assert_double_eq_tol(netstate_gbps_at(&ns, netstate_up(w), 7.5), 0.08, 1e-12);
	ck_assert_double_eq_tol(netstate_gbps_at(&ns, netstate_down(s), 1.0), 0.96, 1e-12);
	ck_assert_double_eq_tol(netstate_gbps_at(&ns, netstate_down(s), 3.0), 1.0, 1e-12);
	/* A second identical transfer only gets capacity after 7: 240 Mbit at 80 Mbit/s. */
	ck_assert_double_eq_tol(netstate_tend(&ns, w, s, 0.0, 30 * MB, NULL), 10.0, 1e-9);
	/* The same through plan_compute: one transfer whose rate follows the residual. */
	{
		struct plan p;

		t.servers[t.b.n_servers++] = s;
		tb_update(&t, w, 30 * MB, t.b.v_init);
		plan_both(&t.b, &p);
		ck_assert_int_eq(p.n_transfers, 1);
		ck_assert_double_eq_tol(p.transfers[0].end_s, 7.0, 1e-9);
		ck_assert_int_eq(p.transfers[0].n_rate, 3);
		ck_assert_double_eq_tol(p.transfers[0].rate[0].gbps, 0.04, 1e-12);
		ck_assert_double_eq_tol(p.transfers[0].rate[2].gbps, 0.08, 1e-12);
		ck_assert_double_eq_tol(p.commits[0].at_s, 7.0, 1e-9);
		plan_free(&p);
	}
	/* It never finishes when the residual stays 0 forever. */
	tb_change(&t, w, PLAN_UP, 9.0, 0.0);
	netstate_free(&ns);
	ck_assert_int_eq(netstate_init(&ns, &t.b), 0);
	ck_assert(isinf(netstate_tend(&ns, w, s, 0.0, 100 * MB, NULL)));
	/* Same host: no link, it ends where it starts. */
	ck_assert_double_eq(netstate_tend(&ns, w, w, 3.0, 100 * MB, NULL), 3.0);
	netstate_free(&ns);
	netstate_profile_free(&prof);
}
END_TEST

/* Undo restores the exact steps (the FAST planner explores cases with it). */
START_TEST(test_netstate_undo)
{
	struct tb t;
	struct netstate ns, copy;
	struct netstate_profile prof = { 0 };
	struct netstate_mark m;
	int w, s, i, l;

	tb_init(&t, PLAN_MLFABRIC_A);
	w = tb_host(&t, "w", 1, 1);
	s = tb_host(&t, "ps", 1, 0.5);
	tb_change(&t, s, PLAN_DOWN, 3.0, 2.0);
	ck_assert_int_eq(netstate_init(&ns, &t.b), 0);
	ck_assert_int_eq(netstate_copy(&copy, &ns), 0);
	m = netstate_mark(&ns);
	for (i = 0; i < 5; i++) {
		netstate_tend(&ns, w, s, 0.1 * i, 50 * MB, &prof);
		ck_assert_int_eq(netstate_reserve(&ns, w, s, &prof), 0);
	}
	ck_assert(netstate_gbps_at(&ns, netstate_down(s), 0.2) < 0.5);
	netstate_undo(&ns, m);
	for (l = 0; l < ns.n_links; l++) {
		ck_assert_int_eq(ns.links[l].n, copy.links[l].n);
		ck_assert(memcmp(ns.links[l].s, copy.links[l].s,
				 (size_t)ns.links[l].n * sizeof(*ns.links[l].s)) == 0);
	}
	ck_assert(ns.version == copy.version);
	netstate_free(&ns);
	netstate_free(&copy);
	netstate_profile_free(&prof);
}
END_TEST

/* ---------- fig. 5: dropping a deadline-forced update ---------- */

/*
 * w1 has 10 Mbit/s to a 100 Mbit/s server link, g1 (dl = 1) would take 10 s; g2 (dl = 5)
 * needs 1.1 s at the 90 Mbit/s left. Forcing g1 first leaves the server idle: g1 is dropped
 * at the worker and g2 is sent at once, at the full 100 Mbit/s.
 */
START_TEST(test_fig5_drop)
{
	struct tb t;
	struct plan p;
	int w1, w2, g1, g2;

	tb_init(&t, PLAN_MLFABRIC_A);
	w1 = tb_host(&t, "w1", 0.01, 1);
	w2 = tb_host(&t, "w2", 1, 1);
	t.servers[t.b.n_servers++] = tb_host(&t, "ps", 1, 0.1);
	t.b.tau_max = 10;
	g1 = tb_update(&t, w1, 12500000, t.b.v_init + 1 - t.b.tau_max);  /* 100 Mbit, dl 1 */
	g2 = tb_update(&t, w2, 12375000, t.b.v_init + 5 - t.b.tau_max);  /* 99 Mbit, dl 5 */
	plan_both(&t.b, &p);
	ck_assert_int_eq(p.n_dropped, 1);
	ck_assert_int_eq(p.dropped[0], g1);
	ck_assert_int_eq(p.n_order, 1);
	ck_assert_int_eq(p.order[0], g2);
	ck_assert_int_eq(p.n_transfers, 1);
	ck_assert_double_eq_tol(p.transfers[0].start_s, 0.0, 1e-12);
	ck_assert_double_eq_tol(p.transfers[0].end_s, 0.99, 1e-9);
	plan_free(&p);
	/* With a looser bound g1 is not forced: shortest first sends g2 then g1, nothing dropped. */
	t.updates[g1].version = t.b.v_init + 5 - t.b.tau_max;
	plan_both(&t.b, &p);
	ck_assert_int_eq(p.n_dropped, 0);
	ck_assert_int_eq(p.order[0], g2);
	ck_assert_int_eq(p.order[1], g1);
	plan_free(&p);
}
END_TEST

/* ---------- fig. 1: the delay bound is met by ordering ---------- */

/*
 * Five updates to a 1 Gbit/s server: four small fresh ones and an old, larger one j.
 * Shortest transfer first alone would apply j last (delay 4 > tau_max = 2); its deadline
 * dl(j) = 2 puts it second, and no update's delay exceeds tau_max.
 */
START_TEST(test_fig1_delay_bound)
{
	struct tb t;
	struct plan p;
	int i, j, s;

	tb_init(&t, PLAN_MLFABRIC_A);
	s = tb_host(&t, "ps", 10, 1);
	t.servers[t.b.n_servers++] = s;
	for (i = 0; i < 5; i++)
		tb_host(&t, i ? "w" : "wj", 1, 1);
	t.b.tau_max = 6;
	j = tb_update(&t, 1, 2 * GBIT, t.b.v_init + 2 - t.b.tau_max);
	for (i = 2; i <= 5; i++)
		tb_update(&t, i, GBIT, t.b.v_init);
	plan_both(&t.b, &p);
	ck_assert_int_eq(p.n_dropped, 0);
	ck_assert_int_eq(p.n_order, 5);
	ck_assert_int_eq(p.order[1], j);
	ck_assert_int_eq(p.commits[1].carries, j);
	ck_assert(t.b.v_init + 1 - t.updates[j].version <= t.b.tau_max);
	plan_free(&p);
	/* Without the bound, j (the longest transfer) goes last. */
	t.b.tau_max = 100;
	t.updates[j].version = t.b.v_init;
	plan_both(&t.b, &p);
	ck_assert_int_eq(p.order[4], j);
	plan_free(&p);
}
END_TEST

/* Updates whose deadline has passed, or that compete for one position, are dropped. */
START_TEST(test_deadline_passed)
{
	struct tb t;
	struct plan p;
	int a, b2, c;

	tb_init(&t, PLAN_MLFABRIC_A);
	t.servers[t.b.n_servers++] = tb_host(&t, "ps", 10, 1);
	tb_host(&t, "w1", 1, 1);
	tb_host(&t, "w2", 1, 1);
	tb_host(&t, "w3", 1, 1);
	t.b.tau_max = 4;
	a = tb_update(&t, 1, GBIT, t.b.v_init - t.b.tau_max);      /* dl 0: too old already */
	b2 = tb_update(&t, 2, GBIT, t.b.v_init + 1 - t.b.tau_max); /* dl 1 */
	c = tb_update(&t, 3, 2 * GBIT, t.b.v_init + 1 - t.b.tau_max); /* dl 1 as well */
	plan_both(&t.b, &p);
	ck_assert_int_eq(p.n_order, 1);
	ck_assert_int_eq(p.order[0], b2);
	ck_assert_int_eq(p.n_dropped, 2);
	ck_assert(p.dropped[0] == a || p.dropped[1] == a);
	ck_assert(p.dropped[0] == c || p.dropped[1] == c);
	plan_free(&p);
}
END_TEST

/* Ready times: no transfer starts before its update is ready. */
START_TEST(test_ready_time)
{
	struct tb t;
	struct plan p;
	int u;

	tb_init(&t, PLAN_MLFABRIC_A);
	t.b.now_s = 1.0;
	t.servers[t.b.n_servers++] = tb_host(&t, "ps", 10, 1);
	tb_host(&t, "w1", 1, 1);
	u = tb_update(&t, 1, GBIT, t.b.v_init);
	t.updates[u].ready_s = 2.5;
	tb_update(&t, 1, GBIT / 2, t.b.v_init);
	plan_both(&t.b, &p);
	ck_assert_int_eq(p.n_order, 2);
	ck_assert_int_eq(p.order[0], 1);
	ck_assert_double_eq_tol(p.transfers[0].start_s, 1.0, 1e-12);
	ck_assert_double_eq_tol(p.transfers[1].start_s, 2.5, 1e-12);
	ck_assert_double_eq_tol(p.commits[1].at_s, 3.5, 1e-9);
	plan_free(&p);
}
END_TEST

/* ---------- fig. 6: grouping ---------- */

/* Six 1 Gbit updates from six 1 Gbit/s workers; server and two aggregators at 1 Gbit/s. */
static void fig6_batch(struct tb *t, int k)
{
	int i;

	tb_init(t, PLAN_MLFABRIC_A);
	t->servers[t->b.n_servers++] = tb_host(t, "ps", 10, 1);
	for (i = 0; i < 6; i++)
		tb_update(t, tb_host(t, "w", 1, 1), GBIT, t->b.v_init);
	for (i = 0; i < k; i++)
		t->aggs[t->b.n_aggregators++] = tb_host(t, "agg", 1, 1);
}

/*
 * Case n = 2 wins: u1, u2 go direct (the server is busy until t = 2); u3 and u4 reach
 * aggregator 1 by t = 1 and 2, but u5 would arrive at 3 > 2, so group 2 closes and its
 * aggregate reaches the server at 3; u5, u6 go to the last aggregator, whose aggregate
 * arrives at 4 (all direct: 6; everything through aggregators: 7).
 */
START_TEST(test_fig6_grouping)
{
	struct tb t;
	struct plan p;

	fig6_batch(&t, 2);
	plan_both(&t.b, &p);
	ck_assert_int_eq(p.n_order, 6);
	ck_assert_int_eq(p.n_aggregates, 2);
	ck_assert_int_eq(p.aggregates[0].host, t.aggs[0]);
	ck_assert_int_eq(p.aggregates[0].n_inputs, 2);
	ck_assert_int_eq(p.aggregates[0].inputs[0], p.order[2]);
	ck_assert_int_eq(p.aggregates[0].inputs[1], p.order[3]);
	ck_assert_int_eq(p.aggregates[1].host, t.aggs[1]);
	ck_assert_int_eq(p.aggregates[1].n_inputs, 2);
	ck_assert_int_eq(p.n_commits, 4);
	ck_assert_int_eq(p.commits[0].kind, PLAN_CARRY_UPDATE);
	ck_assert_int_eq(p.commits[1].kind, PLAN_CARRY_UPDATE);
	ck_assert_double_eq_tol(p.commits[1].at_s, 2.0, 1e-9);
	ck_assert_int_eq(p.commits[2].kind, PLAN_CARRY_AGGREGATE);
	ck_assert_double_eq_tol(p.commits[2].at_s, 3.0, 1e-9);
	ck_assert_int_eq(p.commits[2].version, t.b.v_init + 4);
	ck_assert_double_eq_tol(p.commits[3].at_s, 4.0, 1e-9);
	ck_assert_int_eq(p.commits[3].version, t.b.v_init + 6);
	plan_free(&p);
	/* One aggregator: n = 2 again (cost 3: u3, u4 aggregated); no aggregator: all direct. */
	fig6_batch(&t, 1);
	t.b.n_updates = 4;
	plan_both(&t.b, &p);
	ck_assert_int_eq(p.n_aggregates, 1);
	ck_assert_int_eq(p.aggregates[0].n_inputs, 2);
	ck_assert_double_eq_tol(p.commits[p.n_commits - 1].at_s, 3.0, 1e-9);
	plan_free(&p);
	fig6_batch(&t, 0);
	plan_both(&t.b, &p);
	ck_assert_int_eq(p.n_aggregates, 0);
	ck_assert_double_eq_tol(p.commits[5].at_s, 6.0, 1e-9);
	plan_free(&p);
}
END_TEST

/* An aggregator co-hosted with a worker needs no network for that worker's input. */
START_TEST(test_cohosted_aggregator)
{
	struct tb t;
	struct plan p;
	int i, local = 0;

	fig6_batch(&t, 0);
	t.aggs[t.b.n_aggregators++] = 6; /* the host of the last worker */
	plan_both(&t.b, &p);
	for (i = 0; i < p.n_transfers; i++)
		ck_assert(p.transfers[i].src != p.transfers[i].dst);
	for (i = 0; i < p.n_aggregates; i++)
		if (p.aggregates[i].host == 6)
			local = 1;
	ck_assert(local);
	plan_free(&p);
}
END_TEST

/* ---------- eqs. 6-8: divergence ---------- */

#define DIM 8

/* Apply eq. 2 (h = gamma h + u, w = w + h) for @n updates. */
static void sgd(double *w, double *h, double gamma, double u[][DIM], int n)
{
	int i, d;

	for (i = 0; i < n; i++)
		for (d = 0; d < DIM; d++) {
			h[d] = gamma * h[d] + u[i][d];
			w[d] += h[d];
		}
}

static double norm(const double *v)
{
	double s = 0.0;
	int d;

	for (d = 0; d < DIM; d++)
		s += v[d] * v[d];
	return sqrt(s);
}

static double urand(unsigned *s)
{
	*s = *s * 1103515245u + 12345u;
	return ((*s >> 8) & 0xFFFF) / 65536.0 - 0.5;
}

/* eq. 6: applying u1, u2 in the other order diverges by exactly gamma ||u1 - u2||. */
START_TEST(test_eq6_reordering)
{
	double g = 0.9, u[2][DIM], v[2][DIM], ws[DIM] = { 0 }, wr[DIM] = { 0 }, hs[DIM], hr[DIM];
	double diff[DIM], du[DIM];
	unsigned s = 7;
	int d;

	for (d = 0; d < DIM; d++) {
		u[0][d] = v[1][d] = urand(&s);
		u[1][d] = v[0][d] = urand(&s);
		hs[d] = hr[d] = urand(&s);
	}
	sgd(ws, hs, g, u, 2);
	sgd(wr, hr, g, v, 2);
	for (d = 0; d < DIM; d++) {
		diff[d] = ws[d] - wr[d];
		du[d] = u[0][d] - u[1][d];
	}
	ck_assert_double_eq_tol(norm(diff), g * norm(du), 1e-12);
}
END_TEST

/*
 * eq. 7 / 11: the bound from norms is >= the true ||w_s - w_r|| for random vectors, equal
 * when h0 and every update point the same way; eq. 8 (replica one update closer) bounds lower.
 */
START_TEST(test_eq7_eq8_bound)
{
	double g = 0.9;
	unsigned s = 11;
	int trial, n, p, i, d;

	for (trial = 0; trial < 200; trial++) {
		double u[6][DIM], h0[DIM], ws[DIM] = { 0 }, wr[DIM] = { 0 }, hs[DIM], hr[DIM];
		double norms[6], diff[DIM], dir[DIM], bound, truth;
		int collinear = trial % 2;

		n = 1 + trial % 6;
		p = trial % (n + 1);
		for (d = 0; d < DIM; d++)
			dir[d] = urand(&s);
		for (d = 0; d < DIM; d++)
			h0[d] = collinear ? dir[d] * 0.7 : urand(&s);
		for (i = 0; i < n; i++) {
			double a = 0.2 + fabs(urand(&s));

			for (d = 0; d < DIM; d++)
				u[i][d] = collinear ? dir[d] * a : urand(&s);
			norms[i] = norm(u[i]);
		}
		memcpy(hs, h0, sizeof(hs));
		memcpy(hr, h0, sizeof(hr));
		sgd(ws, hs, g, u, n);
		sgd(wr, hr, g, u, p);
		for (d = 0; d < DIM; d++)
			diff[d] = ws[d] - wr[d];
		truth = norm(diff);
		bound = replicate_divergence(g, norm(h0), norms, n, p);
		ck_assert_msg(bound >= truth - 1e-12, "bound %g < true divergence %g", bound, truth);
		if (collinear)
			ck_assert_double_eq_tol(bound, truth, 1e-9 * (1.0 + truth));
		if (p < n)
			ck_assert(replicate_divergence(g, norm(h0), norms, n, p + 1) <= bound);
	}
	{
		/* eq. 7 vs eq. 8 with two updates: lead 2 vs lead 1. */
		double norms[2] = { 1.0, 2.0 }, h0 = 0.5;
		double e7 = replicate_divergence(g, h0, norms, 2, 0);
		double e8 = replicate_divergence(g, h0, norms, 2, 1);

		ck_assert_double_eq_tol(e7, (g + g * g) * h0 + (1 + g) * 1.0 + 2.0, 1e-12);
		ck_assert_double_eq_tol(e8, g * (g * h0 + 1.0) + 2.0, 1e-12);
		ck_assert(e8 < e7);
		ck_assert_double_eq(replicate_divergence(g, h0, norms, 2, 2), 0.0);
	}
}
END_TEST

/* ---------- replication ---------- */

/*
 * Server at 1 Gbit/s, replica behind a 0.25 Gbit/s downlink: two 1 Gbit updates commit at the
 * server at 1 and 2, while replica copies need 4 s each.
 */
static void repl_batch(struct tb *t, double div_max)
{
	tb_init(t, PLAN_MLFABRIC_A);
	t->servers[t->b.n_servers++] = tb_host(t, "ps", 10, 1);
	t->b.replica = tb_host(t, "rep", 10, 0.25);
	tb_update(t, tb_host(t, "w1", 10, 10), GBIT, t->b.v_init);
	tb_update(t, tb_host(t, "w2", 10, 10), GBIT, t->b.v_init);
	t->b.div_max = div_max;
	t->b.history_norm = 0.5;
}

/* A large Div_max: nothing reaches the replica by T_last = 2, both copies are punted. */
START_TEST(test_replica_punting)
{
	struct tb t;
	struct plan p;
	struct plan_carry c;

	repl_batch(&t, 100.0);
	plan_both(&t.b, &p);
	ck_assert_double_eq_tol(p.commits[1].at_s, 2.0, 1e-9);
	ck_assert_int_eq(p.n_replica_commits, 0);
	ck_assert_int_eq(p.n_punted, 2);
	ck_assert_double_eq_tol(p.divergence_bound,
				replicate_divergence(0.9, 0.5, (double[]){ 1.0, 1.0 }, 2, 0), 1e-12);
	ck_assert_int_eq(plan_carry_next(&t.b, &p, &c), 0);
	ck_assert_int_eq(c.n_carried, 2);
	ck_assert_int_eq(c.replica_lag, 2);
	ck_assert_int_eq(c.v_init, t.b.v_init + 2);
	ck_assert_double_eq_tol(c.history_norm, 0.5, 1e-12); /* the replica applied nothing */
	/* The next batch carries both copies first: they are replicated, never re-ordered. */
	t.updates[0].replica_only = 1;
	t.updates[1].replica_only = 1;
	tb_update(&t, 1 + 2, GBIT, t.b.v_init + 2);
	t.b.v_init = c.v_init;
	t.b.history_norm = c.history_norm;
	t.b.replica_lag = c.replica_lag;
	plan_free(&p);
	plan_both(&t.b, &p);
	ck_assert_int_eq(p.n_order, 1);
	ck_assert_int_eq(p.order[0], 2);
	ck_assert_int_eq(p.n_punted + p.n_replica_commits > 0, 1);
	if (p.n_replica_commits > 0)
		ck_assert_int_eq(p.replica_commits[0].version, t.b.v_init - 2 + 1);
	plan_carry_free(&c);
	plan_free(&p);
}
END_TEST

/* A bound the replica misses at T_last: the last server transfer waits for a replica commit. */
START_TEST(test_replica_delays_last)
{
	struct tb t;
	struct plan p;
	double need = replicate_divergence(0.9, 0.5, (double[]){ 1.0, 1.0 }, 2, 1);
	int i, last = -1;

	repl_batch(&t, need + 1e-9);
	plan_both(&t.b, &p);
	ck_assert_int_eq(p.n_replica_commits, 1);
	ck_assert_double_eq_tol(p.replica_commits[0].at_s, 4.0, 1e-9);
	ck_assert_int_eq(p.n_punted, 1);
	ck_assert(p.divergence_bound <= t.b.div_max);
	for (i = 0; i < p.n_transfers; i++)
		if (p.transfers[i].purpose == PLAN_PURPOSE_SERVER &&
		    p.transfers[i].carries == p.order[1])
			last = i;
	ck_assert_int_ge(last, 0);
	ck_assert(p.transfers[last].start_s >= 4.0 - 1e-9);
	ck_assert(p.commits[1].at_s >= 5.0 - 1e-9);
	plan_free(&p);
	/* Div_max 0: the replica must hold everything the server has at T_last. */
	repl_batch(&t, 0.0);
	plan_both(&t.b, &p);
	ck_assert_int_eq(p.n_punted, 0);
	ck_assert_int_eq(p.n_replica_commits, 2);
	ck_assert_double_eq(p.divergence_bound, 0.0);
	ck_assert(p.commits[1].at_s >= p.replica_commits[1].at_s);
	{
		struct plan_carry c;

		/* The replica applied both: ||h_2|| <= g (g 0.5 + 1) + 1. */
		ck_assert_int_eq(plan_carry_next(&t.b, &p, &c), 0);
		ck_assert_int_eq(c.n_carried, 0);
		ck_assert_double_eq_tol(c.history_norm, 0.9 * (0.9 * 0.5 + 1.0) + 1.0, 1e-12);
		plan_carry_free(&c);
	}
	plan_free(&p);
}
END_TEST

/*
 * The fewest replica bytes (replicate.c, §3.3): server at 1 Gbit/s (commits at 1 and 2), replica
 * downlink @rep_down, one replica aggregator "ra" (10 Gbit/s).
 */
static void repl_agg_batch(struct tb *t, double div_max, double rep_down)
{
	tb_init(t, PLAN_MLFABRIC_A);
	t->servers[t->b.n_servers++] = tb_host(t, "ps", 10, 1);
	t->b.replica = tb_host(t, "rep", 10, rep_down);
	tb_update(t, tb_host(t, "w1", 10, 10), GBIT, t->b.v_init);
	tb_update(t, tb_host(t, "w2", 10, 10), GBIT, t->b.v_init);
	t->raggs[t->b.n_replica_aggregators++] = tb_host(t, "ra", 10, 10);
	t->b.div_max = div_max;
	t->b.history_norm = 0.5;
}

/* Bytes to the replica in @p. */
static double replica_bytes(const struct plan *p, int replica)
{
	double bytes = 0;

	for (int i = 0; i < p->n_transfers; i++)
		if (p->transfers[i].dst == replica)
			bytes += (double)p->transfers[i].bytes;
	return bytes;
}

START_TEST(test_replica_fewest_bytes)
{
	struct tb t;
	struct plan p;

	/* A large bound and a 0.25 Gbit/s replica: one aggregate would commit at 4.2 > T_last, so
	 * Alg. 3's fastest case decides: nothing reaches the replica by T_last, both are punted. */
	repl_agg_batch(&t, 100.0, 0.25);
	plan_both(&t.b, &p);
	ck_assert_int_eq(p.n_replica_commits, 0);
	ck_assert_int_eq(p.n_punted, 2);
	ck_assert_double_eq(replica_bytes(&p, t.b.replica), 0.0);
	ck_assert_double_eq_tol(p.commits[1].at_s, 2.0, 1e-9);
	plan_free(&p);
	/* Div_max 0 and a 10 Gbit/s replica: direct copies would be faster (0.2 s against 0.3 s)
	 * but both fit before T_last = 2 as one aggregate at ra: one transfer into the replica. */
	repl_agg_batch(&t, 0.0, 10);
	plan_both(&t.b, &p);
	ck_assert_int_eq(p.n_punted, 0);
	ck_assert_int_eq(p.n_replica_commits, 1);
	ck_assert_int_eq(p.replica_commits[0].kind, PLAN_CARRY_AGGREGATE);
	ck_assert_int_eq(p.replica_commits[0].version, t.b.v_init + 2);
	ck_assert_double_eq_tol(p.replica_commits[0].at_s, 0.3, 1e-6);
	ck_assert_double_eq(replica_bytes(&p, t.b.replica), (double)GBIT);
	ck_assert_double_eq_tol(p.commits[1].at_s, 2.0, 1e-9); /* the server is not delayed */
	ck_assert_double_eq(p.divergence_bound, 0.0);
	plan_free(&p);
	/* A 0.25 Gbit/s replica: one aggregate would commit at 4.2 > T_last, so Alg. 3's fastest
	 * case and the delay of the last server transfer (test_replica_delays_last) decide. */
	repl_agg_batch(&t, 0.0, 0.25);
	plan_both(&t.b, &p);
	ck_assert_int_eq(p.n_punted, 0);
	ck_assert(p.commits[1].at_s >= p.replica_commits[p.n_replica_commits - 1].at_s - 1e-9);
	ck_assert(p.commits[1].at_s > 2.0);
	plan_free(&p);
}
END_TEST

/* ---------- sync mode, shards, distribution ---------- */

/* Sync: no deadlines, no dropping even for very old updates; shortest transfer first. */
START_TEST(test_sync_mode)
{
	struct tb t;
	struct plan p;
	int i;

	tb_init(&t, PLAN_MLFABRIC_S);
	t.servers[t.b.n_servers++] = tb_host(&t, "ps", 10, 1);
	t.b.tau_max = 0;
	for (i = 0; i < 4; i++)
		tb_update(&t, tb_host(&t, "w", 1, 1), (uint64_t)(4 - i) * GBIT / 4, 0);
	t.aggs[t.b.n_aggregators++] = tb_host(&t, "agg", 1, 1);
	plan_both(&t.b, &p);
	ck_assert_int_eq(p.n_dropped, 0);
	ck_assert_int_eq(p.n_order, 4);
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(p.order[i], 3 - i);
	ck_assert_int_eq(p.commits[p.n_commits - 1].version, t.b.v_init + 4);
	plan_free(&p);
}
END_TEST

/* Two shard servers: every update sends both shards; one commit per shard server (eq. 18). */
START_TEST(test_shards)
{
	struct tb t;
	struct plan p;
	int i, j, per_server[2] = { 0, 0 };

	tb_init(&t, PLAN_MLFABRIC_A);
	t.servers[t.b.n_servers++] = tb_host(&t, "ps0", 10, 1);
	t.servers[t.b.n_servers++] = tb_host(&t, "ps1", 10, 0.5);
	for (i = 0; i < 3; i++) {
		int u = tb_update(&t, tb_host(&t, "w", 1, 1), 0, t.b.v_init);

		t.updates[u].n_shards = 2;
		t.updates[u].shards = t.shards[u];
		for (j = 0; j < 2; j++) {
			t.shards[u][j].server = j;
			t.shards[u][j].bytes = GBIT / 2;
		}
	}
	t.aggs[t.b.n_aggregators++] = tb_host(&t, "agg", 4, 4);
	plan_both(&t.b, &p);
	ck_assert_int_eq(p.n_order, 3);
	for (i = 0; i < p.n_commits; i++)
		per_server[p.commits[i].host == t.servers[1]]++;
	ck_assert_int_eq(per_server[0], per_server[1]);
	for (i = 0; i < p.n_transfers; i++)
		ck_assert(p.transfers[i].shard == 0 || p.transfers[i].shard == 1);
	/* The 0.5 Gbit/s shard server is the bottleneck: its shard arrives later (eq. 18). */
	for (i = 0; i < p.n_commits; i++)
		if (p.commits[i].host == t.servers[1] && p.commits[i].kind == PLAN_CARRY_UPDATE &&
		    p.commits[i].carries == p.order[0])
			ck_assert_double_eq_tol(p.commits[i].at_s, 1.0, 1e-9);
	plan_free(&p);
	/* A sharded model with an update without shards is inconsistent. */
	t.updates[1].n_shards = 0;
	ck_assert_int_eq(plan_compute(&t.b, PLAN_IMPL_FAST, &p), -EINVAL);
}
END_TEST

/* Pulls answered through a distribution tree: server -> distributor -> workers. */
START_TEST(test_distribution)
{
	struct tb t;
	struct plan p;
	int i, j, via = 0, served[8] = { 0 };

	tb_init(&t, PLAN_MLFABRIC_A);
	t.servers[t.b.n_servers++] = tb_host(&t, "ps", 1, 10);
	t.b.model_bytes = GBIT;
	for (i = 0; i < 6; i++) {
		t.pulls[t.b.n_pulls].worker = tb_host(&t, "w", 10, 1);
		snprintf(t.pulls[t.b.n_pulls].id, PLAN_NAME_MAX, "p%d", i);
		t.b.n_pulls++;
	}
	t.dists[t.b.n_distributors++] = tb_host(&t, "d1", 4, 4);
	t.dists[t.b.n_distributors++] = tb_host(&t, "d2", 4, 4);
	/* d2 pulls too: the copy it receives as a distributor answers its own pull. */
	t.pulls[t.b.n_pulls].worker = t.dists[1];
	snprintf(t.pulls[t.b.n_pulls].id, PLAN_NAME_MAX, "pd2");
	t.b.n_pulls++;
	plan_both(&t.b, &p);
	for (i = 0; i < p.n_transfers; i++) {
		const struct plan_transfer *tr = &p.transfers[i];

		ck_assert_int_eq(tr->purpose, PLAN_PURPOSE_MODEL);
		ck_assert_int_eq(tr->kind, PLAN_CARRY_MODEL);
		if (tr->dst == t.pulls[tr->carries].worker) {
			served[tr->carries]++;
			if (tr->src != t.servers[0]) {
				via++;
				/* The distributor forwards only after its own copy arrived. */
				for (j = 0; j < p.n_transfers; j++)
					if (p.transfers[j].dst == tr->src)
						ck_assert(p.transfers[j].end_s <= tr->start_s + 1e-12);
			}
		}
	}
	for (i = 0; i < t.b.n_pulls; i++)
		ck_assert_int_eq(served[i], 1);
	/* One 1 Gbit/s server uplink cannot serve six workers in time: trees are used. */
	ck_assert_int_gt(via, 0);
	plan_free(&p);
}
END_TEST

/* ---------- FAST == SIMPLE on random batches, every feature ---------- */

START_TEST(test_fast_equals_simple)
{
	static const struct { int n, k, kr, rep, srv, pulls, dists; enum plan_mode mode; double div; }
	cases[] = {
		{ 12, 2, 1, 1, 1, 0, 0, PLAN_MLFABRIC_A, 1.0 },
		{ 30, 3, 2, 1, 1, 4, 2, PLAN_MLFABRIC_A, 0.3 },
		{ 30, 4, 0, 1, 1, 0, 0, PLAN_MLFABRIC_A, 0.0 },
		{ 25, 2, 2, 1, 2, 0, 0, PLAN_MLFABRIC_A, 2.0 },
		{ 20, 3, 1, 1, 1, 3, 1, PLAN_MLFABRIC_S, 0.5 },
		{ 40, 0, 0, 0, 3, 0, 0, PLAN_MLFABRIC_A, 0.0 },
	};
	unsigned i, seed;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		for (seed = 1; seed <= 3; seed++) {
			struct gen_params o;
			struct plan_batch b;
			struct plan p;

			/* Odd seeds: the fine shape; even seeds: the paper's §7.4 shape. */
			if (seed % 2)
				gen_params_default(&o, cases[i].n, seed);
			else
				gen_params_paper(&o, cases[i].n, seed);
			o.n_aggregators = cases[i].k;
			o.n_replica_aggregators = cases[i].kr;
			o.with_replica = cases[i].rep;
			o.n_servers = cases[i].srv;
			o.n_pulls = cases[i].pulls;
			o.n_distributors = cases[i].dists;
			o.mode = cases[i].mode;
			o.div_max = cases[i].div;
			o.n_capacity_changes = (int)seed;
			o.n_replica_only = 2;
			ck_assert_int_eq(gen_batch(&o, &b), 0);
			plan_both(&b, &p);
			plan_free(&p);
			if (b.replica >= 0) {
				/* A slow replica: punting and delaying the last server transfer. */
				b.hosts[b.replica].down_gbps = 0.02 + 0.05 * seed;
				plan_both(&b, &p);
				plan_free(&p);
			}
			planio_batch_free(&b);
		}
}
END_TEST

/* Bad batches are rejected, not planned. */
START_TEST(test_invalid)
{
	struct tb t;
	struct plan p;

	fig6_batch(&t, 1);
	t.updates[0].worker = 99;
	ck_assert_int_eq(plan_compute(&t.b, PLAN_IMPL_FAST, &p), -EINVAL);
	fig6_batch(&t, 1);
	t.b.n_servers = 0;
	ck_assert_int_eq(plan_compute(&t.b, PLAN_IMPL_FAST, &p), -EINVAL);
	fig6_batch(&t, 1);
	t.updates[0].replica_only = 1; /* a carried replica copy without a replica */
	ck_assert_int_eq(plan_compute(&t.b, PLAN_IMPL_SIMPLE, &p), -EINVAL);
	fig6_batch(&t, 1);
	t.hosts[1].up_gbps = -1.0;
	ck_assert_int_eq(plan_compute(&t.b, PLAN_IMPL_FAST, &p), -EINVAL);
}
END_TEST

static Suite *plan_suite(void)
{
	Suite *s = suite_create("plan_paper");
	TCase *tc = tcase_create("paper");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_fig4_tend);
	tcase_add_test(tc, test_netstate_undo);
	tcase_add_test(tc, test_fig5_drop);
	tcase_add_test(tc, test_fig1_delay_bound);
	tcase_add_test(tc, test_deadline_passed);
	tcase_add_test(tc, test_ready_time);
	tcase_add_test(tc, test_fig6_grouping);
	tcase_add_test(tc, test_cohosted_aggregator);
	tcase_add_test(tc, test_eq6_reordering);
	tcase_add_test(tc, test_eq7_eq8_bound);
	tcase_add_test(tc, test_replica_punting);
	tcase_add_test(tc, test_replica_delays_last);
	tcase_add_test(tc, test_replica_fewest_bytes);
	tcase_add_test(tc, test_sync_mode);
	tcase_add_test(tc, test_shards);
	tcase_add_test(tc, test_distribution);
	tcase_add_test(tc, test_fast_equals_simple);
	tcase_add_test(tc, test_invalid);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run(plan_suite()) ? EXIT_FAILURE : EXIT_SUCCESS;
}
