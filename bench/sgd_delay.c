/*
 * sgd_delay.c - `make bench-sgd-delay`: how many worker gradients synchronous SGD and
 * asynchronous SGD with a fixed delay need to reach a target accuracy, on the Table 2 workload
 * (Fashion-MNIST, the MLP of conf/exp-t2.json), without any network or timing.
 *
 * Issue 11 asks MLfabric-A to train faster than RR-Sync where the network is the bottleneck.
 * Time to target = gradients needed / gradients applied per second. The fabric decides the
 * second factor; this program measures the first, in isolation, so that a benchmark run can be
 * split into "throughput" and "statistical efficiency" (paper §2: a delayed update makes less
 * progress, which is why MLfabric bounds the delay).
 *
 * Systems (one gradient = the mean loss gradient of one worker's mini-batch of --batch examples
 * drawn from its i.i.d. shard, as mlf-worker computes it):
 *   sync     every step averages N workers' gradients on the same model and applies
 *            -(N x lr) x mean = -lr x sum with momentum (RR-Sync with lr_sync = N x lr, the rule
 *            of BENCHMARKS.md "Table 2"); a step counts N gradients.
 *   async:D  gradient t is computed on the model after update t - D (D = 0: sequential SGD) and
 *            applied alone as -lr x g with momentum (paper eq. 2 at the server, train_apply);
 *            worker t mod N computes it. D = N - 1 is what N workers with one update each in
 *            flight see when every update is applied in turn.
 * The accuracy is evaluated on the first --eval-images test images every --eval-every gradients
 * (the experiments evaluate every 2 s, ~25 gradients at Table 2's pace); the result of a run is
 * the gradient count at the first evaluation >= --target (a miss: over --max-grads).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlp.h"
#include "train.h"
#include "vec.h"

#define MAX_LIST 16
#define MAX_SEEDS 16
#define DEFAULT_DATA "/usr/share/datasets/fashion-mnist"

/** The options (units in the usage text). */
struct sd_opts {
	const char *model, *data;
	int batch, workers, seeds, eval_every, eval_images, max_grads;
	size_t train_images;
	double target;
	long pretrain;             /* --pretrain: gradients of sync SGD before every run (0 = none) */
	double pretrain_lr;        /* its per-gradient lr (momentum 0.9) */
	const char *save_model;    /* --save-model: write the pre-trained model (raw float32) */
	int pretrain_only;         /* --pretrain-only: write it and stop */
	double lr[MAX_LIST], mom[MAX_LIST];
	int n_lr, n_mom;
	char sys[MAX_LIST][16];
	int n_sys;
};

/** One worker: its shard (i.i.d., train_load_shard) and its sampling generator. */
struct sd_worker {
	struct idx_dataset shard;
	uint64_t rng;
	float *x;
	uint8_t *y;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bench-sgd-delay [options]\n"
		"  Worker gradients needed to reach a test accuracy, for synchronous SGD (N gradients\n"
		"  averaged per step) and asynchronous SGD with a fixed delay D (each gradient computed on\n"
		"  the model D updates old), on Fashion-MNIST; no network. Prints one line per run and a\n"
		"  table: per system the (lr, momentum) with the fewest gradients (median over seeds).\n"
		"options:\n"
		"  --systems LIST      comma list of sync and async:D (default sync,async:0,async:4,async:7)\n"
		"  --lr LIST           per-gradient learning rates (sync applies N x lr to the mean;\n"
		"                      default 0.005,0.01,0.02,0.04)\n"
		"  --momentum LIST     momentum values (default 0,0.5,0.9)\n"
		"  --workers N         workers (default 8)\n"
		"  --seeds K           seeds 1..K per setting (default 3)\n"
		"  --target A          test accuracy in (0, 1] (default 0.8)\n"
		"  --model S           MLP shape (default 784,64,10, conf/exp-t2.json)\n"
		"  --batch B           examples per gradient (default 32)\n"
		"  --eval-every G      gradients between evaluations (default 24)\n"
		"  --eval-images E     test images per evaluation (default 1000)\n"
		"  --max-grads M       a run that has not reached the target after M gradients is a miss\n"
		"                      (default 6000)\n"
		"  --data DIR          Fashion-MNIST directory (default " DEFAULT_DATA ")\n"
		"  --train-images T    shard the first T training images (default 60000)\n"
		"  --pretrain G        start every run from one model pre-trained by G gradients of sync\n"
		"                      (rounded down to whole steps of --workers gradients)\n"
		"                      SGD (seed 1000, momentum 0.9; the paper's Table 2 starts from a\n"
		"                      pre-trained model, §7); default 0: from the initial model\n"
		"  --pretrain-lr L     the per-gradient lr of that pre-training (default 0.01)\n"
		"  --save-model FILE   write the pre-trained model to FILE (raw little-endian float32,\n"
		"                      what mlf-ps and mlf-rrsync --init-weights read; experiment key\n"
		"                      init_weights)\n"
		"  --pretrain-only     with --pretrain and --save-model: write the model, run nothing else\n"
		"  -h, --help          this text\n");
}

