/* wk_sgd.c - mlf-worker's one-gradient iterations (paper eq. 1): systems mlfabric-a, mlfabric-s, async, ssp, asp. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "vec.h"
#include "wk.h"

/* The settings and state of a one-gradient worker. */
struct sgd {
	double momentum; /* --momentum G in [0, 1) (0 = off: the server's eq. 2) */
	int overlap;     /* --overlap: compute the next gradient while the next model's get is in flight */
	float *h;        /* worker-side momentum history (NULL: off) */
};

#define SGD_MOMENTUM_HELP \
	"  --momentum G           worker-side momentum (default 0 = off): keep h = G h + u and\n" \
	"                         push h instead of u (paper eq. 2 moved from the server to the\n" \
	"                         worker; run the server with --momentum 0; docs/replication.md)\n"

/* mlfabric-a, async, ssp, asp: the asynchronous pushes */
static const struct wk_opt sgd_async_opts[] = {
	{ "momentum", 1, SGD_MOMENTUM_HELP, NULL },
	{ "overlap", 0,
	  "  --overlap              pipeline computation and communication: compute each gradient\n"
	  "                         on the model in hand while the get of the next model is in\n"
	  "                         flight, so an iteration takes max(compute, get) instead of\n"
	  "                         their sum; each update is then computed from a model one get\n"
	  "                         older (larger delays)\n", NULL },
	{ 0 },
};

/* mlfabric-s: the synchronous push returns the next model, there is no get to overlap */
static const struct wk_opt sgd_sync_opts[] = {
	{ "momentum", 1, SGD_MOMENTUM_HELP, NULL },
	{ 0 },
};

static int sgd_option(struct wk_run *R, const char *name, const char *arg)
{
	struct sgd *s = R->priv;

	if (!strcmp(name, "overlap")) {
		s->overlap = 1;
		return 0;
	}
	char *end;

	s->momentum = strtod(arg, &end);
	if (*end || end == arg || !(s->momentum >= 0 && s->momentum < 1))
		return fprintf(stderr, "mlf-worker: bad --momentum '%s': must be in [0, 1)\n", arg), -1;
	return 0;
}

static int sgd_init(struct wk_run *R)
{
	struct sgd *s = R->priv;

	if (s->momentum > 0 && !(s->h = calloc(R->n, sizeof(float)))) /* h_0 = 0 */
		return log_err("no memory for the momentum history (%zu floats)", R->n), 1;
	return s->overlap ? wk_alloc_wr(R) : 0; /* --overlap: the next model */
}

/* The model every iteration; MLfabric-S and --overlap: the first only (then the synchronous
 * push returns it, or the overlapped get fetched it). */
static int sgd_pull(struct wk_run *R, double *get_s)
{
	const struct sgd *s = R->priv;

	if (R->it > 0 && (R->algo->mode == MLF_MODE_MLFABRIC_S || s->overlap))
		return WK_GO;
	return wk_get(R, get_s);
}

/* One mini-batch gradient of an iteration: its inputs and what it yields. With --overlap it
 * runs on a thread of its own while the main thread gets the next model; it touches neither the
 * fabric nor anything the main thread uses meanwhile. */
struct sgd_grad {
	const struct train_local *L; /* the settings, data, scratch and random state it uses */
	const float *w;   /* the model the gradient is computed from */
	double ts, te;    /* out: when the computation began and ended (CLOCK_REALTIME s) */
	double loss;      /* out: the mini-batch loss (< 0: no memory) */
	double compute_s; /* out: the compute time before the slowdown, s (--compute-s padded) */
	double factor;    /* out: the slowdown drawn for it (>= 1) */
};

/* The gradient of @g->w on a sampled mini-batch into @g->L->u, padded to --compute-s and slowed
 * by the straggler settings (slept). Sets the out fields of @g. */
static void sgd_gradient(struct sgd_grad *g)
{
	const struct train_local *L = g->L;

	g->ts = clock_real_s();
	g->loss = train_local_gradient(L, g->w);
	if (g->loss < 0) {
		g->te = clock_real_s();
		return;
	}
	g->compute_s = train_compute_pad(g->ts, L->compute_min);
	g->factor = train_local_slowdown(L);
	train_straggle_sleep(g->compute_s, g->factor);
	g->te = clock_real_s();
}

static void *sgd_gradient_thread(void *arg)
{
	sgd_gradient(arg);
	return NULL;
}

/*
 * One iteration (paper eq. 1-2): the gradient of w, the update u = -lr x gradient (with
 * worker-side momentum if set), pushed (MLfabric-S: through the synchronous push, which returns
 * the next model). With --overlap the gradient is computed on a thread while the next model is
 * got into wr (then w and wr swap). @get_s: the seconds this iteration's get took at the loop's
 * top (pushes.jsonl's get_s).
 */
