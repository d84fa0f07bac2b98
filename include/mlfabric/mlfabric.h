/* mlfabric.h - the MLfabric application API (paper Table 1, §4): workers, servers, replicas.
 *
 * This header is self-contained (it includes only the C library's headers) and holds the fabric
 * core and the paper's Table 1 API: registerAsWorker (mlf_register_as_worker), push (mlf_push),
 * get (mlf_get), AllReduce (mlf_push_get), registerAsServer (mlf_register_as_server) with its
 * update and request callbacks, registerAsReplica (mlf_register_as_replica). The calls of the
 * other synchronization models (ESync, ADSP, Hop) are an extension: include/mlfabric/mlfabric_sync.h.
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
 * below. Every mlf_* function is safe to call from any one application thread; besides, mlf_push
 * may be called from another thread while threads wait in mlf_get, and mlf_get from several
 * threads at once (pushes and the gets of several servers overlapping, docs/python.md
 * "Overlap"): in direct mode up to 8 gets are in flight at once, each answered by the model of
 * its own server; with a scheduler they are made one at a time. A get that finds no slot free
 * (a 9th in direct mode, a second with a scheduler) waits for one as long as the gets ahead of
 * it make progress (up to its timeout from their latest start or shard), then makes its own
 * get with its full timeout. mlf_error then holds the text of whichever call failed last.
 *
 * Units: sizes in bytes, vectors as float32 counts, times in seconds (double, CLOCK_REALTIME),
 * rates in Gbit/s of payload. Errors are -errno with a one-line reason in the endpoint's error
 * text (mlf_error()).
 */
#ifndef MLFABRIC_H
#define MLFABRIC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- endpoints ---------------------------------------------------------------------------- */

/** How the fabric carries transfers (docs/api.md, docs/control.md; paper §5/§6). */
enum mlf_mode {
	MLF_MODE_MLFABRIC_A = 0, /* MLfabric-A: scheduled, ordered, delay bound, aggregation */
	MLF_MODE_MLFABRIC_S = 1, /* MLfabric-S: one scheduled batch per iteration (mlf_push_get) */
	MLF_MODE_DIRECT = 2,     /* the Async baseline: no scheduler, FIFO, no aggregation, no drops */
};

/**
 * mlf_mode_parse - the fabric mode of a system name as experiment files and --mode flags spell
 * it (docs/fabric.md, case-insensitive): "mlfabric-a" -> MLF_MODE_MLFABRIC_A, "mlfabric-s" ->
 * MLF_MODE_MLFABRIC_S, "async" (the plain parameter server baseline) -> MLF_MODE_DIRECT.
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
	enum mlf_mode mode;    /* default MLF_MODE_MLFABRIC_A */
	double timeout_s;      /* a peer or the scheduler silent this long fails a wait (default 10);
				* the dataplane timeout is MLF_DP_TIMEOUT_S when set, else the larger of
				* this and 10 s: a request to the dataplane not sent or answered that
				* long fails with -ETIMEDOUT naming its socket (docs/api.md "Timeouts") */
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
 * Only connects: the connect waits at most the dataplane timeout (mlf_opts.timeout_s), so a
 * hung dataplane that does not accept connections fails it instead of blocking for ever.
 * Returns the endpoint, or NULL with errno set and @err naming the problem: EINVAL/ENOENT (config
 * unreadable, unknown host), ENOENT/ECONNREFUSED (no dataplane listening on the socket),
 * ETIMEDOUT (the dataplane did not accept the connection within the dataplane timeout; @err
 * names the host and the socket), ENOMEM.
 */
mlf_t *mlf_open(const struct mlf_opts *o, char *err, size_t errlen);

/**
 * mlf_close - stop the event thread, fail what is pending, disconnect; NULL is a no-op.
 * A worker first waits (at most the endpoint timeout, mlf_opts.timeout_s) until each update it
 * pushed has been sent, dropped or released by the scheduler's commands, so that a worker that
 * pushes and closes at once loses neither the update nor its replica copy. Never waits for
 * ever: a dataplane that stopped answering is given up after the dataplane timeout.
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

/* ---- worker (Table 1: registerAsWorker, push, get, AllReduce = mlf_push_get) --------------- */

/**
 * mlf_register_as_worker - announce this endpoint as a worker of @server (a host name).
 * Returns 0, -EINVAL (unknown host, already registered, or the scheduler's refusal: the reason
 * in mlf_error), -ENOTCONN (scheduler or dataplane gone), -ETIMEDOUT (the dataplane did not
 * answer within the dataplane timeout; the error names its socket).
 */
int mlf_register_as_worker(mlf_t *f, const char *server);

/**
 * mlf_push - hand update @u (@n float32 values, computed from model @version) with its norm
 * ||u||_2 @norm to the fabric for @server. The values are copied; the call returns at once.
 * The update is later sent (scheduled), aggregated, or dropped by the scheduler (delay bound).
 * Returns the update id (> 0), or -errno: -EINVAL (@n is 0, unknown server, or @n differs from
 * the size of @server's model as this endpoint knows it: from the last whole model a get of
 * @server received, or the last mlf_send_model to it; before either the size is not checked),
 * -ENOTCONN, -ETIMEDOUT (the dataplane did not take a request within the dataplane timeout, now
 * or earlier on this endpoint; the error names its socket), -ENOMEM.
 */
