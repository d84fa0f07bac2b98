/* sched_adsp.h - ADSP's commit-rate control (adsp-aaai2020 §3-§4, Alg. 1) in the scheduler
 * (docs/scheduler.md "ADSP's commit rates"): check periods, per-worker commit rates, and the
 * online search of the commit rate by interleaved trials of two rates. Pure: no daemon state;
 * the ADSP policy (sched_policy_adsp.c) drives it. */
#ifndef MLF_SCHED_ADSP_H
#define MLF_SCHED_ADSP_H

#include <stdint.h>

#define ADSP_MAX_LOSS 128   /* loss reports kept per trial window */
#define ADSP_TRIALS 5       /* trial windows per comparison, alternating r_a, r_b, r_a, r_b, r_a:
			     * the trend of training (an earlier window falls faster whatever
			     * the rate) is fitted across them and cancels from the difference */
#define ADSP_MIN_GAIN 0.10  /* r_b wins only when its speed is this fraction above r_a's in
			     * every one of its windows ... */
#define ADSP_SE_K 1.0       /* ... by more than this many standard errors of the ratio */
#define ADSP_RETRIES 2      /* a comparison without evidence runs again this many times before
			     * the incumbent stays */

/** Settings (mlf-scheduler --adsp GAMMA, --adsp-eval S, --adsp-epoch S, --adsp-rate R). */
struct adsp_cfg {
	double gamma_s;  /* the check period Γ, seconds (> 0) */
	double eval_s;   /* one trial window: how long a rate runs before the other, s */
	double epoch_s;  /* the search restarts every epoch_s seconds (Alg. 1 line 2); 0 = one
			  * epoch, the whole run */
	int fixed_r;     /* > 0: no search, every check period targets this many commits */
	int max_lag_r;   /* a worker's ΔC is at most max_lag_r x r (a worker that cannot keep up
			  * does not owe an unbounded backlog); >= 1 */
};

/** Where the search stands. */
enum adsp_phase {
	ADSP_EVAL_A = 0, /* a trial window of the incumbent rate r_a */
	ADSP_EVAL_B = 1, /* a trial window of the challenger r_b = 2 r_a */
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
				 * check period */
	int r_a, r_b;           /* the comparison's incumbent rate and its challenger 2 r_a */
	enum adsp_phase phase;
	double t_epoch;         /* CLOCK_REALTIME s the current epoch started */
	double t_window;        /* CLOCK_REALTIME s the current trial window started */
	double next_check;      /* CLOCK_REALTIME s of the next checkpoint */
	struct adsp_point b[ADSP_MAX_LOSS]; /* losses reported in the current window */
	int n_b;
	double win_t[ADSP_TRIALS]; /* the comparison's finished windows: mid time (s), */
	double win_v[ADSP_TRIALS]; /* speed (adsp_speed) and its standard error, */
	double win_se[ADSP_TRIALS];
	int win_n[ADSP_TRIALS];    /* loss reports used */
	int n_win;
	double last_r1, last_r2; /* the last comparison's speeds of r_a and r_b at the same point of
				  * training (0 before; for the records) */
	int last_ra, last_rb;    /* the rates of the last comparison (0 before) */
	int decisions;           /* comparisons decided in all */
	int retries;             /* runs of the current comparison that gave no evidence */
};

/**
 * adsp_init - a controller with @cfg; the first checkpoint is at @now. Returns 0, or -EINVAL
 * when gamma_s <= 0, eval_s < gamma_s, epoch_s < 0, fixed_r < 0 or max_lag_r < 1.
 */
int adsp_init(struct adsp *a, const struct adsp_cfg *cfg, double now);

/**
 * adsp_speed - the loss-decrease speed of one window: the least-squares slope of 1 / loss
 * against t over the @n points @p with t >= @t_from (1/s). Under the paper's O(1/t) curve
 * l(t) = 1 / (a1² t + a2) (§4.2, floor a3 = 0) it is a1² whatever the loss the window starts
 * at: the loss decrease dl/dt normalised by l². *@se out: the slope's standard error from the
 * residuals (INFINITY with 2 points). NAN with fewer than 2 such points or all at one time.
 */
double adsp_speed(const struct adsp_point *p, int n, double t_from, double *se);

/**
 * adsp_compare - the decision of one comparison of @n windows (odd, >= 3; window i ran r_a for
 * even i, r_b for odd i; @t mid times, @v speeds): each r_b window is compared with r_a's speed
 * at its time, interpolated in log between the r_a windows on either side (a trend that slows
 * the speed by the same factor per second cancels exactly; a trend that flattens out counts
 * against r_b). @se: the speeds' standard errors. Returns 1 when r_b is better: in every r_b
 * window the log of its speed over r_a's there, less ADSP_SE_K x that ratio's error, is above
 * log(1 + ADSP_MIN_GAIN); 0 when not; -1 (no evidence) when @n is even or < 3, a speed is not
 * finite or not > 0 (a window where the loss did not fall) or the times are not in order.
 * *@va, *@vb out: the geometric means of r_a's interpolated speeds and of r_b's (0 when
 * nothing was compared).
 */
int adsp_compare(const double *t, const double *v, const double *se, int n, double *va, double *vb);

/**
 * adsp_delta - ΔC_i = C_target - c_i, the commits worker i is to make in the next check
 * period (§3), clamped to [0, max_lag_r x r]. @c_i: the updates it announced so far.
 */
int64_t adsp_delta(const struct adsp *a, int64_t c_i);

/** adsp_loss - record one loss report (t CLOCK_REALTIME s); ignored unless finite and > 0. */
void adsp_loss(struct adsp *a, double t, double loss);

/**
 * adsp_checkpoint - called when @now >= a->next_check: advance the search (after eval_s of a
 * trial window, the other rate runs; after ADSP_TRIALS windows, adsp_compare decides: r_b wins
 * and is compared with 2 r_b next, else r_a stays for the rest of the epoch; a comparison
 * without evidence runs again, up to ADSP_RETRIES times, before r_a stays; a new epoch starts
 * over at r = 1), then C_target += r (the first checkpoint: C_target = @c_max + r, the
 * paper's max c_i + 1 for r = 1, and the losses reported before it are dropped). @c_max: the
 * most commits of any live worker. The daemon calls the first one only once a worker is live.
 * Returns 1 when the search made a decision at this checkpoint (r changed or settled), else 0.
 */
int adsp_checkpoint(struct adsp *a, double now, int64_t c_max);

#endif
