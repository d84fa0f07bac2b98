/* fabric_int.h - libmlfabric's private header: struct mlf, the role ops table, the core's services to the roles. */
#ifndef MLF_FABRIC_INT_H
#define MLF_FABRIC_INT_H

/*
 * One endpoint (include/mlfabric/mlfabric.h, paper Table 1) is one struct mlf and one event thread. The
 * implementation is split by role (docs/fabric.md):
 *
 *   fabric_core.c        open/close, the event thread and its dispatch, the dataplane
 *                        connection, registration
 *   fabric_core_cmd.c    the commands from the scheduler and the dataplane: the transfer
 *                        commands (send, drop, release, order, skip), scheduler lost / back
 *                        (re-registration), role commands handed to the role's ops
 *   fabric_core_xfer.c   control messages to the scheduler, transfers to the dataplane and
 *                        their completions, the direct mode's queue
 *   fabric_worker.c      push, get, push_get, model arrivals, `server_moved`
 *   fabric_server.c      applying updates and commits, model/state payloads, snapshots,
 *                        `replica`
 *   fabric_chain.c       chain replication: forwarding applied transfers to the chain replica
 *   fabric_replica.c     a replica: catch-up from state, `promote`
 *   fabric_aggregator.c  an aggregator: inputs on chan 2, `aggregate`
 *   fabric_dist.c        a worker's `forward`s of model copies (distribution trees, §10.3)
 *   fabric_model.c       mlf_send_model / mlf_recv_model: the initial model on chan 6
 *                        (MLF_CHAN_INIT), over a private dataplane connection of the app thread
 *   fabric_peer.c        a peer (decentralized training, Hop): parameters and tokens to and
 *                        from neighbours on chan 7 (MLF_CHAN_PEER), no scheduler
 *
 * Calls go one way only, so no file-level circle of calls exists:
 *
 *   core  <-  dist  <-  worker;  core  <-  aggregator, chain  <-  server  <-  replica
 *
 * where "core" is itself three files, calling one way: fabric_core.c -> fabric_core_cmd.c ->
 * fabric_core_xfer.c (and fabric_core.c -> fabric_core_xfer.c).
 *
 * The core never calls a role function by name: a role registers (mlf_register_as_*) through
 * fabric_core_register with its struct fabric_role_ops, and the event thread reaches the role
 * only through that table. A replica's promotion swaps in fabric_server_ops. Roles call the
 * core's services declared below; the chain module never calls the server (the server drains
 * the arrivals the chain held, fabric_chain_next).
 */

#include <pthread.h>
#include <stdint.h>

#include <jansson.h>

#include "cluster.h"
#include "dpclient.h"
#include "fabric_cmd.h"
#include "mlf_payload.h"
#include "mlfabric.h"
#include "mlfabric_sync.h"

#define FABRIC_MAX_AGG_INPUTS 256 /* inputs held by an aggregator before a command names them */
#define FABRIC_SKIPPED_MAX 1024   /* transfer ids the scheduler reported lost (`skip`) */
#define FABRIC_MOVED_MAX 8        /* server names a worker maps to the current server */
#define FABRIC_SNAP_KEEP 16       /* verification snapshots kept per role (newest tags) */
#define FABRIC_RECEIVED_MAX 1024  /* chan 1/4 transfer ids handed over, for late `order`s */
/** Servers whose last update a worker remembers for its fresh pulls (struct mlf_worker_state). */
#define FABRIC_MAX_PUSHED_TO 32
#define FABRIC_MAX_SHARDS 32      /* shard servers of one model (§10.2, mlf_set_server_shard) */
#define FABRIC_WAITS_MAX 32       /* waits on peers tracked per endpoint (fabric_wait.c) */
#define FABRIC_SEQ_MASK ((UINT64_C(1) << 40) - 1) /* sequence bits of an update/pull id */
#define MLF_CHAN_INIT 6           /* initial models (mlf_send_model, docs/control.md), never scheduled */
#define MLF_CHAN_PEER 7           /* worker to worker (decentralized training, Hop; fabric_peer.c) */
#define FABRIC_CHAN_SCHEDULED_MAX 4 /* channels 1..4 carry only transfers a scheduler commands: with
				     * one, they take only announced transfers (fabric_core_listen) */
#define FABRIC_PEER_MAX 1024      /* neighbour messages queued for mlf_peer_recv; more are dropped */