int64_t mlf_push(mlf_t *f, const char *server, const float *u, size_t n, double norm, int64_t version);

/**
 * mlf_get - pull the latest model of @server into @model (@n floats); blocks up to @timeout_s
 * (0: the endpoint's timeout_s) without progress: from the pull, or, when the model is sharded
 * (§10.2), from the latest shard that covered more of the model than any version before it in
 * this get (so at most (shards + 1) x @timeout_s in all, after the wait for a slot when the
 * gets of other threads hold every slot, "Threads" above).
 * @version: set to the model's version. Returns 0, -ETIMEDOUT (nothing arrived, or no further
 * shard: the error names the server; or the gets of other threads ahead of it, "Threads"
 * above, made no progress within the timeout while it waited for a slot), -EINVAL (@n is 0,
 * unknown server, or a whole model of another size arrived), -ENOTCONN, -ENOMEM.
 */
int mlf_get(mlf_t *f, const char *server, float *model, size_t n, int64_t *version, double timeout_s);

/**
 * mlf_push_get - MLfabric-S's push-then-get (§6; the paper's Table 1 calls it allreduce, but it
 * is no collective operation): push @u as this worker's update of the current iteration to the
 * root server, then get the model after every worker's update of the iteration is applied:
 * the first version above @version (the server applies an iteration as one step, so an
 * iteration that ended short, at --sync-timeout or past a lost part, is no wait for ever).
 * @model/@new_version: as mlf_get's @model/@version. Returns 0 or as mlf_push/mlf_get.
 */
int mlf_push_get(mlf_t *f, const char *server, const float *u, size_t n, double norm,
		 int64_t version, float *model, int64_t *new_version, double timeout_s);

/** Worker-side counters (monotonic). */
struct mlf_worker_stats {
	uint64_t pushed, sent, dropped, aggregated; /* updates */
	uint64_t models;                            /* models received */
};
/** mlf_worker_stats - copy the counters of @f. */
void mlf_get_worker_stats(mlf_t *f, struct mlf_worker_stats *s);

/** How mlf_push found its buffers (monotonic counts of pushes; docs/api.md "Push buffers"). */
struct mlf_push_buffers {
	uint64_t allocated; /* pushes that created a new buffer (a memfd of the update's size) */
	uint64_t reused;    /* pushes that took a buffer of an earlier push whose transfer ended */
};
/** mlf_get_push_buffers - copy @f's push buffer counts into @s. Takes the endpoint's lock only. */
void mlf_get_push_buffers(mlf_t *f, struct mlf_push_buffers *s);

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

#define MLF_UPDATE_MAX_PARTS 62 /* worker updates one aggregate can name (the wire's limit, docs/wire.md) */

/** One worker update inside an update or aggregate: its id and the version it was computed from. */
struct mlf_update_part {
	uint64_t id;      /* update id (mlf_push's return value, unique in the cluster) */
	int64_t version;  /* v(g): model version the update was computed from */
};

/**
 * What an update or aggregate names (the library copies it from the transfer's payload header,
 * docs/wire.md): an update has n_parts = 1, an aggregate the n_parts updates summed into it
 * (the server's version advances by n_parts when it is applied, docs/planner.md).
 */
struct mlf_update_hdr {
	uint32_t n_parts;  /* 1..MLF_UPDATE_MAX_PARTS */
	int64_t version;   /* version of parts[0] */
	struct mlf_update_part parts[MLF_UPDATE_MAX_PARTS];
};

/**
 * An update or aggregate handed to the server/replica, in the commit order the scheduler chose
 * (MLF_MODE_DIRECT: arrival order). @hdr names its parts; @u holds @n floats (the sum of the
 * parts' updates). Valid only during the callback.
 */
struct mlf_update {
	const struct mlf_update_hdr *hdr;
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
 * @version0: the model's version now. Returns 0, -EINVAL (bad params or callbacks, a shard
 * that exceeds the model or in MLF_MODE_DIRECT, already registered, or the scheduler's refusal:
 * the reason in mlf_error), -ENOTCONN.
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
 * commanded. Runs on the event thread until mlf_close. Returns 0, -EINVAL (already registered,
 * or the scheduler's refusal: the reason in mlf_error) or -ENOTCONN.
 */
int mlf_register_as_aggregator(mlf_t *f);

/**
 * mlf_report_loss - a server (or replica serving as one) tells the scheduler the global model's
 * test @loss (> 0) at model @version, measured at @t (CLOCK_REALTIME s): the input of ADSP's
 * commit-rate search (adsp-aaai2020 §4.2). Without a scheduler (MLF_MODE_DIRECT) a no-op.
 * Returns 0, -EINVAL (bad numbers, not a server), -ENOTCONN (the dataplane socket failed) or
 * -ENOMEM.
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

#ifdef __cplusplus
}
#endif

#endif /* MLFABRIC_H */
