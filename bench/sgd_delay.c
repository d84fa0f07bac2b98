/*
 * sgd_delay.c - `make bench-sgd-delay`: how many worker gradients synchronous SGD and
 * asynchronous SGD with a fixed delay need to reach a target accuracy, on the Table 2 workload
 * (Fashion-MNIST, the MLP of conf/exp-t2.json), without any network or timing; its event
 * systems add the workers' speeds and the scheduler's rules in virtual time.
 *
 * Time to target = gradients needed / gradients applied per second. The fabric decides the
 * second factor; this program measures the first, in isolation, so that a benchmark run can be
 * split into "throughput" and "statistical efficiency" (paper §2: a delayed update makes less
 * progress, which is why MLfabric bounds the delay; docs/results/staleness.md "Throughput
 * against statistical efficiency"). Its event systems model both factors at once.
 *
 * Systems (one gradient = the mean loss gradient of one worker's mini-batch of --batch examples
 * drawn from its i.i.d. shard, as mlf-worker computes it):
 *   sync     every step averages N workers' gradients on the same model and applies
 *            -(N x lr) x mean = -lr x sum with momentum (RR-Sync with lr_sync = N x lr, the rule
 *            of docs/results/table2.md "Table 2 (`make bench-table2`)"); a step counts N gradients.
 *   async:D  gradient t is computed on the model after update t - D (D = 0: sequential SGD) and
 *            applied alone as -lr x g with momentum (paper eq. 2 at the server, train_apply);
 *            worker t mod N computes it. D = N - 1 is what N workers with one update each in
 *            flight see when every update is applied in turn.
 *   event:R  the event-driven mode (bench/sgd_event.c): an asynchronous parameter server
 *            simulated in virtual time. Worker i's gradient takes --compute-s x --speeds[i] x a
 *            --straggle draw (C1-C3 as conf/ and docs/experiments.md define them, seeded as
 *            tools/mlf-cluster seeds worker i of the same experiment seed); each model or
 *            update transfer takes --transfer-s. The scheduler's rules R: "async" (every push applied on arrival, a pull answered after
 *            the worker's own update, no delay bound: mlf-ps without a scheduler), "mlfabric-a"
 *            (100 ms batches, a pull answered with the model before its batch's updates, delay
 *            bound 8: MLfabric-A as built) or TICK_MS:before|after[:TAU] (tick 0 = on arrival);
 *            plain "event" takes them from --tick-ms, --pull-rule and --tau-max. Updates are
 *            applied one by one (eq. 2 at the server), in the planner's order; those that would
 *            break the delay bound are dropped. The server's model is evaluated every
 *            --eval-every-s virtual seconds; a run reports gradients computed, updates applied,
 *            the mean delay, the dropped share and the virtual time, so a setting's time to
 *            target can be predicted before the fabric runs it (docs/results/staleness.md "An
 *            event-driven model of the fabric" compares it with the fabric's runs).
 * The accuracy is evaluated on the first --eval-images test images every --eval-every gradients
 * (the experiments evaluate every 2 s, ~25 gradients at Table 2's pace; the event mode evaluates
 * every --eval-every-s instead); the result of a run is the gradient count at the first
 * evaluation >= --target (a miss: over --max-grads).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlp.h"
#include "sgd_event.h"
#include "train.h"
#include "vec.h"

#define MAX_LIST 16
#define MAX_WORKERS 64
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
	char sys[MAX_LIST][32];
	int n_sys;
	/* the event mode (units in the usage text); @workers_set: --workers was given */
	double speeds[MAX_WORKERS], compute_s, transfer_s, eval_every_s;
	int n_speeds, workers_set;
	const char *straggle;
	struct sgd_event_rules rules; /* plain "event": --tick-ms, --pull-rule, --tau-max */
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
		"  --systems LIST      comma list of sync, async:D and event systems: event:async,\n"
		"                      event:mlfabric-a, event:TICK_MS:before|after[:TAU] or event (the\n"
		"                      rules below) (default sync,async:0,async:4,async:7)\n"
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
		"event systems (an asynchronous parameter server in virtual time; each run line adds\n"
		"updates applied, mean delay, dropped share and virtual seconds):\n"
		"  --speeds LIST       per-worker slowdowns >= 1, one per worker (default all 1; sets\n"
		"                      --workers when that is not given), as mlf-worker --speed\n"
		"  --compute-s S       seconds of one gradient at speed 1 (default 0.1, experiment key\n"
		"                      compute_s)\n"
		"  --straggle C        C1, C2, C3, R,S or none (default none, experiment key compute)\n"
		"  --transfer-s S      seconds of one model or update transfer (default 0.003)\n"
		"  --eval-every-s S    virtual seconds between evaluations (default 2, eval_every_s)\n"
		"  --tick-ms T         plain event: scheduler batch period, 0 = on arrival (default 100)\n"
		"  --pull-rule R       plain event: a pull gets the model before or after its batch's\n"
		"                      updates (on arrival: its own update) (default before)\n"
		"  --tau-max B         plain event: delay bound, -1 = none (default 8)\n"
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

