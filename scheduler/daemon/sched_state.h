/* sched_state.h - the scheduler daemon's state: hosts, applications, updates, pulls, transfers. */
#ifndef MLF_SCHED_STATE_H
#define MLF_SCHED_STATE_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "auth.h"
#include "cluster.h"
#include "ctl.h"
#include "plan.h"
#include "sched_index.h"
#include "sched_lead.h"
#include "sched_netmon.h"
#include "sched_policy.h"

#define SCHED_LATE_WEIGHT 0.1     /* weight of one leg in sched_shard.late_s */
#define SCHED_LATE_MAX 0.5        /* one leg's lateness counts at most this, s (a leg held
				   * behind a lost one for --xfer-timeout must not teach seconds) */
#define SCHED_LINK_HIST 32        /* link reports kept per host (one every 0.1 s: 3.2 s) */
#define SCHED_XFER_FRESH (1ull << 62) /* scheduler-chosen transfer ids: 1 << 62 | counter */
/* Ranges of the numbers hosts send (docs/control.md "Limits"): far beyond any real value, and
 * small enough that deadlines (version + tau_max) and rate integrals (bytes * 8) cannot overflow */
#define SCHED_MAX_BYTES PLAN_MAX_BYTES      /* an update or model: 1 TiB (plan.h: one limit) */
#define SCHED_MAX_VERSION PLAN_MAX_VERSION  /* a model version (exact as a double) */
/* The name both sides MAC for a status viewer: no host can have it (names never start with '-'). */
#define SCHED_VIEWER_NAME "-viewer"
#define SCHED_MAX_TAU PLAN_MAX_TAU          /* the delay bound, in versions */
#define SCHED_MAX_STEPS 256       /* rate steps per command (lib/appmsg.h) */
#define SCHED_MAX_UPD_PER_HOST 4096  /* --max-updates-per-host default */
#define SCHED_MAX_PULLS_PER_HOST 1024 /* --max-pulls-per-host default */
#define SCHED_ACCEPT_BACKOFF_MIN_S 0.1 /* out of file descriptors: first pause of accept, s */
#define SCHED_ACCEPT_BACKOFF_MAX_S 1.0 /* ... doubling up to this */
/* What a connection costs before it authenticates (docs/security.md "Before authentication"): */
#define SCHED_UNAUTH_IN_MAX 4096  /* longest line taken, bytes (hello and auth are < 1 KiB) */
#define SCHED_UNAUTH_OUT_MAX 4096 /* output queue cap, bytes (challenge, one error) */
#define SCHED_MAX_UNAUTH 128      /* connections not yet authenticated; the oldest goes first */

/** Application roles, as bits of sched_host.apps. */
enum sched_role {
	SCHED_ROLE_WORKER = 1 << 0,
	SCHED_ROLE_SERVER = 1 << 1,
	SCHED_ROLE_AGGREGATOR = 1 << 2,
	SCHED_ROLE_REPLICA = 1 << 3,
};

/** One `link` report of a host's monitor (docs/control.md): capacities in Gbit/s at time t. */
struct sched_link_report {
	double t;          /* CLOCK_REALTIME seconds of the measurement */
	double up_gbps;
	double down_gbps;
	double tx_gbps;    /* measured throughput over the last period (0 when not reported) */
	double rx_gbps;
};

/**
 * The port part of a host's newest `link` report (docs/control.md, field `port`): its DPDK port's
 * drop counters since the dataplane started (frames) and link state. Shown by `status`.
 */
struct sched_port_report {
	int known;              /* a report carried `port` */
	char name[64];          /* "port N (device[, interface IF])" */
	int link_up;
	uint64_t speed_mbps;    /* Mbit/s, 0 unknown */
	uint64_t imissed, ierrors, rx_nombuf, oerrors, link_changes;
};

