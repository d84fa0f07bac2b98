/* mlf_rrsync.c - the RR-Sync baseline (paper §7): synchronous SGD with an MPI ring allreduce of the gradients. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "clock.h"
#include "log.h"
#include "train.h"
#include "vec.h"

#define DEFAULT_DATA "/usr/share/datasets/fashion-mnist"

/* Command-line settings (docs/fabric.md). */
struct rr_opts {
	const char *model, *straggle, *records, *data;
	const char *init_weights; /* --init-weights: pre-trained weights to start from (raw float32) */
	int batch;
	double lr, momentum, eval_every, time_limit, target, compute_min;
	size_t eval_images, train_images;
	long iterations;
	uint64_t seed;
	const char *speeds; /* --speeds F0,F1,...: rank i's every iteration Fi times slower */
	double speeds_at;   /* --speeds-at T: from T seconds after the start */
};

static volatile sig_atomic_t rr_stop_signal;

static void rr_on_signal(int sig) { rr_stop_signal = sig; }

static void rr_usage(FILE *f)
{
	fprintf(f,
		"usage: mpirun ... mlf-rrsync [options]   (RR-Sync baseline, paper §7)\n"
		"Every rank trains on its shard of Fashion-MNIST; each iteration the ranks sum their\n"
		"mini-batch gradients with MPI_Allreduce and apply the averaged update with momentum\n"
		"(paper eq. 2). Rank 0 evaluates and writes accuracy.jsonl and iterations.jsonl.\n"
		"  --model SIZES          layer sizes (default 784,1024,10)\n"
		"  --batch N              mini-batch per rank (default 32)\n"
		"  --lr X                 learning rate: u = -lr * mean gradient (default 0.05)\n"
		"  --momentum G           gamma of eq. 2 (default 0.9)\n"
		"  --straggle R,S|C1..C3  slow an iteration down by S with probability R (default none)\n"
		"  --eval-every S         seconds between evaluations on rank 0 (default 2)\n"
		"  --init-weights F       start from the pre-trained weights in file F (raw little-endian\n"
		"                         float32, the model's parameter count) instead of --seed's\n"
		"                         initialisation (the paper's Table 2 starts from a pre-trained\n"
		"                         model, §7); every rank reads F\n"
		"  --eval-images K        evaluate on the first K test images (default 1000)\n"
		"  --train-images N       shard the first N training images (default 60000)\n"
		"  --records DIR          write rank 0's record files there (default: none)\n"
		"  --data DIR             Fashion-MNIST directory (default " DEFAULT_DATA ")\n"
		"  --time-limit S         stop after S seconds (default 240)\n"
		"  --target-accuracy A    stop when the test accuracy reaches A (default: never)\n"
		"  --iterations N         stop after N iterations (default: no limit)\n"
		"  --seed S               model init and sampling seed (default 1)\n"
		"  --compute-s T          emulated accelerator: a gradient takes at least T seconds\n"
		"                         (sleeps the rest; stragglers multiply it; default 0 = CPU time)\n"
		"  --speeds F0,F1,...     deterministic stragglers: rank i's every iteration\n"
		"                         Fi >= 1 times slower (one factor per rank; default none)\n"
		"  --speeds-at T          ... from T seconds after the start (default 0)\n");
}

/* Rank @rank's factor in the --speeds list @list of @size factors >= 1 (1 without a list);
 * -1 when the list is malformed or has not one factor per rank. */
static double rr_speed(const char *list, int rank, int size)
{
	double f = 1, got = 1;
	int i = 0;
	char *end;

	if (!list)
		return 1;
	for (const char *p = list;; p = end + 1, i++) {
		f = strtod(p, &end);
		if (end == p || !(f >= 1 && f <= 1000) || (*end && *end != ','))
			return -1;
		if (i == rank)
			got = f;
		if (!*end)
			break;
	}
	return i + 1 == size ? got : -1;
}

