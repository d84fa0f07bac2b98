/* mlf_worker.c - a training worker: gets the model, trains on its shard with the algorithm of --system, pushes through the fabric. */
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "mlfabric.h"
#include "mlfabric_sync.h"
#include "train_data.h"
#include "train_eval.h"
#include "wk.h"

#define DEFAULT_DATA "/usr/share/datasets/fashion-mnist"

/* The training algorithms, by --system name (apps/wk_*.c; docs/apps.md "mlf-worker"). */
static const struct wk_algo *const wk_algos[] = {
	&wk_mlfabric_a, &wk_mlfabric_s, &wk_async, &wk_ssp, &wk_asp, &wk_esync, &wk_local_sgd,
	&wk_adsp, &wk_hop,
};
#define WK_N_ALGOS (sizeof(wk_algos) / sizeof(wk_algos[0]))

/* getopt_long's numbers of the algorithms' options: WK_OPT_BASE + their index in wk_names */
#define WK_OPT_BASE 1000
#define WK_MAX_OPTS 64

/* An algorithm's option met on the command line, handed to it once --system is known. */
struct wk_given {
	const char *name, *arg;
};

static void wk_on_signal(int sig) { wk_stop = sig; }

static void wk_usage(FILE *f)
{
	fprintf(f,
		"usage: mlf-worker --cluster C.json --host H --server PS --system NAME --shard I/N [options]\n"
		"Training worker: trains on its shard of Fashion-MNIST with the algorithm of --system,\n"
		"getting the model from and pushing updates (u = -lr x gradient, paper eq. 1, or a local\n"
		"copy's delta) to --server through the fabric. Stops on SIGTERM/SIGINT, --iterations or\n"
		"--duration and writes worker.json.\n"
		"  --system NAME          the training algorithm (below)\n"
		"  --model SIZES          layer sizes (default 784,1024,10; must match the server)\n"
		"  --batch N              mini-batch size (default 32)\n"
		"  --lr X                 learning rate (default 0.05)\n"
		"  --straggle R,S|C1..C3  slow an iteration down by S with probability R (default none)\n"
		"  --compute-s T          emulated accelerator: a gradient takes at least T seconds\n"
		"                         (sleeps the rest; stragglers multiply it; default 0 = CPU time)\n"
		"  --speed F[@T]          deterministic straggler: every iteration F >= 1 times slower\n"
		"                         (sleeps (F-1) x its compute time), from T seconds after\n"
		"                         the start (default 1 = off; T default 0)\n"
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
		"  --sock PATH            dataplane socket (default /run/mlfabric/<cluster>-<host>.sock)\n"
		"Systems and their own options (accepted with that --system only):\n");
	for (size_t i = 0; i < WK_N_ALGOS; i++) {
		const struct wk_algo *a = wk_algos[i];
		fprintf(f, "  --system %-13s %s\n", a->name, a->summary);
		for (size_t j = 0; j < i; j++)
			if (wk_algos[j]->opts == a->opts) { /* printed with the first that has them */
				fprintf(f, "                         (the options of %s)\n", wk_algos[j]->name);
				goto next;
			}
		for (const struct wk_opt *p = a->opts; p && p->name; p++)
			if (p->help)
				fprintf(f, "%s", p->help);
next:;
	}
}

/* Refuse the retired option --@name (argument @arg, NULL: none) with its new spelling @now, each
 * "%s" of which stands for @arg. Returns -1. */
static int wk_retired(const char *name, const char *now, const char *arg)
{
	fprintf(stderr, "mlf-worker: --%s%s%s is now ", name, arg ? " " : "", arg ? arg : "");
	for (const char *c = now; *c; c++)
		if (c[0] == '%' && c[1] == 's')
			fputs(arg ? arg : "", stderr), c++;
		else
			fputc(*c, stderr);
	fputc('\n', stderr);
	return -1;
}

/* Hand the algorithm options @given (@n_given of them) to the --system's algorithm, refusing
 * those of other systems. 0, or -1 after one line on stderr. */