/** What the scheduler knows of one cluster host. */
struct sched_host {
	int conn;          /* index into sched.conns of its dataplane connection, or -1 */
	int alive;         /* connected and heard from within --peer-timeout */
	double last_heard; /* CLOCK_REALTIME seconds of the last message from its dataplane */
	int n_reports;     /* valid entries of reports[] (a ring, newest at next_report - 1) */
	int next_report;
	struct sched_link_report reports[SCHED_LINK_HIST];
	struct sched_port_report port; /* of the newest link report that had one */
	unsigned apps;     /* enum sched_role bits of the registered applications */
	int held_upd;      /* entries of sched.upd of its worker (recounted by sched_compact) */
	int held_pulls;    /* entries of sched.pulls of its worker (recounted by sched_compact) */
	uint64_t n_pushed; /* updates its worker announced since this scheduler started: the
			    * worker's iteration clock (sched_policy_on_update), read by the
			    * policies (docs/scheduler.md "Policies") */
	double t_last_push; /* CLOCK_REALTIME s of its worker's last update (0: none yet) */
	double t_pull_planned; /* CLOCK_REALTIME s its worker's last pull was planned (answered) */
	double clk_offset_s; /* its clock offset: scheduler clock - host clock, s (docs/control.md
			      * "Clocks"; the dataplane's estimate, sched_clock.h) */
	double clk_err_s;   /* uncertainty of clk_offset_s, s */
	int clk_known;      /* an estimate came over the current connection */
	int clk_warned;     /* the uncertainty is above --clock-warn-ms (warned once) */
	double clk_rec_s;   /* the offset last recorded (clocks.jsonl) */
	unsigned long n_starts; /* its update transfers whose actual start came (sched_clock_start) */
	double start_err_max_s, start_err_sum_s; /* of those: largest |start - planned|, sum, s */
	double iter_rate;   /* its worker's iterations per second while working: EWMA (weight 0.2)
			     * of 1 / (update arrival - the later of its last update and its last
			     * answered pull), so time held at a pull gate does not count: the
			     * load signal of adaptive SSP (--asp) */
	struct sched_netmon_host net; /* measured capacities of its links (sched_netmon.h) */
};

/** Life of an update (docs/fabric.md updates.jsonl fates). */
enum sched_upd_state {
	SCHED_UPD_PENDING = 0,   /* announced, not planned yet */
	SCHED_UPD_PLANNED = 1,   /* commanded (direct or aggregated), not committed yet */
	SCHED_UPD_COMMITTED = 2, /* the server reported its commit */
	SCHED_UPD_DROPPED = 3,   /* dropped by the plan (delay bound) or before planning */
	SCHED_UPD_LOST = 4,      /* planned but will never be committed (failure, dead peer) */
};

/** Fate of an update's replica copy (docs/replication.md; updates.jsonl `replica`). */
enum sched_rep_state {
	SCHED_REP_NONE = 0,      /* no replica copy (no replica planned, or dropped) */
	SCHED_REP_PLANNED = 1,   /* replica copy commanded, its commit at the replica not seen yet */
	SCHED_REP_COMMITTED = 2, /* the replica reported its commit */
	SCHED_REP_PUNTED = 3,    /* punted: the worker holds it for a later batch (replica_only) */
	SCHED_REP_LOST = 4,      /* the replica copy will never be applied (stale replica, failure) */
};

/** A worker update the scheduler was told about (`update` message). */
struct sched_update {
	uint64_t id;       /* update id chosen by the worker */
	int worker;        /* cluster host index of the worker */
	uint64_t bytes;    /* payload bytes */
	int64_t version;   /* v(g): model version it was computed from */
	double norm;       /* ||g||_2 as reported */
	double t_arrival;  /* CLOCK_REALTIME seconds the scheduler got it */
	enum sched_upd_state state;
	int batch;         /* batch number that planned it, -1 before */
	uint64_t xfer;     /* its own transfer: the update id (direct) or a fresh id (to an aggregator) */
	uint64_t agg;      /* the aggregate's transfer id when aggregated, else 0 */
	enum sched_rep_state rstate; /* its replica copy (§5.3) */
	uint64_t rxfer;    /* transfer id of its replica copy (to the replica or a replica
			    * aggregator), 0 before it is commanded */
	uint64_t ragg;     /* the replica aggregate's transfer id when aggregated, else 0 */
	int legs;          /* sharded model (§10.2): shards of it not yet committed */
	int64_t v_commit;  /* planned: the server's version once it (or its aggregate) commits */
	double t_commit;   /* planned: when it (or its aggregate) commits, plan time (sched.t0) */
	int64_t sync_it;   /* MLfabric-S: 1 + the number of the iteration that planned it, 0 none */
};

