/* mlf_worker.c - a training worker: gets the model, computes a mini-batch update (paper eq. 1), pushes it through the fabric. */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "cluster.h"
#include "hop.h"
#include "log.h"
#include "mlfabric.h"
#include "mlfabric_sync.h"
#include "train.h"
#include "vec.h"

#define DEFAULT_DATA "/usr/share/datasets/fashion-mnist"

/* Command-line settings (docs/fabric.md). */
struct wk_opts {
	const char *cluster, *host, *server, *mode_name, *model, *straggle, *records, *data, *sock;
	enum mlf_mode mode;
	int shard_i, shard_n, batch;
	double lr, duration, timeout, compute_min, eval_every;
	double momentum; /* worker-side momentum gamma in [0, 1) (0 = off: the server's eq. 2) */
	double speed, speed_at; /* --speed F[@T]: every iteration F times slower from T s after the
				 * start (a deterministic straggler, issue 12; 1 = off) */
	int esync;       /* --esync P: ESync with P workers (esync.txt Alg. 1; 0 = off) */
	double global_lr; /* --global-lr E: ESync's epsilon (Alg. 1 line 20); 0 = P */
	int by_label;    /* --shard-by-label: a non-i.i.d. shard (its classes only, issue 12) */
	int local_steps; /* --local-steps T: with --esync, T local iterations per round without
			  * asking (fixed-rate local SGD, ADSP's "Fixed ADACOMM"; 0 = ask) */
	int esync_nb;    /* --esync-nonblocking: ESync's delayed-ACK mode (esync.txt §4.2) */
	const char *hop; /* --hop H1,H2,...: Hop (hop-asplos2019) with these neighbours (NULL = off) */
	struct hop_cfg hop_cfg; /* --hop-backups, --hop-staleness, --hop-max-ig, --hop-jump */
	uint64_t init_seed; /* --init-seed: Hop's common initial model p0 (mlf-ps --seed's) */
	int adsp;        /* --adsp: ADSP (adsp-aaai2020 Alg. 2): train locally without waiting,
			  * commit at the scheduler's commit rate */
	int overlap;     /* --overlap: compute the next gradient while the next model's get is in
			  * flight (MLfabric-A / Async; issue 11) */
	size_t eval_images;
	long iterations;
	size_t train_images;
	uint64_t seed;
};

static volatile sig_atomic_t wk_stop;

static void wk_on_signal(int sig) { wk_stop = sig; }

static void wk_usage(FILE *f)
{
	fprintf(f,
		"usage: mlf-worker --cluster C.json --host H --server PS --mode mlfabric-a|mlfabric-s|async\n"
		"                  --shard I/N [options]\n"
		"Training worker: each iteration gets the latest model (MLfabric-S: the allreduce result),\n"
		"computes a mini-batch gradient on its shard of Fashion-MNIST, and pushes the update\n"
		"u = -lr * gradient (paper eq. 1) with its norm and model version. Stops on SIGTERM/SIGINT,\n"
		"--iterations or --duration and writes worker.json.\n"
		"  --model SIZES          layer sizes (default 784,1024,10; must match the server)\n"
		"  --batch N              mini-batch size (default 32)\n"
		"  --lr X                 learning rate (default 0.05)\n"
		"  --momentum G           worker-side momentum (default 0 = off): keep h = G h + u and\n"
		"                         push h instead of u (paper eq. 2 moved from the server to the\n"
		"                         worker; run the server with --momentum 0; docs/replication.md)\n"
		"  --straggle R,S|C1..C3  slow an iteration down by S with probability R (default none)\n"
		"  --compute-s T          emulated accelerator: a gradient takes at least T seconds\n"
		"                         (sleeps the rest; stragglers multiply it; default 0 = CPU time)\n"
		"  --speed F[@T]          deterministic straggler: every iteration F >= 1 times slower\n"
		"                         (sleeps (F-1) x its compute time), from T seconds after\n"
		"                         the start (default 1 = off; T default 0)\n"
		"  --esync P              ESync (esync.txt, issue 12; needs --mode mlfabric-s and P\n"
		"                         workers): each round, train a copy of the model locally,\n"
		"                         asking the scheduler's State Server before every local\n"
		"                         iteration whether to aggregate; then push (copy - model) / P\n"
		"                         through the synchronous allreduce (the round's mean delta)\n"
		"  --global-lr E          ESync's global learning rate epsilon: a round moves the model\n"
		"                         by E x the mean delta (default P: the sum of the deltas, the\n"
		"                         step MLfabric-S takes for plain SGD at the same --lr, since\n"
		"                         its server sums the round's updates; 1 is the paper's mean)\n"
		"  --esync-nonblocking    with --esync: the non-blocking mode of esync.txt §4.2 (delayed\n"
		"                         ACK): do not wait for the State Server's answer but train on;\n"
		"                         a READY aborts the local iteration in progress and the round\n"
		"                         aggregates the iterations done (capability c = the last\n"
		"                         iteration's time + the query's round-trip time)\n"
		"  --local-steps T        with --esync: T local iterations per round, no State Server\n"
		"                         (fixed-rate local SGD: ADSP's Fixed ADACOMM baseline)\n"
		"  --adsp                 ADSP (adsp-aaai2020, issue 12; needs --mode mlfabric-a and\n"
		"                         mlf-scheduler --adsp): train a local copy without waiting and\n"
		"                         commit E x (copy - model) as an update at the commit rate the\n"
		"                         scheduler sends each check period (Alg. 2), then get the model\n"
		"                         (--global-lr E, default 1: the update added as Async adds it)\n"
		"  --overlap              MLfabric-A or Async: pipeline computation and communication\n"
		"                         (issue 11): compute each gradient on the model in hand while\n"
		"                         the get of the next model is in flight, so an iteration takes\n"
		"                         max(compute, get) instead of their sum; each update is then\n"
		"                         computed from a model one get older (larger delays)\n"
		"  --hop H1,H2,...        Hop (hop-asplos2019, issue 12; needs --mode async, no server\n"
		"                         or scheduler): decentralized training with these neighbours\n"
		"                         (an undirected graph): each iteration send the parameters to\n"
		"                         them (chan 7), compute a gradient, average with their\n"
		"                         parameters (Recv + Reduce), apply it; --server names w0's\n"
		"                         evaluator only. Starts from mlp_init(--init-seed).\n"
		"                         --hop graph: the host's neighbours in the cluster config's\n"
		"                         \"graph\" (docs/cluster-config.md)\n"
		"  --hop-backups N        backup workers: go on without N neighbours' updates (0)\n"
		"  --hop-staleness S      an update from iteration >= k - S satisfies k (default 0)\n"
		"  --hop-max-ig G         token queues: at most G iterations ahead of a neighbour\n"
		"                         (default 4; 0 = no token queues)\n"
		"  --hop-jump J[@B]       skipping iterations: jump up to J when B (default 1)\n"
		"                         iterations behind every neighbour (default off)\n"
		"  --init-seed S          Hop's initial model seed (default 1, mlf-ps --seed's default)\n"
		"  --shard-by-label       non-i.i.d. data: shard I/N holds the images whose label l has\n"
		"                         l %% N == I (its classes only; N <= 10) instead of the I-th slice\n"
		"  --seed S               sampling and straggler seed (default 1)\n"
		"  --records DIR          write pushes.jsonl and worker.json there (default .)\n"
		"  --data DIR             Fashion-MNIST directory (default " DEFAULT_DATA ")\n"
		"  --train-images N       shard the first N training images (default 60000)\n"
		"  --iterations N         stop after N iterations (default: no limit)\n"
		"  --duration S           stop after S seconds (default: no limit)\n"
		"  --timeout S            a model get waits this long for the server without progress\n"
		"                         (a sharded model: since its latest shard; default 10)\n"
		"  --eval-every S         evaluate the model got from the fabric every S seconds into\n"
		"                         accuracy.jsonl (default 0 = off; the evaluator of a sharded\n"
		"                         model, whose servers each hold only a slice, docs/fabric.md)\n"
		"  --eval-images K        evaluate on the first K test images (default 1000)\n"
		"  --sock PATH            dataplane socket (default /run/mlfabric/<cluster>-<host>.sock)\n");
}