/* A neighbour's message waiting for mlf_peer_recv (fabric_peer.c). */
struct fabric_peer_msg {
	int from;                 /* cluster host index of the sender */
	int64_t iter;             /* parameters: the sender's iteration; tokens: how many */
	int token;                /* 1: tokens, 0: parameters */
	float *w;                 /* parameters (malloc'ed), NULL for tokens */
	size_t n;
	struct fabric_peer_msg *next;
};

enum fabric_role { FABRIC_ROLE_NONE, FABRIC_ROLE_WORKER, FABRIC_ROLE_SERVER, FABRIC_ROLE_REPLICA,
		   FABRIC_ROLE_AGGREGATOR };

struct mlf;

/*
 * What the core asks of the role an endpoint registered as. Every field may be NULL (nothing
 * to do). All run on the event thread except release, which runs in mlf_close after it stopped.
 */
struct fabric_role_ops {
	/* An arrival (status 0, kept mapped until it returns unless the role steals ev->buf) on a
	 * channel; 1 when the role took it, 0 when the channel is not this role's (the core logs). */
	int (*received)(struct mlf *f, struct mlfabric_event *ev);
	/* The completion of a transfer this endpoint started; 1 when it was the role's own (a
	 * chain forward), 0 to let the core report it to the scheduler. */
	int (*sent)(struct mlf *f, const struct mlfabric_event *ev);
	/* A role command (`replica`, `promote`, `server_moved`, `snapshot`, `aggregate`); 1 when
	 * handled, 0 when it is not a command of this role (the core logs). May take c's arrays. */
	int (*command)(struct mlf *f, struct fabric_cmd *c);
	/* A fresh payload of the model (@state 0, MLF_PAYLOAD_MAGIC_MODEL) or of the optimizer
	 * state (@state 1, MLF_PAYLOAD_MAGIC_STATE) in @b for a `send` or a chan-5 pull; 0 or
	 * -errno (-EINVAL: this endpoint has none). */
	int (*payload)(struct mlf *f, int state, struct mlfabric_buf *b);
	/* Once per turn of the event thread (about every 20 ms) and after a chan-2 `skip`. */
	void (*progress)(struct mlf *f);
	/* Frees the role's state in mlf_close, after the event thread stopped. */
	void (*release)(struct mlf *f);
};

/* An update announced to the scheduler, waiting for its send or drop command. */
struct fabric_held {
	uint64_t id;
	uint64_t bytes;
	int64_t version;          /* v(g): the model version the update was computed from */
	double norm;              /* ||u||_2 as announced (announced again to a restarted scheduler) */
	struct mlfabric_buf buf;
	char server[APPMSG_NAME_MAX];
	struct fabric_held *next;
};

/* Push buffers kept for reuse (fabric_pool.c): at most this many free ones, this many bytes in all. */
#define FABRIC_POOL_FREE_MAX 16
#define FABRIC_POOL_FREE_BYTES ((size_t)512 << 20)
struct fabric_pooled;

/* A transfer handed to the dataplane whose completion is reported to the scheduler. */
struct fabric_out {
	uint64_t xfer;
	int is_update, to_agg;
	struct fabric_out *next;
};

/* A transfer the app thread asked for that only the event thread may hand to the dataplane. */
struct fabric_direct {
	struct mlfabric_buf buf;
	uint64_t id, bytes;
	uint16_t chan;
	int pooled;               /* @buf is a push buffer (fabric_pool.c): kept for reuse once sent */
	char dst[APPMSG_NAME_MAX];
	struct fabric_direct *next;
};

/* An arrival held back while the server waits for a chain forward's delivery. */
struct fabric_queued_ev {
	struct mlfabric_event ev;
	struct fabric_queued_ev *next;
};

/* An input received on MLF_CHAN_AGG (kept mapped until an aggregate command uses it). */
struct fabric_agg_input {
	struct mlfabric_event ev;
	double t;                 /* arrival, CLOCK_REALTIME s; -1 once summed */
};

/* An aggregate command waiting for its inputs. */
struct fabric_agg_cmd {
	struct fabric_cmd c;
	double deadline;          /* CLOCK_REALTIME s: aggregate what arrived after it */
	struct fabric_agg_cmd *next;
};

/**
 * Gets (mlf_get) in flight at once on one endpoint, each in a slot of its own (direct mode:
 * the gets of several servers' parameter groups overlap, docs/python.md "Overlap"; with a
 * scheduler one at a time, the others wait for the slot in use).
 */
#define FABRIC_GETS_MAX 8