static int wk_algo_options(struct wk_run *R, const struct wk_given *given, int n_given)
{
	const struct wk_algo *A = R->algo;

	for (int g = 0; g < n_given; g++) {
		const struct wk_opt *p = A->opts;
		while (p && p->name && strcmp(p->name, given[g].name))
			p++;
		if (p && p->name) {
			if (A->option(R, given[g].name, given[g].arg))
				return -1;
			continue;
		}
		char owners[256] = "";
		for (size_t i = 0; i < WK_N_ALGOS; i++)
			for (p = wk_algos[i]->opts; p && p->name; p++)
				if (!strcmp(p->name, given[g].name))
					snprintf(owners + strlen(owners), sizeof(owners) - strlen(owners), "%s%s",
						 *owners ? ", " : "", wk_algos[i]->name);
		return fprintf(stderr, "mlf-worker: --%s belongs to --system %s, not %s\n", given[g].name,
			       owners, A->name), -1;
	}
	return 0;
}

/* Parse the command line into @o, @R->algo and @R->priv (allocated). 0, 1 after --help, or -1
 * after one line on stderr. */
static int wk_parse(int argc, char **argv, struct wk_opts *o, struct wk_run *R)
{
	static const struct option common[] = {
		{ "cluster", 1, 0, 'c' }, { "host", 1, 0, 'H' }, { "server", 1, 0, 'P' },
		{ "system", 1, 0, 'Y' }, { "mode", 1, 0, 'M' }, { "shard", 1, 0, 'x' }, { "model", 1, 0, 'm' },
		{ "batch", 1, 0, 'b' }, { "lr", 1, 0, 'l' }, { "straggle", 1, 0, 'g' },
		{ "seed", 1, 0, 'S' }, { "records", 1, 0, 'r' }, { "data", 1, 0, 'd' },
		{ "train-images", 1, 0, 'n' }, { "iterations", 1, 0, 'i' }, { "duration", 1, 0, 'D' },
		{ "timeout", 1, 0, 't' }, { "sock", 1, 0, 's' }, { "compute-s", 1, 0, 'C' }, { "help", 0, 0, 'h' },
		{ "eval-every", 1, 0, 'e' }, { "eval-images", 1, 0, 'k' }, { "speed", 1, 0, 'F' },
		{ "shard-by-label", 0, 0, 'B' },
	};
	enum { N_COMMON = sizeof(common) / sizeof(common[0]) };
	struct option lo[N_COMMON + WK_MAX_OPTS + 1];
	const struct wk_opt *opt_of[WK_MAX_OPTS]; /* the algorithms' options, each name once */
	struct wk_given given[WK_MAX_OPTS];
	int n_opts = 0, n_given = 0, c;
	const char *shard = NULL;

	memcpy(lo, common, sizeof(common));
	for (size_t i = 0; i < WK_N_ALGOS; i++)
		for (const struct wk_opt *p = wk_algos[i]->opts; p && p->name; p++) {
			int k = 0;
			while (k < n_opts && strcmp(opt_of[k]->name, p->name))
				k++;
			if (k < n_opts || n_opts == WK_MAX_OPTS)
				continue;
			opt_of[n_opts] = p;
			lo[N_COMMON + n_opts] = (struct option){ p->name, p->has_arg, 0, WK_OPT_BASE + n_opts };
			n_opts++;
		}
	lo[N_COMMON + n_opts] = (struct option){ 0, 0, 0, 0 };
	*o = (struct wk_opts){ .model = "784,1024,10", .straggle = "none", .records = ".",
			       .data = DEFAULT_DATA, .batch = 32, .lr = 0.05, .timeout = 10,
			       .train_images = 60000, .seed = 1, .eval_images = 1000, .speed = 1 };
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'c': o->cluster = optarg; break;
		case 'H': o->host = optarg; break;
		case 'P': o->server = optarg; break;
		case 'Y': o->system = optarg; break;
		case 'M': return wk_retired("mode", "--system %s", optarg);
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
		case 'B': o->by_label = 1; break;
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
		case 'h': wk_usage(stdout); return 1;
		default:
			if (c < WK_OPT_BASE || c >= WK_OPT_BASE + n_opts) {
				wk_usage(stderr);
				return -1;
			}
			if (!opt_of[c - WK_OPT_BASE]->help)
				return wk_retired(opt_of[c - WK_OPT_BASE]->name, opt_of[c - WK_OPT_BASE]->now, optarg);
			given[n_given++] = (struct wk_given){ opt_of[c - WK_OPT_BASE]->name, optarg };
			if (n_given == WK_MAX_OPTS)
				return fprintf(stderr, "mlf-worker: more than %d options of a system\n",
					       WK_MAX_OPTS - 1), -1;
		}
	}
	if (optind < argc)
		return fprintf(stderr, "mlf-worker: unexpected argument '%s'\n", argv[optind]), -1;
	if (!o->cluster || !o->host || !o->server || !o->system || !shard)
		return fprintf(stderr, "mlf-worker: --cluster, --host, --server, --system and --shard are required (see --help)\n"), -1;
	for (size_t i = 0; i < WK_N_ALGOS && !R->algo; i++)
		if (!strcmp(wk_algos[i]->name, o->system))
			R->algo = wk_algos[i];
	if (!R->algo) {
		char names[256] = "";
		for (size_t i = 0; i < WK_N_ALGOS; i++)
			snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", i ? ", " : "",
				 wk_algos[i]->name);
		return fprintf(stderr, "mlf-worker: unknown --system '%s' (%s)\n", o->system, names), -1;
	}
	if (train_shard_parse(shard, &o->shard_i, &o->shard_n))
		return fprintf(stderr, "mlf-worker: bad --shard '%s': expected I/N with 0 <= I < N\n", shard), -1;
	if (o->batch < 1 || o->lr <= 0 || o->timeout <= 0 || o->duration < 0 || o->iterations < 0)
		return fprintf(stderr, "mlf-worker: --batch, --lr, --timeout must be positive\n"), -1;
	if (!(o->eval_every >= 0) || o->eval_images < 1)
		return fprintf(stderr, "mlf-worker: --eval-every must be >= 0 and --eval-images >= 1\n"), -1;
	if (!(R->priv = calloc(1, R->algo->priv_size ? R->algo->priv_size : 1)))
		return fprintf(stderr, "mlf-worker: no memory\n"), -1;
	if (R->algo->defaults)
		R->algo->defaults(R->priv);
	return wk_algo_options(R, given, n_given);
}

