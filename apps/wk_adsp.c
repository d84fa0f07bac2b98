/* wk_adsp.c - mlf-worker's ADSP (adsp-aaai2020 Alg. 2): train a local copy without waiting, commit it at the scheduler's commit rate. */
#include <string.h>

#include "clock.h"
#include "log.h"
#include "mlfabric_sync.h"
#include "wk.h"

/* ADSP's settings and state. */
struct adsp {
	double global_lr;            /* --global-lr E (0 = 1) */
	struct mlf_commit_rate rate; /* the commit rate in force (check < 0: none yet) */
	int64_t rate_j;              /* commits made in its check period */
	long since_commit;           /* local iterations since the last commit */
	double o_s;                  /* O_i, seconds a commit takes (push + get; EWMA 0.2) */
	int need_get;                /* the model is to be got (at the start; a commit gets it itself) */
};

static const struct wk_opt adsp_opts[] = {
	{ "global-lr", 1,
	  "  --global-lr E          commit E x (copy - model) (default 1: the update added as\n"
	  "                         Async adds it)\n", NULL },
	{ "adsp", 0, NULL, "--system adsp" },
	{ 0 },
};

static void adsp_defaults(void *priv)
{
	struct adsp *a = priv;

	a->rate.check = -1;
	a->need_get = 1;
}

static int adsp_option(struct wk_run *R, const char *name, const char *arg)
{
	struct adsp *a = R->priv;

	return wk_parse_real(name, arg, 0, 0, 4096, "a number in (0, 4096]", &a->global_lr);
}

static int adsp_init(struct wk_run *R)
{
	return wk_alloc_wr(R); /* the local copy */
}

/* The model at the start (a commit gets the next one itself); the local copy starts from it. */
static int adsp_pull(struct wk_run *R, double *get_s)
{
	struct adsp *a = R->priv;

	if (!a->need_get)
		return WK_GO;
	if (wk_get(R, get_s) != WK_GO)
		return WK_ERR;
	memcpy(R->wr, R->w, sizeof(float) * R->n);
	a->need_get = 0;
	return WK_GO;
}

/* Never wait: one local iteration, or, when the timer of the scheduler's commit rate is due, a
 * commit (a commit carries at least one iteration). */
static int adsp_iteration(struct wk_run *R, double get_s)
{
	const struct wk_opts *o = R->o;
	struct adsp *a = R->priv;
	struct mlf_commit_rate cr;
	size_t n = R->n;
	int64_t id, r, v_g;

	if (mlf_commit_rate(R->f, &cr) == 0 && (cr.check != a->rate.check || cr.t != a->rate.t)) {
		a->rate = cr; /* a new check period: its commits count from 1 */
		a->rate_j = 0;
	}
	double tc = clock_real_s();
	if (a->rate.check < 0 || a->since_commit == 0 ||
	    tc < train_adsp_commit_due(a->rate.t, a->rate_j + 1, a->rate.delta, a->rate.period_s, a->o_s)) {
		if (train_local_step(&R->L, R->wr) < 0)
			return log_err("no memory for the gradient"), WK_ERR;
		a->since_commit++;
		return WK_GO;
	}
	/* TIMEOUT(): commit E x the accumulated update U_i = copy - model, get the model */
	double norm = train_local_delta(R->wr, R->w, a->global_lr > 0 ? a->global_lr : 1, R->u, n);
	v_g = R->version;
	id = mlf_push(R->f, o->server, R->u, n, norm, R->version);
	if (id < 0)
		return wk_fail(R, "push", id);
	r = mlf_get(R->f, o->server, R->w, n, &R->version, o->timeout);
	if (r)
		return wk_fail(R, "model get", r);
	memcpy(R->wr, R->w, sizeof(float) * n);
	double took = clock_real_s() - tc;
	a->o_s = a->o_s > 0 ? 0.8 * a->o_s + 0.2 * took : took;
	a->rate_j++;
	R->it++;
	train_rec_line(R->pushes, json_pack("{s:f,s:I,s:I,s:f,s:I,s:f,s:I,s:I}", "t", clock_real_s(),
					    "id", (json_int_t)id, "version", (json_int_t)v_g,
					    "norm", norm, "local_steps", (json_int_t)a->since_commit,
					    "commit_s", took, "check", (json_int_t)a->rate.check,
					    "delta", (json_int_t)a->rate.delta));
	a->since_commit = 0;
	if (wk_progress_due(R))
		log_info("t=%.1fs commit %ld (%lld of %lld this period) model version %lld loss %.4f",
			 clock_real_s() - R->t0, R->it, (long long)a->rate_j, (long long)a->rate.delta,
			 (long long)R->version, R->L.loss);
	return WK_GO;
}

const struct wk_algo wk_adsp = {
	.name = "adsp", .mode = MLF_MODE_MLFABRIC_A, .opts = adsp_opts, .priv_size = sizeof(struct adsp),
	.summary = "ADSP: train a copy without waiting, commit\n"
		   "                         E x (copy - model) at the commit rate mlf-scheduler\n"
		   "                         --adsp sends each check period, then get",
	.busy_per_local_step = 1, .defaults = adsp_defaults, .option = adsp_option,
	.init = adsp_init, .pull = adsp_pull, .iteration = adsp_iteration,
};