/** A pull request waiting for a model transfer. */
struct sched_pull {
	uint64_t id;
	int worker;          /* host index */
	int64_t min_version; /* answered once the server committed this version (-1: at once) */
	uint64_t after;      /* the worker's update pushed before it (0: none): answered with a
			      * model that includes it unless it is dropped (docs/scheduler.md
			      * "Fresh pulls") */
	double t_arrival;    /* CLOCK_REALTIME seconds */
	int unreachable;     /* 1 once a plan found no copy can reach the worker (logged once) */
};

/** What a commanded transfer carries. */
enum sched_what {
	SCHED_WHAT_UPDATE = 0,
	SCHED_WHAT_AGGREGATE = 1,
	SCHED_WHAT_MODEL = 2,
	SCHED_WHAT_STATE = 3, /* a state snapshot server -> replica (catch-up) */
};

/**
 * A transfer the scheduler commanded. Times are plan times: seconds since the scheduler's time
 * origin (sched.t0); the reserved rate profile (Gbit/s of payload) stays subtracted from the
 * links of later batches until the planned end passes or a `done` arrives.
 */
struct sched_xfer {
	uint64_t xfer;
	enum sched_what what;
	uint64_t id;        /* update id (UPDATE), pull id (MODEL), 0 (AGGREGATE) */
	int src, dst;       /* host indexes */
	int chan;
	uint64_t bytes;
	double start, end;  /* plan times, s */
	int n_steps;
	struct plan_rate_step *steps; /* plan times, owned */
	int done;           /* a `done` arrived (or the transfer was declared lost) */
	int sent;           /* its sender's own `done` arrived (a commit may come first and set
			     * done; the sender's report still measures its start, sched_lead.h) */
	int replica;        /* 1: carries a replica copy (§5.3: chan 4, or chan 2 to a replica
			     * aggregator); its loss makes the replica stale, not the update lost */
	uint64_t from_xfer; /* MODEL forwarded by a distributor (§10.3): the server's copy to src
			     * it forwards; 0 = a copy the server sends itself */
	int n_fwd;          /* MODEL from the server to a distributor: forwards of it planned */
	int failed;         /* declared lost before any `done` (sched_fail_xfer): its destination
			     * skips it (a shard server that was away hears it again when back) */
	int skipped;        /* parts counted in its destination shard's lag (sched_shard_skipped);
			     * a commit of it after all takes them back (sched_shard_commit) */
	int inputs_lost;    /* AGGREGATE to a server: inputs the scheduler declared lost (they
			     * count in the shard's lag and the policies heard it); a `partial`
			     * naming them counts only the others */
	int committed;      /* a shard server reported its commit (sched_shard_commit): a leg
			     * `done` at its sender but not yet applied still holds the copies
			     * that wait for it (sched_shard_copy_ready) */
};

/** A dataplane or status-viewer connection (before `hello`, host is -1). */
struct sched_conn {
	struct ctl_conn c;
	int host;          /* cluster host index after hello, else -1 */
	int closing;       /* close once the queued bytes are written (refused hello) */
	double t_open;     /* CLOCK_REALTIME seconds of accept */
	int viewer;        /* a read-only `status` connection (sched_status.h), never a host */
	int auth_host;     /* hello received, challenge sent: the host it claims (-1: none) */
	int auth_viewer;   /* a viewer's hello received, challenge sent (docs/security.md) */
	char nc[AUTH_NONCE_HEX + 1], ns[AUTH_NONCE_HEX + 1]; /* the host's and our nonce */
};

/**
 * When a shard server's model copy is planned to start (--copy-wait; §10.2). A copy of batch b
 * carries the version of every update ordered before b, so its shard sends it only once the
 * legs of those updates have arrived and been applied (`at_version`); a copy planned to start
 * earlier starts late, and runs into the copies planned after it on the same links.
 */
enum sched_copy_wait {
	SCHED_COPY_WAIT_UPDATES = 0, /* after the planned arrival of the update legs in flight to
				      * the shard (before 2026-11-26) */
	SCHED_COPY_WAIT_LEGS = 1,    /* ... and of the aggregate legs too */
	SCHED_COPY_WAIT_LEARNED = 2, /* legs, each shifted by its shard's learned lateness
				      * (sched_shard.late_s; the default) */
};

