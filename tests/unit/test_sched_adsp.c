/* test_sched_adsp.c - Check tests of ADSP's commit-rate control (adsp-aaai2020 §3-§4.2, Alg. 1):
 * the O(1/t) loss fit and its reward, ΔC_i = C_target - c_i, the online search. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "ck_run.h"
#include "sched_adsp.h"

/* The paper's curve l(t) = 1 / (k t + a2) + a3 at times t0 .. t0 + (n-1) dt. */
static void curve(struct adsp_point *p, int n, double t0, double dt, double k, double a2, double a3)
{
	for (int i = 0; i < n; i++) {
		p[i].t = t0 + i * dt;
		p[i].loss = 1 / (k * p[i].t + a2) + a3;
	}
}

/* Points on an exact curve give back its parameters (a3 to the grid step of min l / 256). */
START_TEST(fit_recovers_the_curve)
{
	struct adsp_point p[8];
	double k, a2, a3;

	curve(p, 8, 0, 1, 0.5, 1.0, 0.3);
	ck_assert_int_eq(adsp_fit(p, 8, &k, &a2, &a3), 0);
	ck_assert_double_eq_tol(a3, 0.3, 0.01);
	ck_assert_double_eq_tol(k, 0.5, 0.05);
	ck_assert_double_eq_tol(a2, 1.0, 0.1);
	/* fewer than three points, or all at one time: no fit */
	ck_assert_int_eq(adsp_fit(p, 2, &k, &a2, &a3), -1);
	for (int i = 0; i < 3; i++)
		p[i].t = 5;
	ck_assert_int_eq(adsp_fit(p, 3, &k, &a2, &a3), -1);
}
END_TEST

/* The reward is 1 / (the time the fitted curve reaches the goal): a curve twice as steep (k)
 * reaches it in half the time; a flat or rising loss never does (reward 0). */
START_TEST(reward_is_the_loss_decrease_speed)
{
	struct adsp_point slow[6], fast[6], rising[6];

	curve(slow, 6, 10, 1, 0.1, 1.0, 0.2);
	curve(fast, 6, 10, 1, 0.2, 1.0, 0.2);
	double goal = 0.25; /* slow: 1/(0.1 t + 1) = 0.05 at t = 190; fast at t = 95 */
	double rs = adsp_reward(slow, 6, 0, goal), rf = adsp_reward(fast, 6, 0, goal);
	ck_assert_double_eq_tol(rs, 1.0 / 190, 0.1 / 190);
	ck_assert_double_eq_tol(rf, 1.0 / 95, 0.1 / 95);
	for (int i = 0; i < 6; i++)
		rising[i] = (struct adsp_point){ .t = 10 + i, .loss = 1 + 0.1 * i };
	ck_assert(adsp_reward(rising, 6, 0, goal) == 0);
	/* a goal below the curve's floor a3 is never reached */
	ck_assert(adsp_reward(fast, 6, 0, 0.1) == 0);
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

/* Feed the search windows whose loss falls at a speed that depends on the rate running: the
 * best rate is 3 (k 0.3); rates 1, 2 and 4 are slower. Alg. 1 climbs 1 -> 2 -> 3, tries 4,
 * and settles on 3 for the rest of the epoch. */
static const double speed_of_rate[] = { 0, 0.1, 0.2, 0.3, 0.25, 0.2, 0.1 };

static void run_period(struct adsp *a, double t)
{
	/* four loss reports in the period on the curve of the rate in force, times from t0 = 0 */
	for (int i = 0; i < 4; i++) {
		double ti = t + 0.25 * i;
		adsp_loss(a, ti, 1 / (speed_of_rate[a->r] * ti + 1) + 0.2);
	}
}

START_TEST(search_climbs_to_the_best_rate)
{
	struct adsp a;
	struct adsp_cfg cfg = { .gamma_s = 1, .eval_s = 3, .max_lag_r = 4 };
	int rates[40];

	ck_assert_int_eq(adsp_init(&a, &cfg, 0), 0);
	for (int p = 0; p < 40; p++) {
		adsp_checkpoint(&a, p, 0);
		rates[p] = a.r;
		run_period(&a, p);
	}
	ck_assert_int_eq(rates[0], 1);  /* starts at the smallest rate */
	ck_assert_int_eq(rates[3], 2);  /* after eval_s of rate 1, rate 2 */
	ck_assert_int_eq(rates[6], 3);  /* 2 beat 1: 3 */
	ck_assert_int_eq(rates[9], 4);  /* 3 beat 2: 4 */
	ck_assert_int_eq(rates[12], 3); /* 4 lost to 3: 3 for the rest */
	ck_assert_int_eq(rates[39], 3);
	ck_assert_int_eq(a.phase, ADSP_FIXED);
	ck_assert_int_eq(a.decisions, 3);
	/* C_target grew by the rate of every period */
	int64_t sum = 0;
	for (int p = 0; p < 40; p++)
		sum += rates[p];
	ck_assert_int_eq(a.c_target, sum);
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
		run_period(&a, p);
	}
	ck_assert_int_eq(a.r, 3);
	ck_assert_int_eq(adsp_checkpoint(&a, 20, 0), 1);
	ck_assert_int_eq(a.r, 1);
	ck_assert_int_eq(a.phase, ADSP_EVAL_A);

	cfg = (struct adsp_cfg){ .gamma_s = 1, .eval_s = 1, .fixed_r = 5, .max_lag_r = 1 };
	ck_assert_int_eq(adsp_init(&a, &cfg, 0), 0);
	for (int p = 0; p < 10; p++) {
		ck_assert_int_eq(adsp_checkpoint(&a, p, 0), 0);
		run_period(&a, p);
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

	tcase_add_test(tc, fit_recovers_the_curve);
	tcase_add_test(tc, reward_is_the_loss_decrease_speed);
	tcase_add_test(tc, delta_is_target_minus_commits);
	tcase_add_test(tc, search_climbs_to_the_best_rate);
	tcase_add_test(tc, epoch_restarts_and_fixed_rate);
	tcase_add_test(tc, bad_settings_refused);
	suite_add_tcase(s, tc);
	return ck_run(s);
}