static int rr_parse(int argc, char **argv, struct rr_opts *o)
{
	static const struct option lo[] = {
		{ "model", 1, 0, 'm' }, { "batch", 1, 0, 'b' }, { "lr", 1, 0, 'l' },
		{ "momentum", 1, 0, 'g' }, { "straggle", 1, 0, 's' }, { "eval-every", 1, 0, 'e' },
		{ "eval-images", 1, 0, 'k' }, { "train-images", 1, 0, 'n' }, { "records", 1, 0, 'r' },
		{ "data", 1, 0, 'd' }, { "time-limit", 1, 0, 't' }, { "target-accuracy", 1, 0, 'a' },
		{ "iterations", 1, 0, 'i' }, { "seed", 1, 0, 'S' }, { "compute-s", 1, 0, 'C' }, { "help", 0, 0, 'h' },
		{ "speeds", 1, 0, 'F' }, { "speeds-at", 1, 0, 'T' }, { "init-weights", 1, 0, 'W' }, { 0, 0, 0, 0 },
	};
	int c;

	*o = (struct rr_opts){ .model = "784,1024,10", .straggle = "none", .data = DEFAULT_DATA,
			       .batch = 32, .lr = 0.05, .momentum = 0.9, .eval_every = 2,
			       .time_limit = 240, .target = 2, .eval_images = 1000,
			       .train_images = 60000, .seed = 1 };
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'm': o->model = optarg; break;
		case 'b': o->batch = atoi(optarg); break;
		case 'l': o->lr = atof(optarg); break;
		case 'g': o->momentum = atof(optarg); break;
		case 's': o->straggle = optarg; break;
		case 'e': o->eval_every = atof(optarg); break;
		case 'k': o->eval_images = strtoul(optarg, NULL, 10); break;
		case 'n': o->train_images = strtoul(optarg, NULL, 10); break;
		case 'r': o->records = optarg; break;
		case 'd': o->data = optarg; break;
		case 'W': o->init_weights = optarg; break;
		case 't': o->time_limit = atof(optarg); break;
		case 'a': o->target = atof(optarg); break;
		case 'i': o->iterations = atol(optarg); break;
		case 'S': o->seed = strtoull(optarg, NULL, 10); break;
		case 'C': o->compute_min = atof(optarg); break;
		case 'F': o->speeds = optarg; break;
		case 'T': o->speeds_at = atof(optarg); break;
		case 'h': rr_usage(stdout); return 1;
		default: rr_usage(stderr); return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "mlf-rrsync: unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	if (!(o->speeds_at >= 0)) {
		fprintf(stderr, "mlf-rrsync: bad --speeds-at %g (seconds >= 0)\n", o->speeds_at);
		return -1;
	}
	if (o->batch < 1 || o->eval_every <= 0 || o->time_limit <= 0 || o->train_images < 1) {
		fprintf(stderr, "mlf-rrsync: --batch, --eval-every, --time-limit, --train-images must be positive\n");
		return -1;
	}
	return 0;
}

/* Rank 0's state: test set, record files, evaluation clock. */
struct rr_root {
	struct idx_dataset test;
	FILE *acc, *iters;
	double t0, next_eval, last_acc;
	long last_eval_it; /* iteration of the last evaluation, -1 before the first */
};

static void rr_evaluate(struct rr_root *r, const struct rr_opts *o, const struct mlp_shape *s,
			const float *w, long it)
{
	double acc, loss, t = clock_real_s();

	if (train_eval(s, w, &r->test, o->eval_images, &acc, &loss)) {
		log_warn("evaluation at iteration %ld: out of memory", it);
		return;
	}
	r->last_acc = acc;
	r->last_eval_it = it;
	train_rec_line(r->acc, json_pack("{s:f,s:I,s:I,s:f,s:f}", "t", t, "version", (json_int_t)it,
					 "iteration", (json_int_t)it, "accuracy", acc, "loss", loss));
	log_info("iteration %ld  t=%.1fs  accuracy %.4f  loss %.4f", it, t - r->t0, acc, loss);
}

static void rr_fatal(const char *what)
{
	log_err("%s", what);
	MPI_Abort(MPI_COMM_WORLD, 1);
	exit(1);
}