/* Let the pushed updates leave before closing (close fails what is still pending), then close;
 * @ws: out, the endpoint's counters. */
static void wk_drain_close(struct wk_run *R, struct mlf_worker_stats *ws)
{
	for (double until = clock_real_s() + R->o->timeout;; usleep(10000)) {
		mlf_get_worker_stats(R->f, ws);
		if (ws->sent + ws->dropped + ws->aggregated >= ws->pushed || clock_real_s() >= until)
			break;
	}
	if (ws->sent + ws->dropped + ws->aggregated < ws->pushed)
		log_warn("%llu pushed updates still unsent to %s after %.1f s",
			 (unsigned long long)(ws->pushed - ws->sent - ws->dropped - ws->aggregated), R->o->server,
			 R->o->timeout);
	mlf_close(R->f);
}

/* worker.json: the run's counters, and the algorithm's own fields. 0, or 1 after a message. */
static int wk_write_summary(struct wk_run *R, const struct mlf_worker_stats *ws)
{
	long straggled = R->straggled + R->L.straggled, local_steps = R->L.steps, it = R->it;
	double busy = R->busy + R->L.busy;
	char err[512];

	log_info("stopped after %ld iterations (%ld straggled): pushed %llu sent %llu dropped %llu aggregated %llu",
		 it, straggled, (unsigned long long)ws->pushed, (unsigned long long)ws->sent,
		 (unsigned long long)ws->dropped, (unsigned long long)ws->aggregated);
	json_t *w = json_pack("{s:I,s:I,s:I,s:I,s:I,s:f,s:I}", "iterations", (json_int_t)it, "pushed",
			      (json_int_t)ws->pushed, "sent", (json_int_t)ws->sent, "dropped",
			      (json_int_t)ws->dropped, "aggregated", (json_int_t)ws->aggregated,
			      "mean_iteration_s",
			      it ? busy / (double)(R->algo->busy_per_local_step ? local_steps : it) : 0.0,
			      "local_steps", (json_int_t)local_steps);
	if (w && R->algo->record)
		R->algo->record(R, w);
	if (train_rec_file(R->o->records, "worker.json", w, err, sizeof(err)))
		return log_err("%s", err), 1;
	return 0;
}

