/* mlf_ps.c - the parameter server (or its replica): applies worker updates with momentum (paper eq. 2), answers pulls, evaluates. */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cluster.h"
#include "clock.h"
#include "log.h"
#include "mlf_payload.h"
#include "mlfabric.h"
#include "train.h"

#define DEFAULT_DATA "/usr/share/datasets/fashion-mnist"

/* Command-line settings (docs/fabric.md). */
struct ps_opts {
	const char *cluster, *host, *mode_name, *model, *records, *data, *sock;
	const char *server, *replication, *verify, *ckpt_dir, *restore;
	const char *init_from, *init_file; /* the model comes from a worker or a file (flat, not evaluated) */
	const char *shard;                 /* --shard K/S: this server holds slice K of S (§10.2) */
	const char *init_weights;          /* --init-weights: an MLP's pre-trained weights (version 0) */
	int shard_k, shard_n;
	enum mlf_mode mode;
	int workers, replica, model_given;
	double momentum, eval_every, timeout, div_max, init_timeout;
	long tau_max, ckpt_every;
	size_t eval_images;
	uint64_t seed;
};

/* The server: the model under a lock (the event thread applies, the main thread evaluates). */
struct ps {
	pthread_mutex_t lock;
	struct train_model m;
	struct cluster cl;
	FILE *applied_f;
	uint64_t applied, rx_bytes, rx_transfers, bad_updates;
	const char *ckpt_dir;   /* --checkpoint-dir */
	long ckpt_every;        /* --checkpoint-every: updates between checkpoints (0 = none) */
	uint64_t ckpt_next, checkpoints;
	double ckpt_seconds;
};

static volatile sig_atomic_t ps_stop;

static void ps_on_signal(int sig) { ps_stop = sig; }

static void ps_usage(FILE *f)
{
	fprintf(f,
		"usage: mlf-ps --cluster C.json --host H --mode mlfabric-a|mlfabric-s|async --workers N [options]\n"
		"       mlf-ps --replica --server PS --div-max D --cluster C.json --host H --mode M [options]\n"
		"Parameter server: holds the model, applies every update or aggregate the fabric hands\n"
		"it with momentum (paper eq. 2; an aggregate of m updates is one step, version += m),\n"
		"(mlfabric-s: the updates of an iteration are summed into one step, version += N),\n"
		"answers pulls, evaluates test accuracy. Stops on SIGTERM/SIGINT and writes server.json.\n"
		"With --replica it keeps a replica of server PS's model (docs/replication.md): applies the\n"
		"updates the fabric replicates to it (same flags as the server: model, momentum, seed),\n"
		"and once promoted (fail-over) serves and evaluates like the server.\n"
		"  --replica           run as the replica of --server PS\n"
		"  --server PS         the server host the replica copies\n"
		"  --div-max D         divergence bound ||w_server - w_replica||_2 (replica; default 1)\n"
		"  --replication R     mlfabric (planned update copies, default) or chain (server forwards)\n"
		"  --verify DIR        verification mode: write snapshots to DIR on the scheduler's command\n"
		"  --checkpoint-every N  write DIR/checkpoint.bin every N applied updates (0 = off, default)\n"
		"  --checkpoint-dir D  checkpoint directory (default: --records)\n"
		"  --restore FILE      start from checkpoint FILE (its model, momentum history, version)\n"
		"  --model SIZES       layer sizes (default 784,1024,10)\n"
		"  --init-from HOST    take the initial model from HOST (mlf_send_model, e.g. the torch\n"
		"                      example's root worker; its size and version are the sender's):\n"
		"                      a flat vector of any size, no MLP, not evaluated by mlf-ps\n"
		"                      (accuracy.jsonl stays empty: the sender's side evaluates)\n"
		"  --shard K/S         sharded servers (paper §10.2): this server holds slice K of S of\n"
		"                      the model (the same --model and --seed on every shard, equal\n"
		"                      contiguous slices); MLfabric-A or MLfabric-S; a shard does\n"
		"                      not evaluate (a worker with --eval-every does: docs/fabric.md)\n"
		"  --init-file F       the same from file F (raw little-endian float32, version 0);\n"
		"                      also for --replica (which cannot take --init-from)\n"
		"  --init-timeout S    seconds --init-from waits for the model (default 120)\n"
		"  --init-weights F    start the --model MLP from the pre-trained weights in file F (raw\n"
		"                      little-endian float32, exactly the model's parameter count) instead\n"
		"                      of --seed's initialisation; evaluated as usual; with --shard every\n"
		"                      shard takes its slice of F (the paper's Table 2 starts from a\n"
		"                      pre-trained model, §7); a --restore checkpoint replaces them\n"
		"  --momentum G        gamma of eq. 2 (default 0.9)\n"
		"  --tau-max T         delay bound in versions (default 8)\n"
		"  --eval-every S      seconds between evaluations (default 2)\n"
		"  --eval-images K     evaluate on the first K test images (default 1000)\n"
		"  --records DIR       write applied.jsonl, accuracy.jsonl, server.json there (default .)\n"
		"  --seed S            model initialisation seed (default 1)\n"
		"  --data DIR          Fashion-MNIST directory (default " DEFAULT_DATA ")\n"
		"  --sock PATH         dataplane socket (default /run/mlfabric/<cluster>-<host>.sock)\n"
		"  --timeout S         peer / scheduler silence that fails a wait (default 10)\n");
}