/* One get waiting for a model (struct mlf_worker_state.get[]). */
struct fabric_get {
	int active, done, status;
	float *dst;
	size_t n;
	int64_t min_version, version;
	char server[APPMSG_NAME_MAX];
	double since;     /* CLOCK_REALTIME s the get started (fabric_wait.c) */
	uint64_t pull;    /* its pull id (announced again to a restarted scheduler) */
	uint64_t after;   /* the update its pull names (`after`, docs/control.md): the one
			   * pushed last to its server before it, 0 = none */
	/* a sharded model (§10.2): the shards of one version received so far */
	int64_t shard_version;
	int n_shards;
	uint64_t shard_off[FABRIC_MAX_SHARDS];
	uint64_t covered; /* floats written */
	double progress_s; /* CLOCK_REALTIME s of the get's start or of the latest shard that
			    * raised best_covered: the get's timeout counts from here (a slow
			    * but progressing sharded get is not a silent server) */
	double wait_s;    /* its timeout without progress, seconds (get_slot: when it gives up) */
	size_t model_n;   /* floats of the whole model that answered it (0: none yet) */
	uint64_t best_covered; /* the most floats one version has covered in this get: a
				* newer version starting over moves progress_s only once it
				* covers more, so a get waits at most (shards + 1) x timeout */
};

/* Worker (fabric_worker.c). */
struct mlf_worker_state {
	struct fabric_get get[FABRIC_GETS_MAX]; /* the gets in flight (active), FABRIC_GETS_MAX */
	/* the update this worker pushed last to each server (a fresh pull of that server names it,
	 * docs/scheduler.md "Fresh pulls"), one slot per server pushed to, FABRIC_MAX_PUSHED_TO at
	 * most (the least recently pushed slot is reused): a get of one server after pushes to
	 * others still waits for its own update (parameter groups on several servers) */
	struct {
		char server[APPMSG_NAME_MAX];
		uint64_t id;      /* 0: none */
		uint64_t seq;     /* push order, for reuse of the oldest slot */
	} pushed_to[FABRIC_MAX_PUSHED_TO];
	uint64_t push_seq;
	struct {                  /* ESync's State Server (mlf_query_state): the last answer */
		uint64_t seq;     /* of the query answered last (0: none) */
		uint64_t next;    /* of the query asked last */
		int ready;
		uint64_t ready_seq; /* the highest query answered READY (0: none) */
		double sent_s;    /* CLOCK_REALTIME s the query `next` was sent */
		double rtt_s;     /* s from sending a query to its answer, the last measured (0: none) */
		double pending_s; /* CLOCK_REALTIME s since queries wait for an answer (0: none wait) */
	} state;
	struct {                  /* ADSP (mlf_commit_rate): the scheduler's last `commit_rate` */
		int64_t check;    /* its checkpoint number (-1: none yet) */
		int64_t delta;    /* ΔC_i: commits to make by the next checkpoint */
		double period_s;  /* the check period Γ */
		double t;         /* CLOCK_REALTIME s it arrived */
	} rate;
	/* the size of @model_server's model as this endpoint knows it (0: unknown): from the last
	 * whole model a get received from it, or the last mlf_send_model to it. mlf_push refuses
	 * an update of another size to that server (-EINVAL, docs/api.md "Errors") */
	size_t model_n;
	char model_server[APPMSG_NAME_MAX];
	/* server names mapped to the current server after `server_moved` */
	char server[APPMSG_NAME_MAX], server_now[APPMSG_NAME_MAX];
	char moved_from[FABRIC_MOVED_MAX][APPMSG_NAME_MAX];
	int n_moved;
};

/* Server and replica (fabric_server.c, fabric_replica.c). */
#define FABRIC_SYNC_SHORT 8 /* sync_step sizes remembered (iterations closed by the timeout) */

/**
 * MLfabric-S at a server or replica (fabric_server.c, docs/fabric.md "MLfabric-S"): the
 * contributions (updates or aggregates) of the current iteration, summed, until they hold
 * n_workers parts (or the size a `sync_step` gave that iteration); then on_update applies the
 * sum as one step (paper §6: the iteration's updates are applied together, version +=
 * parts) and the held commits are reported.
 */
