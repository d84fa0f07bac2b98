/* test_sched_adsp.c - Check tests of ADSP's commit-rate control (adsp-aaai2020 §3-§4.2, Alg. 1):
 * a window's loss-decrease speed, the trend-cancelling comparison, ΔC_i = C_target - c_i, the
 * online search on synthetic loss curves. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "ck_run.h"
#include "sched_adsp.h"

/* The paper's curve l(t) = 1 / (k t + a2) at times t0 .. t0 + (n-1) dt. */
static void curve(struct adsp_point *p, int n, double t0, double dt, double k, double a2)
{
	for (int i = 0; i < n; i++) {
		p[i].t = t0 + i * dt;
		p[i].loss = 1 / (k * p[i].t + a2);
	}
}

/* A window's speed is the slope of 1 / loss: on the paper's curve it is k wherever the window
 * starts (early, at a high loss, or late, at a low one); points before the window are not its
 * own; fewer than two points, or all at one time, give no speed. */
START_TEST(speed_is_normalised_for_where_training_is)
{
	struct adsp_point early[6], late[6];
	double se;

	curve(early, 6, 0, 0.5, 0.3, 0.5);
	curve(late, 6, 40, 0.5, 0.3, 0.5);
	ck_assert_double_eq_tol(adsp_speed(early, 6, 0, &se), 0.3, 1e-9);
	ck_assert_double_eq_tol(se, 0, 1e-6);
	ck_assert_double_eq_tol(adsp_speed(late, 6, 40, &se), 0.3, 1e-9);
	ck_assert(early[0].loss - early[5].loss > 10 * (late[0].loss - late[5].loss));
	late[0].loss = 100; /* before t_from: ignored */
	ck_assert_double_eq_tol(adsp_speed(late, 6, 40.1, &se), 0.3, 1e-9);
	/* off the line: a standard error; two points: a slope without one */
	late[3].loss *= 1.05;
	ck_assert(adsp_speed(late, 6, 40.1, &se) > 0 && se > 0.01 && isfinite(se));
	ck_assert(isfinite(adsp_speed(late, 6, 41.9, &se)) && isinf(se));
	ck_assert(isnan(adsp_speed(late, 6, 42.4, &se)));
	for (int i = 0; i < 3; i++)
		early[i].t = 1;
	ck_assert(isnan(adsp_speed(early, 3, 0, &se)));
}
END_TEST

/* The comparison interpolates r_a's speed across each r_b window: a speed falling by 30% per
 * window with r_b 20% faster is r_b's win (the window before each r_b window was faster, so
 * comparing consecutive windows would keep r_a); the same trend with r_b 10% slower, or equal,
 * keeps r_a; 20% faster with 10% errors on the speeds keeps r_a (not clear of the noise), and
 * so does 20% faster in one r_b window only; too few windows, or a window where the loss did
 * not fall, are no evidence (-1). */
START_TEST(compare_cancels_the_trend)
{
	double t[5] = { 1, 3, 5, 7, 9 }, v[5], se[5] = { 0 }, va, vb;

	for (int i = 0; i < 5; i++)
		v[i] = pow(0.7, i) * (i % 2 ? 1.2 : 1.0);
	ck_assert(v[1] < v[0] && v[3] < v[2]);
	ck_assert_int_eq(adsp_compare(t, v, se, 5, &va, &vb), 1);
	ck_assert_double_eq_tol(vb / va, 1.2, 1e-9);
	for (int i = 0; i < 5; i++)
		se[i] = 0.1 * v[i];
	ck_assert_int_eq(adsp_compare(t, v, se, 5, &va, &vb), 0);
	for (int i = 0; i < 5; i++)
		se[i] = 0;
	v[3] /= 1.2;
	ck_assert_int_eq(adsp_compare(t, v, se, 5, &va, &vb), 0);
	for (int i = 0; i < 5; i++)
		v[i] = pow(0.7, i) * (i % 2 ? 0.9 : 1.0);
	ck_assert_int_eq(adsp_compare(t, v, se, 5, &va, &vb), 0);
	ck_assert(vb < va);
	for (int i = 0; i < 5; i++)
		v[i] = pow(0.7, i);
	ck_assert_int_eq(adsp_compare(t, v, se, 5, &va, &vb), 0);
	ck_assert_int_eq(adsp_compare(t, v, se, 4, &va, &vb), -1);
	ck_assert_int_eq(adsp_compare(t, v, se, 1, &va, &vb), -1);
	v[2] = NAN;
	ck_assert_int_eq(adsp_compare(t, v, se, 5, &va, &vb), -1);
	v[2] = -0.1;
	ck_assert_int_eq(adsp_compare(t, v, se, 5, &va, &vb), -1);
}
END_TEST

/* ΔC_i = C_target - c_i (§3): a worker behind owes more commits, one ahead none, and the debt
 * is capped at max_lag_r x r. */
