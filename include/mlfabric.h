/* mlfabric.h - the MLfabric application API (paper Table 1, §4): workers, servers, replicas.
 *
 * An application process (worker, parameter server, replica, aggregator) opens one endpoint on
 * its host's dataplane (mlf_open). With a scheduler (modes MLfabric-A and MLfabric-S) every
 * update and model transfer is announced to the scheduler over the dataplane's control
 * connection (docs/control.md) and sent only when the scheduler commands it, at the commanded
 * start time and rate; updates may be dropped (delay bound) or routed through an aggregator.
 * In mode MLF_MODE_DIRECT (the "Async" baseline: a plain parameter server) there is no
 * scheduler: pushes go straight to the server as soon as they are made, unpaced, applied in
 * arrival order, never aggregated or dropped.
 *
 * Threads: each endpoint runs one event thread inside the library that talks to the dataplane,
 * carries out the scheduler's commands and calls the callbacks. Callbacks run on that thread
 * and must not call mlf_* functions of the same endpoint except mlf_log-free getters noted
 * below. Every mlf_* function is safe to call from any one application thread.
 *
 * Units: sizes in bytes, vectors as float32 counts, times in seconds (double, CLOCK_REALTIME),
 * rates in Gbit/s of payload. Errors are -errno with a one-line reason in the endpoint's error
 * text (mlf_error()).
 */
#ifndef MLFABRIC_H
#define MLFABRIC_H

#include <stddef.h>
#include <stdint.h>

#include "mlf_payload.h" /* payload header of every update, aggregate and model transfer */

/* ---- endpoints ---------------------------------------------------------------------------- */

/** How the fabric carries transfers (docs/api.md, docs/control.md; paper §5/§6). */
enum mlf_mode {
	MLF_MODE_ASYNC = 0,  /* MLfabric-A: scheduled, ordered, delay bound, aggregation */
	MLF_MODE_SYNC = 1,   /* MLfabric-S: one scheduled batch per iteration (allreduce) */
	MLF_MODE_DIRECT = 2, /* the Async baseline: no scheduler, FIFO, no aggregation, no drops */
};

/**
 * mlf_mode_parse - the fabric mode of a system name as experiment files and --mode flags spell
 * it (docs/fabric.md, case-insensitive): "mlfabric-a" -> MLF_MODE_ASYNC, "mlfabric-s" ->
 * MLF_MODE_SYNC, "async" (the plain parameter server baseline) -> MLF_MODE_DIRECT.
 * Returns 0, or -EINVAL for any other name (*@mode unchanged).
 */
int mlf_mode_parse(const char *name, enum mlf_mode *mode);

/** Parameters of a server or replica registration (paper Table 1 "params"). */
struct mlf_params {
	int64_t tau_max;     /* delay bound, in versions (>= 0) */
	double div_max;      /* divergence bound ||w_server - w_replica||_2 (replica only) */
	double momentum;     /* gamma of eq. 2, in [0, 1) */
	int n_workers;       /* workers taking part (sync mode: updates per iteration) */
};

/** Options of mlf_open(). Zeroed fields take the defaults shown. */
struct mlf_opts {
	const char *cluster;   /* cluster config path (required) */
	const char *host;      /* this host's name in the config (required) */
	const char *sock;      /* dataplane socket (default /run/mlfabric/<cluster>-<host>.sock) */
	enum mlf_mode mode;    /* default MLF_MODE_ASYNC */
	double timeout_s;      /* a peer or the scheduler silent this long fails a wait (default 10) */
	double agg_input_timeout_s; /* aggregator: inputs missing this long after the commanded
				     * start are given up (`partial`), seconds (default 5) */
	const char *verify_dir; /* server/replica: verification mode (docs/replication.md): on the
				 * scheduler's `snapshot` write <dir>/<role>-<tag>.f32 and a line of
				 * <dir>/snapshots.jsonl; NULL = snapshots are ignored */
	double wait_log_s;     /* a wait on a peer longer than this (seconds; 0 = default 2,
				* < 0 = never) is logged once naming the peer and reported to the
				* scheduler (`waits`, docs/control.md, docs/mlf-top.md) */
};