/** Daemon options (mlf-scheduler flags, docs/scheduler.md). */
struct sched_config {
	char listen[64];        /* "IP:PORT"; "" = the scheduler host's IP and control_port */
	double batch_s;         /* --batch-ms / 1000: the longest an arrival waits to be planned,
				 * and the period of the fallback tick (docs/scheduler.md "Batches") */
	double replan_s;        /* --replan-ms / 1000: plans start at least this far apart, and an
				 * arrival waits this long for others to share its plan */
	double t_lag_s;         /* --t-lag: a link report is used from t + t_lag on */
	double peer_timeout_s;  /* --peer-timeout */
	double headroom;        /* --headroom: plan capacity = link capacity x headroom */
	int copy_wait;          /* --copy-wait: when a sharded model copy may start
				 * (enum sched_copy_wait, docs/scheduler.md "Sharded servers") */
	double clock_warn_s;    /* --clock-warn-ms / 1000: a host's offset uncertainty above it is
				 * warned about (docs/control.md "Clocks") */
	double clock_max_s;     /* --clock-max-ms / 1000: above it the host is refused */
	int clock_correct;      /* --clock-correct on (1, default) / off: commanded times in each
				 * host's clock */
	int capacity_measured;  /* --capacity measured (1) / declared (0, default): plan with the
				 * measured estimates (sched_netmon.h), at most the declared capacity */
	double lead_s;          /* --lead-ms / 1000: the largest and initial lead; the lead itself
				 * is the measured command latency (sched_lead.h) */
	double sync_timeout_s;  /* --sync-timeout */
	double xfer_timeout_s;  /* --xfer-timeout: no `done` this long after the planned end = lost */
	double xfer_keep_s;     /* transfer records are forgotten this long after their planned
				 * end (no flag; 0 = SCHED_XFER_KEEP_S; tests shorten it) */
	int max_batch;          /* most updates in one batch (an aggregate names <= 62 parts) */
	char aggregators[512];  /* --aggregators h1,h2 ("" = every registered aggregator) */
	char records[512];      /* --records DIR ("" = none) */
	char replica_aggregators[512]; /* --replica-aggregators h1,h2 ("" = the aggregators) */
	int verify_every;       /* --verify-every N: `snapshot` after every N-th batch (0 = off) */
	double catchup_timeout_s; /* --catchup-timeout: longest wait for the server's commits */
	int sync_all;           /* --sync-batching all: MLfabric-S plans an iteration only once
				 * every worker reported (0 = eager, the default; docs/scheduler.md) */
	int distributors;       /* --distributors N: most distributors of a batch (§10.3); -1 =
				 * every eligible host, 0 = off (every pull answered by the server) */
	int max_upd_per_host;   /* --max-updates-per-host: updates of one host held (any state
				 * until compacted); more are dropped at once (0 = no limit) */
	int max_pulls_per_host; /* --max-pulls-per-host: pulls of one host waiting; more are
				 * refused (0 = no limit) */
	int ssp_s;              /* --ssp S: stale-synchronous parallel, a worker's pull waits while
				 * it is more than S iterations ahead of the slowest live worker
				 * (asp-ieee-access2018 §III; sched_policy_ssp.c); -1 = off. With --asp, the
				 * largest threshold ASP may choose */
	int asp;                /* --asp: adaptive SSP (asp-ieee-access2018 §III.C): the threshold
				 * follows the workers' iteration rates (sched_ssp_threshold) */
	int asp_w;              /* --asp-weak W: ASP's weak threshold, used while the workers'
				 * rates differ by less than SCHED_ASP_ALPHA0 (default 1) */
	struct adsp_cfg adsp;   /* --adsp GAMMA (check period, s; 0 = ADSP off), --adsp-eval,
				 * --adsp-epoch, --adsp-rate, --adsp-max-lag (adsp-aaai2020;
				 * sched_policy_adsp.c): commit rates sent to the workers */
};

/** Called after every plan_compute (tests inspect the batch the daemon built). */
typedef void (*sched_batch_hook)(void *arg, int batch_no, const struct plan_batch *b,
				 const struct plan *p);