START_TEST(delta_is_target_minus_commits)
{
	struct adsp a;
	struct adsp_cfg cfg = { .gamma_s = 1, .eval_s = 1, .fixed_r = 2, .max_lag_r = 3 };

	ck_assert_int_eq(adsp_init(&a, &cfg, 100), 0);
	ck_assert_int_eq(adsp_checkpoint(&a, 100, 10), 0);
	ck_assert_int_eq(a.c_target, 12); /* the most commits of a live worker + r */
	ck_assert_int_eq(adsp_delta(&a, 10), 2);
	ck_assert_int_eq(adsp_delta(&a, 11), 1);
	ck_assert_int_eq(adsp_delta(&a, 13), 0);
	ck_assert_int_eq(adsp_delta(&a, 0), 6); /* 12 owed, capped at 3 x 2 */
	adsp_checkpoint(&a, 101, 12);
	ck_assert_int_eq(a.c_target, 14);
	ck_assert_int_eq(a.check, 2);
	ck_assert_double_eq(a.next_check, 102);
}
END_TEST

/*
 * A synthetic training run: the loss falls as dl/dt = -k[r] g(t) (l - 0.1)^2, where k[r] is how
 * good the rate in force is and g(t) = exp(-t / 8) a trend that slows every rate as training
 * goes on (the later of two windows always falls slower), and the loss's floor 0.1 another; the
 * server reports the loss every 0.5 s with a deterministic +-0.5% noise; before @flat_s the
 * loss does not move; checkpoints every second, trial windows of 3 s.
 * Returns the rate in force at the end of @secs seconds.
 */
static int simulate_flat(struct adsp *a, const double *k, double secs, double flat_s)
{
	struct adsp_cfg cfg = { .gamma_s = 1, .eval_s = 3, .max_lag_r = 4 };
	double l = 2.3, dt = 0.01;
	unsigned seed = 12345;

	ck_assert_int_eq(adsp_init(a, &cfg, 0), 0);
	for (int step = 0; step * dt < secs; step++) {
		double t = step * dt;
		if (step % 100 == 0)
			adsp_checkpoint(a, t, 0);
		ck_assert_int_le(a->r, 16);
		if (t >= flat_s)
			l -= dt * k[a->r] * exp(-(t - flat_s) / 8) * (l - 0.1) * (l - 0.1);
		if (step % 50 == 25) {
			seed = seed * 1103515245 + 12345;
			adsp_loss(a, t, l * (1 + 0.01 * ((seed >> 16) % 1000 / 1000.0 - 0.5)));
		}
	}
	return a->r;
}

static int simulate(struct adsp *a, const double *k, double secs)
{
	return simulate_flat(a, k, secs, 0);
}

/* Under that trend the search picks a rate that is truly faster and stays when none is: k 1.25
 * for rate 2 (the trend slows the speed by more from one window to the next, so consecutive
 * windows always favour the earlier) -> 2, then 4 (k 1.1) loses -> 2; rates 2 and 4 better in
 * turn, 8 worse -> 4; rate 2 slower, or equal -> 1. */
START_TEST(search_picks_the_better_rate_under_a_trend)
{
	static const double better2[17] = { 0, 1, 1.25, 0, 1.1, [8] = 1 };
	static const double climb[17] = { 0, 1, 1.4, 0, 2.0, [8] = 1.8 };
	static const double worse2[17] = { 0, 1, 0.85, [4] = 1 };
	static const double equal[17] = { 0, 1, 1, [4] = 1 };
	struct adsp a;

	ck_assert_int_eq(simulate(&a, better2, 40), 2);
	ck_assert_int_eq(a.phase, ADSP_FIXED);
	ck_assert_int_eq(a.decisions, 2);
	ck_assert_int_eq(a.last_ra, 2); /* the last comparison: 2 against 4 */
	ck_assert_int_eq(a.last_rb, 4);
	ck_assert_int_eq(simulate(&a, climb, 46), 4);
	ck_assert_int_eq(a.decisions, 3);
	ck_assert_int_eq(simulate(&a, worse2, 40), 1);
	ck_assert_int_eq(a.decisions, 1);
	ck_assert_int_eq(simulate(&a, equal, 40), 1);
	ck_assert_int_eq(a.decisions, 1);
	/* nothing moves for the first 4 s (no commit yet in a long check period): the first
	 * comparison has no evidence and runs again, which picks rate 2 */
	ck_assert_int_eq(simulate_flat(&a, better2, 60, 4), 2);
	ck_assert_int_eq(a.decisions, 2);
	ck_assert_int_eq(a.last_ra, 2);
}
END_TEST

/* One loss report in period @p: 1 / loss = 1 + k t for the rate in force (rate 2 the fastest). */
static void feed(struct adsp *a, int p)
{
	static const double k[17] = { 0, 1, 1.25, 0, 1.1, [8] = 1, [16] = 1 };

	adsp_loss(a, p + 0.5, 1.0 / (1 + k[a->r] * (p + 0.5)));
}

