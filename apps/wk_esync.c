/* wk_esync.c - mlf-worker's ESync (esync.txt Alg. 1): local iterations until the scheduler's State Server says READY, then the round's delta. */
#include <errno.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "mlfabric_sync.h"
#include "wk.h"

/* ESync's settings and round state. */
struct esync {
	int workers;         /* --esync-workers P: the workers of a round */
	double global_lr;    /* --global-lr E (0 = P) */
	int nonblocking;     /* --esync-nonblocking: the delayed-ACK mode (esync.txt §4.2) */
	int64_t round;       /* communication rounds done (aggregations) */
	double c;            /* seconds the last local iteration took (c of Alg. 1) */
	int64_t ready_since; /* non-blocking: the round's first query (a READY to it or a later
			      * one aborts the local step in progress) */
	double rtt_s;        /* non-blocking: the State Server's last round-trip time (s) */
};

static const struct wk_opt esync_opts[] = {
	{ "esync-workers", 1,
	  "  --esync-workers P      the P workers of a round (required; the server's --workers)\n", NULL },
	{ "global-lr", 1,
	  "  --global-lr E          ESync's global learning rate epsilon: a round moves the model\n"
	  "                         by E x the mean delta (default P: the sum of the deltas, the\n"
	  "                         step MLfabric-S takes for plain SGD at the same --lr, since\n"
	  "                         its server sums the round's updates; 1 is the paper's mean)\n", NULL },
	{ "esync-nonblocking", 0,
	  "  --esync-nonblocking    the non-blocking mode of esync.txt §4.2 (delayed ACK): do not\n"
	  "                         wait for the State Server's answer but train on; a READY\n"
	  "                         aborts the local iteration in progress and the round\n"
	  "                         aggregates the iterations done (capability c = the last\n"
	  "                         iteration's time + the query's round-trip time)\n", NULL },
	{ "esync", 1, NULL, "--system esync --esync-workers %s (with --local-steps T: "
	  "--system local-sgd --local-workers %s --local-steps T)" },
	{ 0 },
};

static int esync_option(struct wk_run *R, const char *name, const char *arg)
{
	struct esync *e = R->priv;
	long p;

	if (!strcmp(name, "esync-nonblocking"))
		return e->nonblocking = 1, 0;
	if (!strcmp(name, "global-lr"))
		return wk_parse_real(name, arg, 0, 0, 4096, "a number in (0, 4096]", &e->global_lr);
	if (wk_parse_int(name, arg, 1, 4096, "the number of workers (1..4096)", &p))
		return -1;
	e->workers = (int)p;
	return 0;
}

static int esync_check(struct wk_run *R)
{
	const struct esync *e = R->priv;

	if (!e->workers)
		return fprintf(stderr, "mlf-worker: --system esync needs --esync-workers P\n"), -1;
	return 0;
}

/* train_local's wait in the non-blocking mode (esync.txt §4.2): wait for the end of the
 * emulated compute at @until (CLOCK_REALTIME s), or a READY to the round's queries (1: abort the
 * step); a negative errno when the State Server stays silent. @ctx: the struct wk_run. */
static int esync_ready_wait(void *ctx, double until)
{
	struct wk_run *R = ctx;
	struct esync *e = R->priv;

	return mlf_state_wait(R->f, e->ready_since, until, &e->rtt_s);
}

static int esync_init(struct wk_run *R)
{
	const struct esync *e = R->priv;

	if (e->nonblocking) {
		R->L.wait = esync_ready_wait;
		R->L.wait_ctx = R;
	}
	return wk_alloc_wr(R); /* the local copy w_{t,k} */
}

/* Whether the round is to aggregate now (1), not yet (0), or -errno: ask the State Server
 * about local iteration @k (blocking, or, §4.2, take NOT-READY as implicit and train on). */
static int esync_ready(struct wk_run *R, int k)
{
	struct esync *e = R->priv;

	if (!e->nonblocking)
		return mlf_query_state(R->f, e->round, k, e->c, R->o->timeout);
	int64_t q = mlf_query_state_send(R->f, e->round, k, e->c + e->rtt_s);
	if (q < 0)
		return (int)q;
	if (!e->ready_since)
		e->ready_since = q;
	return mlf_state_wait(R->f, e->ready_since, 0, &e->rtt_s);
}

/* One round: local iterations on a copy until the State Server says READY, then the round's
 * delta through the synchronous push. */
static int esync_round(struct wk_run *R, double get_s)
{
	struct esync *e = R->priv;
	struct train_local *L = &R->L;
	struct wk_round rd = { .t_start = clock_real_s() };
	long aborted0 = L->n_aborted;
	double aborted_s0 = L->aborted_s, tq;
	int k = 0, ready;

	memcpy(R->wr, R->w, sizeof(float) * R->n);
	e->ready_since = 0;
	for (;;) {
		tq = clock_real_s();
		ready = esync_ready(R, k);
		rd.query_wait_s += clock_real_s() - tq;
		if (ready)
			break;
		double c_k = train_local_step(L, R->wr);
		if (c_k < 0) {
			ready = -ENOMEM;
			break;
		}
		if (L->wait_err) { /* no answer from the State Server for too long */
			ready = L->wait_err;
			break;
		}
		if (L->aborted) { /* READY during the iteration: aggregate 1..k */
			ready = 1;
			break;
		}
		e->c = c_k;
		k++;
		if (wk_stop)
			break;
	}
	if (ready < 0)
		return ready == -ENOMEM ? (log_err("no memory for the gradient"), WK_ERR)
					: wk_fail(R, "state query", ready);
	if (wk_stop)
		return WK_END;
	rd.steps = k;
	rd.c = e->c;
	rd.aborted = L->n_aborted - aborted0;
	rd.aborted_s = L->aborted_s - aborted_s0;
	rd.rtt_s = e->rtt_s;
	/* E x Δw / p (Alg. 1 lines 17-20): the server sums the round's P pushes */
	int rc = wk_round_push(R, (e->global_lr > 0 ? e->global_lr : e->workers) / e->workers, &rd);
	if (rc == WK_GO)
		e->round++;
	return rc;
}

static void esync_record(struct wk_run *R, json_t *w)
{
	json_object_set_new(w, "esync_aborted", json_integer(R->L.n_aborted));
	json_object_set_new(w, "esync_aborted_s", json_real(R->L.aborted_s));
}

const struct wk_algo wk_esync = {
	.name = "esync", .mode = MLF_MODE_MLFABRIC_S, .opts = esync_opts, .priv_size = sizeof(struct esync),
	.summary = "ESync: local iterations on a copy until the State\n"
		   "                         Server says READY, then E x (copy - model) / P\n"
		   "                         through the synchronous push",
	.busy_per_local_step = 1, .option = esync_option, .check = esync_check, .init = esync_init,
	.pull = wk_pull_first, .iteration = esync_round, .record = esync_record,
};