static int ps_parse(int argc, char **argv, struct ps_opts *o)
{
	static const struct option lo[] = {
		{ "cluster", 1, 0, 'c' }, { "host", 1, 0, 'H' }, { "mode", 1, 0, 'M' },
		{ "workers", 1, 0, 'w' }, { "model", 1, 0, 'm' }, { "momentum", 1, 0, 'g' },
		{ "tau-max", 1, 0, 'T' }, { "eval-every", 1, 0, 'e' }, { "eval-images", 1, 0, 'k' },
		{ "records", 1, 0, 'r' }, { "seed", 1, 0, 'S' }, { "data", 1, 0, 'd' },
		{ "sock", 1, 0, 's' }, { "timeout", 1, 0, 't' }, { "help", 0, 0, 'h' },
		{ "replica", 0, 0, 'R' }, { "server", 1, 0, 'P' }, { "div-max", 1, 0, 'D' },
		{ "replication", 1, 0, 'L' }, { "verify", 1, 0, 'V' }, { "checkpoint-every", 1, 0, 'C' },
		{ "checkpoint-dir", 1, 0, 'K' }, { "restore", 1, 0, 'E' }, { "init-from", 1, 0, 'I' },
		{ "init-file", 1, 0, 'F' }, { "init-timeout", 1, 0, 'W' }, { "shard", 1, 0, 'X' },
		{ "init-weights", 1, 0, 'N' },
		{ 0, 0, 0, 0 },
	};
	int c;

	*o = (struct ps_opts){ .model = "784,1024,10", .records = ".", .data = DEFAULT_DATA,
			       .momentum = 0.9, .eval_every = 2, .timeout = 10, .tau_max = 8,
			       .eval_images = 1000, .seed = 1, .div_max = 1, .replication = "mlfabric",
			       .init_timeout = 120 };
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'c': o->cluster = optarg; break;
		case 'H': o->host = optarg; break;
		case 'M': o->mode_name = optarg; break;
		case 'w': o->workers = atoi(optarg); break;
		case 'm': o->model = optarg; o->model_given = 1; break;
		case 'g': o->momentum = atof(optarg); break;
		case 'T': o->tau_max = atol(optarg); break;
		case 'e': o->eval_every = atof(optarg); break;
		case 'k': o->eval_images = strtoul(optarg, NULL, 10); break;
		case 'r': o->records = optarg; break;
		case 'S': o->seed = strtoull(optarg, NULL, 10); break;
		case 'd': o->data = optarg; break;
		case 's': o->sock = optarg; break;
		case 't': o->timeout = atof(optarg); break;
		case 'R': o->replica = 1; break;
		case 'P': o->server = optarg; break;
		case 'D': o->div_max = atof(optarg); break;
		case 'L': o->replication = optarg; break;
		case 'V': o->verify = optarg; break;
		case 'C': o->ckpt_every = atol(optarg); break;
		case 'K': o->ckpt_dir = optarg; break;
		case 'E': o->restore = optarg; break;
		case 'I': o->init_from = optarg; break;
		case 'F': o->init_file = optarg; break;
		case 'W': o->init_timeout = atof(optarg); break;
		case 'X': o->shard = optarg; break;
		case 'N': o->init_weights = optarg; break;
		case 'h': ps_usage(stdout); return 1;
		default: ps_usage(stderr); return -1;
		}
	}
	if (optind < argc)
		return fprintf(stderr, "mlf-ps: unexpected argument '%s'\n", argv[optind]), -1;
	if (!o->cluster || !o->host || !o->mode_name)
		return fprintf(stderr, "mlf-ps: --cluster, --host and --mode are required (see --help)\n"), -1;
	if (mlf_mode_parse(o->mode_name, &o->mode))
		return fprintf(stderr, "mlf-ps: unknown --mode '%s' (mlfabric-a, mlfabric-s, async)\n", o->mode_name), -1;
	if ((o->workers < 1 && !o->replica) || o->workers < 0 || o->tau_max < 0 || o->eval_every <= 0 || o->timeout <= 0)
		return fprintf(stderr, "mlf-ps: --workers must be >= 1, --tau-max >= 0, --eval-every and --timeout > 0\n"), -1;
	if (o->replica && !o->server)
		return fprintf(stderr, "mlf-ps: --replica needs --server PS (the server host it copies)\n"), -1;
	if (o->replica && (o->div_max < 0 || (strcmp(o->replication, "mlfabric") && strcmp(o->replication, "chain"))))
		return fprintf(stderr, "mlf-ps: --div-max must be >= 0 and --replication mlfabric or chain\n"), -1;
	if (o->init_from && o->init_file)
		return fprintf(stderr, "mlf-ps: --init-from and --init-file exclude each other\n"), -1;
	if (o->init_weights && (o->init_from || o->init_file))
		return fprintf(stderr, "mlf-ps: --init-weights excludes --init-from and --init-file\n"), -1;
	if (o->init_from && o->replica)
		return fprintf(stderr, "mlf-ps: --init-from is for the server (workers send the initial model to it); "
			       "a replica takes --init-file F\n"), -1;
	if (o->init_timeout <= 0)
		return fprintf(stderr, "mlf-ps: --init-timeout must be > 0\n"), -1;
	if (!(o->momentum >= 0 && o->momentum < 1))
		return fprintf(stderr, "mlf-ps: bad --momentum %g (must be in [0, 1))\n", o->momentum), -1;
	if (o->ckpt_every < 0)
		return fprintf(stderr, "mlf-ps: --checkpoint-every must be >= 0\n"), -1;
	if (o->shard && (train_shard_parse(o->shard, &o->shard_k, &o->shard_n) || o->shard_n < 2 || o->shard_n > 32))
		return fprintf(stderr, "mlf-ps: bad --shard '%s': expected K/S with 0 <= K < S, 2 <= S <= 32\n", o->shard), -1;
	if (o->shard && (o->replica || o->init_from || o->init_file || o->restore || o->mode == MLF_MODE_DIRECT))
		return fprintf(stderr, "mlf-ps: --shard serves --mode mlfabric-a or mlfabric-s, without --replica, --init-from, "
			       "--init-file or --restore\n"), -1;
	if (!o->ckpt_dir)
		o->ckpt_dir = o->records;
	return 0;
}