static int wk_parse(int argc, char **argv, struct wk_opts *o)
{
	static const struct option lo[] = {
		{ "cluster", 1, 0, 'c' }, { "host", 1, 0, 'H' }, { "server", 1, 0, 'P' },
		{ "mode", 1, 0, 'M' }, { "shard", 1, 0, 'x' }, { "model", 1, 0, 'm' },
		{ "batch", 1, 0, 'b' }, { "lr", 1, 0, 'l' }, { "straggle", 1, 0, 'g' },
		{ "seed", 1, 0, 'S' }, { "records", 1, 0, 'r' }, { "data", 1, 0, 'd' },
		{ "train-images", 1, 0, 'n' }, { "iterations", 1, 0, 'i' }, { "duration", 1, 0, 'D' },
		{ "timeout", 1, 0, 't' }, { "sock", 1, 0, 's' }, { "compute-s", 1, 0, 'C' }, { "help", 0, 0, 'h' },
		{ "eval-every", 1, 0, 'e' }, { "eval-images", 1, 0, 'k' }, { "momentum", 1, 0, 'G' },
		{ "speed", 1, 0, 'F' }, { "esync", 1, 0, 'E' }, { "global-lr", 1, 0, 'L' },
		{ "shard-by-label", 0, 0, 'B' }, { "local-steps", 1, 0, 'T' }, { "adsp", 0, 0, 'A' },
		{ "hop", 1, 0, 'O' }, { "hop-backups", 1, 0, 'U' }, { "hop-staleness", 1, 0, 'Z' },
		{ "hop-max-ig", 1, 0, 'I' }, { "hop-jump", 1, 0, 'J' }, { "init-seed", 1, 0, 'N' },
		{ "esync-nonblocking", 0, 0, 'K' }, { "overlap", 0, 0, 'V' },
		{ 0, 0, 0, 0 },
	};
	const char *shard = NULL;
	int c;

	*o = (struct wk_opts){ .model = "784,1024,10", .straggle = "none", .records = ".",
			       .data = DEFAULT_DATA, .batch = 32, .lr = 0.05, .timeout = 10,
			       .train_images = 60000, .seed = 1, .eval_images = 1000, .speed = 1,
			       .hop_cfg = { .max_ig = 4, .jump_behind = 1 }, .init_seed = 1 };
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'c': o->cluster = optarg; break;
		case 'H': o->host = optarg; break;
		case 'P': o->server = optarg; break;
		case 'M': o->mode_name = optarg; break;
		case 'x': shard = optarg; break;
		case 'm': o->model = optarg; break;
		case 'b': o->batch = atoi(optarg); break;
		case 'l': o->lr = atof(optarg); break;
		case 'g': o->straggle = optarg; break;
		case 'S': o->seed = strtoull(optarg, NULL, 10); break;
		case 'r': o->records = optarg; break;
		case 'd': o->data = optarg; break;
		case 'n': o->train_images = strtoul(optarg, NULL, 10); break;
		case 'i': o->iterations = atol(optarg); break;
		case 'D': o->duration = atof(optarg); break;
		case 't': o->timeout = atof(optarg); break;
		case 's': o->sock = optarg; break;
		case 'C': o->compute_min = atof(optarg); break;
		case 'e': o->eval_every = atof(optarg); break;
		case 'k': o->eval_images = strtoul(optarg, NULL, 10); break;
		case 'G': o->momentum = atof(optarg); break;
		case 'F': {
			char *end;
			o->speed = strtod(optarg, &end);
			if (*end == '@')
				o->speed_at = strtod(end + 1, &end);
			if (*end || end == optarg || !(o->speed >= 1 && o->speed <= 1000) || !(o->speed_at >= 0))
				return fprintf(stderr, "mlf-worker: bad --speed '%s': F[@T] with F in [1, 1000] "
					       "and T >= 0 seconds\n", optarg), -1;
			break;
		}
		case 'E': {
			char *end;
			long p = strtol(optarg, &end, 10);
			if (*end || end == optarg || p < 1 || p > 4096)
				return fprintf(stderr, "mlf-worker: bad --esync '%s': the number of workers "
					       "(1..4096)\n", optarg), -1;
			o->esync = (int)p;
			break;
		}
		case 'B': o->by_label = 1; break;
		case 'A': o->adsp = 1; break;
		case 'K': o->esync_nb = 1; break;
		case 'V': o->overlap = 1; break;
		case 'O': o->hop = optarg; break;
		case 'N': o->init_seed = strtoull(optarg, NULL, 10); break;
		case 'U': case 'Z': case 'I': {
			char *end;
			long v = strtol(optarg, &end, 10);
			if (*end || end == optarg || v < 0 || v > 100000)
				return fprintf(stderr, "mlf-worker: bad --hop-%s '%s': an integer in [0, 100000]\n",
					       c == 'U' ? "backups" : c == 'Z' ? "staleness" : "max-ig", optarg), -1;
			*(c == 'U' ? &o->hop_cfg.backups : c == 'Z' ? &o->hop_cfg.staleness
								  : &o->hop_cfg.max_ig) = (int)v;
			break;
		}
		case 'J': {
			char *end;
			long j = strtol(optarg, &end, 10), b = 1;
			if (*end == '@')
				b = strtol(end + 1, &end, 10);
			if (*end || end == optarg || j < 1 || j > 100000 || b < 1 || b > 100000)
				return fprintf(stderr, "mlf-worker: bad --hop-jump '%s': J[@B], integers >= 1\n",
					       optarg), -1;
			o->hop_cfg.max_jump = (int)j;
			o->hop_cfg.jump_behind = (int)b;
			break;
		}
		case 'T': {
			char *end;
			long t = strtol(optarg, &end, 10);
			if (*end || end == optarg || t < 1 || t > 100000)
				return fprintf(stderr, "mlf-worker: bad --local-steps '%s': local iterations "
					       "per round (1..100000)\n", optarg), -1;
			o->local_steps = (int)t;
			break;
		}
		case 'L': {
			char *end;
			o->global_lr = strtod(optarg, &end);
			if (*end || end == optarg || !(o->global_lr > 0 && o->global_lr <= 4096))
				return fprintf(stderr, "mlf-worker: bad --global-lr '%s': a number in (0, 4096]\n",
					       optarg), -1;
			break;
		}
		case 'h': wk_usage(stdout); return 1;
		default: wk_usage(stderr); return -1;
		}
	}
	if (optind < argc)
		return fprintf(stderr, "mlf-worker: unexpected argument '%s'\n", argv[optind]), -1;
	if (!o->cluster || !o->host || !o->server || !o->mode_name || !shard)
		return fprintf(stderr, "mlf-worker: --cluster, --host, --server, --mode and --shard are required (see --help)\n"), -1;
	if (mlf_mode_parse(o->mode_name, &o->mode))
		return fprintf(stderr, "mlf-worker: unknown --mode '%s' (mlfabric-a, mlfabric-s, async)\n", o->mode_name), -1;
	if (train_shard_parse(shard, &o->shard_i, &o->shard_n))
		return fprintf(stderr, "mlf-worker: bad --shard '%s': expected I/N with 0 <= I < N\n", shard), -1;
	if (o->batch < 1 || o->lr <= 0 || o->timeout <= 0 || o->duration < 0 || o->iterations < 0)
		return fprintf(stderr, "mlf-worker: --batch, --lr, --timeout must be positive\n"), -1;
	if (!(o->momentum >= 0 && o->momentum < 1))
		return fprintf(stderr, "mlf-worker: bad --momentum %g (must be in [0, 1))\n", o->momentum), -1;
	if (o->esync && o->mode != MLF_MODE_MLFABRIC_S)
		return fprintf(stderr, "mlf-worker: --esync aggregates once per round: it needs --mode "
			       "mlfabric-s\n"), -1;
	if (o->global_lr > 0 && !o->esync && !o->adsp)
		return fprintf(stderr, "mlf-worker: --global-lr is ESync's or ADSP's (needs --esync or "
			       "--adsp)\n"), -1;
	if (o->esync_nb && (!o->esync || o->local_steps))
		return fprintf(stderr, "mlf-worker: --esync-nonblocking is a mode of the State Server's "
			       "queries: it needs --esync P and no --local-steps\n"), -1;
	if (o->local_steps && !o->esync)
		return fprintf(stderr, "mlf-worker: --local-steps sets the rounds of --esync P\n"), -1;
	if (o->hop && (o->mode != MLF_MODE_DIRECT || o->esync || o->adsp || o->momentum > 0))
		return fprintf(stderr, "mlf-worker: --hop is decentralized: it needs --mode async (no "
			       "scheduler), and neither --esync, --adsp nor --momentum\n"), -1;
	if (o->hop_cfg.max_jump && !o->hop_cfg.max_ig)
		return fprintf(stderr, "mlf-worker: --hop-jump needs token queues (--hop-max-ig >= 1)\n"), -1;
	if (o->adsp && (o->mode != MLF_MODE_MLFABRIC_A || o->esync || o->momentum > 0))
		return fprintf(stderr, "mlf-worker: --adsp commits updates asynchronously: it needs "
			       "--mode mlfabric-a, and neither --esync nor --momentum\n"), -1;
	if (o->overlap && (o->mode == MLF_MODE_MLFABRIC_S || o->esync || o->adsp || o->hop))
		return fprintf(stderr, "mlf-worker: --overlap pipelines an asynchronous worker's get: it "
			       "needs --mode mlfabric-a or async, and neither --esync, --adsp nor --hop\n"), -1;
	if (o->esync && o->momentum > 0)
		return fprintf(stderr, "mlf-worker: --esync with --momentum is not supported (ESync's "
			       "local SGD has none)\n"), -1;
	if (!(o->eval_every >= 0) || o->eval_images < 1)
		return fprintf(stderr, "mlf-worker: --eval-every must be >= 0 and --eval-images >= 1\n"), -1;
	return 0;
}