#define SCHED_MAX_SHARDS 32       /* shard servers of a sharded model (§10.2) */

/**
 * One shard server of a sharded model (§10.2, docs/scheduler.md "Sharded servers"): it holds
 * floats [offset, offset + n_floats) of the model. Versions: the group version (the one pulls
 * and delay bounds use) counts every update ordered to the group; the shard's own version
 * counts those it applied, so group version = version + lag.
 */
struct sched_shard {
	int host;          /* host index, -1 until it registered */
	int64_t version;   /* last committed version it reported (its own count) */
	int64_t lag;       /* parts ordered to it that it skipped (lost): group version = own +
			    * lag once the legs in flight to it are applied */
	uint64_t offset, n_floats;
	double late_s;     /* EWMA (weight SCHED_LATE_WEIGHT) of how long after its planned end a
			    * leg (update or aggregate) was committed by this shard, seconds,
			    * each leg counted in [0, SCHED_LATE_MAX]: arrival late on the wire
			    * plus the time to apply it */
	int late_init;     /* late_s holds a measurement (the first leg sets it; EWMA after) */
};

/** The server registration (`register` with role server). */
struct sched_server {
	int host;            /* host index, -1 before registration */
	int sync;            /* mode "sync" (MLfabric-S, §6) */
	uint64_t n_floats;
	uint64_t bytes;      /* bytes of an update */
	int64_t version;     /* last committed version the server reported */
	int64_t tau_max;     /* delay bound */
	double momentum;     /* gamma of eq. 2 */
	int n_workers;
	char role[16];       /* role part of its app name: "server", or "replica" for a promoted
			      * replica that kept its name (messages go to <role>@<host>) */
	/* sharded model (§10.2): n_shards 0 = one server; else host is the first shard server
	 * that registered, n_floats and bytes those of the whole model, version the group's
	 * committed version (the lowest over the shards) */
	int n_shards;
	struct sched_shard shard[SCHED_MAX_SHARDS];
	int64_t ordered;     /* group version once every update ordered so far is applied */
};

/** Catch-up of the replica (docs/replication.md "Catch-up"). */
enum sched_catchup {
	SCHED_CATCHUP_NONE = 0,        /* caught up (or no replica) */
	SCHED_CATCHUP_WAIT_SERVER = 1, /* planning paused until the server committed everything */
	SCHED_CATCHUP_WAIT_STATE = 2,  /* state snapshot commanded, waiting for its commit */
};

/** The replica registration (`register` with role replica) and what it still misses. */
struct sched_replica {
	int host;              /* host index, -1 when none */
	int chain;             /* replication "chain": registered, never planned */
	double div_max;        /* Div_max, bound on ||w_s - w_r||_2 */
	uint64_t n_floats;
	int64_t version;       /* last commit version the replica reported */
	double history_norm;   /* ||h|| bound at the state common to server and replica */
	enum sched_catchup catchup;
	double catchup_since;  /* CLOCK_REALTIME seconds the pause started */
	uint64_t state_xfer;   /* the state snapshot's transfer id (WAIT_STATE) */
	int synced_batch;      /* batch_no when it caught up: earlier batches' updates committed
				* later are missing at the replica (catch-up timeout) */
	uint64_t *carried;     /* update ids the replica misses after the last batch, in replica
				* order: copies in flight (planned to commit after that batch's
				* T_last, §5.3 lazy replication), then punted copies */
	double *carried_s;     /* per carried id: its planned replica commit (seconds since t0)
				* when in flight, -1 when punted */
	int n_carried, cap_carried, cap_carried_s;
};

#define SCHED_SYNC_RING 8 /* MLfabric-S iterations remembered for late losses (the server's
			   * FABRIC_SYNC_SHORT) */

/**
 * One recent MLfabric-S iteration (docs/scheduler.md "MLfabric-S"): what its servers get once
 * some of its planned parts are lost (sched_sync_lost).
 */
struct sched_sync_it {
	int64_t iter;                 /* its number; ring slot unused when not the one asked */
	int64_t v;                    /* start version (the group's for a sharded model) */
	int parts;                    /* updates planned in it */
	int lost[SCHED_MAX_SHARDS];   /* parts of it lost at server k (shard k; 0: one server) */
};

