/* sched_adsp.h - ADSP's commit-rate control (adsp-aaai2020 §3-§4, Alg. 1) in the scheduler
 * (docs/scheduler.md "ADSP's commit rates"): check periods, per-worker commit rates, and the
 * online search of the commit rate from the loss-decrease speed. Pure: no daemon state; the
 * ADSP policy (sched_policy_adsp.c) drives it. */
#ifndef MLF_SCHED_ADSP_H
#define MLF_SCHED_ADSP_H

#include <stdint.h>

#define ADSP_MAX_LOSS 128   /* loss reports kept per evaluation window */
#define ADSP_GOAL_FRAC 1.0  /* the reward's constant loss: this fraction of the lowest loss seen
			     * in the two windows compared (the paper leaves it open). Below 1 the
			     * goal falls under the floor a3 that a short noisy window fits, and
			     * the window gets reward 0 (measured with 0.9: the search stopped at
			     * rate 1 on a 0 against 0.096) */

/** Settings (mlf-scheduler --adsp GAMMA, --adsp-eval S, --adsp-epoch S, --adsp-rate R). */
struct adsp_cfg {
	double gamma_s;  /* the check period Γ, seconds (> 0) */
	double eval_s;   /* how long one commit rate runs to be evaluated (Alg. 1 line 22), s */
	double epoch_s;  /* the search restarts every epoch_s seconds (Alg. 1 line 2); 0 = one
			  * epoch, the whole run */
	int fixed_r;     /* > 0: no search, every check period targets this many commits */
	int max_lag_r;   /* a worker's ΔC is at most max_lag_r x r (a worker that cannot keep up
			  * does not owe an unbounded backlog); >= 1 */
};

/** Where the search of Alg. 1 stands. */
enum adsp_phase {
	ADSP_EVAL_A = 0, /* running r to measure its reward (r1 of DECIDECOMMITRATE) */
	ADSP_EVAL_B = 1, /* running r + 1 to measure its reward (r2) */
	ADSP_FIXED = 2,  /* r decided for the rest of the epoch */
};

/** One `loss` report of the server: the global model's test loss at CLOCK_REALTIME t, s. */
struct adsp_point {
	double t, loss;
};

/** The commit-rate controller. Commit counts c_i are the updates each worker announced. */
struct adsp {
	struct adsp_cfg cfg;
	int started;            /* the first checkpoint happened */
	int64_t check;          /* checkpoints so far (p of pΓ) */
	int64_t c_target;       /* C_target: total commits each worker should have by the next
				 * checkpoint (§3) */
	int r;                  /* commits per check period targeted now: C_target grows by r each
				 * check period (the commit rate Alg. 1 searches, starting at 1) */
	int r_a;                /* the rate DECIDECOMMITRATE compares against r_a + 1 */
	enum adsp_phase phase;
	double t_epoch;         /* CLOCK_REALTIME s the current epoch started */
	double t_window;        /* CLOCK_REALTIME s the current evaluation window started */
	double next_check;      /* CLOCK_REALTIME s of the next checkpoint */
	struct adsp_point a[ADSP_MAX_LOSS]; /* losses reported while r_a ran (window A) */
	int n_a;
	struct adsp_point b[ADSP_MAX_LOSS]; /* losses reported in the current window */
	int n_b;
	double last_r1, last_r2; /* the last two rewards compared (0 before; for the records) */
	int decisions;           /* comparisons made in all */
};

/**
 * adsp_init - a controller with @cfg; the first checkpoint is at @now. Returns 0, or -EINVAL
 * when gamma_s <= 0, eval_s < gamma_s, epoch_s < 0, fixed_r < 0 or max_lag_r < 1.
 */
int adsp_init(struct adsp *a, const struct adsp_cfg *cfg, double now);

/**
 * adsp_fit - fit the loss curve l(t) = 1 / (a1^2 t + a2) + a3 (adsp-aaai2020 §4.2, after
 * Optimus' O(1/t)) to @n points (t in seconds from any origin, loss > 0) by least squares in l:
 * a3 on a grid of [0, min l), and for each a3 a linear fit of 1 / (l - a3) against t.
 * @k = a1^2 (the slope, loss decrease speed), @a2, @a3 out. Returns 0, or -1 with fewer than 3
 * points, all points at one time, or a non-finite value.
 */
int adsp_fit(const struct adsp_point *p, int n, double *k, double *a2, double *a3);

/**
 * adsp_reward - the reward of a window (§4.2): fit @p[0..n) with t measured from @t_origin,
 * then 1 / t* where t* is when the fitted curve reaches the loss @goal:
 * r = a1^2 / (1 / (goal - a3) - a2). 0 when the curve never reaches @goal (goal <= a3, a
 * non-decreasing curve) or the fit fails; a larger reward is a faster loss decrease.
 */
double adsp_reward(const struct adsp_point *p, int n, double t_origin, double goal);

/**
 * adsp_delta - ΔC_i = C_target - c_i, the commits worker i is to make in the next check
 * period (§3), clamped to [0, max_lag_r x r]. @c_i: the updates it announced so far.
 */
int64_t adsp_delta(const struct adsp *a, int64_t c_i);

/** adsp_loss - record one loss report (t CLOCK_REALTIME s); ignored unless finite and > 0. */
void adsp_loss(struct adsp *a, double t, double loss);

/**
 * adsp_checkpoint - called when @now >= a->next_check: advance the search (Alg. 1: after
 * eval_s of r_a, run r_a + 1; after eval_s of that, keep it and try the next if its reward is
 * larger, else settle on r_a for the rest of the epoch; a new epoch starts over at r = 1),
 * then C_target += r (the first checkpoint: C_target = @c_max + r, the paper's max c_i + 1
 * for r = 1, and the losses reported before it are dropped). @c_max: the most commits of any
 * live worker. The daemon calls the first one only once a worker is live. Returns 1 when the search made a
 * decision at this checkpoint (r changed or settled), else 0.
 */
int adsp_checkpoint(struct adsp *a, double now, int64_t c_max);

#endif