/* Report a failed fabric call and name the server when it stopped answering. */
static int wk_fail(mlf_t *f, const struct wk_opts *o, const char *what, int64_t rc)
{
	if (rc == -ETIMEDOUT)
		log_err("server %s stopped answering: %s timed out (%.1f s without progress) (%s)", o->server,
			what, o->timeout, mlf_error(f));
	else
		log_err("%s to server %s failed: %s (%s)", what, o->server, strerror((int)-rc), mlf_error(f));
	return 1;
}

/* One mini-batch gradient of an MLfabric-A / Async / MLfabric-S iteration: its inputs and what
 * it yields. With --overlap it runs on a thread of its own while the main thread gets the next
 * model; it touches neither the fabric nor anything the main thread uses meanwhile. */
struct wk_grad {
	const struct train_local *L; /* the settings, data, scratch and random state it uses */
	const float *w;   /* the model the gradient is computed from */
	double ts, te;    /* out: when the computation began and ended (CLOCK_REALTIME s) */
	double loss;      /* out: the mini-batch loss (< 0: no memory) */
	double compute_s; /* out: the compute time before the slowdown, s (--compute-s padded) */
	double factor;    /* out: the slowdown drawn for it (>= 1) */
};

/* The gradient of @g->w on a sampled mini-batch into @g->u, padded to --compute-s and slowed by
 * the straggler settings (slept). Sets the out fields of @g. */