/* Parses a comma list of doubles into @v (at most @max). Returns the count, -1 if bad. */
static int parse_list(const char *s, double *v, int max)
{
	int n = 0;
	char *end;

	while (*s) {
		if (n == max)
			return -1;
		v[n] = strtod(s, &end);
		if (end == s || !isfinite(v[n]) || (*end && *end != ','))
			return -1;
		n++;
		s = *end ? end + 1 : end;
	}
	return n ? n : -1;
}

/* Parses "sync,async:4,event:async" into @o->sys. Returns 0, -1 if a name is not sync, async:D
 * (D >= 0), event or event:R (sgd_event_parse). */
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
		} else if (strncmp(t, "event:", 6) == 0) {
			struct sgd_event_rules r;
			if (sgd_event_parse(t + 6, &r))
				return -1;
		} else if (strcmp(t, "sync") && strcmp(t, "event")) {
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
		{ "save-model", 1, 0, 'O' }, { "pretrain-only", 0, 0, 'Y' }, { "speeds", 1, 0, 'S' },
		{ "compute-s", 1, 0, 'C' }, { "straggle", 1, 0, 'G' }, { "transfer-s", 1, 0, 'X' },
		{ "eval-every-s", 1, 0, 'V' }, { "tick-ms", 1, 0, 'K' }, { "pull-rule", 1, 0, 'R' },
		{ "tau-max", 1, 0, 'U' }, { "help", 0, 0, 'h' }, { 0, 0, 0, 0 },
	};
	int c;
	long v;

	*o = (struct sd_opts){ .model = "784,64,10", .data = DEFAULT_DATA, .batch = 32, .workers = 8,
			       .seeds = 3, .eval_every = 24, .eval_images = 1000, .max_grads = 6000,
			       .train_images = 60000, .target = 0.8, .pretrain_lr = 0.01, .compute_s = 0.1,
			       .transfer_s = 0.003, .eval_every_s = 2, .straggle = "none",
			       .rules = { .tick_us = 100000, .pull_after = 0, .tau_max = 8 } };
	o->n_lr = parse_list("0.005,0.01,0.02,0.04", o->lr, MAX_LIST);
	o->n_mom = parse_list("0,0.5,0.9", o->mom, MAX_LIST);
	parse_systems("sync,async:0,async:4,async:7", o);
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 's':
			if (parse_systems(optarg, o))
				return fprintf(stderr, "bench-sgd-delay: bad --systems '%s' (sync, async:D, event, "
					       "event:async, event:mlfabric-a, event:TICK_MS:before|after[:TAU])\n", optarg), -1;
			break;
		case 'l':
			if ((o->n_lr = parse_list(optarg, o->lr, MAX_LIST)) < 0)
				return fprintf(stderr, "bench-sgd-delay: bad --lr '%s'\n", optarg), -1;
			break;
		case 'g':
			if ((o->n_mom = parse_list(optarg, o->mom, MAX_LIST)) < 0)
				return fprintf(stderr, "bench-sgd-delay: bad --momentum '%s'\n", optarg), -1;
			break;
		case 'w':
			if (opt_long("workers", optarg, 1, MAX_WORKERS, &v))
				return -1;
			o->workers = (int)v;
			o->workers_set = 1;
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
		case 'S':
			if ((o->n_speeds = parse_list(optarg, o->speeds, MAX_WORKERS)) < 0)
				return fprintf(stderr, "bench-sgd-delay: bad --speeds '%s' (at most %d)\n", optarg,
					       MAX_WORKERS), -1;
			break;
		case 'C': o->compute_s = atof(optarg); break;
		case 'G': o->straggle = optarg; break;
		case 'X': o->transfer_s = atof(optarg); break;
		case 'V': o->eval_every_s = atof(optarg); break;
		case 'K':
			if (opt_long("tick-ms", optarg, 0, 60000, &v))
				return -1;
			o->rules.tick_us = v * 1000;
			break;
		case 'R':
			if (strcmp(optarg, "before") && strcmp(optarg, "after"))
				return fprintf(stderr, "bench-sgd-delay: bad --pull-rule '%s' (before, after)\n", optarg), -1;
			o->rules.pull_after = optarg[0] == 'a';
			break;
		case 'U':
			if (opt_long("tau-max", optarg, -1, 1000000, &v))
				return -1;
			o->rules.tau_max = v;
			break;
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
	if (o->n_speeds && !o->workers_set)
		o->workers = o->n_speeds;
	if (o->n_speeds && o->n_speeds != o->workers)
		return fprintf(stderr, "bench-sgd-delay: --speeds gives %d workers, --workers %d\n", o->n_speeds,
			       o->workers), -1;
	for (int i = o->n_speeds; i < o->workers; i++)
		o->speeds[i] = 1;
	for (int i = 0; i < o->workers; i++)
		if (!(o->speeds[i] >= 1 && isfinite(o->speeds[i])))
			return fprintf(stderr, "bench-sgd-delay: speed %g not >= 1\n", o->speeds[i]), -1;
	struct train_straggle st;
	if (train_straggle_parse(o->straggle, 1, &st))
		return fprintf(stderr, "bench-sgd-delay: bad --straggle '%s' (C1, C2, C3, R,S, none)\n", o->straggle), -1;
	if (!(o->compute_s > 0 && o->compute_s < 3600) || !(o->transfer_s >= 0 && o->transfer_s < 3600) ||
	    !(o->eval_every_s > 0 && o->eval_every_s < 1e6))
		return fprintf(stderr, "bench-sgd-delay: --compute-s in (0, 3600), --transfer-s in [0, 3600) and "
			       "--eval-every-s > 0 expected\n"), -1;
	for (int i = 0; i < o->n_mom; i++)
		if (!(o->mom[i] >= 0 && o->mom[i] < 1))
			return fprintf(stderr, "bench-sgd-delay: momentum %g not in [0, 1)\n", o->mom[i]), -1;
	for (int i = 0; i < o->n_lr; i++)
		if (!(o->lr[i] > 0))
			return fprintf(stderr, "bench-sgd-delay: lr %g not > 0\n", o->lr[i]), -1;
	return 0;
}