/**
 * The MLfabric-S iteration being planned (§6; docs/scheduler.md "MLfabric-S"). Its updates are
 * those computed from a version below v + n_workers, one per worker; it ends when n_workers of
 * them are planned, or at --sync-timeout with fewer (then the server is told its size).
 */
struct sched_sync {
	int64_t v;             /* model version the iteration starts from (the server's version
				* once the earlier iterations are applied) */
	int n;                 /* updates of the iteration planned so far */
	double since;          /* CLOCK_REALTIME seconds its first update was selected, 0 = none */
	unsigned char *in;     /* cl.n_hosts flags: the host's update of this iteration is planned
				* (allocated at the first sync batch, NULL before) */
	int64_t iter;          /* number of the open iteration (iterations closed so far) */
	struct sched_sync_it ring[SCHED_SYNC_RING]; /* the recent iterations, by iter % ring */
};

/** A fail-over in progress or done (failover.jsonl; CLOCK_REALTIME seconds, 0 = not yet). */
struct sched_failover {
	int active;            /* promote sent, failover.jsonl not written yet */
	double t_gone, t_promoted, t_first_commit;
	int old_server, new_server; /* host indexes (new_server -1 until promoted) */
	int64_t version;       /* version the new server serves from */
	int lost_committed;    /* committed at the old server only */
	int lost_planned;      /* planned, committed nowhere */
};

/** The whole daemon state. */
struct sched {
	struct sched_config cfg;
	struct cluster cl;
	double t0;            /* CLOCK_REALTIME seconds of the time origin (start) */
	int listen_fd;

	int auth_on;                  /* the cluster has a key_file: hosts must authenticate */
	uint8_t key[AUTH_KEY_BYTES];  /* the cluster secret (docs/security.md) */
	struct sched_host *hosts;     /* cl.n_hosts */
	int *agg_allowed;             /* cl.n_hosts flags from --aggregators */
	int *ragg_allowed;            /* cl.n_hosts flags from --replica-aggregators */
	int *server_alias;            /* cl.n_hosts flags: old server hosts now served by server */
	struct sched_server server;
	struct sched_replica repl;
	struct sched_failover fo;

	struct sched_conn *conns;
	int n_conns, cap_conns;

	struct sched_update *upd;
	int n_upd, cap_upd;
	struct sched_pull *pulls;
	int n_pulls, cap_pulls;
	struct sched_xfer *xfers;
	int n_xfers, cap_xfers;
	struct sched_index upd_ix;    /* update id -> index into upd (sched_find_update) */
	struct sched_index xfer_ix;   /* transfer id -> index into xfers (sched_xfer_find) */

	uint64_t xfer_counter;        /* next fresh transfer id is SCHED_XFER_FRESH | counter; starts at
				       * the start time in ms << 20 (unique across restarts) */
	int batch_no;                 /* batches planned so far */
	double next_batch;            /* CLOCK_REALTIME seconds of the next batch tick (the fallback
				       * for what waits without an arrival: timers, held pulls) */
	double arrival_at;            /* CLOCK_REALTIME s of the earliest arrival not planned yet
				       * (sched_arrival_note; 0 = none) */
	double arrival_later;         /* ... of the earliest arrival due in the future (a link
				       * report is used from t + t_lag on; 0 = none) */
	double last_plan;             /* CLOCK_REALTIME s of the last planning attempt (0 = none) */
	struct sched_lead lead;       /* the lead of the next plan (sched_lead.h) */
	double sync_wait_since;       /* CLOCK_REALTIME seconds a sync batch started waiting, 0 */
	double accept_resume;         /* CLOCK_REALTIME seconds accept resumes after EMFILE, 0 */
	double accept_backoff;        /* current pause of accept, s (0: accepting normally) */
	unsigned long n_evicted;      /* unauthenticated connections closed over SCHED_MAX_UNAUTH */
	double evict_logged;          /* CLOCK_REALTIME seconds of the last WARN about them */

	FILE *rec_batches, *rec_updates, *rec_transfers, *rec_failover;
	FILE *rec_clocks, *rec_starts; /* clocks.jsonl, starts.jsonl (sched_clock.h) */
	FILE *rec_capacity;     /* capacity.jsonl: changes of the measured estimates (sched_netmon.h) */
	struct sched_policy_set pol;  /* the running synchronization policies (sched_policy.h) */
	int asp_thr_logged;           /* --asp: the threshold last logged + 1 (0: none yet) */