/* Parses the whole of @s as an integer in [@lo, @hi] into *@out. Returns 0, -1 if not. */
static int parse_long(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (end == s || *end || errno || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

/* parse_long for option --@name, or one error line naming it and the range. Returns 0 or -1. */
static int opt_long(const char *name, const char *s, long lo, long hi, long *out)
{
	if (!parse_long(s, lo, hi, out))
		return 0;
	fprintf(stderr, "bench-sgd-delay: bad --%s '%s' (an integer in [%ld, %ld])\n", name, s, lo, hi);
	return -1;
}

/* Parses a comma list of doubles into @v (at most MAX_LIST). Returns the count, -1 if bad. */
static int parse_list(const char *s, double *v)
{
	int n = 0;
	char *end;

	while (*s) {
		if (n == MAX_LIST)
			return -1;
		v[n] = strtod(s, &end);
		if (end == s || !isfinite(v[n]) || (*end && *end != ','))
			return -1;
		n++;
		s = *end ? end + 1 : end;
	}
	return n ? n : -1;
}

/* Parses "sync,async:4" into @o->sys. Returns 0, -1 if a name is not sync or async:D (D >= 0). */
static int parse_systems(const char *s, struct sd_opts *o)
{
	char buf[256], *save = NULL, *t;

	if (strlen(s) >= sizeof(buf))
		return -1;
	strcpy(buf, s);
	o->n_sys = 0;
	for (t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *end;
		if (o->n_sys == MAX_LIST || strlen(t) >= sizeof(o->sys[0]))
			return -1;
		if (strncmp(t, "async:", 6) == 0) {
			long d = strtol(t + 6, &end, 10);
			if (end == t + 6 || *end || d < 0 || d > 1000)
				return -1;
		} else if (strcmp(t, "sync")) {
			return -1;
		}
		strcpy(o->sys[o->n_sys++], t);
	}
	return o->n_sys ? 0 : -1;
}

static int parse_opts(int argc, char **argv, struct sd_opts *o)
{
	static const struct option lo[] = {
		{ "systems", 1, 0, 's' }, { "lr", 1, 0, 'l' }, { "momentum", 1, 0, 'g' },
		{ "workers", 1, 0, 'w' }, { "seeds", 1, 0, 'k' }, { "target", 1, 0, 't' },
		{ "model", 1, 0, 'm' }, { "batch", 1, 0, 'b' }, { "eval-every", 1, 0, 'e' },
		{ "eval-images", 1, 0, 'E' }, { "max-grads", 1, 0, 'M' }, { "data", 1, 0, 'd' },
		{ "train-images", 1, 0, 'T' }, { "pretrain", 1, 0, 'P' }, { "pretrain-lr", 1, 0, 'L' },
		{ "save-model", 1, 0, 'O' }, { "pretrain-only", 0, 0, 'Y' }, { "help", 0, 0, 'h' }, { 0, 0, 0, 0 },
	};
	int c;
	long v;

	*o = (struct sd_opts){ .model = "784,64,10", .data = DEFAULT_DATA, .batch = 32, .workers = 8,
			       .seeds = 3, .eval_every = 24, .eval_images = 1000, .max_grads = 6000,
			       .train_images = 60000, .target = 0.8, .pretrain_lr = 0.01 };
	o->n_lr = parse_list("0.005,0.01,0.02,0.04", o->lr);
	o->n_mom = parse_list("0,0.5,0.9", o->mom);
	parse_systems("sync,async:0,async:4,async:7", o);
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 's':
			if (parse_systems(optarg, o))
				return fprintf(stderr, "bench-sgd-delay: bad --systems '%s' (sync, async:D)\n", optarg), -1;
			break;
		case 'l':
			if ((o->n_lr = parse_list(optarg, o->lr)) < 0)
				return fprintf(stderr, "bench-sgd-delay: bad --lr '%s'\n", optarg), -1;
			break;
		case 'g':
			if ((o->n_mom = parse_list(optarg, o->mom)) < 0)
				return fprintf(stderr, "bench-sgd-delay: bad --momentum '%s'\n", optarg), -1;
			break;
		case 'w':
			if (opt_long("workers", optarg, 1, 64, &v))
				return -1;
			o->workers = (int)v;
			break;
		case 'k':
			if (opt_long("seeds", optarg, 1, MAX_SEEDS, &v))
				return -1;
			o->seeds = (int)v;
			break;
		case 't': o->target = atof(optarg); break;
		case 'm': o->model = optarg; break;
		case 'b':
			if (opt_long("batch", optarg, 1, 1 << 20, &v))
				return -1;
			o->batch = (int)v;
			break;
		case 'e':
			if (opt_long("eval-every", optarg, 1, 1L << 30, &v))
				return -1;
			o->eval_every = (int)v;
			break;
		case 'E':
			if (opt_long("eval-images", optarg, 1, 10000, &v))
				return -1;
			o->eval_images = (int)v;
			break;
		case 'M':
			if (opt_long("max-grads", optarg, 1, 1L << 30, &v))
				return -1;
			o->max_grads = (int)v;
			break;
		case 'd': o->data = optarg; break;
		case 'T':
			if (opt_long("train-images", optarg, 1, 60000, &v))
				return -1;
			o->train_images = (size_t)v;
			break;
		case 'P':
			if (opt_long("pretrain", optarg, 0, 1L << 30, &v))
				return -1;
			o->pretrain = v;
			break;
		case 'L': o->pretrain_lr = atof(optarg); break;
		case 'O': o->save_model = optarg; break;
		case 'Y': o->pretrain_only = 1; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return -1;
		}
	}
	if (optind < argc)
		return fprintf(stderr, "bench-sgd-delay: unexpected argument '%s'\n", argv[optind]), -1;
	/* the integer options were range-checked as they were parsed (opt_long) */
	if (!(o->target > 0 && o->target <= 1) || !(o->pretrain_lr > 0))
		return fprintf(stderr, "bench-sgd-delay: --target in (0, 1] and --pretrain-lr > 0 expected\n"), -1;
	if (o->pretrain_only && (!o->pretrain || !o->save_model))
		return fprintf(stderr, "bench-sgd-delay: --pretrain-only needs --pretrain G and --save-model F\n"), -1;
	if (o->pretrain && o->pretrain < o->workers)
		return fprintf(stderr, "bench-sgd-delay: --pretrain %ld is less than one step of %d workers\n",
			       o->pretrain, o->workers), -1;
	if (o->save_model && !o->pretrain)
		return fprintf(stderr, "bench-sgd-delay: --save-model needs --pretrain G (it writes the pre-trained model)\n"), -1;
	if (o->train_images < (size_t)o->workers)
		return fprintf(stderr, "bench-sgd-delay: --train-images %zu leaves some of the %d workers no image\n",
			       o->train_images, o->workers), -1;
	for (int i = 0; i < o->n_mom; i++)
		if (!(o->mom[i] >= 0 && o->mom[i] < 1))
			return fprintf(stderr, "bench-sgd-delay: momentum %g not in [0, 1)\n", o->mom[i]), -1;
	for (int i = 0; i < o->n_lr; i++)
		if (!(o->lr[i] > 0))
			return fprintf(stderr, "bench-sgd-delay: lr %g not > 0\n", o->lr[i]), -1;
	return 0;
}