/* Worker @w's gradient of model @wm on a mini-batch it samples, into @g. 0, -ENOMEM. */
static int sd_grad(const struct sd_opts *o, const struct mlp_shape *shape, struct sd_worker *w,
		   const float *wm, float *g)
{
	train_sample_batch(&w->shard, 0, w->shard.n, o->batch, &w->rng, w->x, w->y);
	return mlp_grad(shape, wm, w->x, w->y, o->batch, g) < 0 ? -ENOMEM : 0;
}

/* Evaluates model @w into *@acc: 1 when it reached @target, 0 when not, -1 when it diverged (a
 * miss), -ENOMEM. */
static int sd_eval(const struct sd_opts *o, const struct mlp_shape *shape, const struct idx_dataset *test,
		   const float *w, double target, double *acc)
{
	double loss;

	if (train_eval(shape, w, test, (size_t)o->eval_images, acc, &loss))
		return -ENOMEM;
	return !isfinite(loss) ? -1 : *acc >= target;
}

/* What the event mode's callbacks (struct sgd_event_ops) use. */
struct sd_event_ctx {
	const struct sd_opts *o;
	const struct mlp_shape *shape;
	struct sd_worker *wk;
	const struct idx_dataset *test;
	size_t n;
	double lr, target;
};

static int ev_update(void *ctx, int i, const float *w, float *u)
{
	struct sd_event_ctx *x = ctx;
	int rc = sd_grad(x->o, x->shape, &x->wk[i], w, u);

	if (!rc)
		vec_scale_f32(u, (float)-x->lr, x->n); /* u = -lr x gradient (eq. 1) */
	return rc;
}