/*
 * --shard K/S: keep only slice K of the whole model (floats [K n / S, (K + 1) n / S)) as a flat
 * model; *@off and *@total say where it sits. 0, or -1 after one error line.
 */
static int ps_take_shard(struct ps *ps, const struct ps_opts *o, size_t *off, size_t *total)
{
	struct train_model whole = ps->m;
	size_t n = whole.n, lo = n * (size_t)o->shard_k / (size_t)o->shard_n;
	size_t hi = n * (size_t)(o->shard_k + 1) / (size_t)o->shard_n;

	if (hi <= lo)
		return log_err("--shard %s: the model's %zu floats leave this shard empty", o->shard, n), -1;
	if (train_model_init_flat(&ps->m, whole.w + lo, hi - lo, whole.version, o->momentum) < 0) {
		ps->m = whole;
		return log_err("--shard %s: no memory for a slice of %zu floats", o->shard, hi - lo), -1;
	}
	train_model_free(&whole);
	*off = lo;
	*total = n;
	log_info("shard %d of %d: floats [%zu, %zu) of %zu", o->shard_k, o->shard_n, lo, hi, n);
	return 0;
}

/* Name of the worker host that made update @id ((host index + 1) << 40 | sequence, control.md). */
static const char *ps_update_worker(const struct cluster *cl, uint64_t id)
{
	uint64_t h = id >> 40;

	return h >= 1 && h <= (uint64_t)cl->n_hosts ? cl->hosts[h - 1].name : "?";
}