int main(int argc, char **argv)
{
	struct rr_opts o;
	struct mlp_shape shape;
	struct train_model m;
	struct train_straggle st;
	struct idx_dataset shard;
	struct rr_root root = { 0 };
	char err[512], comp[32];
	int rank, size, rc;
	uint64_t rng;
	long it = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	snprintf(comp, sizeof(comp), "rrsync[%d]", rank);
	log_component = comp;
	rc = rr_parse(argc, argv, &o);
	if (rc) {
		MPI_Finalize();
		return rc > 0 ? 0 : 2;
	}
	if (mlp_shape_parse(o.model, &shape))
		rr_fatal("bad --model: expected positive layer sizes like 784,1024,10");
	if (shape.sizes[0] != 784 || shape.sizes[shape.n_layers] != 10)
		rr_fatal("bad --model: Fashion-MNIST needs 784 inputs and 10 outputs");
	if (train_straggle_parse(o.straggle, o.seed * 1000003u + (uint64_t)rank, &st))
		rr_fatal("bad --straggle: expected R,S with R in [0,1] and S >= 1, or C1, C2, C3, none");
	if (train_model_init(&m, &shape, o.seed, o.momentum))
		rr_fatal("bad --momentum (must be in [0, 1)) or out of memory for the model");
	if (o.init_weights && train_init_weights(&m, o.init_weights, err, sizeof(err))) {
		char msg[sizeof(err) + 32];
		snprintf(msg, sizeof(msg), "bad --init-weights %s", err);
		rr_fatal(msg);
	}
	if (train_load_shard(o.data, o.train_images, rank, size, &shard, err, sizeof(err)))
		rr_fatal(err);
	double speed = rr_speed(o.speeds, rank, size);
	if (speed < 0)
		rr_fatal("bad --speeds: one factor in [1, 1000] per rank, comma-separated");
	rng = o.seed * 7919u + (uint64_t)rank + 1;
	if (rank == 0) {
		if (train_load(o.data, 1, o.eval_images, &root.test, err, sizeof(err)))
			rr_fatal(err);
		if (o.records && (!(root.acc = train_rec_open(o.records, "accuracy.jsonl", err, sizeof(err))) ||
				  !(root.iters = train_rec_open(o.records, "iterations.jsonl", err, sizeof(err)))))
			rr_fatal(err);
		signal(SIGTERM, rr_on_signal);
		signal(SIGINT, rr_on_signal);
		log_info("%d ranks, model %s (%zu parameters), shard of %zu images per rank", size,
			 o.model, m.n, shard.n);
	}

	/* the gradient buffer carries one extra float: rank 0's stop decision, summed with the rest */
	float *buf = malloc(sizeof(float) * (m.n + 1));
	float *x = malloc(sizeof(float) * (size_t)o.batch * 784);
	uint8_t *y = malloc((size_t)o.batch);
	if (!buf || !x || !y)
		rr_fatal("out of memory for the gradient buffers");
	MPI_Barrier(MPI_COMM_WORLD);
	root.t0 = clock_real_s(); /* every rank's start (the --speeds-at clock) */
	root.next_eval = root.t0;
	root.last_eval_it = -1;
	for (;;) {
		double t_start = clock_real_s(), compute_s, allreduce_s, factor;

		if (rank == 0 && t_start >= root.next_eval) {
			rr_evaluate(&root, &o, &shape, m.w, it);
			root.next_eval = clock_real_s() + o.eval_every;
		}
		t_start = clock_real_s();
		train_sample_batch(&shard, 0, shard.n, o.batch, &rng, x, y);
		if (mlp_grad(&shape, m.w, x, y, o.batch, buf) < 0)
			rr_fatal("out of memory computing the gradient");
		compute_s = train_compute_pad(t_start, o.compute_min);
		factor = train_straggle_next(&st) * (clock_real_s() - root.t0 >= o.speeds_at ? speed : 1);
		train_straggle_sleep(compute_s, factor);
		buf[m.n] = 0;
		if (rank == 0 && (rr_stop_signal || root.last_acc >= o.target ||
				  clock_real_s() - root.t0 >= o.time_limit || (o.iterations && it >= o.iterations)))
			buf[m.n] = 1;
		double t_ar = clock_real_s();
		MPI_Allreduce(MPI_IN_PLACE, buf, (int)(m.n + 1), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		allreduce_s = clock_real_s() - t_ar;
		if (buf[m.n] > 0.5f)
			break;
		vec_scale_f32(buf, (float)(-o.lr / size), m.n); /* u = -lr * mean gradient (eq. 1) */
		train_apply(&m, buf, 1);
		it++;
		if (rank == 0)
			train_rec_line(root.iters, json_pack("{s:f,s:I,s:f,s:f,s:b}", "t", clock_real_s(),
							     "iteration", (json_int_t)it, "compute_s", compute_s,
							     "allreduce_s", allreduce_s, "straggled", factor > 1));
	}
	if (rank == 0) {
		if (root.last_eval_it != it)
			rr_evaluate(&root, &o, &shape, m.w, it);
		log_info("stopped after %ld iterations, %.1f s: %s", it, clock_real_s() - root.t0,
			 rr_stop_signal ? "signal" : root.last_acc >= o.target ? "target accuracy reached" :
			 (o.iterations && it >= o.iterations) ? "iteration limit" : "time limit");
		if (root.acc)
			fclose(root.acc);
		if (root.iters)
			fclose(root.iters);
		idx_free(&root.test);
	}
	free(buf);
	free(x);
	free(y);
	idx_free(&shard);
	train_model_free(&m);
	MPI_Finalize();
	return 0;
}