static int ev_eval(void *ctx, const float *w, double *acc)
{
	struct sd_event_ctx *x = ctx;

	return sd_eval(x->o, x->shape, x->test, w, x->target, acc);
}

/* An event system's run (@sys "event" or "event:R") from model @m: the result as run_one's,
 * the figures in *@ev. */
static long run_event(const struct sd_opts *o, const struct mlp_shape *shape, struct sd_worker *wk,
		      const struct idx_dataset *test, struct train_model *m, const char *sys, double lr,
		      int seed, long max_grads, double target, double *acc, struct sgd_event_result *ev)
{
	static const struct sgd_event_ops ops = { .update = ev_update, .eval = ev_eval };
	struct sgd_event_rules r = o->rules;
	struct sgd_event_cluster c = { .workers = o->workers, .speeds = o->speeds, .compute_s = o->compute_s,
				       .transfer_s = o->transfer_s, .eval_every_s = o->eval_every_s,
				       .straggle = o->straggle, .max_grads = max_grads };
	struct sd_event_ctx x = { .o = o, .shape = shape, .wk = wk, .test = test, .n = m->n, .lr = lr,
				  .target = target };

	if (sys[5] == ':')
		sgd_event_parse(sys + 6, &r); /* checked by parse_systems */
	if (sgd_event_run(&c, &r, (uint64_t)seed, m, &ops, &x, ev))
		return -2;
	/* a miss reports its last model, evaluated as such */
	if (!ev->reached && !ev->evaluated && sd_eval(o, shape, test, m->w, target, &ev->accuracy) < -1)
		return -2;
	*acc = ev->accuracy;
	return ev->reached ? ev->grads : -1;
}

/*
 * One run: @sys with @lr, @mom, @seed from model @w0 (NULL: the initial model of @seed), for at
 * most @max_grads gradients. Returns the gradients at the first evaluation that reached @target,
 * or -1 for a miss; *@acc_out = the last accuracy; @w_out (if not NULL) gets the final model;
 * an event system's figures go to *@ev. -2 when memory runs out.
 */
static long run_one(const struct sd_opts *o, const struct mlp_shape *shape, struct sd_worker *wk,
		    const struct idx_dataset *test, const float *w0, const char *sys, double lr, double mom,
		    int seed, long max_grads, double target, float *w_out, double *acc_out,
		    struct sgd_event_result *ev)
{
	int sync = !strcmp(sys, "sync"), event = !strncmp(sys, "event", 5);
	int delay = sync || event ? 0 : atoi(sys + 6);
	struct train_model m;
	size_t n;
	long grads = 0, next_eval = o->eval_every, result = -1, eval_at = -1; /* eval_at: grads at the last evaluation */
	float *g = NULL, *u = NULL, *ring = NULL; /* ring: models after the last delay+1 updates */
	double acc = 0;