/* Checkpoint (event thread, lock held): blocks the apply as a checkpointing server does. */
static void ps_checkpoint(struct ps *ps)
{
	char path[4096], err[512];
	double t = clock_real_s();

	snprintf(path, sizeof(path), "%s/checkpoint.bin", ps->ckpt_dir);
	ps->ckpt_next = ps->applied + (uint64_t)ps->ckpt_every;
	if (train_checkpoint_write(&ps->m, path, err, sizeof(err)) < 0) {
		log_err("%s", err);
		return;
	}
	ps->checkpoints++;
	ps->ckpt_seconds += clock_real_s() - t;
	log_debug("checkpoint at version %lld written to %s in %.3f s", (long long)ps->m.version, path,
		  clock_real_s() - t);
}

/* State callback (event thread): model w and momentum history h (docs/replication.md). */
static int64_t ps_get_state(void *arg, float *w, float *h, size_t n)
{
	struct ps *ps = arg;
	int64_t v;

	pthread_mutex_lock(&ps->lock);
	v = n == ps->m.n ? train_state_get(&ps->m, w, h) : ps->m.version;
	pthread_mutex_unlock(&ps->lock);
	return v;
}

/* State callback (event thread): a replica's catch-up installs the server's state. */
static int ps_set_state(void *arg, const float *w, const float *h, size_t n, int64_t version)
{
	struct ps *ps = arg;

	if (n != ps->m.n)
		return -EINVAL;
	pthread_mutex_lock(&ps->lock);
	train_state_set(&ps->m, w, h, version);
	pthread_mutex_unlock(&ps->lock);
	log_info("state installed: version %lld (history norm %g)", (long long)version, train_history_norm(&ps->m));
	return 0;
}

/* Update callback (event thread): apply with eq. 2, one applied.jsonl line per part. */
static int64_t ps_on_update(void *arg, const struct mlf_update *u)
{
	struct ps *ps = arg;
	const struct mlf_update_hdr *h = u->hdr;
	int64_t at, now, parts = h->n_parts ? h->n_parts : 1;
	double t = clock_real_s();

	pthread_mutex_lock(&ps->lock);
	at = ps->m.version;
	if (u->n != ps->m.n || h->n_parts > MLF_UPDATE_MAX_PARTS) {
		ps->bad_updates++;
		pthread_mutex_unlock(&ps->lock);
		log_warn("transfer %llu from %s: %zu floats, %u parts (model has %zu floats): not applied",
			 (unsigned long long)u->xfer, u->src, u->n, h->n_parts, ps->m.n);
		return at;
	}
	now = train_apply(&ps->m, u->u, parts);
	ps->applied += (uint64_t)parts;
	ps->rx_bytes += mlf_payload_bytes(u->n);
	ps->rx_transfers++;
	if (ps->ckpt_every > 0 && ps->applied >= ps->ckpt_next)
		ps_checkpoint(ps);
	pthread_mutex_unlock(&ps->lock);
	for (uint32_t i = 0; i < h->n_parts; i++) {
		const struct mlf_update_part *p = &h->parts[i];
		train_rec_line(ps->applied_f,
			       json_pack("{s:f,s:I,s:s,s:I,s:s,s:I,s:I,s:I,s:i}", "t", t, "xfer",
					 (json_int_t)u->xfer, "src", u->src, "id", (json_int_t)p->id, "worker",
					 ps_update_worker(&ps->cl, p->id), "version", (json_int_t)p->version,
					 "at", (json_int_t)at, "delay", (json_int_t)(at - p->version), "parts",
					 (int)h->n_parts));
	}
	return now;
}