struct mlf_sync_acc {
	void *data;            /* payload: header (parts so far) then the sum; NULL = empty */
	uint64_t bytes;        /* of @data */
	uint64_t xfer;         /* the last contribution's transfer id */
	char src[APPMSG_NAME_MAX]; /* and its source host */
	json_t **commits;      /* one `commit` per contribution, version set at the step */
	int n_commits, cap_commits;
	struct {
		int64_t version;   /* start version of a short iteration */
		uint32_t parts;    /* its contributions */
	} short_it[FABRIC_SYNC_SHORT];
	int n_short;           /* sync_steps seen (a ring: the newest at (n_short - 1) % size) */
};

struct mlf_server_state {
	mlf_update_cb on_update;
	mlf_request_cb on_request;
	void *arg;
	size_t n_floats;
	int64_t version;
	struct mlf_params params;
	enum mlf_replication replication; /* replica */
	/* state access (catch-up, snapshots; mlf_set_state_callbacks) */
	mlf_get_state_cb get_state;
	mlf_set_state_cb set_state;
	void *state_arg;
	/* verification mode: [0] server, [1] replica: ring of written tags */
	uint64_t snap_tags[2][FABRIC_SNAP_KEEP];
	unsigned n_snaps[2];
	struct mlf_sync_acc sync; /* MLF_MODE_MLFABRIC_S: the iteration accumulated so far */
	/* sharded servers (§10.2, mlf_set_server_shard): this server holds the floats
	 * [offset, offset + n_floats) of a model of n_total floats as shard @shard of @n_shards */
	int shard, n_shards;      /* n_shards 0: not sharded */
	size_t offset, n_total;
	struct fabric_model_wait *mwait; /* model copies waiting for their at_version */
};

/* A shard server's model `send` waiting until the server reaches its at_version (§10.2). */
struct fabric_model_wait {
	struct fabric_cmd c;
	double deadline;          /* CLOCK_REALTIME s: fail it (the version never came) */
	struct fabric_model_wait *next;
};

/* Chain replication of a server (fabric_chain.c; the `replica` message). */
struct mlf_chain_state {
	char host[APPMSG_NAME_MAX]; /* the chain replica; "" = none */
	int active;                 /* a forward is in flight: commit and later arrivals wait */
	uint64_t fwd;               /* the forward's transfer id (dataplane-chosen) */
	uint64_t xfer;              /* the applied transfer it carries */
	json_t *commit;             /* the commit reported once the forward is delivered */
	struct fabric_queued_ev *q, *q_tail;
};

/* One wait of this endpoint on a peer (fabric_wait.c). */
struct fabric_wait {
	char what[96];            /* "model (get)", "input update <id> of aggregate <agg>" */
	char peer[APPMSG_NAME_MAX]; /* host waited on */
	double since;             /* CLOCK_REALTIME s */
	int logged;               /* passed the threshold: logged and reported */
};

/* The waits seen at the last check (fabric_wait.c). */
struct mlf_wait_state {
	double threshold_s;       /* mlf_opts.wait_log_s (default 2 s; < 0 = off) */
	double last_check;        /* CLOCK_REALTIME s */
	int n, n_reported;        /* waits now; waits in the last `waits` sent */
	struct fabric_wait w[FABRIC_WAITS_MAX];
};

/* Aggregator (fabric_aggregator.c). */
struct mlf_aggregator_state {
	struct fabric_agg_input inputs[FABRIC_MAX_AGG_INPUTS];
	int n_inputs;
	struct fabric_agg_cmd *cmds;
	struct mlf_aggregator_stats stats;
};

/* A model copy a distributor (a worker, §10.3) received to forward, and its `forward` commands. */
struct fabric_fwd {
	uint64_t xfer_in;         /* the incoming copy's transfer id */
	struct mlfabric_event ev; /* the arrival (kept mapped; its memfd is re-sent), once @have */
	int have;
	int n_fwd, n_done;        /* forwards of it in all (0 until a command says), handed over */
	struct fabric_cmd *cmds;  /* `forward` commands waiting for the copy (n_cmds) */
	int n_cmds;
	double deadline;          /* CLOCK_REALTIME s: give up waiting for the copy (or its commands) */
	struct fabric_fwd *next;
};

/* Model distribution (fabric_dist.c). */
struct mlf_dist_state {
	struct fabric_fwd *fwds;
	uint64_t forwarded;       /* forwards handed to the dataplane */
};

/* The model snapshot a server's copies of one batch share (fabric_core_cmd.c, §10.3). */
struct fabric_model_snap {
	struct mlfabric_buf buf;  /* data NULL = none */
	int64_t batch;            /* the `send`s' batch tag */
	double t;                 /* CLOCK_REALTIME s it was taken */
};