static int sgd_iteration(struct wk_run *R, double get_s)
{
	const struct wk_opts *o = R->o;
	const struct sgd *s = R->priv;
	int sync = R->algo->mode == MLF_MODE_MLFABRIC_S;
	size_t n = R->n;
	struct sgd_grad g = { .L = &R->L, .w = R->w };
	int64_t v_next = R->version, r_get = 0, r, id = 0; /* --overlap: the next model's version, get error */
	double t_joined = 0; /* --overlap: when both the get and the gradient were done */

	if (s->overlap && R->it > 0 && !(o->iterations && R->it + 1 >= o->iterations)) {
		/* the gradient of w on its own thread; meanwhile the next model into wr (not in the
		 * last of --iterations: nothing would use it) */
		pthread_t th;
		int e = pthread_create(&th, NULL, sgd_gradient_thread, &g);
		if (e)
			return log_err("cannot start the gradient thread: %s", strerror(e)), WK_ERR;
		double tg = clock_real_s();
		r_get = mlf_get(R->f, o->server, R->wr, n, &v_next, o->timeout);
		get_s = clock_real_s() - tg;
		pthread_join(th, NULL);
		t_joined = clock_real_s();
		/* a failed get stops the worker after this gradient is pushed, as it would without
		 * --overlap (there the get comes after the push) */
	} else
		sgd_gradient(&g);
	if (g.loss < 0)
		return log_err("no memory for the gradient"), WK_ERR;
	R->straggled += g.factor > 1;
	int64_t v_g = R->version; /* v(g): the model version this update is computed from */
	vec_scale_f32(R->L.u, (float)-o->lr, n); /* u = -lr * gradient (eq. 1) */
	if (s->h) {
		/* eq. 2 at the worker: h_{t+1} = gamma h_t + u; the update pushed is h_{t+1}, which
		 * the server adds as is (w += h), so grouping into aggregates changes nothing */
		vec_scale_f32(s->h, (float)s->momentum, n);
		vec_add_f32(s->h, R->L.u, n);
		memcpy(R->L.u, s->h, sizeof(float) * n);
	}
	double norm = vec_norm2_f32(R->L.u, n);
	double t_ar = clock_real_s(), allreduce_s = 0;
	if (sync) {
		r = mlf_push_get(R->f, o->server, R->L.u, n, norm, R->version, R->w, &R->version, o->timeout);
		if (r)
			return wk_fail(R, "allreduce", r);
		allreduce_s = clock_real_s() - t_ar;
	} else {
		id = mlf_push(R->f, o->server, R->L.u, n, norm, R->version);
		if (id < 0)
			return wk_fail(R, "push", id);
	}
	R->it++;
	/* busy: compute and push, not the get (with --overlap the get ran alongside) */
	R->busy += t_joined > 0 ? (g.te - g.ts) + (clock_real_s() - t_joined) : clock_real_s() - g.ts;
	if (t_joined > 0 && !r_get) { /* the next iteration computes on the model just got */
		float *t = R->w;
		R->w = R->wr;
		R->wr = t;
		R->version = v_next;
	}
	json_t *line = json_pack("{s:f,s:o,s:I,s:f,s:f,s:b,s:f,s:f}", "t", clock_real_s(), "id",
				 id > 0 ? json_integer(id) : json_null(), "version", (json_int_t)v_g, "norm",
				 norm, "compute_s", g.compute_s, "straggled", g.factor > 1, "factor", g.factor,
				 "get_s", get_s);
	if (line && sync) /* the synchronous step's wait for the others */
		json_object_set_new(line, "allreduce_s", json_real(allreduce_s));
	train_rec_line(R->pushes, line);
	if (r_get)
		return wk_fail(R, "model get", r_get);
	if (wk_progress_due(R))
		log_info("t=%.1fs iteration %ld model version %lld loss %.4f", clock_real_s() - R->t0,
			 R->it, (long long)R->version, g.loss);
	return WK_GO;
}

static void sgd_close(struct wk_run *R)
{
	struct sgd *s = R->priv;

	free(s->h);
}

#define SGD_ALGO(NAME, MODE, OPTS, SUMMARY) \
	{ .name = NAME, .mode = MODE, .summary = SUMMARY, .opts = OPTS, .priv_size = sizeof(struct sgd), \
	  .option = sgd_option, .init = sgd_init, .pull = sgd_pull, .iteration = sgd_iteration, \
	  .close = sgd_close }

const struct wk_algo wk_mlfabric_a = SGD_ALGO("mlfabric-a", MLF_MODE_MLFABRIC_A, sgd_async_opts,
	"MLfabric-A: get the model, push u = -lr x gradient");
const struct wk_algo wk_mlfabric_s = SGD_ALGO("mlfabric-s", MLF_MODE_MLFABRIC_S, sgd_sync_opts,
	"MLfabric-S: u through the synchronous push, which\n"
	"                         returns the next model");
const struct wk_algo wk_async = SGD_ALGO("async", MLF_MODE_DIRECT, sgd_async_opts,
	"Async: a plain parameter server's worker (no scheduler)");
const struct wk_algo wk_ssp = SGD_ALGO("ssp", MLF_MODE_MLFABRIC_A, sgd_async_opts,
	"SSP: MLfabric-A, the gets gated (mlf-scheduler --ssp S)");
const struct wk_algo wk_asp = SGD_ALGO("asp", MLF_MODE_MLFABRIC_A, sgd_async_opts,
	"ASP: MLfabric-A, the gets gated (mlf-scheduler --asp)");
