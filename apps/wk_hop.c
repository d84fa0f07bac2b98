/* wk_hop.c - mlf-worker's Hop (hop-asplos2019): decentralized training, parameters and tokens exchanged with the neighbours, no server or scheduler. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "cluster.h"
#include "hop.h"
#include "log.h"
#include "mlfabric_sync.h"
#include "vec.h"
#include "wk.h"

/* Hop's settings, neighbours and queues. */
struct wk_hop {
	const char *neighbours; /* --hop-neighbours H1,H2,...|graph */
	struct hop_cfg cfg;     /* --hop-backups, --hop-staleness, --hop-max-ig, --hop-jump */
	uint64_t init_seed;     /* --init-seed: the common initial model p0 (mlf-ps --seed's) */
	struct hop h;
	char names[64][64];
	int n;
	double wait_s;          /* seconds blocked in Recv and for tokens in all */
};

static const struct wk_opt hop_opts[] = {
	{ "hop-neighbours", 1,
	  "  --hop-neighbours H1,H2,...|graph\n"
	  "                         the neighbours (an undirected graph; required): each iteration\n"
	  "                         send the parameters to them (chan 7), compute a gradient,\n"
	  "                         average with their parameters (Recv + Reduce), apply it;\n"
	  "                         --server names w0's evaluator only. graph: the host's\n"
	  "                         neighbours in the cluster config's \"graph\"\n"
	  "                         (docs/cluster-config.md)\n", NULL },
	{ "hop-backups", 1,
	  "  --hop-backups N        backup workers: go on without N neighbours' updates (0)\n", NULL },
	{ "hop-staleness", 1,
	  "  --hop-staleness S      an update from iteration >= k - S satisfies k (default 0)\n", NULL },
	{ "hop-max-ig", 1,
	  "  --hop-max-ig G         token queues: at most G iterations ahead of a neighbour\n"
	  "                         (default 4; 0 = no token queues)\n", NULL },
	{ "hop-jump", 1,
	  "  --hop-jump J[@B]       skipping iterations: jump up to J when B (default 1)\n"
	  "                         iterations behind every neighbour (default off)\n", NULL },
	{ "init-seed", 1,
	  "  --init-seed S          the initial model's seed (default 1, mlf-ps --seed's default)\n", NULL },
	{ "hop", 1, NULL, "--system hop --hop-neighbours %s" },
	{ 0 },
};

static void hop_defaults(void *priv)
{
	struct wk_hop *hp = priv;

	hp->cfg = (struct hop_cfg){ .max_ig = 4, .jump_behind = 1 };
	hp->init_seed = 1;
}

static int hop_option(struct wk_run *R, const char *name, const char *arg)
{
	struct wk_hop *hp = R->priv;
	long v;

	if (!strcmp(name, "hop-neighbours")) {
		hp->neighbours = arg;
		return 0;
	}
	if (!strcmp(name, "init-seed")) {
		hp->init_seed = strtoull(arg, NULL, 10);
		return 0;
	}
	if (!strcmp(name, "hop-jump")) {
		char *end;
		long j = strtol(arg, &end, 10), b = 1;
		if (*end == '@')
			b = strtol(end + 1, &end, 10);
		if (*end || end == arg || j < 1 || j > 100000 || b < 1 || b > 100000)
			return fprintf(stderr, "mlf-worker: bad --hop-jump '%s': J[@B], integers >= 1\n", arg), -1;
		hp->cfg.max_jump = (int)j;
		hp->cfg.jump_behind = (int)b;
		return 0;
	}
	if (wk_parse_int(name, arg, 0, 100000, "an integer in [0, 100000]", &v))
		return -1;
	*(!strcmp(name, "hop-backups") ? &hp->cfg.backups : !strcmp(name, "hop-staleness")
		? &hp->cfg.staleness : &hp->cfg.max_ig) = (int)v;
	return 0;
}

/* The neighbours of the worker's host in the cluster config's "graph". 0, or -1 after a message. */
static int hop_graph(const struct wk_opts *o, struct wk_hop *hp)
{
	struct cluster cl;
	char err[512];
	int nb[64], h, m;

	if (cluster_load(o->cluster, &cl, err, sizeof(err)))
		return log_err("--hop-neighbours graph: %s", err), -1;
	h = cluster_find(&cl, o->host);
	m = cluster_neighbours(&cl, h, nb, 64);
	if (m == -ENOENT || m == 0 || m > 64) {
		log_err("--hop-neighbours graph: %s %s", o->cluster,
			m == -ENOENT ? "has no \"graph\"" : m ? "gives more than 64 neighbours"
							     : "gives this host no neighbour");
		cluster_free(&cl);
		return -1;
	}
	for (int i = 0; i < m; i++)
		snprintf(hp->names[hp->n++], sizeof(hp->names[0]), "%s", cl.hosts[nb[i]].name);
	cluster_free(&cl);
	return 0;
}