	if (w0 ? train_model_init_flat(&m, w0, mlp_param_count(shape), 0, mom)
	       : train_model_init(&m, shape, (uint64_t)seed, mom))
		return -2;
	n = m.n;
	for (int i = 0; i < o->workers; i++)
		wk[i].rng = 0x9E3779B97F4A7C15ULL * (uint64_t)(seed * 131 + i + 1);
	if (event) {
		result = run_event(o, shape, wk, test, &m, sys, lr, seed, max_grads, target, &acc, ev);
		goto out;
	}
	g = malloc(sizeof(float) * n);
	u = malloc(sizeof(float) * n);
	ring = malloc(sizeof(float) * n * (size_t)(delay + 1));
	if (!g || !u || !ring) {
		result = -2;
		goto out;
	}
	memcpy(ring, m.w, sizeof(float) * n); /* slot of version 0 */
	/* a sync step adds N gradients: none starts that would pass @max_grads */
	while (grads + (sync ? o->workers : 1) <= max_grads) {
		if (sync) {
			memset(u, 0, sizeof(float) * n);
			for (int i = 0; i < o->workers; i++) {
				if (sd_grad(o, shape, &wk[i], m.w, g)) {
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
			if (sd_grad(o, shape, &wk[grads % o->workers], wv, g)) {
				result = -2;
				goto out;
			}
			vec_scale_f32(g, (float)-lr, n);
			train_apply(&m, g, 1);
			grads++;
			memcpy(ring + (size_t)(grads % (delay + 1)) * n, m.w, sizeof(float) * n);
		}
		if (grads >= next_eval) {
			int e;
			next_eval += o->eval_every;
			eval_at = grads;
			e = sd_eval(o, shape, test, m.w, target, &acc);
			if (e < -1) {
				result = -2;
				goto out;
			}
			if (e == -1) /* diverged: a miss */
				break;
			if (e == 1) {
				result = grads;
				break;
			}
		}
	}
	/* the model handed back or reported is the last one, evaluated as such */
	if (result == -1 && eval_at != grads && sd_eval(o, shape, test, m.w, target, &acc) < -1)
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

/* "median (min-max)" of the gradients to target @r of the --seeds runs. */
static void fmt_grads_range(char *buf, size_t len, const long *r, const struct sd_opts *o)
{
	long sorted[MAX_SEEDS];
	char a[32], b[32], c[32];

	for (int k = 0; k < o->seeds; k++)
		sorted[k] = key(r[k], o);
	qsort(sorted, (size_t)o->seeds, sizeof(long), cmp_long);
	fmt_grads(a, sizeof(a), sorted[o->seeds / 2], o);
	fmt_grads(b, sizeof(b), sorted[0], o);
	fmt_grads(c, sizeof(c), sorted[o->seeds - 1], o);
	snprintf(buf, len, "%s (%s-%s)", a, b, c);
}

/* An event run's mean delay and dropped share (0 when nothing was applied or dropped). */
static double ev_delay(const struct sgd_event_result *e)
{
	return e->applied ? e->delay_sum / (double)e->applied : 0;
}

static double ev_dropped(const struct sgd_event_result *e)
{
	return e->applied + e->dropped ? (double)e->dropped / (double)(e->applied + e->dropped) : 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* "median (min-max)" of the @k values @v (sorted in place), each with %.*f of @prec; infinite
 * ones print as "miss". */
static void fmt_stat(char *buf, size_t len, double *v, int k, int prec)
{
	char p[3][24];
	double at[3];

	qsort(v, (size_t)k, sizeof(double), cmp_double);
	at[0] = v[k / 2];
	at[1] = v[0];
	at[2] = v[k - 1];
	for (int j = 0; j < 3; j++)
		if (isinf(at[j]))
			snprintf(p[j], sizeof(p[j]), "miss");
		else
			snprintf(p[j], sizeof(p[j]), "%.*f", prec, at[j]);
	snprintf(buf, len, "%s (%s-%s)", p[0], p[1], p[2]);
}

/* The event systems' table: per system at its best (lr, momentum), each figure's median
 * (min-max) over the seeds. */
static void ev_table(const struct sd_opts *o, long r[][MAX_SEEDS], struct sgd_event_result ev[][MAX_SEEDS],
		     const double *lr, const double *mom)
{
	int header = 0;

	for (int s = 0; s < o->n_sys; s++) {
		double v[4][MAX_SEEDS];
		char f[4][80];

		if (strncmp(o->sys[s], "event", 5))
			continue;
		if (!header++)
			printf("\n| event system | lr | momentum | gradients to %g, median (min-max) | updates applied "
			       "| mean delay | dropped | virtual s to %g |\n|---|---|---|---|---|---|---|---|\n",
			       o->target, o->target);
		for (int k = 0; k < o->seeds; k++) {
			v[0][k] = (double)ev[s][k].applied;
			v[1][k] = ev_delay(&ev[s][k]);
			v[2][k] = 100 * ev_dropped(&ev[s][k]);
			v[3][k] = r[s][k] < 0 ? INFINITY : ev[s][k].t_s;
		}
		for (int j = 0; j < 4; j++)
			fmt_stat(f[j], sizeof(f[j]), v[j], o->seeds, j == 0 ? 0 : 1);
		char g[100];
		fmt_grads_range(g, sizeof(g), r[s], o);
		printf("| %s | %g | %g | %s | %s | %s | %s%% | %s |\n", o->sys[s], lr[s], mom[s], g, f[0], f[1],
		       f[2], f[3]);
	}
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
				   w0, &acc, NULL) == -2)
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
	for (int s = 0; s < o.n_sys; s++)
		if (!strncmp(o.sys[s], "event", 5)) {
			printf("# event systems: %d workers at speeds", o.workers);
			for (int i = 0; i < o.workers; i++)
				printf("%s%g", i ? "," : " ", o.speeds[i]);
			printf(", compute %g s, straggle %s, transfer %g s, evaluation every %g s\n", o.compute_s,
			       o.straggle, o.transfer_s, o.eval_every_s);
			break;
		}
	printf("# system lr momentum seed gradients_to_target final_accuracy (event systems: updates_applied "
	       "mean_delay dropped_share virtual_s)\n");
	fflush(stdout);

	/* best[s]: the (lr, momentum) with the smallest median; its per-seed results */
	long best_med[MAX_LIST], best_r[MAX_LIST][MAX_SEEDS];
	double best_lr[MAX_LIST], best_mom[MAX_LIST];
	struct sgd_event_result best_ev[MAX_LIST][MAX_SEEDS];
	for (int s = 0; s < o.n_sys; s++) {
		best_med[s] = -1;
		for (int a = 0; a < o.n_lr; a++)
			for (int b = 0; b < o.n_mom; b++) {
				long r[MAX_SEEDS], sorted[MAX_SEEDS];
				struct sgd_event_result ev[MAX_SEEDS] = { 0 };
				for (int k = 0; k < o.seeds; k++) {
					double acc;
					r[k] = run_one(&o, &shape, wk, &test, w0, o.sys[s], o.lr[a], o.mom[b], k + 1,
							o.max_grads, o.target, NULL, &acc, &ev[k]);
					if (r[k] == -2)
						return fprintf(stderr, "bench-sgd-delay: out of memory\n"), free(w0),
						       sd_free(wk, o.workers, &test), 1;
					printf("%s %g %g %d %ld %.3f", o.sys[s], o.lr[a], o.mom[b], k + 1, r[k], acc);
					if (!strncmp(o.sys[s], "event", 5))
						printf(" %ld %.2f %.3f %.1f", ev[k].applied, ev_delay(&ev[k]),
						       ev_dropped(&ev[k]), ev[k].t_s);
					printf("\n");
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
					memcpy(best_ev[s], ev, sizeof(ev));
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
		char g[100], ratio[32] = "-";
		fmt_grads_range(g, sizeof(g), best_r[s], &o);
		if (sync_med > 0 && sync_med <= o.max_grads && best_med[s] <= o.max_grads)
			snprintf(ratio, sizeof(ratio), "%.2fx", (double)best_med[s] / (double)sync_med);
		printf("| %s | %g | %g | %s | %s |\n", o.sys[s], best_lr[s], best_mom[s], g, ratio);
	}
	ev_table(&o, best_r, best_ev, best_lr, best_mom);
	free(w0);
	sd_free(wk, o.workers, &test);
	return 0;
}
