/* mlfabric_sync.h - libmlfabric's extension for the synchronization models beside MLfabric: ESync, ADSP, Hop.
 *
 * The paper's Table 1 API (include/mlfabric/mlfabric.h) carries MLfabric-A, MLfabric-S and the plain
 * parameter server. The synchronization models the scheduler also runs (docs/scheduler.md)
 * need a few more calls: ESync's State Server queries, ADSP's commit rate, and Hop's
 * decentralized peers. They are declared here, apart from the paper's API, and are part of
 * libmlfabric.so all the same (docs/api.md "The synchronization-model extension").
 */
#ifndef MLFABRIC_SYNC_H
#define MLFABRIC_SYNC_H

#include <stddef.h>
#include <stdint.h>

#include "mlfabric.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- ESync (esync.txt; docs/api.md "ESync: the State Server") ---------------------------- */

/**
 * mlf_query_state - ESync (esync.txt Alg. 1 line 8, Alg. 2): ask the State Server in the
 * scheduler, before a local iteration, whether to aggregate now. @round: the worker's
 * communication round (aggregations done), @k: local iterations done in it, @c_s: seconds its
 * last local iteration took (0 before the first). Blocks up to @timeout_s for the answer.
 * Returns 1 (READY: aggregate now), 0 (NOT-READY: train locally once more), -EINVAL (bad
 * arguments, not a worker) or -ETIMEDOUT (no answer; the error says so).
 */
int mlf_query_state(mlf_t *f, int64_t round, int k, double c_s, double timeout_s);

/**
 * mlf_query_state_send - ESync's non-blocking mode (esync.txt §4.2, "delayed ACK"): ask the
 * State Server as mlf_query_state does (@round, @k, @c_s alike; with §4.2's capability, @c_s
 * is the last local iteration's seconds plus the query's round-trip time) without waiting for
 * the answer: the worker trains on, taking NOT-READY as implicit, until mlf_state_wait sees an
 * explicit READY. Returns the query's sequence number (> 0), or -EINVAL (bad arguments, not a
 * worker).
 */
int64_t mlf_query_state_send(mlf_t *f, int64_t round, int k, double c_s);

/**
 * mlf_state_wait - ESync non-blocking: whether the State Server answered READY to a query with
 * sequence number >= @since (the round's first query, from mlf_query_state_send), waiting for
 * such an answer until @until_s (CLOCK_REALTIME s; a time already past does not wait). @rtt_s:
 * if not NULL, set to the round-trip time (s) of the last query whose answer came before the
 * next was sent (0 before any). Returns 1 (READY: abort the local iteration in progress and
 * aggregate), 0 (no READY by @until_s), -EINVAL (@since < 1), or -ETIMEDOUT when queries have
 * waited longer than the endpoint's timeout (struct mlf_opts.timeout_s) without any answer
 * (the error names the scheduler).
 */
int mlf_state_wait(mlf_t *f, int64_t since, double until_s, double *rtt_s);

/* ---- ADSP (adsp-aaai2020; docs/api.md "ADSP: the commit rate") ---------------------------- */

/** ADSP's commit rate for this worker (adsp-aaai2020 §3, Alg. 2), as the scheduler last sent it. */
struct mlf_commit_rate {
	int64_t check;     /* the checkpoint it was computed at (counts from 0 per scheduler) */
	int64_t delta;     /* ΔC_i: commits to make before the next checkpoint (0: none) */
	double period_s;   /* the check period Γ, seconds */
	double t;          /* CLOCK_REALTIME seconds it arrived */
};

/**
 * mlf_commit_rate - ADSP (the scheduler runs with --adsp): copy the latest commit rate the
 * scheduler sent into @r; never blocks. The scheduler sends one at every checkpoint, and one at
 * once to a worker that registers after the first. Returns 0, -EAGAIN (none arrived yet) or
 * -EINVAL (not a registered worker).
 */
int mlf_commit_rate(mlf_t *f, struct mlf_commit_rate *r);

/* ---- decentralized training (Hop, hop-asplos2019; docs/api.md "Peers") ---------------------- */

/**
 * mlf_register_as_peer - a worker of decentralized training: no server, no scheduler (the
 * endpoint must be opened with MLF_MODE_DIRECT). Its neighbours' parameters and tokens arrive
 * on channel 7 and queue for mlf_peer_recv (at most 1024; more are dropped and logged).
 * Returns 0, -EINVAL (not MLF_MODE_DIRECT, already registered) or -ENOTCONN.
 */
int mlf_register_as_peer(mlf_t *f);

/**
 * mlf_peer_send - send parameters @w (@n floats, copied) tagged with iteration @iter (>= 0) to
 * the peer on @host, directly (unpaced, not scheduled). Returns at once: 0, -EINVAL (unknown
 * host, empty vector, negative iteration), -ENOTCONN, -ENOMEM.
 */
int mlf_peer_send(mlf_t *f, const char *host, const float *w, size_t n, int64_t iter);

/**
 * mlf_peer_tokens - give the peer on @host @count (>= 1) tokens (Hop's token queue, §4.2: each
 * lets it enter one more iteration). Returns as mlf_peer_send.
 */
int mlf_peer_tokens(mlf_t *f, const char *host, int64_t count);

/** One message from a neighbour (mlf_peer_recv). */
struct mlf_peer_msg {
	char from[64];   /* the sender's host name */
	int token;       /* 1: tokens (@iter = how many), 0: parameters */
	int64_t iter;    /* parameters: the sender's iteration; tokens: the count */
	float *w;        /* parameters (malloc'ed: the caller frees), NULL for tokens */
	size_t n;        /* floats in @w */
};

/**
 * mlf_peer_recv - the oldest queued neighbour message into @m, waiting up to @timeout_s seconds
 * (<= 0: do not wait). Returns 0, -ETIMEDOUT (nothing arrived) or -ENOTCONN (dataplane gone).
 */
int mlf_peer_recv(mlf_t *f, struct mlf_peer_msg *m, double timeout_s);

#ifdef __cplusplus
}
#endif

#endif /* MLFABRIC_SYNC_H */