/* The settings together, and --hop-neighbours into @hp->names (not the worker's own host),
 * before anything is loaded or opened. 0, or -1 after a message. */
static int hop_check(struct wk_run *R)
{
	const struct wk_opts *o = R->o;
	struct wk_hop *hp = R->priv;
	char buf[4096], *save = NULL;

	if (!hp->neighbours)
		return fprintf(stderr, "mlf-worker: --system hop needs --hop-neighbours H1,H2,...|graph\n"), -1;
	if (hp->cfg.max_jump && !hp->cfg.max_ig)
		return fprintf(stderr, "mlf-worker: --hop-jump needs token queues (--hop-max-ig >= 1)\n"), -1;
	if (!strcmp(hp->neighbours, "graph"))
		return hop_graph(o, hp);
	snprintf(buf, sizeof(buf), "%s", hp->neighbours);
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (hp->n == 64 || strlen(t) >= sizeof(hp->names[0]) || !strcmp(t, o->host))
			return log_err("bad --hop-neighbours '%s': at most 64 neighbours, not the worker's "
				       "own host %s", hp->neighbours, o->host), -1;
		for (int i = 0; i < hp->n; i++)
			if (!strcmp(hp->names[i], t))
				return log_err("bad --hop-neighbours '%s': %s named twice", hp->neighbours, t), -1;
		snprintf(hp->names[hp->n++], sizeof(hp->names[0]), "%s", t);
	}
	return hp->n ? 0 : (log_err("bad --hop-neighbours '%s': no neighbour", hp->neighbours), -1);
}

/* Hop's queues and the common initial model p0. */
static int hop_start(struct wk_run *R)
{
	struct wk_hop *hp = R->priv;
	int nb[64];
	char names[1024] = "";

	for (int i = 0; i < hp->n; i++) {
		nb[i] = i;
		snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", i ? "," : "",
			 hp->names[i]);
	}
	log_info("Hop neighbours %s%s", names, strcmp(hp->neighbours, "graph") ? "" : " (the cluster's graph)");
	if (hop_init(&hp->h, &hp->cfg, nb, hp->n, nb, hp->n, R->n))
		return log_err("bad Hop settings: --hop-backups %d must be below the %d neighbours",
			       hp->cfg.backups, hp->n), 2;
	mlp_init(R->shape, hp->init_seed, R->w); /* p0, the same at every worker */
	return wk_alloc_wr(R); /* -lr g */
}

/* Take one neighbour message (waiting up to @timeout s) into Hop's queues. 0, -ETIMEDOUT, or
 * another -errno from mlf_peer_recv. A message from a host that is no neighbour is dropped. */
static int hop_pump(mlf_t *f, struct wk_hop *hp, double timeout)
{
	struct mlf_peer_msg m;
	int rc = mlf_peer_recv(f, &m, timeout), i;

	if (rc)
		return rc;
	for (i = 0; i < hp->n && strcmp(hp->names[i], m.from); i++)
		;
	if (i == hp->n || (m.token ? hop_on_tokens(&hp->h, i, m.iter)
				   : hop_on_params(&hp->h, i, m.iter, m.w, m.n))) {
		log_warn("neighbour message from %s dropped: %s", m.from, i == hp->n ? "not a neighbour"
			 : "wrong model size");
		free(m.w);
	}
	return 0;
}

/* Wait until @ready(hp) holds, receiving; the seconds waited, -1 after a timeout naming the
 * neighbour waited for (@what: "updates" or "tokens"), -2 when stopped by a signal or at @end
 * (CLOCK_REALTIME s, 0 = none: --duration, when the neighbours stop too). */