/*
 * One run: @sys with @lr, @mom, @seed from model @w0 (NULL: the initial model of @seed), for at
 * most @max_grads gradients. Returns the gradients at the first evaluation that reached @target,
 * or -1 for a miss; *@acc_out = the last accuracy; @w_out (if not NULL) gets the final model.
 * -2 when memory runs out.
 */
static long run_one(const struct sd_opts *o, const struct mlp_shape *shape, struct sd_worker *wk,
		    const struct idx_dataset *test, const float *w0, const char *sys, double lr, double mom,
		    int seed, long max_grads, double target, float *w_out, double *acc_out)
{
	int delay = strcmp(sys, "sync") ? atoi(sys + 6) : 0, sync = !strcmp(sys, "sync");
	struct train_model m;
	size_t n;
	long grads = 0, next_eval = o->eval_every, result = -1, eval_at = -1; /* eval_at: grads at the last evaluation */
	float *g = NULL, *u = NULL, *ring = NULL; /* ring: models after the last delay+1 updates */
	double acc = 0, loss;

	if (w0 ? train_model_init_flat(&m, w0, mlp_param_count(shape), 0, mom)
	       : train_model_init(&m, shape, (uint64_t)seed, mom))
		return -2;
	n = m.n;
	g = malloc(sizeof(float) * n);
	u = malloc(sizeof(float) * n);
	ring = malloc(sizeof(float) * n * (size_t)(delay + 1));
	if (!g || !u || !ring) {
		result = -2;
		goto out;
	}
	for (int i = 0; i < o->workers; i++)
		wk[i].rng = 0x9E3779B97F4A7C15ULL * (uint64_t)(seed * 131 + i + 1);
	memcpy(ring, m.w, sizeof(float) * n); /* slot of version 0 */
	/* a sync step adds N gradients: none starts that would pass @max_grads */
	while (grads + (sync ? o->workers : 1) <= max_grads) {
		if (sync) {
			memset(u, 0, sizeof(float) * n);
			for (int i = 0; i < o->workers; i++) {
				struct sd_worker *w = &wk[i];
				train_sample_batch(&w->shard, 0, w->shard.n, o->batch, &w->rng, w->x, w->y);
				if (mlp_grad(shape, m.w, w->x, w->y, o->batch, g) < 0) {
					result = -2;
					goto out;
				}
				vec_add_f32(u, g, n);
			}
			vec_scale_f32(u, (float)-lr, n); /* -(N lr) x mean */
			train_apply(&m, u, o->workers);
			grads += o->workers;
		} else {
			/* the model @delay updates old: version max(0, t - delay) */
			long v = grads - delay < 0 ? 0 : grads - delay;
			const float *wv = ring + (size_t)(v % (delay + 1)) * n;
			struct sd_worker *w = &wk[grads % o->workers];
			train_sample_batch(&w->shard, 0, w->shard.n, o->batch, &w->rng, w->x, w->y);
			if (mlp_grad(shape, wv, w->x, w->y, o->batch, g) < 0) {
				result = -2;
				goto out;
			}
			vec_scale_f32(g, (float)-lr, n);
			train_apply(&m, g, 1);
			grads++;
			memcpy(ring + (size_t)(grads % (delay + 1)) * n, m.w, sizeof(float) * n);
		}
		if (grads >= next_eval) {
			next_eval += o->eval_every;
			eval_at = grads;
			if (train_eval(shape, m.w, test, (size_t)o->eval_images, &acc, &loss)) {
				result = -2;
				goto out;
			}
			if (!isfinite(loss)) /* diverged: a miss */
				break;
			if (acc >= target) {
				result = grads;
				break;
			}
		}
	}
	/* the model handed back or reported is the last one, evaluated as such */
	if (result == -1 && eval_at != grads && train_eval(shape, m.w, test, (size_t)o->eval_images, &acc, &loss))
		result = -2;
out:
	*acc_out = acc;
	if (w_out && result != -2)
		memcpy(w_out, m.w, sizeof(float) * n);
	free(g);
	free(u);
	free(ring);
	train_model_free(&m);
	return result;
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return (x > y) - (x < y);
}