	sched_batch_hook hook;
	void *hook_arg;

	json_t *app_waits;            /* sched_status.c: app name -> {"host", "waits"} reported */

	struct sched_sync sync;       /* MLfabric-S iteration (sched_policy_mlfabric_s.c) */
};

/**
 * sched_find_update - index into s->upd of update @id (the newest entry of that id), or -1.
 * O(1) through s->upd_ix; a scan when the index is stale (out of memory).
 */
int sched_find_update(const struct sched *s, uint64_t id);

/**
 * sched_conn_queue - queue @msg (reference stolen) on connection s->conns[@ci]. When ctl_queue
 * fails (-ENOMEM, or -EMSGSIZE: longer than CTL_LINE_MAX) the message is lost and that is
 * logged with the host and the message type; a command that never arrives fails like any
 * transfer without a `done` (--xfer-timeout, sched_fail_xfer), so callers have nothing to do.
 */
void sched_conn_queue(struct sched *s, int ci, json_t *msg);

/**
 * sched_flush_host - write what is queued for @host's dataplane now (an `order` must reach it
 * before the transfers it orders). A write error is left to the poll loop, which disconnects
 * the peer at its next flush.
 */
void sched_flush_host(struct sched *s, int host);

/**
 * sched_announce - tell host @dst's dataplane that host @src will send it transfer @xfer on
 * channel @chan (`expect`, docs/control.md), flushed at once so that it arrives before the
 * command that starts the transfer; with @xfer 0, every transfer from @src on @chan from now on
 * (@standing 1) or no longer (0). Nothing when @src == @dst or @dst has no live connection.
 * sched_to_app calls it for every `send`, `forward` and `aggregate` (docs/security.md
 * "Announced transfers").
 */
void sched_announce(struct sched *s, int src, int dst, int chan, uint64_t xfer, int standing);

/**
 * sched_to_app - queue @msg (reference stolen) for application "<role>@<host name>": adds
 * "app" and sends it over that host's dataplane connection (role "server" at the server's
 * host is the name the server uses, see sched_server.role); a command that starts a transfer
 * is announced to its destination first (sched_announce). Without a live connection to
 * the host the message is discarded: the peer's death is handled by the failure detection
 * (sched_fail.h); a queueing error is handled by sched_conn_queue.
 */
void sched_to_app(struct sched *s, const char *role, int host, json_t *msg);

/** sched_conn_peer - "IP:port" of connection s->conns[@ci]'s peer into @buf ("unknown address"). */
void sched_conn_peer(const struct sched *s, int ci, char *buf, size_t len);

/**
 * sched_bind_host - connection @ci now speaks for host @h (after `hello`, and `auth` when the
 * cluster has a key): a previous connection of @h is closed (a restarted dataplane), the host
 * is alive, and it gets `welcome` (docs/control.md). Implemented in sched_msg.c.
 */
void sched_bind_host(struct sched *s, int ci, int h, double now);

/**
 * sched_conn_trust - connection @ci speaks for a host or is a welcomed status viewer: its line
 * length and output queue go from the small caps of an unauthenticated connection
 * (SCHED_UNAUTH_IN_MAX, SCHED_UNAUTH_OUT_MAX) to CTL_LINE_MAX and CTL_OUT_MAX.
 */
void sched_conn_trust(struct sched *s, int ci);

/**
 * sched_conn_close - close connection s->conns[@ci] (its slot is reused by the next accept);
 * its host, if any, is left without a connection (not declared dead here).
 */
void sched_conn_close(struct sched *s, int ci);

/** sched_role_name - "worker", "server", "aggregator", "replica" for one enum sched_role bit. */
const char *sched_role_name(unsigned role);

/**
 * sched_compact - forget the updates in a final state (server and replica copies both
 * settled) and rebuild their index; recount every host's held updates and pulls (the
 * --max-updates-per-host and --max-pulls-per-host limits). The transfers are compacted by
 * sched_xfer_compact.
 */
void sched_compact(struct sched *s);

#endif