/* Request callback (event thread): the model snapshot answering a pull. */
static int64_t ps_on_request(void *arg, float *model, size_t n)
{
	struct ps *ps = arg;
	int64_t v;

	pthread_mutex_lock(&ps->lock);
	memcpy(model, ps->m.w, sizeof(float) * (n < ps->m.n ? n : ps->m.n));
	v = ps->m.version;
	pthread_mutex_unlock(&ps->lock);
	return v;
}

/* --init-file: the flat model of file @o->init_file at version 0. 0, or -1 after one error line. */
static int ps_init_file(struct ps *ps, const struct ps_opts *o)
{
	char err[512];
	float *w;
	size_t n;
	int rc;

	if (train_f32_read(o->init_file, &w, &n, err, sizeof(err)) < 0) {
		log_err("bad --init-file %s", err);
		return -1;
	}
	rc = train_model_init_flat(&ps->m, w, n, 0, o->momentum);
	free(w);
	if (rc < 0) {
		log_err("--init-file %s: no memory for a model of %zu floats", o->init_file, n);
		return -1;
	}
	log_info("initial model of %zu floats read from %s", n, o->init_file);
	return 0;
}

/* --init-from: wait for the model host @o->init_from sends (mlf_send_model). 0, or -1 after an error line. */
static int ps_init_from(struct ps *ps, const struct ps_opts *o, mlf_t *f)
{
	float *w = NULL;
	size_t n = 0;
	int64_t version = 0;
	int rc;

	log_info("waiting for the initial model from %s", o->init_from);
	if ((rc = mlf_recv_model(f, o->init_from, &w, &n, &version, o->init_timeout)) < 0) {
		log_err("--init-from %s: %s", o->init_from, mlf_error(f));
		return -1;
	}
	rc = train_model_init_flat(&ps->m, w, n, version, o->momentum);
	free(w);
	if (rc < 0) {
		log_err("--init-from %s: no memory for a model of %zu floats", o->init_from, n);
		return -1;
	}
	log_info("initial model of %zu floats at version %lld received from %s", n, (long long)version, o->init_from);
	return 0;
}

/* Evaluate a snapshot (taken under the lock, evaluated outside it); one accuracy.jsonl line.
 * With @f (NULL after close) the loss also goes to the scheduler (`loss`: ADSP's reward). */
static void ps_evaluate(struct ps *ps, mlf_t *f, const struct mlp_shape *s,
			const struct idx_dataset *test, size_t k, float *snap, FILE *acc_f, double t0)
{
	int64_t v;
	uint64_t applied;
	double acc, loss, t = clock_real_s();

	v = ps_on_request(ps, snap, ps->m.n);
	pthread_mutex_lock(&ps->lock);
	applied = ps->applied;
	pthread_mutex_unlock(&ps->lock);
	if (train_eval(s, snap, test, k, &acc, &loss)) {
		log_warn("evaluation at version %lld: out of memory", (long long)v);
		return;
	}
	train_rec_line(acc_f, json_pack("{s:f,s:I,s:f,s:f}", "t", t, "version", (json_int_t)v,
					"accuracy", acc, "loss", loss));
	log_info("t=%.1fs version %lld applied %llu accuracy %.4f loss %.4f", t - t0, (long long)v,
		 (unsigned long long)applied, acc, loss);
	if (f && loss > 0 && mlf_report_loss(f, t, loss, v))
		log_warn("loss report to the scheduler failed: %s", mlf_error(f));
}