static void wk_gradient(struct wk_grad *g)
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

static void *wk_gradient_thread(void *arg)
{
	wk_gradient(arg);
	return NULL;
}

/* Hop's neighbours: the --hop list, split. */
struct wk_hop {
	struct hop h;
	char names[64][64];
	int n;
	double wait_s;      /* seconds blocked in Recv and for tokens in all */
};

/* Parse --hop H1,H2,... into @hp->names (not the worker's own host). 0, or -1 after a message. */
static int wk_hop_parse(const struct wk_opts *o, struct wk_hop *hp)
{
	char buf[4096], *save = NULL;

	if (!strcmp(o->hop, "graph")) {
		/* the neighbours of the worker's host in the cluster config's "graph" */
		struct cluster cl;
		char err[512];
		int nb[64], h, m;
		if (cluster_load(o->cluster, &cl, err, sizeof(err)))
			return log_err("--hop graph: %s", err), -1;
		h = cluster_find(&cl, o->host);
		m = cluster_neighbours(&cl, h, nb, 64);
		if (m == -ENOENT || m == 0 || m > 64) {
			log_err("--hop graph: %s %s", o->cluster,
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
	snprintf(buf, sizeof(buf), "%s", o->hop);
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (hp->n == 64 || strlen(t) >= sizeof(hp->names[0]) || !strcmp(t, o->host))
			return log_err("bad --hop '%s': at most 64 neighbours, not the worker's own host %s",
				       o->hop, o->host), -1;
		for (int i = 0; i < hp->n; i++)
			if (!strcmp(hp->names[i], t))
				return log_err("bad --hop '%s': %s named twice", o->hop, t), -1;
		snprintf(hp->names[hp->n++], sizeof(hp->names[0]), "%s", t);
	}
	return hp->n ? 0 : (log_err("bad --hop '%s': no neighbour", o->hop), -1);
}

/* Take one neighbour message (waiting up to @timeout s) into Hop's queues. 0, -ETIMEDOUT, or
 * another -errno from mlf_peer_recv. A message from a host that is no neighbour is dropped. */
static int wk_hop_pump(mlf_t *f, struct wk_hop *hp, double timeout)
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
static double wk_hop_wait(mlf_t *f, struct wk_hop *hp, int (*ready)(const struct hop *),
			  const char *what, double timeout, double end)
{
	double t0 = clock_real_s();

	while (wk_hop_pump(f, hp, 0) == 0) /* what already arrived */
		;
	while (!ready(&hp->h)) {
		if (wk_stop || (end > 0 && clock_real_s() >= end))
			return -2;
		double left = t0 + timeout - clock_real_s();
		int rc = wk_hop_pump(f, hp, left > 0.2 ? 0.2 : left); /* a signal is seen within 0.2 s */
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

static int wk_hop_tokens(mlf_t *f, struct wk_hop *hp, int64_t count)
{
	for (int i = 0; i < hp->n; i++)
		if (mlf_peer_tokens(f, hp->names[i], count))
			return log_err("tokens to %s: %s", hp->names[i], mlf_error(f)), -1;
	return 0;
}

/* What the training loop's per-mode iterations share: the fabric, the model buffers and the
 * counters that end up in worker.json and pushes.jsonl. */
struct wk_run {
	const struct wk_opts *o;
	mlf_t *f;
	struct train_local L; /* local steps (ESync, ADSP, Hop) and the one-gradient iterations */
	struct wk_hop hp;
	size_t n;           /* model floats */
	float *w;           /* the model the next gradient is computed from */
	float *wr;          /* ESync, ADSP: the local copy w_{t,k}; Hop: -lr g; --overlap: the next model */
	float *u;           /* the update pushed (n floats) */
	float *h;           /* worker-side momentum (NULL: off) */
	int64_t version;    /* the version of w */
	long it, straggled; /* iterations (ESync: rounds; ADSP: commits); slowed by a straggler */
	double t0, busy, next_progress;
	FILE *pushes;
	int64_t esync_round;  /* ESync: communication rounds done (aggregations) */
	double esync_c;       /* ESync: seconds the last local iteration took (c of Alg. 1) */
	struct mlf_commit_rate rate; /* ADSP: the commit rate in force */
	int64_t rate_j;       /* ADSP: commits made in its check period */
	long since_commit;    /* ADSP: local iterations since the last commit */
	double adsp_o;        /* ADSP: O_i, seconds a commit takes (push + get; EWMA 0.2) */
	int need_get;         /* ADSP: the model is to be got (at the start, after a commit) */
	int64_t ready_since;  /* ESync non-blocking: the round's first query (a READY to it or a
			       * later one aborts the local step in progress) */
	double rtt_s;         /* ESync non-blocking: the State Server's last round-trip time (s) */
};

/* What an iteration tells the loop: go on, stop after an error (exit status 1), or stop without
 * one (a signal, --duration reached while waiting). */
enum { WK_GO = 0, WK_ERR = 1, WK_END = 2 };

/* Whether a progress line is due (one every 2 s of a long run); 1 moves the next one on. */
static int wk_progress_due(struct wk_run *R)
{
	if (clock_real_s() < R->next_progress)
		return 0;
	R->next_progress += 2;
	return 1;
}

/* Hop (hop-asplos2019 Fig. 7-9): send, compute, Recv, Reduce, apply, tokens; one iteration. */
static int wk_hop_iteration(struct wk_run *R)
{
	const struct wk_opts *o = R->o;
	struct wk_hop *hp = &R->hp;
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
	if ((tw = wk_hop_wait(R->f, hp, hop_can_reduce, "updates", o->timeout, end)) < 0)
		return tw == -2 ? WK_END : WK_ERR;
	hp->wait_s += tw;
	used = hop_reduce(&hp->h, R->w);
	vec_add_f32(R->w, R->wr, n);
	if ((tw = wk_hop_wait(R->f, hp, hop_can_advance, "tokens", o->timeout, end)) < 0)
		return tw == -2 ? WK_END : WK_ERR;
	hp->wait_s += tw;
	hop_advance(&hp->h);
	if (o->hop_cfg.max_ig && wk_hop_tokens(R->f, hp, 1))
		return WK_ERR;
	int64_t jump = hop_jump(&hp->h);
	if (jump > 0) {
		/* skipping (§5): renew the parameters with what the neighbours sent, then jump,
		 * taking and giving one token per skipped iteration */
		hop_skip(&hp->h, jump);
		hop_reduce(&hp->h, R->w);
		if (wk_hop_tokens(R->f, hp, jump))
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

/* ADSP (adsp-aaai2020 Alg. 2): never wait; one local iteration, or, when the timer of the
 * scheduler's commit rate is due, a commit (a commit carries at least one iteration). */
static int wk_adsp_iteration(struct wk_run *R)
{
	const struct wk_opts *o = R->o;
	struct mlf_commit_rate cr;
	size_t n = R->n;
	int64_t id, r, v_g;

	if (mlf_commit_rate(R->f, &cr) == 0 && (cr.check != R->rate.check || cr.t != R->rate.t)) {
		R->rate = cr; /* a new check period: its commits count from 1 */
		R->rate_j = 0;
	}
	double tc = clock_real_s();
	if (R->rate.check < 0 || R->since_commit == 0 ||
	    tc < train_adsp_commit_due(R->rate.t, R->rate_j + 1, R->rate.delta, R->rate.period_s, R->adsp_o)) {
		if (train_local_step(&R->L, R->wr) < 0)
			return log_err("no memory for the gradient"), WK_ERR;
		R->since_commit++;
		return WK_GO;
	}
	/* TIMEOUT(): commit E x the accumulated update U_i = copy - model, get the model */
	double norm = train_local_delta(R->wr, R->w, o->global_lr > 0 ? o->global_lr : 1, R->u, n);
	v_g = R->version;
	id = mlf_push(R->f, o->server, R->u, n, norm, R->version);
	if (id < 0)
		return wk_fail(R->f, o, "push", id);
	r = mlf_get(R->f, o->server, R->w, n, &R->version, o->timeout);
	if (r)
		return wk_fail(R->f, o, "model get", r);
	memcpy(R->wr, R->w, sizeof(float) * n);
	double took = clock_real_s() - tc;
	R->adsp_o = R->adsp_o > 0 ? 0.8 * R->adsp_o + 0.2 * took : took;
	R->rate_j++;
	R->it++;
	train_rec_line(R->pushes, json_pack("{s:f,s:I,s:I,s:f,s:I,s:f,s:I,s:I}", "t", clock_real_s(),
					    "id", (json_int_t)id, "version", (json_int_t)v_g,
					    "norm", norm, "local_steps", (json_int_t)R->since_commit,
					    "commit_s", took, "check", (json_int_t)R->rate.check,
					    "delta", (json_int_t)R->rate.delta));
	R->since_commit = 0;
	if (wk_progress_due(R))
		log_info("t=%.1fs commit %ld (%lld of %lld this period) model version %lld loss %.4f",
			 clock_real_s() - R->t0, R->it, (long long)R->rate_j, (long long)R->rate.delta,
			 (long long)R->version, R->L.loss);
	return WK_GO;
}

/* train_local's wait in ESync's non-blocking mode (esync.txt §4.2): wait for the end of the
 * emulated compute at @until (CLOCK_REALTIME s), or a READY to the round's queries (1: abort the
 * step); a negative errno when the State Server stays silent. @ctx: the struct wk_run. */
static int wk_ready_wait(void *ctx, double until)
{
	struct wk_run *R = ctx;

	return mlf_state_wait(R->f, R->ready_since, until, &R->rtt_s);
}

/* ESync (esync.txt Alg. 1): one round: local iterations on a copy until the State Server says
 * READY (or, fixed-rate local SGD, --local-steps of them), then the round's delta through the
 * synchronous allreduce. */
static int wk_esync_round(struct wk_run *R)
{
	const struct wk_opts *o = R->o;
	struct train_local *L = &R->L;
	size_t n = R->n;
	int k = 0, ready;
	double t_round = clock_real_s(), tq, query_wait = 0;
	long aborted0 = L->n_aborted;
	double aborted_s0 = L->aborted_s;
	int64_t r, v_g;

	memcpy(R->wr, R->w, sizeof(float) * n);
	R->ready_since = 0;
	for (;;) {
		tq = clock_real_s();
		if (o->local_steps) /* fixed-rate local SGD: T local iterations, no asking */
			ready = k >= o->local_steps;
		else if (!o->esync_nb)
			ready = mlf_query_state(R->f, R->esync_round, k, R->esync_c, o->timeout);
		else {
			/* §4.2: ask, take NOT-READY as implicit, train on until READY */
			int64_t q = mlf_query_state_send(R->f, R->esync_round, k, R->esync_c + R->rtt_s);
			if (q < 0) {
				ready = (int)q;
				break;
			}
			if (!R->ready_since)
				R->ready_since = q;
			ready = mlf_state_wait(R->f, R->ready_since, 0, &R->rtt_s);
		}
		query_wait += clock_real_s() - tq;
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
		R->esync_c = c_k;
		k++;
		if (wk_stop)
			break;
	}
	if (ready < 0)
		return ready == -ENOMEM ? (log_err("no memory for the gradient"), WK_ERR)
					: wk_fail(R->f, o, "state query", ready);
	if (wk_stop)
		return WK_END;
	/* E x Δw / p (Alg. 1 lines 17-20): the server sums the round's P pushes */
	double norm = train_local_delta(R->wr, R->w, (o->global_lr > 0 ? o->global_lr : o->esync) / o->esync,
					R->u, n);
	v_g = R->version;
	double t_ar = clock_real_s();
	r = mlf_push_get(R->f, o->server, R->u, n, norm, R->version, R->w, &R->version, o->timeout);
	if (r)
		return wk_fail(R->f, o, "allreduce", r);
	double allreduce_s = clock_real_s() - t_ar;
	R->esync_round++;
	R->it++;
	/* how the round waited on the State Server: blocked in queries (query_wait_s), or
	 * (non-blocking) in local iterations a READY aborted (aborted, aborted_s) */
	train_rec_line(R->pushes, json_pack("{s:f,s:o,s:I,s:f,s:f,s:i,s:f,s:f,s:I,s:f,s:f,s:f}",
					    "t", clock_real_s(), "id", json_null(),
					    "version", (json_int_t)v_g, "norm", norm,
					    "round_s", clock_real_s() - t_round, "local_steps", k,
					    "c", R->esync_c, "query_wait_s", query_wait,
					    "aborted", (json_int_t)(L->n_aborted - aborted0),
					    "aborted_s", L->aborted_s - aborted_s0, "rtt_s", R->rtt_s,
					    "allreduce_s", allreduce_s));
	if (wk_progress_due(R))
		log_info("t=%.1fs round %ld (%d local iterations) model version %lld loss %.4f",
			 clock_real_s() - R->t0, R->it, k, (long long)R->version, L->loss);
	return WK_GO;
}

/*
 * One MLfabric-A / Async / MLfabric-S iteration (paper eq. 1-2): the gradient of w, the update
 * u = -lr x gradient (with worker-side momentum if set), pushed (MLfabric-S: through the
 * allreduce, which returns the next model). With --overlap the gradient is computed on a
 * thread while the next model is got into wr (then w and wr swap). @get_s: the seconds this
 * iteration's get took at the loop's top (pushes.jsonl's get_s).
 */
static int wk_sgd_iteration(struct wk_run *R, double get_s)
{
	const struct wk_opts *o = R->o;
	size_t n = R->n;
	struct wk_grad g = { .L = &R->L, .w = R->w };
	int64_t v_next = R->version, r_get = 0, r, id = 0; /* --overlap: the next model's version, get error */
	double t_joined = 0; /* --overlap: when both the get and the gradient were done */

	if (o->overlap && R->it > 0 && !(o->iterations && R->it + 1 >= o->iterations)) {
		/* the gradient of w on its own thread; meanwhile the next model into wr (not in the
		 * last of --iterations: nothing would use it) */
		pthread_t th;
		int e = pthread_create(&th, NULL, wk_gradient_thread, &g);
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
		wk_gradient(&g);
	if (g.loss < 0)
		return log_err("no memory for the gradient"), WK_ERR;
	R->straggled += g.factor > 1;
	int64_t v_g = R->version; /* v(g): the model version this update is computed from */
	vec_scale_f32(R->L.u, (float)-o->lr, n); /* u = -lr * gradient (eq. 1) */
	if (R->h) {
		/* eq. 2 at the worker: h_{t+1} = gamma h_t + u; the update pushed is h_{t+1}, which
		 * the server adds as is (w += h), so grouping into aggregates changes nothing */
		vec_scale_f32(R->h, (float)o->momentum, n);
		vec_add_f32(R->h, R->L.u, n);
		memcpy(R->L.u, R->h, sizeof(float) * n);
	}
	double norm = vec_norm2_f32(R->L.u, n);
	double t_ar = clock_real_s(), allreduce_s = 0;
	if (o->mode == MLF_MODE_MLFABRIC_S) {
		r = mlf_push_get(R->f, o->server, R->L.u, n, norm, R->version, R->w, &R->version, o->timeout);
		if (r)
			return wk_fail(R->f, o, "allreduce", r);
		allreduce_s = clock_real_s() - t_ar;
	} else {
		id = mlf_push(R->f, o->server, R->L.u, n, norm, R->version);
		if (id < 0)
			return wk_fail(R->f, o, "push", id);
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
	if (line && o->mode == MLF_MODE_MLFABRIC_S) /* the synchronous step's wait for the others */
		json_object_set_new(line, "allreduce_s", json_real(allreduce_s));
	train_rec_line(R->pushes, line);
	if (r_get)
		return wk_fail(R->f, o, "model get", r_get);
	if (wk_progress_due(R))
		log_info("t=%.1fs iteration %ld model version %lld loss %.4f", clock_real_s() - R->t0,
			 R->it, (long long)R->version, g.loss);
	return WK_GO;
}

int main(int argc, char **argv)
{
	struct wk_opts o;
	struct wk_run R = { .o = &o, .rate = { .check = -1 }, .need_get = 1 };
	struct mlp_shape shape;
	struct train_straggle st;
	struct idx_dataset shard;
	struct mlf_opts fo = { 0 };
	struct mlf_worker_stats ws;
	char err[512], comp[64];
	uint64_t rng;
	FILE *acc_f = NULL;
	struct idx_dataset test;
	double next_eval = 0;
	mlf_t *f;
	int rc = wk_parse(argc, argv, &o);

	if (rc)
		return rc > 0 ? 0 : 2;
	snprintf(comp, sizeof(comp), "worker[%s]", o.host);
	log_component = comp;
	if (mlp_shape_parse(o.model, &shape) || shape.sizes[0] != 784 || shape.sizes[shape.n_layers] != 10)
		return log_err("bad --model '%s': layer sizes like 784,1024,10 (784 inputs, 10 outputs)", o.model), 2;
	if (train_straggle_parse(o.straggle, o.seed * 1000003u + (uint64_t)o.shard_i, &st))
		return log_err("bad --straggle '%s': R,S with R in [0,1] and S >= 1, or C1, C2, C3, none", o.straggle), 2;
	/* Hop's neighbours (a list, or the cluster config's graph) before anything is loaded or opened */
	if (o.hop && wk_hop_parse(&o, &R.hp))
		return 2;
	if ((o.by_label ? train_load_shard_by_label : train_load_shard)(o.data, o.train_images, o.shard_i,
									o.shard_n, &shard, err, sizeof(err)))
		return log_err("%s", err), 1;
	memset(&test, 0, sizeof(test));
	if (o.eval_every > 0 && (train_load(o.data, 1, o.eval_images, &test, err, sizeof(err)) ||
				 !(acc_f = train_rec_open(o.records, "accuracy.jsonl", err, sizeof(err)))))
		return log_err("%s", err), 1;
	size_t n = mlp_param_count(&shape);
	R.n = n;
	R.w = malloc(sizeof(float) * n);
	R.u = malloc(sizeof(float) * n);
	R.h = o.momentum > 0 ? calloc(n, sizeof(float)) : NULL; /* worker-side momentum, h_0 = 0 */
	/* ESync, ADSP: the local copy w_{t,k}; Hop: -lr g; --overlap: the next model */
	int need_wr = o.esync || o.adsp || o.hop || o.overlap;
	R.wr = need_wr ? malloc(sizeof(float) * n) : NULL;
	float *x = malloc(sizeof(float) * (size_t)o.batch * 784);
	uint8_t *y = malloc((size_t)o.batch);
	if (!R.w || !R.u || !x || !y || (o.momentum > 0 && !R.h) || (need_wr && !R.wr))
		return log_err("no memory for the model and update buffers (%zu floats)", n), 1;
	rng = o.seed * 7919u + (uint64_t)o.shard_i + 1;

	fo.cluster = o.cluster;
	fo.host = o.host;
	fo.sock = o.sock;
	fo.mode = o.mode;
	fo.timeout_s = o.timeout;
	f = R.f = mlf_open(&fo, err, sizeof(err));
	if (!f)
		return log_err("cannot open the fabric endpoint: %s", err), 1;
	if (o.hop) {
		int nb[64];
		char names[1024] = "";
		for (int i = 0; i < R.hp.n; i++) {
			nb[i] = i;
			snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", i ? "," : "",
				 R.hp.names[i]);
		}
		log_info("Hop neighbours %s%s", names, strcmp(o.hop, "graph") ? "" : " (the cluster's graph)");
		if (hop_init(&R.hp.h, &o.hop_cfg, nb, R.hp.n, nb, R.hp.n, n)) {
			log_err("bad Hop settings: --hop-backups %d must be below the %d neighbours",
				o.hop_cfg.backups, R.hp.n);
			mlf_close(f);
			return 2;
		}
		mlp_init(&shape, o.init_seed, R.w); /* p0, the same at every worker */
	}
	rc = o.hop ? mlf_register_as_peer(f) : mlf_register_as_worker(f, o.server);
	if (rc) {
		log_err("register as %s of %s: %s", o.hop ? "peer" : "worker", o.server, mlf_error(f));
		mlf_close(f);
		return 1;
	}
	if (!(R.pushes = train_rec_open(o.records, "pushes.jsonl", err, sizeof(err)))) {
		log_err("%s", err);
		mlf_close(f);
		return 1;
	}
	signal(SIGTERM, wk_on_signal);
	signal(SIGINT, wk_on_signal);
	R.t0 = clock_real_s();
	R.next_progress = R.t0 + 2;
	R.L = (struct train_local){ .shape = &shape, .shard = &shard, .st = &st, .rng = &rng,
				    .batch = o.batch, .lr = o.lr, .compute_min = o.compute_min,
				    .speed = o.speed, .speed_at = o.speed_at, .x = x, .u = R.u, .y = y,
				    .n = n, .t0 = R.t0, .wait = o.esync_nb ? wk_ready_wait : NULL,
				    .wait_ctx = &R };
	log_info("worker of %s, mode %s, shard %d/%d (%zu images), model %s", o.server, o.mode_name,
		 o.shard_i, o.shard_n, shard.n, o.model);
	rc = WK_GO;
	while (!wk_stop && (!o.iterations || R.it < o.iterations) &&
	       (!o.duration || clock_real_s() - R.t0 < o.duration)) {
		double get_s = 0; /* seconds this iteration waited in its model get */

		/* the model first: every iteration (MLfabric-S: the first only, then the allreduce
		 * returns it; ADSP: after a commit; --overlap: the first only; Hop: never) */
		if ((o.mode != MLF_MODE_MLFABRIC_S || R.it == 0) && (!o.adsp || R.need_get) && !o.hop &&
		    (!o.overlap || R.it == 0)) {
			double tg = clock_real_s();
			int64_t r = mlf_get(f, o.server, R.w, n, &R.version, o.timeout);
			get_s = clock_real_s() - tg;
			if (r) {
				rc = wk_fail(f, &o, "model get", r);
				break;
			}
			if (o.adsp) {
				memcpy(R.wr, R.w, sizeof(float) * n);
				R.need_get = 0;
			}
		}
		if (acc_f && clock_real_s() >= next_eval) {
			double acc, eloss;
			next_eval = clock_real_s() + o.eval_every;
			if (train_eval(&shape, R.w, &test, o.eval_images, &acc, &eloss) == 0) {
				train_rec_line(acc_f, json_pack("{s:f,s:I,s:f,s:f}", "t", clock_real_s(), "version",
								(json_int_t)R.version, "accuracy", acc, "loss", eloss));
				log_info("t=%.1fs model version %lld accuracy %.4f loss %.4f", clock_real_s() - R.t0,
					 (long long)R.version, acc, eloss);
			}
		}
		rc = o.hop ? wk_hop_iteration(&R) : o.adsp ? wk_adsp_iteration(&R)
		     : o.esync ? wk_esync_round(&R) : wk_sgd_iteration(&R, get_s);
		if (rc != WK_GO)
			break;
	}
	rc = rc == WK_ERR ? 1 : 0;
	/* let the pushed updates leave before closing (close fails what is still pending) */
	for (double until = clock_real_s() + o.timeout;; usleep(10000)) {
		mlf_get_worker_stats(f, &ws);
		if (ws.sent + ws.dropped + ws.aggregated >= ws.pushed || clock_real_s() >= until)
			break;
	}
	if (ws.sent + ws.dropped + ws.aggregated < ws.pushed)
		log_warn("%llu pushed updates still unsent to %s after %.1f s",
			 (unsigned long long)(ws.pushed - ws.sent - ws.dropped - ws.aggregated), o.server,
			 o.timeout);
	mlf_close(f);
	long straggled = R.straggled + R.L.straggled, local_steps = R.L.steps, it = R.it;
	double busy = R.busy + R.L.busy;
	log_info("stopped after %ld iterations (%ld straggled): pushed %llu sent %llu dropped %llu aggregated %llu",
		 it, straggled, (unsigned long long)ws.pushed, (unsigned long long)ws.sent,
		 (unsigned long long)ws.dropped, (unsigned long long)ws.aggregated);
	if (train_rec_file(o.records, "worker.json",
			   json_pack("{s:I,s:I,s:I,s:I,s:I,s:f,s:I,s:f,s:I,s:I,s:f}", "iterations", (json_int_t)it, "pushed",
				     (json_int_t)ws.pushed, "sent", (json_int_t)ws.sent, "dropped",
				     (json_int_t)ws.dropped, "aggregated", (json_int_t)ws.aggregated,
				     "mean_iteration_s", it ? busy / (double)(o.esync || o.adsp ? local_steps : it) : 0.0,
				     "local_steps", (json_int_t)local_steps, "hop_wait_s", R.hp.wait_s,
				     "hop_skipped", (json_int_t)R.hp.h.jumped, "esync_aborted",
				     (json_int_t)R.L.n_aborted, "esync_aborted_s", R.L.aborted_s),
			   err, sizeof(err))) {
		log_err("%s", err);
		rc = 1;
	}
	fclose(R.pushes);
	if (acc_f)
		fclose(acc_f);
	idx_free(&test);
	free(R.w);
	free(R.u);
	free(R.h);
	free(R.wr);
	if (o.hop)
		hop_free(&R.hp.h);
	free(x);
	free(y);
	idx_free(&shard);
	return rc;
}