/** How a replica is kept up to date (docs/replication.md, paper §3.3 and §7.3). */
enum mlf_replication {
	MLF_REPL_MLFABRIC = 0, /* workers send update copies, planned by the scheduler (§5.3) */
	MLF_REPL_CHAIN = 1,    /* the server forwards each applied update before committing it */
};

/** One endpoint (opaque). */
typedef struct mlf mlf_t;

/**
 * mlf_open - connect to this host's dataplane (and through it to the scheduler, unless
 * MLF_MODE_DIRECT) and start the endpoint's event thread.
 * Returns the endpoint, or NULL with @err naming the problem (config unreadable, unknown host,
 * no dataplane listening on the socket, no scheduler connection at the dataplane).
 */
mlf_t *mlf_open(const struct mlf_opts *o, char *err, size_t errlen);

/**
 * mlf_close - stop the event thread, fail what is pending, disconnect; NULL is a no-op.
 * A worker first waits (at most the endpoint timeout, mlf_opts.timeout_s) until each update it
 * pushed has been sent, dropped or released by the scheduler's commands, so that a worker that
 * pushes and closes at once loses neither the update nor its replica copy.
 */
void mlf_close(mlf_t *f);

/** mlf_error - the last error text of @f (one line; "" when none). */
const char *mlf_error(const mlf_t *f);

/**
 * mlf_role - what @f is now: "worker", "server", "replica", "aggregator", or "" before it
 * registered. A replica promoted to server (fail-over, docs/replication.md) says "server".
 * Safe to call from any thread, also from a callback.
 */
const char *mlf_role(mlf_t *f);

/* ---- worker (Table 1: registerAsWorker, push, get, AllReduce) ------------------------------ */

/**
 * mlf_register_as_worker - announce this endpoint as a worker of @server (a host name).
 * Returns 0, -EINVAL (unknown host), -ENOTCONN (scheduler or dataplane gone).
 */
int mlf_register_as_worker(mlf_t *f, const char *server);

/**
 * mlf_push - hand update @u (@n float32 values, computed from model @version) with its norm
 * ||u||_2 @norm to the fabric for @server. The values are copied; the call returns at once.
 * The update is later sent (scheduled), aggregated, or dropped by the scheduler (delay bound).
 * Returns the update id (> 0), or -errno: -EINVAL (n differs from the server's model, unknown
 * server), -ENOTCONN, -ENOMEM.
 */
int64_t mlf_push(mlf_t *f, const char *server, const float *u, size_t n, double norm, int64_t version);

/**
 * mlf_get - pull the latest model of @server into @model (@n floats); blocks up to @timeout_s
 * (0: the endpoint's timeout_s) without progress: from the pull, or, when the model is sharded
 * (§10.2), from the latest shard that covered more of the model than any version before it in
 * this get (so at most (shards + 1) x @timeout_s in all).
 * @version: set to the model's version. Returns 0, -ETIMEDOUT (nothing arrived, or no further
 * shard: the error names the server), -EINVAL (size mismatch), -ENOTCONN.
 */
int mlf_get(mlf_t *f, const char *server, float *model, size_t n, int64_t *version, double timeout_s);

/**
 * mlf_allreduce - MLfabric-S (§6): push @u as this worker's update of the current iteration to
 * the root server, then get the model after every worker's update of the iteration is applied.
 * @model/@version: as mlf_get. Returns 0 or as mlf_push/mlf_get.
 */
int mlf_allreduce(mlf_t *f, const char *server, const float *u, size_t n, double norm,
		  int64_t version, float *model, int64_t *new_version, double timeout_s);

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