struct mlf {
	/* core (fabric_core.c, fabric_core_cmd.c, fabric_core_xfer.c) */
	struct cluster cl;
	int me;
	enum mlf_mode mode;
	double timeout_s, agg_timeout_s;
	mlfabric_t *dp;
	char sock[256];             /* the dataplane socket (fabric_model.c opens its own connection) */
	pthread_t thread;
	int wake[2];
	int stop, dead, sched_lost;
	int dead_rc;                /* why dead: -ETIMEDOUT (the dataplane missed its timeout,
				     * mlfabric_error names its socket) or -ENOTCONN */
	pthread_mutex_t lock;       /* everything the app thread and the event thread share */
	pthread_cond_t cond;
	char err[256];
	enum fabric_role role;
	const struct fabric_role_ops *ops;
	char app[64];
	int reg_state;              /* 0 none, 1 accepted, -errno refused */
	char reg_reason[APPMSG_REASON_MAX];
	int reg_no_sched;
	json_t *reg_msg;            /* the accepted `register`, sent again to a restarted scheduler */
	int rereg_pending;          /* sent again, not accepted yet (e.g. a replica before its server) */
	double rereg_at;            /* CLOCK_REALTIME s to send it again (0: not scheduled) */
	double rereg_until;         /* give up retrying then */
	uint64_t seq;
	struct fabric_held *held;
	struct fabric_out *out;
	int sending;                /* `send` commands between held list and out list */
	struct fabric_direct *direct;
	struct {
		struct fabric_pooled *free, *busy; /* free, and mapped by the dataplane until its SENT */
		uint64_t allocated, reused;        /* mlf_get_push_buffers */
	} pool;                     /* a worker's push buffers (fabric_pool.c) */
	struct fabric_peer_msg *peer_head, *peer_tail; /* mlf_peer_recv's queue (fabric_peer.c) */
	int n_peer;
	uint64_t peer_dropped;      /* neighbour messages dropped: queue full or bad payload */
	uint64_t skipped[FABRIC_SKIPPED_MAX]; /* ring of ids passed to `skip` */
	unsigned n_skipped;
	struct {
		uint64_t id;
		uint16_t chan;
	} received[FABRIC_RECEIVED_MAX];      /* ring of transfers handed over on chan 1 and 4 */
	unsigned n_received;
	char verify_dir[200];       /* verification mode ("" = off) */
	struct mlf_worker_stats ws; /* updates held and sent by the core, models by the worker */
	/* roles */
	struct mlf_worker_state w;
	struct mlf_server_state s;
	struct mlf_chain_state chain;
	struct mlf_aggregator_state agg;
	struct mlf_wait_state waits; /* fabric_wait.c */
	struct fabric_model_snap msnap; /* core: a batch's shared model snapshot */
	struct mlf_dist_state dist;  /* fabric_dist.c: a worker's forwards */
};

/* ---- fabric_core.c: services to the roles ------------------------------------------------ */

/** fabric_core_ops - the role's ops, none (NULL) before a registration (or after a failed one). */
static inline const struct fabric_role_ops *fabric_core_ops(const struct mlf *f)
{
	return f->role != FABRIC_ROLE_NONE ? f->ops : NULL;
}

/** fabric_core_role_name - "worker", "server", ... ("" for none). */
const char *fabric_core_role_name(enum fabric_role role);

/**
 * fabric_core_dp_gone - the error of a call that found the dataplane connection lost (f->dead)
 * or that failed with @rc from the dataplane client: the error text "@what: ..." names the
 * dataplane's socket when it missed its timeout (docs/api.md "Timeouts"). Returns -ETIMEDOUT in
 * that case, else -ENOTCONN. Takes f->lock.
 */
int fabric_core_dp_gone(struct mlf *f, const char *what, int rc);

/** fabric_core_next_id - a cluster-unique update/pull id: (host index + 1) << 40 | sequence, the
 * sequence starting from the clock at mlf_open (unique across restarts); caller holds the lock. */
uint64_t fabric_core_next_id(struct mlf *f);

/**
 * fabric_core_wait_until - wait on the endpoint's condition until @deadline (CLOCK_REALTIME s);
 * caller holds the lock. 0 or ETIMEDOUT (positive, as pthread_cond_timedwait).
 */
int fabric_core_wait_until(struct mlf *f, double deadline);

/**
 * fabric_core_listen - listen on @chan; in the scheduled modes channels 1..4 take only the
 * transfers the scheduler announced (mlfabric_listen_announced, docs/security.md "Announced
 * transfers"). 0 or -errno (dataplane gone).
 */
