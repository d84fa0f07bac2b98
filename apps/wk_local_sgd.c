/* wk_local_sgd.c - mlf-worker's fixed-rate local SGD (ADSP's "Fixed ADACOMM" baseline): T local iterations per round, then the round's delta. */
#include <string.h>

#include "clock.h"
#include "log.h"
#include "wk.h"

/* Local SGD's settings and state. */
struct local_sgd {
	int workers;      /* --local-workers P: the workers of a round */
	int steps;        /* --local-steps T: local iterations per round */
	double global_lr; /* --global-lr E (0 = P) */
	double c;         /* seconds the last local iteration took */
};

static const struct wk_opt local_sgd_opts[] = {
	{ "local-workers", 1,
	  "  --local-workers P      the P workers of a round (required; the server's --workers)\n", NULL },
	{ "local-steps", 1,
	  "  --local-steps T        T local iterations per round (required), no State Server\n", NULL },
	{ "global-lr", 1,
	  "  --global-lr E          a round moves the model by E x the mean delta (default P: the\n"
	  "                         sum of the deltas)\n", NULL },
	{ 0 },
};

static int local_sgd_option(struct wk_run *R, const char *name, const char *arg)
{
	struct local_sgd *s = R->priv;
	long v;

	if (!strcmp(name, "global-lr"))
		return wk_parse_real(name, arg, 0, 0, 4096, "a number in (0, 4096]", &s->global_lr);
	if (!strcmp(name, "local-steps")) {
		if (wk_parse_int(name, arg, 1, 100000, "local iterations per round (1..100000)", &v))
			return -1;
		s->steps = (int)v;
		return 0;
	}
	if (wk_parse_int(name, arg, 1, 4096, "the number of workers (1..4096)", &v))
		return -1;
	s->workers = (int)v;
	return 0;
}

static int local_sgd_check(struct wk_run *R)
{
	const struct local_sgd *s = R->priv;

	if (!s->workers || !s->steps)
		return fprintf(stderr, "mlf-worker: --system local-sgd needs --local-workers P and "
			       "--local-steps T\n"), -1;
	return 0;
}

static int local_sgd_init(struct wk_run *R)
{
	return wk_alloc_wr(R); /* the local copy */
}

/* One round: --local-steps iterations on a copy, then its delta through the synchronous push. */
static int local_sgd_round(struct wk_run *R, double get_s)
{
	struct local_sgd *s = R->priv;
	struct wk_round rd = { .t_start = clock_real_s() };
	int k;

	memcpy(R->wr, R->w, sizeof(float) * R->n);
	for (k = 0; k < s->steps; k++) {
		double c_k = train_local_step(&R->L, R->wr);
		if (c_k < 0)
			return log_err("no memory for the gradient"), WK_ERR;
		s->c = c_k;
		if (wk_stop)
			return WK_END;
	}
	rd.steps = k;
	rd.c = s->c;
	return wk_round_push(R, (s->global_lr > 0 ? s->global_lr : s->workers) / s->workers, &rd);
}

const struct wk_algo wk_local_sgd = {
	.name = "local-sgd", .mode = MLF_MODE_MLFABRIC_S, .opts = local_sgd_opts,
	.priv_size = sizeof(struct local_sgd),
	.summary = "local SGD: --local-steps iterations on a copy, then\n"
		   "                         E x (copy - model) / P through the synchronous push",
	.busy_per_local_step = 1, .option = local_sgd_option, .check = local_sgd_check,
	.init = local_sgd_init, .pull = wk_pull_first, .iteration = local_sgd_round,
};