/** Worker-side counters (monotonic). */
struct mlf_worker_stats {
	uint64_t pushed, sent, dropped, aggregated; /* updates */
	uint64_t models;                            /* models received */
};
/** mlf_worker_stats - copy the counters of @f. */
void mlf_get_worker_stats(mlf_t *f, struct mlf_worker_stats *s);

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

/* ---- the initial model (Horovod's broadcast_parameters; docs/api.md "Initial model") -------- */

/**
 * mlf_send_model - send a whole model @w (@n float32 values) at @version to @server's host,
 * directly on channel 6 (MLF_CHAN_INIT, docs/control.md): not scheduled, not an update, in every
 * mode. The server installs it as its model (the workers' initial model), see mlf_recv_model.
 * Any endpoint may call it, registered or not. Blocks until the server host's dataplane holds
 * the whole model byte-exact (it hands it to mlf_recv_model, also one called later) or
 * @timeout_s seconds (<= 0: the endpoint timeout) passed; a failed transfer (the server's
 * dataplane not up yet) is sent again until then.
 * Returns 0, -EINVAL (unknown host, empty model, refused by the dataplane), -ETIMEDOUT (the
 * error text names the server and the last failure), -ENOTCONN (no dataplane), -ENOMEM.
 */
int mlf_send_model(mlf_t *f, const char *server, const float *w, size_t n, int64_t version, double timeout_s);

/**
 * mlf_recv_model - before registering as server/replica: wait up to @timeout_s seconds (<= 0:
 * the endpoint timeout) for a model sent with mlf_send_model by host @from (NULL = any host).
 * A model from another host is refused (logged naming that host) and the wait goes on; so is a
 * bad payload. On success *@w is malloc'ed (the caller frees it), *@n its float count, *@version
 * the sender's version. Returns 0, -ETIMEDOUT (the error text names @from), -EINVAL (unknown
 * host, NULL outputs), -ENOTCONN (no dataplane), -ENOMEM.
 */
int mlf_recv_model(mlf_t *f, const char *from, float **w, size_t *n, int64_t *version, double timeout_s);

/* ---- server and replica (Table 1: registerAsServer, registerAsReplica, callbacks) ---------- */

/**
 * An update or aggregate handed to the server/replica, in the commit order the scheduler chose
 * (MLF_MODE_DIRECT: arrival order). @hdr names its parts; @u holds @n floats (the sum of the
 * parts' updates). Valid only during the callback.
 */
struct mlf_update {
	const struct mlf_payload_hdr *hdr;
	const float *u;
	size_t n;
	uint64_t xfer;   /* transfer id */
	const char *src; /* host it came from (worker or aggregator) */
};

/**
 * Update callback: apply @u to the model and return the model version after applying it
 * (the library reports the commit to the scheduler with that version).
 */
typedef int64_t (*mlf_update_cb)(void *arg, const struct mlf_update *u);

/**
 * Request callback: copy the current model into @model (@n floats) and return its version.
 * Called when the scheduler commands a model transfer (a pull answer); the snapshot is taken
 * at the call.
 */
typedef int64_t (*mlf_request_cb)(void *arg, float *model, size_t n);

/**
 * State callback (copy): copy the model w into @w and the momentum history h (paper eq. 2:
 * h_{t+1} = gamma h_t + u, w_{t+1} = w_t + h_{t+1}; h_t = w_t - w_{t-1}) into @h, @n floats
 * each; return the model version. Used for catch-up state transfers and snapshots.
 */
typedef int64_t (*mlf_get_state_cb)(void *arg, float *w, float *h, size_t n);

/**
 * State callback (install): replace the model by @w and the momentum history by @h (@n floats
 * each) at @version (a replica's catch-up from the server's state). Return 0, or < 0 when
 * the state cannot be installed (the transfer is then not committed).
 */
typedef int (*mlf_set_state_cb)(void *arg, const float *w, const float *h, size_t n, int64_t version);