static double hop_wait(mlf_t *f, struct wk_hop *hp, int (*ready)(const struct hop *),
		       const char *what, double timeout, double end)
{
	double t0 = clock_real_s();

	while (hop_pump(f, hp, 0) == 0) /* what already arrived */
		;
	while (!ready(&hp->h)) {
		if (wk_stop || (end > 0 && clock_real_s() >= end))
			return -2;
		double left = t0 + timeout - clock_real_s();
		int rc = hop_pump(f, hp, left > 0.2 ? 0.2 : left); /* a signal is seen within 0.2 s */
		if (rc == -ETIMEDOUT && left > 0.2)
			continue;
		if (rc == -ETIMEDOUT || (rc == 0 && clock_real_s() - t0 > timeout)) {
			int miss = hop_missing(&hp->h);
			log_err("iteration %lld: no %s from neighbour %s within %.1f s", (long long)hp->h.k,
				what, !strcmp(what, "updates") && miss >= 0 ? hp->names[miss] :
				"(the slowest of them)", timeout);
			return -1;
		}
		if (rc)
			return log_err("neighbour messages: %s", mlf_error(f)), -1;
	}
	return clock_real_s() - t0;
}

static int hop_tokens(mlf_t *f, struct wk_hop *hp, int64_t count)
{
	for (int i = 0; i < hp->n; i++)
		if (mlf_peer_tokens(f, hp->names[i], count))
			return log_err("tokens to %s: %s", hp->names[i], mlf_error(f)), -1;
	return 0;
}

/* One iteration (hop-asplos2019 Fig. 7-9): send, compute, Recv, Reduce, apply, tokens. */
static int hop_iteration(struct wk_run *R, double get_s)
{
	const struct wk_opts *o = R->o;
	struct wk_hop *hp = R->priv;
	double tw, end = o->duration ? R->t0 + o->duration : 0;
	size_t n = R->n;
	int used;

	for (int i = 0; i < hp->n; i++)
		if (mlf_peer_send(R->f, hp->names[i], R->w, n, hp->h.k))
			return log_err("parameters to %s: %s", hp->names[i], mlf_error(R->f)), WK_ERR;
	/* the gradient on x_k, applied after the Reduce: u = -lr g on a copy of x_k */
	memcpy(R->wr, R->w, sizeof(float) * n);
	if (train_local_step(&R->L, R->wr) < 0)
		return log_err("no memory for the gradient"), WK_ERR;
	train_local_delta(R->wr, R->w, 1, R->wr, n); /* wr = -lr g */
	if ((tw = hop_wait(R->f, hp, hop_can_reduce, "updates", o->timeout, end)) < 0)
		return tw == -2 ? WK_END : WK_ERR;
	hp->wait_s += tw;
	used = hop_reduce(&hp->h, R->w);
	vec_add_f32(R->w, R->wr, n);
	if ((tw = hop_wait(R->f, hp, hop_can_advance, "tokens", o->timeout, end)) < 0)
		return tw == -2 ? WK_END : WK_ERR;
	hp->wait_s += tw;
	hop_advance(&hp->h);
	if (hp->cfg.max_ig && hop_tokens(R->f, hp, 1))
		return WK_ERR;
	int64_t jump = hop_jump(&hp->h);
	if (jump > 0) {
		/* skipping (§5): renew the parameters with what the neighbours sent, then jump,
		 * taking and giving one token per skipped iteration */
		hop_skip(&hp->h, jump);
		hop_reduce(&hp->h, R->w);
		if (hop_tokens(R->f, hp, jump))
			return WK_ERR;
	}
	R->version = hp->h.k;
	R->it++;
	train_rec_line(R->pushes, json_pack("{s:f,s:I,s:i,s:f,s:I}", "t", clock_real_s(), "iter",
					    (json_int_t)hp->h.k, "reduced", used, "wait_s", hp->wait_s,
					    "jumped", (json_int_t)jump));
	if (wk_progress_due(R))
		log_info("t=%.1fs iteration %lld (skipped %lld) waited %.1f s loss %.4f",
			 clock_real_s() - R->t0, (long long)hp->h.k, (long long)hp->h.jumped, hp->wait_s,
			 R->L.loss);
	return WK_GO;
}

static void hop_record(struct wk_run *R, json_t *w)
{
	const struct wk_hop *hp = R->priv;

	json_object_set_new(w, "hop_wait_s", json_real(hp->wait_s));
	json_object_set_new(w, "hop_skipped", json_integer(hp->h.jumped));
}

static void hop_close(struct wk_run *R)
{
	struct wk_hop *hp = R->priv;

	hop_free(&hp->h);
}

const struct wk_algo wk_hop = {
	.name = "hop", .mode = MLF_MODE_DIRECT, .opts = hop_opts, .priv_size = sizeof(struct wk_hop),
	.summary = "Hop: decentralized training with --hop-neighbours (no\n"
		   "                         server or scheduler) from mlp_init(--init-seed)",
	.peer = 1, .defaults = hop_defaults, .option = hop_option, .check = hop_check,
	.init = hop_start, .iteration = hop_iteration, .record = hop_record, .close = hop_close,
};