/* The windows alternate r_a, r_b, r_a, r_b, r_a, each eval_s long, and C_target grows by the
 * rate in force every period; after the fifth window the comparison decides (rate 2 is faster:
 * it becomes r_a, against 4). */
START_TEST(trials_interleave)
{
	struct adsp a;
	struct adsp_cfg cfg = { .gamma_s = 1, .eval_s = 3, .max_lag_r = 4 };
	int rates[15];
	int64_t sum = 0;

	ck_assert_int_eq(adsp_init(&a, &cfg, 0), 0);
	for (int p = 0; p < 15; p++) {
		adsp_checkpoint(&a, p, 0);
		rates[p] = a.r;
		sum += a.r;
		feed(&a, p);
	}
	static const int want[15] = { 1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 1, 1, 1 };
	for (int p = 0; p < 15; p++)
		ck_assert_int_eq(rates[p], want[p]);
	ck_assert_int_eq(a.c_target, sum);
	ck_assert_int_eq(a.n_win, 4);
	ck_assert_int_eq(a.win_n[0], 3);
	ck_assert_int_eq(a.decisions, 0);
	ck_assert_int_eq(adsp_checkpoint(&a, 15, 0), 1);
	ck_assert_int_eq(a.decisions, 1);
	ck_assert_int_eq(a.r, 2);
	ck_assert_int_eq(a.r_a, 2);
	ck_assert_int_eq(a.r_b, 4);
	ck_assert_int_eq(a.n_win, 0);
	ck_assert_double_eq_tol(a.last_r1, 1, 1e-9);
	ck_assert_double_eq_tol(a.last_r2, 1.25, 1e-9);
}
END_TEST

/* A new epoch (Alg. 1 line 2) starts the search again at rate 1; a fixed rate never searches. */
START_TEST(epoch_restarts_and_fixed_rate)
{
	struct adsp a;
	struct adsp_cfg cfg = { .gamma_s = 1, .eval_s = 3, .epoch_s = 20, .max_lag_r = 4 };

	ck_assert_int_eq(adsp_init(&a, &cfg, 0), 0);
	for (int p = 0; p < 20; p++) {
		adsp_checkpoint(&a, p, 0);
		feed(&a, p);
	}
	ck_assert_int_eq(a.r_a, 2);
	ck_assert_int_eq(adsp_checkpoint(&a, 20, 0), 1);
	ck_assert_int_eq(a.r, 1);
	ck_assert_int_eq(a.phase, ADSP_EVAL_A);

	cfg = (struct adsp_cfg){ .gamma_s = 1, .eval_s = 1, .fixed_r = 5, .max_lag_r = 1 };
	ck_assert_int_eq(adsp_init(&a, &cfg, 0), 0);
	for (int p = 0; p < 10; p++) {
		ck_assert_int_eq(adsp_checkpoint(&a, p, 0), 0);
		feed(&a, p);
	}
	ck_assert_int_eq(a.r, 5);
	ck_assert_int_eq(a.c_target, 50);
	ck_assert_int_eq(a.decisions, 0);
}
END_TEST

/* Settings that make no sense are refused. */
START_TEST(bad_settings_refused)
{
	struct adsp a;
	struct adsp_cfg ok = { .gamma_s = 1, .eval_s = 2, .max_lag_r = 1 }, c;

	c = ok;
	c.gamma_s = 0;
	ck_assert_int_ne(adsp_init(&a, &c, 0), 0);
	c = ok;
	c.eval_s = 0.5; /* shorter than a check period */
	ck_assert_int_ne(adsp_init(&a, &c, 0), 0);
	c = ok;
	c.max_lag_r = 0;
	ck_assert_int_ne(adsp_init(&a, &c, 0), 0);
	c = ok;
	c.epoch_s = NAN;
	ck_assert_int_ne(adsp_init(&a, &c, 0), 0);
	ck_assert_int_eq(adsp_init(&a, &ok, 0), 0);
	/* losses before the first checkpoint (the untrained model, no worker yet) are dropped */
	adsp_loss(&a, 0.5, 2.3);
	ck_assert_int_eq(a.n_b, 1);
	adsp_checkpoint(&a, 1, 0);
	ck_assert_int_eq(a.n_b, 0);
	/* losses that are not finite and positive are ignored */
	adsp_loss(&a, 1, NAN);
	adsp_loss(&a, 1, -1);
	adsp_loss(&a, INFINITY, 1);
	ck_assert_int_eq(a.n_b, 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sched_adsp");
	TCase *tc = tcase_create("commit_rate");

	tcase_add_test(tc, speed_is_normalised_for_where_training_is);
	tcase_add_test(tc, compare_cancels_the_trend);
	tcase_add_test(tc, delta_is_target_minus_commits);
	tcase_add_test(tc, search_picks_the_better_rate_under_a_trend);
	tcase_add_test(tc, trials_interleave);
	tcase_add_test(tc, epoch_restarts_and_fixed_rate);
	tcase_add_test(tc, bad_settings_refused);
	suite_add_tcase(s, tc);
	return ck_run(s);
}
