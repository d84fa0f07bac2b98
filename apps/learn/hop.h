/* hop.h - Hop's queue-based synchronization for decentralized training (hop-asplos2019 §4-§5;
 * docs/api.md "Peers"): per-neighbour update and token bookkeeping, the Recv rule with backup workers and
 * bounded staleness, the Reduce weights of eq. 2, and skipping iterations. Pure: the worker
 * (mlf-worker --system hop, apps/wk_hop.c) moves the messages through libmlfabric's peer channel. */
#ifndef MLF_HOP_H
#define MLF_HOP_H

#include <stddef.h>
#include <stdint.h>

/** Hop's settings (mlf-worker --hop-*). */
struct hop_cfg {
	int backups;      /* N_buw: in-neighbours whose update an iteration may go without (§4.3) */
	int staleness;    /* s: an update from iteration >= k - s satisfies iteration k (§4.4); 0 =
			   * the update of iteration k itself (or newer) */
	int max_ig;       /* max_ig: tokens each out-neighbour grants at the start; bounds the
			   * iteration gap to neighbours (§4.2); 0 = no token queues */
	int max_jump;     /* skipping iterations (§5): most iterations one jump skips (0 = off) */
	int jump_behind;  /* ... jump only when at least this many iterations behind every
			   * out-neighbour (>= 1) */
};

/** The newest parameters held from one in-neighbour. */
struct hop_in {
	int host;         /* cluster host index */
	int64_t iter;     /* the iteration they were sent in (-1: none yet) */
	float *w;         /* owned; NULL before the first */
	int fresh;        /* not used by a Reduce yet */
};

/** Tokens one out-neighbour granted (TokenQ(j -> i).size() = Iter(j) - Iter(i) + max_ig). */
struct hop_out {
	int host;
	int64_t tokens;
};

/** One worker's state. */
struct hop {
	struct hop_cfg cfg;
	int64_t k;        /* the iteration the worker is in */
	size_t n;         /* floats of the model */
	int n_in, n_out;
	struct hop_in *in;
	struct hop_out *out;
	int64_t jumped;   /* iterations skipped in all */
	int64_t reduced_with; /* neighbour updates used by Reduces in all */
};

/**
 * hop_init - worker state for in-neighbours @in[0..n_in) and out-neighbours @out[0..n_out)
 * (cluster host indexes, without the worker itself), a model of @n floats, at iteration 0.
 * Returns 0, -EINVAL (no in-neighbour, backups >= n_in, negative settings, a jump without
 * token queues) or -ENOMEM.
 */
int hop_init(struct hop *h, const struct hop_cfg *cfg, const int *in, int n_in, const int *out,
	     int n_out, size_t n);

/** hop_free - free the held parameters and the neighbour tables. */
void hop_free(struct hop *h);

/**
 * hop_on_params - parameters @w (@n floats; ownership taken on 0) from host @from, sent in
 * iteration @iter: kept when newer than the ones held (Hop keeps the most recent update of each
 * neighbour, §4.4), else freed. Returns 0, or -EINVAL (@from is no in-neighbour, wrong size:
 * @w stays the caller's).
 */
int hop_on_params(struct hop *h, int from, int64_t iter, float *w, size_t n);

/** hop_on_tokens - @count tokens from host @from. Returns 0 or -EINVAL (not an out-neighbour). */
int hop_on_tokens(struct hop *h, int from, int64_t count);

/**
 * hop_can_reduce - Recv of iteration k (§4.3-4.4): at least n_in - backups in-neighbours hold a
 * satisfactory update: sent in an iteration >= k - s and, without staleness (s = 0), fresh (not
 * used by an earlier Reduce). 1 when Reduce may run, else 0.
 */
int hop_can_reduce(const struct hop *h);

/**
 * hop_reduce - @x (the worker's parameters) := the weighted mean of @x and the fresh
 * satisfactory updates, weights Iter(u) - (k - s) + 1 (eq. 2; an update newer than k counts as
 * k; @x has weight s + 1), which then are no longer fresh. Returns the updates used.
 */
int hop_reduce(struct hop *h, float *x);

/** hop_can_advance - 1 when every out-neighbour granted a token (or no token queues). */
int hop_can_advance(const struct hop *h);

/** hop_advance - enter iteration k + 1: one token taken from every out-neighbour. */
void hop_advance(struct hop *h);

/** hop_missing - the first in-neighbour without a satisfactory update (for errors), or -1. */
int hop_missing(const struct hop *h);

/**
 * hop_jump - skipping iterations (§5): the iterations to skip now. The worker is behind every
 * out-neighbour by min_j (tokens_j - max_ig); when that is at least jump_behind it jumps
 * min(max_jump, that). 0 when off or not behind enough.
 */
int64_t hop_jump(const struct hop *h);

/**
 * hop_skip - carry out a jump of @j iterations (hop_jump): @j tokens from every out-neighbour,
 * k += @j. The caller gives @j tokens to every in-neighbour and reduces first (§5).
 */
void hop_skip(struct hop *h, int64_t j);

#endif