int fabric_core_listen(struct mlf *f, uint16_t chan);

/**
 * fabric_core_register - make this endpoint @role with @ops, listen on @chans and, in the
 * scheduled modes, register @reg (stolen; "type" and "role" added) with the scheduler, retrying
 * while the dataplane has no scheduler, up to the endpoint timeout. 0; -EINVAL (already
 * registered, or refused by the scheduler); -ENOTCONN (no dataplane channel, no answer). On
 * failure the endpoint has no role again and mlf_error says why.
 */
int fabric_core_register(struct mlf *f, enum fabric_role role, const struct fabric_role_ops *ops,
			 const uint16_t *chans, int n_chans, json_t *reg);

/** fabric_core_set_role - become @role with @ops (a replica's promotion); renames the endpoint. */
void fabric_core_set_role(struct mlf *f, enum fabric_role role, const struct fabric_role_ops *ops);

/* ---- fabric_core_xfer.c: control messages and transfers ---------------------------------- */

/** fabric_core_set_err - record the error text mlf_error returns (caller holds the lock or owns @f alone). */
void fabric_core_set_err(struct mlf *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/** fabric_core_wake - wake the event thread (after queueing a direct transfer). */
void fabric_core_wake(struct mlf *f);

/**
 * fabric_core_ctl - send control message @msg (stolen; NULL = -ENOMEM) to the scheduler through
 * the dataplane, with this endpoint's "app". 0 or -errno of the dataplane socket.
 */
int fabric_core_ctl(struct mlf *f, json_t *msg);

/**
 * fabric_core_report_done - tell the scheduler transfer @xfer finished (@status 0 or -errno,
 * @bytes moved, at @t CLOCK_REALTIME s, @reason when it failed); @t_start (CLOCK_REALTIME s,
 * 0 = unknown) is when its first byte left, which the scheduler's lead follows
 * (docs/scheduler.md "The lead"). Nothing in direct mode.
 */
void fabric_core_report_done(struct mlf *f, uint64_t xfer, int status, uint64_t bytes, double t_start, double t,
			     const char *reason);

/**
 * fabric_core_send_buf - hand a transfer of @bytes of @b to host @dst on @chan to the dataplane:
 * scheduler transfer id @xfer, not before @start (CLOCK_REALTIME s; 0 = now), rate steps @steps
 * (paper §5 pacing). @b is released (the dataplane holds its own fd). *@id is the dataplane's
 * transfer id. 0, or -errno with mlf_error set when the dataplane refused it.
 */
int fabric_core_send_buf(struct mlf *f, struct mlfabric_buf *b, uint64_t bytes, const char *dst, uint16_t chan,
			 uint64_t xfer, double start, const struct appmsg_step *steps, int n_steps, uint64_t *id);

/**
 * fabric_core_track_out - remember outgoing transfer @xfer (dataplane id) so its completion is
 * reported to the scheduler (and counted as a sent update unless @to_agg); caller holds the lock.
 */
void fabric_core_track_out(struct mlf *f, uint64_t xfer, int is_update, int to_agg);

/**
 * fabric_core_send_shared - fabric_core_send_buf without releasing @b: the caller keeps the
 * buffer (to send it again, e.g. a received model copy a distributor forwards several times;
 * the dataplane maps the memfd itself, so @b may be released once this returns).
 */
int fabric_core_send_shared(struct mlf *f, const struct mlfabric_buf *b, uint64_t bytes, const char *dst,
			    uint16_t chan, uint64_t xfer, double start, const struct appmsg_step *steps,
			    int n_steps, uint64_t *id);

/** fabric_core_was_skipped - was @id passed to a `skip` (chan 1/4: a transfer; chan 2: an update id)? */
int fabric_core_was_skipped(const struct mlf *f, uint64_t id);

/* ---- fabric_pool.c: push buffers kept for reuse ----------------------------------------- */

/**
 * fabric_pool_take - a buffer of exactly @size bytes (> 0) for an update: a free one of the pool
 * (its header bytes zeroed, the rest holding an earlier update) or a new one (zero-filled).
 * Returns 0 or -errno of mlfabric_buf_alloc. Takes f->lock.
 */
int fabric_pool_take(struct mlf *f, size_t size, struct mlfabric_buf *b);

/**
 * fabric_pool_sent - @b (from fabric_pool_take) was handed to the dataplane as transfer @xfer
 * (its id): kept until fabric_pool_done(@xfer), then free for the next take; @xfer 0 (the
 * dataplane refused it) releases it. @b is cleared. Takes f->lock.
 */
void fabric_pool_sent(struct mlf *f, struct mlfabric_buf *b, uint64_t xfer);

/** fabric_pool_give_back - @b (from fabric_pool_take) was never sent: free for the next take. */
void fabric_pool_give_back(struct mlf *f, struct mlfabric_buf *b);

/**
 * fabric_pool_done - transfer @xfer ended (SENT event): its buffer, if pooled, is free again,
 * unless @handed_over (the transfer went to an app on this host: the dataplane gave the listener
 * the same memfd, which it may still read, so the buffer leaves the pool and this endpoint's
 * mapping is released). Returns 1 if @xfer had a pooled buffer.
 */
int fabric_pool_done(struct mlf *f, uint64_t xfer, int handed_over);

/** fabric_pool_release - unmap every pooled buffer (mlf_close, after the event thread stopped). */
void fabric_pool_release(struct mlf *f);

/** fabric_core_queue_direct - queue @d for the event thread (direct mode); @front: before the others. */
void fabric_core_queue_direct(struct mlf *f, struct fabric_direct *d, int front);

/**
 * fabric_core_pull_msg - the `pull` of get @g (docs/control.md): its id, server,
 * `min_version` when set and `after` (the update pushed last to that server before it, so the
 * copy answering it includes that update: docs/scheduler.md "Fresh pulls"). New reference; NULL
 * when out of memory. Called with f->lock held or by the get's own thread.
 */
json_t *fabric_core_pull_msg(const struct fabric_get *g);

/* ---- fabric_core_cmd.c: the commands from the scheduler and the dataplane ----------------- */

/**
 * fabric_core_send - carry out `send` command @c now (an update, a model or state snapshot):
 * hand the payload to the dataplane, or report a failed `done` naming the reason. Used by the
 * dispatcher and by a shard server whose model copy waited for its version (§10.2).
 */
void fabric_core_send(struct mlf *f, struct fabric_cmd *c);

/**
 * fabric_core_on_ctl - carry out control message @text from the scheduler or the dataplane
 * (docs/control.md), on the event thread: a message that does not parse is logged and answered
 * with an `error` naming what was wrong; a role command the role's ops do not take is logged
 * (and refused to the scheduler where it waits for an answer: `promote`, `forward`).
 */
void fabric_core_on_ctl(struct mlf *f, const char *text);

/**
 * fabric_core_rereg_retry - on the event thread, each round: send the registration again when a
 * restarted scheduler refused it (every 0.25 s, for up to 10 s after the scheduler came back).
 */
void fabric_core_rereg_retry(struct mlf *f);

/* ---- fabric_server.c --------------------------------------------------------------------- */

/** The server's ops (a promoted replica switches to them). */
extern const struct fabric_role_ops fabric_server_ops;

/**
 * fabric_server_commit_msg - the `commit` control message of transfer @xfer: model version @v
 * after it, the update ids in @h's parts (none for NULL), time now. NULL when out of memory.
 */
json_t *fabric_server_commit_msg(uint64_t xfer, int64_t v, const struct mlf_payload_hdr *h);

/**
 * fabric_server_apply - apply update arrival @ev with on_update (paper Table 1) and report its
 * `commit` (docs/control.md); a chain server commits once the forward is delivered
 * (docs/replication.md). Bad payloads and transfers reported lost (`skip`) are logged and skipped.
 */
void fabric_server_apply(struct mlf *f, struct mlfabric_event *ev);

/**
 * fabric_server_sync_step - `sync_step` (MLfabric-S, docs/control.md): the iteration that
 * starts at model version @c->version has @c->id contributions; applies it now when they are
 * all accumulated, else when the last arrives.
 */
void fabric_server_sync_step(struct mlf *f, const struct fabric_cmd *c);

/** fabric_server_sync_reset - forget the accumulated iteration (a replica installed a state). */
void fabric_server_sync_reset(struct mlf *f);

/** fabric_server_sync_release - fabric_server_sync_reset and free its memory (mlf_close). */
void fabric_server_sync_release(struct mlf *f);

/**
 * fabric_server_reg_fields - the fields of a server's `register` (mode, n_floats, bytes, version
 * = the current one, tau_max, momentum, n_workers; the shard fields of a sharded server), from
 * f->s (docs/control.md). New reference; NULL when out of memory. Used at registration and by a
 * promoted replica, whose registration a restarted scheduler hears as a server's.
 */
json_t *fabric_server_reg_fields(struct mlf *f);

/**
 * fabric_server_snapshot - `snapshot` in verification mode (docs/replication.md): writes
 * <verify_dir>/<role>-<tag>.f32 and a snapshots.jsonl line; keeps the newest FABRIC_SNAP_KEEP.
 * Errors are logged (a verification aid must not stop the endpoint).
 */
void fabric_server_snapshot(struct mlf *f, uint64_t tag);

/* ---- fabric_chain.c ---------------------------------------------------------------------- */

/**
 * fabric_chain_set - `replica`: chain replication to host @c->dst from the next applied
 * transfer on ("" = none; docs/replication.md). Bad hosts or non-chain replication are logged.
 */
void fabric_chain_set(struct mlf *f, const struct fabric_cmd *c);

/**
 * fabric_chain_forward - send a copy of applied transfer @ev to the chain replica on chan 4;
 * @commit (stolen) is reported once the dataplane says it was delivered (fabric_chain_sent), or
 * at once when the forward cannot start (the chain is then broken and the scheduler told).
 */
void fabric_chain_forward(struct mlf *f, const struct mlfabric_event *ev, json_t *commit);

/** fabric_chain_hold - keep arrival @ev (stolen: kept mapped) until the forward in flight is delivered. */
void fabric_chain_hold(struct mlf *f, struct mlfabric_event *ev);

/**
 * fabric_chain_sent - if @ev completes the forward in flight, report its commit (a failure
 * breaks the chain) and return 1; the caller then applies what fabric_chain_next gives. 0 otherwise.
 */
int fabric_chain_sent(struct mlf *f, const struct mlfabric_event *ev);

/** fabric_chain_next - the next held arrival (free it after releasing its event), NULL while a forward is in flight. */
struct fabric_queued_ev *fabric_chain_next(struct mlf *f);

/** fabric_chain_release - free the held arrivals and the pending commit (mlf_close). */
void fabric_chain_release(struct mlf *f);

/* ---- fabric_worker.c: a worker endpoint -------------------------------------------------- */

/**
 * fabric_worker_model_size - record that @server's model has @n floats (a whole model received
 * from it or sent to it): mlf_push refuses updates of another size to @server from now on.
 */
void fabric_worker_model_size(struct mlf *f, const char *server, size_t n);

/* ---- fabric_dist.c: a worker forwarding model copies (distribution trees, §10.3) ---------- */

/**
 * fabric_dist_command - `forward` @c (docs/control.md): send the model copy @c->xfer_in this
 * worker received (or will receive) to @c->dst at the planned start and rate steps, as
 * transfer @c->xfer answering pull @c->id. Sent at once when the copy is here, else when it
 * arrives; the copy is kept until all @c->n_fwd forwards of it are handed to the dataplane.
 */
void fabric_dist_command(struct mlf *f, struct fabric_cmd *c);

/**
 * fabric_dist_received - a model arrival on chan 3 (after the worker's get saw it): kept when
 * a `forward` names it, or (the newest unnamed one) 2 s in case its `forward`s are on the way
 * (then @ev is stolen: its buffer is NULL afterwards). Returns 1 when kept.
 */
int fabric_dist_received(struct mlf *f, struct mlfabric_event *ev);

/**
 * fabric_dist_progress - forwards whose copy did not arrive within the endpoint timeout after
 * their planned start fail (a failed `done` each, so the scheduler answers their pulls again);
 * copies kept without commands that long are released.
 */
void fabric_dist_progress(struct mlf *f);

/** fabric_dist_release - free every kept copy and waiting command (mlf_close). */
void fabric_dist_release(struct mlf *f);

/* ---- fabric_wait.c: waits on peers -------------------------------------------------------- */

/**
 * fabric_wait_check - on the event thread, at most every 0.1 s: collect this endpoint's waits
 * on peers (a worker's get: the model from its server; an aggregator's `aggregate` command:
 * each input update not arrived, from its worker). A wait longer than the threshold
 * (mlf_opts.wait_log_s, default 2 s) is logged once, `<app>: waiting <s> s for <what> from
 * <peer>`. Returns the `waits` message for the scheduler (a new reference the caller sends
 * with fabric_core_ctl: this module calls nothing of the core) when the list of such waits
 * changed (an empty list when they ended; docs/control.md), else NULL. Takes f->lock.
 */
json_t *fabric_wait_check(struct mlf *f);

#endif