int main(int argc, char **argv)
{
	struct wk_opts o;
	struct wk_run R = { .o = &o };
	struct mlp_shape shape;
	struct train_straggle st;
	struct idx_dataset shard, test;
	struct mlf_opts fo = { 0 };
	struct mlf_worker_stats ws;
	char err[512], comp[64];
	uint64_t rng;
	FILE *acc_f = NULL;
	double next_eval = 0;
	int rc = wk_parse(argc, argv, &o, &R);

	if (rc) {
		free(R.priv); /* a refused option may come after the algorithm's state was made */
		return rc > 0 ? 0 : 2;
	}
	const struct wk_algo *A = R.algo;
	snprintf(comp, sizeof(comp), "worker[%s]", o.host);
	log_component = comp;
	if (mlp_shape_parse(o.model, &shape) || shape.sizes[0] != 784 || shape.sizes[shape.n_layers] != 10)
		return log_err("bad --model '%s': layer sizes like 784,1024,10 (784 inputs, 10 outputs)", o.model),
		       free(R.priv), 2;
	if (train_straggle_parse(o.straggle, o.seed * 1000003u + (uint64_t)o.shard_i, &st))
		return log_err("bad --straggle '%s': R,S with R in [0,1] and S >= 1, or C1, C2, C3, none", o.straggle),
		       free(R.priv), 2;
	if (A->check && A->check(&R)) /* before anything is loaded or opened */
		return free(R.priv), 2;
	if ((o.by_label ? train_load_shard_by_label : train_load_shard)(o.data, o.train_images, o.shard_i,
									o.shard_n, &shard, err, sizeof(err)))
		return log_err("%s", err), 1;
	memset(&test, 0, sizeof(test));
	if (o.eval_every > 0 && (train_load(o.data, 1, o.eval_images, &test, err, sizeof(err)) ||
				 !(acc_f = train_rec_open(o.records, "accuracy.jsonl", err, sizeof(err)))))
		return log_err("%s", err), 1;
	size_t n = mlp_param_count(&shape);
	R.n = n;
	R.shape = &shape;
	R.w = malloc(sizeof(float) * n);
	R.u = malloc(sizeof(float) * n);
	float *x = malloc(sizeof(float) * (size_t)o.batch * 784);
	uint8_t *y = malloc((size_t)o.batch);
	if (!R.w || !R.u || !x || !y)
		return log_err("no memory for the model and update buffers (%zu floats)", n), 1;
	rng = o.seed * 7919u + (uint64_t)o.shard_i + 1;

	fo.cluster = o.cluster;
	fo.host = o.host;
	fo.sock = o.sock;
	fo.mode = A->mode;
	fo.timeout_s = o.timeout;
	R.f = mlf_open(&fo, err, sizeof(err));
	if (!R.f)
		return log_err("cannot open the fabric endpoint: %s", err), 1;
	R.L = (struct train_local){ .shape = &shape, .shard = &shard, .st = &st, .rng = &rng,
				    .batch = o.batch, .lr = o.lr, .compute_min = o.compute_min,
				    .speed = o.speed, .speed_at = o.speed_at, .x = x, .u = R.u, .y = y,
				    .n = n };
	if (A->init && (rc = A->init(&R))) {
		mlf_close(R.f);
		return rc;
	}
	rc = A->peer ? mlf_register_as_peer(R.f) : mlf_register_as_worker(R.f, o.server);
	if (rc) {
		log_err("register as %s of %s: %s", A->peer ? "peer" : "worker", o.server, mlf_error(R.f));
		mlf_close(R.f);
		return 1;
	}
	if (!(R.pushes = train_rec_open(o.records, "pushes.jsonl", err, sizeof(err)))) {
		log_err("%s", err);
		mlf_close(R.f);
		return 1;
	}
	signal(SIGTERM, wk_on_signal);
	signal(SIGINT, wk_on_signal);
	R.t0 = R.L.t0 = clock_real_s();
	R.next_progress = R.t0 + 2;
	log_info("worker of %s, system %s, shard %d/%d (%zu images), model %s", o.server, A->name,
		 o.shard_i, o.shard_n, shard.n, o.model);
	rc = WK_GO;
	while (!wk_stop && (!o.iterations || R.it < o.iterations) &&
	       (!o.duration || clock_real_s() - R.t0 < o.duration)) {
		double get_s = 0; /* seconds this iteration waited in its model get */

		if (A->pull && (rc = A->pull(&R, &get_s)) != WK_GO)
			break;
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
		if ((rc = A->iteration(&R, get_s)) != WK_GO)
			break;
	}
	rc = rc == WK_ERR ? 1 : 0;
	wk_drain_close(&R, &ws);
	if (wk_write_summary(&R, &ws))
		rc = 1;
	fclose(R.pushes);
	if (acc_f)
		fclose(acc_f);
	if (A->close)
		A->close(&R);
	free(R.priv);
	idx_free(&test);
	free(R.w);
	free(R.u);
	free(R.wr);
	free(x);
	free(y);
	idx_free(&shard);
	return rc;
}
