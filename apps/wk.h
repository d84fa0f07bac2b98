/* wk.h - mlf-worker's training algorithms behind one interface (struct wk_algo) and what they share with its core. */
#ifndef WK_H
#define WK_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "mlfabric.h"
#include "mlp.h"
#include "train_local.h"
#include "train_rec.h"

/** The worker's common settings (docs/apps.md "mlf-worker"): those of every --system. */
struct wk_opts {
	const char *cluster, *host, *server, *system, *model, *straggle, *records, *data, *sock;
	int shard_i, shard_n, batch;
	double lr, duration, timeout, compute_min, eval_every;
	double speed, speed_at; /* --speed F[@T]: every iteration F times slower from T s after the
				 * start (a deterministic straggler; 1 = off) */
	int by_label;     /* --shard-by-label: a non-i.i.d. shard (its classes only) */
	size_t eval_images;
	long iterations;
	size_t train_images;
	uint64_t seed;
};

/**
 * What the core and the running algorithm share: the fabric, the model buffers and the counters
 * that end up in worker.json and pushes.jsonl. The core fills everything but @wr and @priv's
 * contents; an algorithm's init allocates @wr when it needs it (the core frees it).
 */
struct wk_run {
	const struct wk_opts *o;
	const struct wk_algo *algo; /* the --system in force */
	void *priv;          /* the algorithm's own settings and state (algo->priv_size bytes, zeroed) */
	mlf_t *f;
	const struct mlp_shape *shape;
	struct train_local L; /* the local steps and one-gradient iterations' data, scratch, rng */
	size_t n;            /* model floats */
	float *w;            /* the model the next gradient is computed from */
	float *wr;           /* a second model buffer (local copy, next model; NULL if unused) */
	float *u;            /* the update pushed (n floats) */
	int64_t version;     /* the version of w */
	long it, straggled;  /* iterations (rounds, commits: the algorithm's unit); slowed by a straggler */
	double t0, busy, next_progress; /* start (CLOCK_REALTIME s); seconds computing and pushing */
	FILE *pushes;        /* pushes.jsonl */
};

/** What an iteration tells the loop: go on, stop after an error (exit status 1), or stop
 * without one (a signal, --duration reached while waiting). */
enum { WK_GO = 0, WK_ERR = 1, WK_END = 2 };

/** One option of an algorithm (getopt_long's name and has_arg), with its --help text; or an
 * old spelling that selected the algorithm, refused with the new one whatever the --system. */
struct wk_opt {
	const char *name;  /* without the leading "--" */
	int has_arg;       /* 0 or 1 */
	const char *help;  /* usage lines, "  --name ARG   text\n" (may span lines; NULL: retired) */
	const char *now;   /* retired: the new spelling, each "%s" standing for the argument */
};

/**
 * A training algorithm of mlf-worker, chosen by --system NAME. The core parses the common
 * options, hands each of @opts to @option, then calls check, loads the data, opens the fabric
 * and calls init; each loop iteration calls pull (if set), evaluates, then iteration; at the end
 * record, then close. Several table entries may share ops (e.g. mlfabric-a and ssp).
 */
struct wk_algo {
	const char *name;        /* the --system name (the experiment files' system name) */
	enum mlf_mode mode;      /* the fabric mode its endpoint opens in (mlf_open) */
	const char *summary;     /* one line for --help */
	const struct wk_opt *opts; /* its options, ended by a NULL name (NULL: none) */
	size_t priv_size;        /* bytes of its state, zeroed by the core before defaults */
	int busy_per_local_step; /* worker.json's mean_iteration_s per local step, not per iteration */
	int peer;                /* registers as a peer (decentralized, no server) instead of as a
				  * worker of --server */
	/** defaults - set the defaults of its options in @priv (optional). */
	void (*defaults)(void *priv);
	/** option - one of its @opts, @arg NULL without argument. 0, or -1 after one line
	 * "mlf-worker: ..." on stderr. */
	int (*option)(struct wk_run *R, const char *name, const char *arg);
	/** check - the settings together, before any data is loaded (optional). 0, or -1 after
	 * one line on stderr. */
	int (*check)(struct wk_run *R);
	/** init - after the fabric is open, before the core registers: buffers, initial model
	 * (optional). 0, or the exit status (1, or 2 for bad settings) after a message. */
	int (*init)(struct wk_run *R);
	/** pull - the model get at the top of an iteration, before the evaluation (optional).
	 * WK_GO, or WK_ERR after a message; @get_s: the seconds it waited. */
	int (*pull)(struct wk_run *R, double *get_s);
	/** iteration - one iteration (round, commit, local step...). WK_GO, WK_ERR or WK_END.
	 * @get_s: what pull waited this iteration. */
	int (*iteration)(struct wk_run *R, double get_s);
	/** record - add its own fields to worker.json's object @w (optional). */
	void (*record)(struct wk_run *R, json_t *w);
	/** close - free what init allocated but @R->wr (optional). */
	void (*close)(struct wk_run *R);
};