/* A miss sorts as over the limit. */
static long key(long r, const struct sd_opts *o)
{
	return r < 0 ? o->max_grads + 1 : r;
}

static void fmt_grads(char *buf, size_t len, long k, const struct sd_opts *o)
{
	if (k > o->max_grads)
		snprintf(buf, len, "> %d", o->max_grads);
	else
		snprintf(buf, len, "%ld", k);
}

/* Releases the workers' shards and buffers (@wk from calloc: zeroed ones are fine) and @test. */
static void sd_free(struct sd_worker *wk, int n, struct idx_dataset *test)
{
	for (int i = 0; wk && i < n; i++) {
		idx_free(&wk[i].shard);
		free(wk[i].x);
		free(wk[i].y);
	}
	free(wk);
	idx_free(test);
}

int main(int argc, char **argv)
{
	struct sd_opts o;
	struct mlp_shape shape;
	struct idx_dataset test = { 0 };
	struct sd_worker *wk;
	char err[512];

	if (parse_opts(argc, argv, &o))
		return 2;
	if (mlp_shape_parse(o.model, &shape) || shape.sizes[0] != 784 || shape.sizes[shape.n_layers] != 10)
		return fprintf(stderr, "bench-sgd-delay: bad --model '%s' (layer sizes like 784,64,10: 784 inputs, "
			       "10 outputs)\n", o.model), 2;
	if (train_load(o.data, 1, (size_t)o.eval_images, &test, err, sizeof(err)))
		return fprintf(stderr, "bench-sgd-delay: %s\n", err), 1;
	wk = calloc((size_t)o.workers, sizeof(*wk));
	if (!wk)
		return fprintf(stderr, "bench-sgd-delay: out of memory\n"), sd_free(wk, 0, &test), 1;
	for (int i = 0; i < o.workers; i++) {
		if (train_load_shard(o.data, o.train_images, i, o.workers, &wk[i].shard, err, sizeof(err)))
			return fprintf(stderr, "bench-sgd-delay: %s\n", err), sd_free(wk, o.workers, &test), 1;
		wk[i].x = malloc(sizeof(float) * (size_t)o.batch * shape.sizes[0]);
		wk[i].y = malloc((size_t)o.batch);
		if (!wk[i].x || !wk[i].y)
			return fprintf(stderr, "bench-sgd-delay: out of memory\n"), sd_free(wk, o.workers, &test), 1;
	}
	float *w0 = NULL;
	if (o.pretrain > 0) {
		double acc;
		w0 = malloc(sizeof(float) * mlp_param_count(&shape));
		if (!w0 || run_one(&o, &shape, wk, &test, NULL, "sync", o.pretrain_lr, 0.9, 1000, o.pretrain, 2.0,
				   w0, &acc) == -2)
			return fprintf(stderr, "bench-sgd-delay: out of memory\n"), free(w0), sd_free(wk, o.workers, &test), 1;
		printf("# pre-trained: %ld gradients of sync SGD (lr %g, momentum 0.9, seed 1000): accuracy %.3f\n",
		       o.pretrain / o.workers * o.workers, o.pretrain_lr, acc);
		if (o.save_model) {
			FILE *f = fopen(o.save_model, "wb");
			size_t n = mlp_param_count(&shape);
			int bad = !f;
			errno = 0;
			if (f) {
				bad = fwrite(w0, sizeof(float), n, f) != n;
				bad |= fclose(f) != 0;
			}
			if (bad) {
				fprintf(stderr, "bench-sgd-delay: cannot write %s: %s\n", o.save_model,
					errno ? strerror(errno) : "short write");
				return free(w0), sd_free(wk, o.workers, &test), 1;
			}
			printf("# pre-trained model written to %s (%zu float32)\n", o.save_model, n);
		}
		if (o.pretrain_only)
			return free(w0), sd_free(wk, o.workers, &test), 0;
	}
	printf("# bench-sgd-delay: model %s, batch %d, %d workers, target %g on %d test images, eval every %d "
	       "gradients, limit %d gradients, seeds 1-%d\n", o.model, o.batch, o.workers, o.target,
	       o.eval_images, o.eval_every, o.max_grads, o.seeds);
	printf("# system lr momentum seed gradients_to_target final_accuracy\n");
	fflush(stdout);

	/* best[s]: the (lr, momentum) with the smallest median; its per-seed results */
	long best_med[MAX_LIST], best_r[MAX_LIST][MAX_SEEDS];
	double best_lr[MAX_LIST], best_mom[MAX_LIST];
	for (int s = 0; s < o.n_sys; s++) {
		best_med[s] = -1;
		for (int a = 0; a < o.n_lr; a++)
			for (int b = 0; b < o.n_mom; b++) {
				long r[MAX_SEEDS], sorted[MAX_SEEDS];
				for (int k = 0; k < o.seeds; k++) {
					double acc;
					r[k] = run_one(&o, &shape, wk, &test, w0, o.sys[s], o.lr[a], o.mom[b], k + 1,
							o.max_grads, o.target, NULL, &acc);
					if (r[k] == -2)
						return fprintf(stderr, "bench-sgd-delay: out of memory\n"), free(w0),
						       sd_free(wk, o.workers, &test), 1;
					printf("%s %g %g %d %ld %.3f\n", o.sys[s], o.lr[a], o.mom[b], k + 1, r[k], acc);
					fflush(stdout);
					sorted[k] = key(r[k], &o);
				}
				qsort(sorted, (size_t)o.seeds, sizeof(long), cmp_long);
				long med = sorted[o.seeds / 2];
				if (best_med[s] < 0 || med < best_med[s]) {
					best_med[s] = med;
					best_lr[s] = o.lr[a];
					best_mom[s] = o.mom[b];
					memcpy(best_r[s], r, sizeof(r));
				}
			}
	}
	printf("\n| system | best lr | momentum | gradients to %g, median (min-max) | over sync |\n"
	       "|---|---|---|---|---|\n", o.target);
	long sync_med = -1;
	for (int s = 0; s < o.n_sys; s++)
		if (!strcmp(o.sys[s], "sync"))
			sync_med = best_med[s];
	for (int s = 0; s < o.n_sys; s++) {
		long sorted[MAX_SEEDS];
		char a[32], b[32], c[32], ratio[32] = "-";
		for (int k = 0; k < o.seeds; k++)
			sorted[k] = key(best_r[s][k], &o);
		qsort(sorted, (size_t)o.seeds, sizeof(long), cmp_long);
		fmt_grads(a, sizeof(a), best_med[s], &o);
		fmt_grads(b, sizeof(b), sorted[0], &o);
		fmt_grads(c, sizeof(c), sorted[o.seeds - 1], &o);
		if (sync_med > 0 && sync_med <= o.max_grads && best_med[s] <= o.max_grads)
			snprintf(ratio, sizeof(ratio), "%.2fx", (double)best_med[s] / (double)sync_med);
		printf("| %s | %g | %g | %s (%s-%s) | %s |\n", o.sys[s], best_lr[s], best_mom[s], a, b, c, ratio);
	}
	free(w0);
	sd_free(wk, o.workers, &test);
	return 0;
}