/**
 * mlf_set_state_callbacks - give @f access to the whole training state (model and momentum
 * history). Call before mlf_register_as_server / mlf_register_as_replica. Needed for a
 * server's `send what:"state"` (catch-up), a replica's catch-up, and for snapshots of a
 * replica (a server's snapshots fall back to its request callback). @arg is passed to both.
 */
void mlf_set_state_callbacks(mlf_t *f, mlf_get_state_cb get_state, mlf_set_state_cb set_state, void *arg);

/**
 * mlf_set_server_shard - make the server @f registers next shard @shard of @n_shards of a
 * sharded model (paper §10.2, docs/fabric.md "Sharded servers"): it holds the floats
 * [@offset, @offset + n) of a model of @n_total floats, where n is the size it registers
 * with mlf_register_as_server. Every shard server registers with the same mode, momentum,
 * delay bound, worker count and version; the scheduler plans each update as one shard per
 * server and answers a pull with every shard at one version. Call before registering.
 * Returns 0, or -EINVAL (@shard not in [0, @n_shards), @n_shards < 2 or > 32, @offset >=
 * @n_total) with mlf_error saying which.
 */
int mlf_set_server_shard(mlf_t *f, int shard, int n_shards, size_t offset, size_t n_total);

/**
 * mlf_register_as_server - serve a model of @n float32 values with parameters @p.
 * @version0: the model's version now. Returns 0, -EINVAL (bad params), -ENOTCONN.
 */
int mlf_register_as_server(mlf_t *f, const struct mlf_params *p, size_t n, int64_t version0,
			   mlf_update_cb on_update, mlf_request_cb on_request, void *arg);

/**
 * mlf_register_as_replica - keep a replica of @server's model (paper §3.3, docs/replication.md):
 * it applies, with @on_update, a prefix of the server's commit order (chan 4, divergence
 * ||w_server - w_replica||_2 <= p->div_max with @replication MLF_REPL_MLFABRIC; every applied
 * transfer, forwarded by the server, with MLF_REPL_CHAIN) and reports a commit for each.
 * @version0: the replica model's version now (0 when it starts from the same initial model).
 * After a `promote` (fail-over) the endpoint is the server: it handles chan 1 with @on_update
 * and answers pulls with @on_request. Returns 0, -EINVAL (bad params, unknown server host,
 * @replication unknown), -ENOTCONN, or the scheduler's refusal (-EINVAL, the reason in mlf_error).
 */
int mlf_register_as_replica(mlf_t *f, const char *server, const struct mlf_params *p, size_t n,
			    int64_t version0, enum mlf_replication replication, mlf_update_cb on_update,
			    mlf_request_cb on_request, void *arg);

/* ---- aggregator (an application of the fabric, §4) ------------------------------------------- */

/**
 * mlf_register_as_aggregator - serve aggregate commands on this host: receive the inputs named
 * by each command, sum them (float32, weighted when commanded) and send the aggregate as
 * commanded. Runs on the event thread until mlf_close. Returns 0 or -ENOTCONN.
 */
int mlf_register_as_aggregator(mlf_t *f);

/**
 * mlf_report_loss - a server (or replica serving as one) tells the scheduler the global model's
 * test @loss (> 0) at model @version, measured at @t (CLOCK_REALTIME s): the input of ADSP's
 * commit-rate search (adsp-aaai2020 §4.2). Without a scheduler (MLF_MODE_DIRECT) a no-op.
 * Returns 0, -EINVAL (bad numbers, not a server) or -ENOTCONN / -ENOMEM from the send.
 */
int mlf_report_loss(mlf_t *f, double t, double loss, int64_t version);

/** Aggregator counters (monotonic). */
struct mlf_aggregator_stats {
	uint64_t commands, aggregates_sent, inputs_summed, inputs_missing;
	double sum_seconds;  /* time spent summing */
	uint64_t sum_bytes;  /* input bytes summed */
};
/** mlf_get_aggregator_stats - copy the counters of @f. */
void mlf_get_aggregator_stats(mlf_t *f, struct mlf_aggregator_stats *s);

#endif