/* The algorithms, one file each (apps/wk_NAME.c; docs/apps.md "mlf-worker"). */
extern const struct wk_algo wk_mlfabric_a, wk_mlfabric_s, wk_async, wk_ssp, wk_asp; /* wk_sgd.c */
extern const struct wk_algo wk_esync;     /* wk_esync.c */
extern const struct wk_algo wk_local_sgd; /* wk_local_sgd.c */
extern const struct wk_algo wk_adsp;      /* wk_adsp.c */
extern const struct wk_algo wk_hop;       /* wk_hop.c */

/** Set by SIGTERM/SIGINT: the loop and long waits stop. */
extern volatile sig_atomic_t wk_stop;

/** wk_fail - log a failed fabric call @what (-errno @rc), naming the server when it stopped
 * answering. Returns WK_ERR. */
int wk_fail(struct wk_run *R, const char *what, int64_t rc);

/** wk_progress_due - whether a progress line is due (one every 2 s of a long run); 1 moves the
 * next one on. */
int wk_progress_due(struct wk_run *R);

/** wk_get - get the latest model of --server into @R->w and @R->version. WK_GO, or WK_ERR after
 * a message; @get_s: the seconds it took. */
int wk_get(struct wk_run *R, double *get_s);

/** wk_pull_first - a pull op: the model at the first iteration only (then each iteration's
 * synchronous push returns it). As wk_get. */
int wk_pull_first(struct wk_run *R, double *get_s);

/** wk_alloc_wr - allocate the second model buffer @R->wr (n floats). 0, or 1 after a message. */
int wk_alloc_wr(struct wk_run *R);

/** wk_parse_int - parse @arg as an integer in [@lo, @hi] into @v for option --@name. 0, or -1
 * after "mlf-worker: bad --NAME 'ARG': @what" on stderr. */
int wk_parse_int(const char *name, const char *arg, long lo, long hi, const char *what, long *v);

/** wk_parse_real - as wk_parse_int for a number in (@lo, @hi] (@lo itself allowed when
 * @lo_incl). */
int wk_parse_real(const char *name, const char *arg, double lo, int lo_incl, double hi,
		  const char *what, double *v);

/** How a round of local steps went (ESync, local SGD): pushes.jsonl's round line. */
struct wk_round {
	double t_start;      /* when the round began (CLOCK_REALTIME s) */
	int steps;           /* local iterations aggregated */
	double c;            /* seconds the last local iteration took (c of esync.txt Alg. 1) */
	double query_wait_s; /* seconds blocked asking the State Server (0 without queries) */
	long aborted;        /* local iterations a READY aborted (non-blocking ESync) */
	double aborted_s;    /* seconds spent in them */
	double rtt_s;        /* the State Server's last round-trip time (s; 0 without queries) */
};

/**
 * wk_round_push - the end of a round of local steps (ESync, local SGD; esync.txt Alg. 1 lines
 * 17-20): push @scale x (@R->wr - @R->w) through the synchronous push (the server sums the
 * round's pushes), which returns the next model into @R->w; then the round's line in
 * pushes.jsonl (@rd) and a progress line when due. WK_GO, or WK_ERR after a message.
 */
int wk_round_push(struct wk_run *R, double scale, const struct wk_round *rd);

#endif