int main(int argc, char **argv)
{
	struct ps_opts o;
	struct ps ps = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct mlp_shape shape;
	struct idx_dataset test;
	struct mlf_opts fo = { 0 };
	struct mlf_params par = { 0 };
	char err[512], comp[64];
	FILE *acc_f;
	mlf_t *f;
	float *snap = NULL;
	const char *src;
	double t0, promoted_at = 0;
	int rc = ps_parse(argc, argv, &o), flat;

	if (rc)
		return rc > 0 ? 0 : 2;
	snprintf(comp, sizeof(comp), "ps[%s]", o.host);
	log_component = comp;
	src = o.init_from ? o.init_from : o.init_file;
	flat = src != NULL || o.shard != NULL;
	memset(&test, 0, sizeof(test));
	if (src && o.model_given)
		log_warn("--model %s ignored: the model comes from %s", o.model, src);
	if (!src) {
		if (mlp_shape_parse(o.model, &shape) || shape.sizes[0] != 784 || shape.sizes[shape.n_layers] != 10)
			return log_err("bad --model '%s': layer sizes like 784,1024,10 (784 inputs, 10 outputs)", o.model), 2;
		if (train_model_init(&ps.m, &shape, o.seed, o.momentum))
			return log_err("no memory for the model '%s'", o.model), 2;
		if (o.init_weights) {
			if (train_init_weights(&ps.m, o.init_weights, err, sizeof(err)))
				return log_err("bad --init-weights %s", err), 2;
			log_info("model %s starts from the weights in %s", o.model, o.init_weights);
		}
	} else if (o.init_file && ps_init_file(&ps, &o) < 0) {
		return 2;
	}
	if (o.ckpt_every > 0 && mkdir(o.ckpt_dir, 0755) < 0 && errno != EEXIST)
		return log_err("--checkpoint-dir %s: %s", o.ckpt_dir, strerror(errno)), 1;
	ps.ckpt_dir = o.ckpt_dir;
	ps.ckpt_every = o.ckpt_every;
	ps.ckpt_next = (uint64_t)o.ckpt_every;
	if (cluster_load(o.cluster, &ps.cl, err, sizeof(err)))
		return log_err("%s", err), 1;
	size_t sh_off = 0, sh_total = 0;
	if (o.shard && ps_take_shard(&ps, &o, &sh_off, &sh_total) < 0)
		return 2;
	if (!flat && train_load(o.data, 1, o.eval_images, &test, err, sizeof(err)))
		return log_err("%s", err), 1;

	fo.cluster = o.cluster;
	fo.host = o.host;
	fo.sock = o.sock;
	fo.mode = o.mode;
	fo.timeout_s = o.timeout;
	fo.verify_dir = o.verify;
	f = mlf_open(&fo, err, sizeof(err));
	if (!f)
		return log_err("cannot open the fabric endpoint: %s", err), 1;
	/* the record files first: readers find them (empty) while --init-from waits */
	if (!(ps.applied_f = train_rec_open(o.records, "applied.jsonl", err, sizeof(err))) ||
	    !(acc_f = train_rec_open(o.records, "accuracy.jsonl", err, sizeof(err)))) {
		log_err("%s", err);
		mlf_close(f);
		return 1;
	}
	if (o.init_from && ps_init_from(&ps, &o, f) < 0) {
		mlf_close(f);
		return 1;
	}
	if (o.restore && train_checkpoint_read(&ps.m, o.restore, err, sizeof(err))) {
		log_err("--restore: %s", err);
		mlf_close(f);
		return 1;
	}
	if (o.restore)
		log_info("restored version %lld from %s", (long long)ps.m.version, o.restore);
	if (!flat && !(snap = malloc(sizeof(float) * ps.m.n))) {
		log_err("no memory for a model snapshot (%zu floats)", ps.m.n);
		mlf_close(f);
		return 1;
	}
	par.tau_max = o.tau_max;
	par.momentum = o.momentum;
	par.n_workers = o.workers;
	par.div_max = o.div_max;
	mlf_set_state_callbacks(f, ps_get_state, ps_set_state, &ps);
	if (o.replica) {
		/* the scheduler refuses a replica while no server is registered: retry until --timeout */
		double until = clock_real_s() + o.timeout;
		while ((rc = mlf_register_as_replica(f, o.server, &par, ps.m.n, ps.m.version,
						     strcmp(o.replication, "chain") ? MLF_REPL_MLFABRIC : MLF_REPL_CHAIN,
						     ps_on_update, ps_on_request, &ps)) == -EINVAL &&
		       clock_real_s() < until) {
			log_warn("register as replica: %s; retrying", mlf_error(f));
			usleep(500000);
		}
	} else {
		rc = o.shard ? mlf_set_server_shard(f, o.shard_k, o.shard_n, sh_off, sh_total) : 0;
		if (!rc)
			rc = mlf_register_as_server(f, &par, ps.m.n, ps.m.version, ps_on_update, ps_on_request, &ps);
	}
	if (rc) {
		log_err("register as %s: %s", o.replica ? "replica" : "server", mlf_error(f));
		mlf_close(f);
		return 1;
	}
	signal(SIGTERM, ps_on_signal);
	signal(SIGINT, ps_on_signal);
	t0 = clock_real_s();
	if (o.replica)
		log_info("replica of %s (%zu parameters, %s replication, divergence bound %g) from version %lld",
			 o.server, ps.m.n, o.replication, o.div_max, (long long)ps.m.version);
	else if (o.shard)
		log_info("serving shard %d/%d of %s (%zu of %zu parameters) in mode %s for %d workers, delay bound %ld",
			 o.shard_k, o.shard_n, o.model, ps.m.n, sh_total, o.mode_name, o.workers, o.tau_max);
	else if (flat)
		log_info("serving the model from %s (%zu parameters, version %lld) in mode %s for %d workers, "
			 "delay bound %ld", src, ps.m.n, (long long)ps.m.version, o.mode_name, o.workers, o.tau_max);
	else
		log_info("serving %s (%zu parameters) in mode %s for %d workers, delay bound %ld", o.model,
			 ps.m.n, o.mode_name, o.workers, o.tau_max);
	if (src)
		log_info("model of %zu floats from %s: not evaluated by mlf-ps", ps.m.n, src);
	while (!ps_stop) {
		double next = clock_real_s() + o.eval_every;
		int serving = !strcmp(mlf_role(f), "server");
		if (o.replica && serving && !promoted_at) {
			promoted_at = clock_real_s();
			log_info("promoted to server at version %lld: evaluating from now on", (long long)ps.m.version);
		}
		if (serving && !flat)
			ps_evaluate(&ps, f, &shape, &test, o.eval_images, snap, acc_f, t0);
		while (!ps_stop && clock_real_s() < next && (serving || strcmp(mlf_role(f), "server")))
			usleep(20000);
	}
	mlf_close(f);
	if ((!o.replica || promoted_at) && !flat)
		ps_evaluate(&ps, NULL, &shape, &test, o.eval_images, snap, acc_f, t0);
	log_info("stopping on signal %d: version %lld, %llu updates applied in %llu transfers",
		 (int)ps_stop, (long long)ps.m.version, (unsigned long long)ps.applied,
		 (unsigned long long)ps.rx_transfers);
	if (ps.bad_updates)
		log_warn("%llu transfers had the wrong size and were not applied", (unsigned long long)ps.bad_updates);
	json_t *sj = json_pack("{s:I,s:I,s:I,s:I,s:s,s:f,s:I,s:f}", "applied", (json_int_t)ps.applied,
			       "version", (json_int_t)ps.m.version, "rx_bytes", (json_int_t)ps.rx_bytes,
			       "rx_transfers", (json_int_t)ps.rx_transfers, "role",
			       o.replica && !promoted_at ? "replica" : "server", "history_norm",
			       train_history_norm(&ps.m), "checkpoints", (json_int_t)ps.checkpoints,
			       "checkpoint_s", ps.ckpt_seconds);
	if (promoted_at)
		json_object_set_new(sj, "promoted_at", json_real(promoted_at));
	if (o.replica)
		json_object_set_new(sj, "replica_of", json_string(o.server));
	rc = train_rec_file(o.records, "server.json", sj, err, sizeof(err));
	if (rc)
		log_err("%s", err);
	fclose(ps.applied_f);
	fclose(acc_f);
	free(snap);
	idx_free(&test);
	cluster_free(&ps.cl);
	train_model_free(&ps.m);
	return rc ? 1 : 0;
}
