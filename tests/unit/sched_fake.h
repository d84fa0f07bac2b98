/* sched_fake.h - shared harness of the scheduler daemon's Check tests (test_sched*.c). */
#ifndef MLF_SCHED_FAKE_H
#define MLF_SCHED_FAKE_H

/*
 * One daemon at a time runs in a thread of the test process (cluster "sch": ps, w0..w2, a0,
 * r0 on 127.0.0.1, records under a fresh /tmp/test_sched.XXXXXX); the tests talk to it through fake
 * dataplanes (struct fake) and inspect what arrived (got[]) and what the daemon's per-batch
 * hook saw (hook_*). Every helper asserts with Check, so it is called from a test only.
 * Timeouts are in seconds.
 */
#include <pthread.h>
#include <stdint.h>

#include "ctl.h"
#include "sched_daemon.h"

#define MAX_FAKES 8
#define MAX_MSGS 1024

/* A fake dataplane: one control connection; heartbeats unless silent. */
struct fake {
	struct ctl_conn c;
	char host[32];
	int open, silent;
};

/* Every message received by a fake, in arrival order (the server's fake is read first). */
struct got {
	int fake;
	json_t *m;
	int used;
};

/* The cluster file start_daemon() writes (cluster "sch"; also used by program_runs_and_stops). */
extern const char *cluster_json;

/* The fakes opened since start_daemon(), by index (fakes[f].open: connection still up). */
extern struct fake fakes[MAX_FAKES];
extern int n_fakes;
/* The messages received by all fakes (got[i].used: returned by wait_msg()). */
extern struct got got[MAX_MSGS];
extern int n_got;
/* Set want_r0 before setup() to have it also open r0 (right after ps); r0 is its fake or -1. */
extern int want_r0, r0;

/*
 * What the hook saw, under hook_mu: the last batch the daemon built (number, mode, updates,
 * v_init, now, changes, hosts' up/down Gbit/s) and its plan (commits, each commit's first
 * update id and number of parts). For batches 1..15: replica host, replica_lag, replica
 * commits and punted copies (hook_replica and hook_punted are zeroed by stop_daemon()).
 */
extern pthread_mutex_t hook_mu;
extern int hook_batches, hook_mode, hook_n_updates, hook_n_commits, hook_n_changes;
extern double hook_up[8], hook_down[8], hook_now;
/* hook_lead - the daemon's lead (seconds, sched_lead_s) when it built the last batch. */
extern double hook_lead;
extern int64_t hook_v_init;
extern uint64_t hook_commit_first[64];
extern int hook_commit_parts[64];
extern int hook_replica[16], hook_lag[16], hook_rcommits[16], hook_punted[16];

/*
 * start_daemon - write the cluster file to a fresh /tmp/test_sched.XXXXXX (mkdtemp), create a daemon
 * listening on a free 127.0.0.1 port (up to 50 tries) with test timings (batch 0.02 s, peer
 * timeout 0.5 s, t_lag 0.3 s, records in <dir>/rec), after @tweak (may be NULL) changed the
 * config, set the hook and run it in a thread. Asserts success.
 */
void start_daemon(void (*tweak)(struct sched_config *));
/* stop_daemon - stop and free the daemon, close the fakes, drop got[], reset want_r0/r0 and
 * the per-batch hook arrays, remove the directory (asserted). */
void stop_daemon(void);
/* fake_send - send @m (consumed) on fake @f; asserts the send. */
void fake_send(int f, json_t *m);
/* pump - for @secs seconds: heartbeat every live, non-silent fake every 0.1 s and collect what
 * arrives into got[] (a fake whose connection closes gets open = 0). */
void pump(double secs);
/* wait_msg - the first unused message of @type at fake @f, marked used, pumping up to @timeout
 * seconds; NULL if none came. The message stays owned by got[]. */
json_t *wait_msg(int f, const char *type, double timeout);
/* count_msgs - the number of messages of @type received by fake @f so far (used or not). */
int count_msgs(int f, const char *type);
/* fake_connect - connect a fake dataplane for @host without saying hello; returns its index. */
int fake_connect(const char *host);
/* fake_open - connect and say hello (10/10 Gbit/s); asserts the welcome (2 s). Returns the
 * fake's index. */
int fake_open(const char *host);
/* app_of - write "@role@<host of fake @f>" into @buf (64 bytes suffice); returns @buf. */
char *app_of(int f, const char *role, char *buf);
/* reg - register app <@role>@<host> with @role at server ps; asserts `registered` (2 s). */
void reg(int f, const char *role);
/* reg_server - register server@ps (@mode, 2,500,000 floats, @version, @tau_max, @n_workers)
 * from fake @f; asserts `registered` (2 s). */
void reg_server(int f, const char *mode, int64_t version, int64_t tau_max, int n_workers);
/* push - send an `update` of worker@<host of @f> to ps: @id, @version, @bytes, norm 1. */
void push(int f, uint64_t id, int64_t version, uint64_t bytes);
/*
 * setup - open the fakes ps, w0..w(@n-1) (into @w) and, with @a0, a0; register the workers,
 * the aggregator and (unless @mode is NULL) the server with @mode, @version, @tau_max, n
 * workers. Also opens r0 when want_r0. Returns the server's fake.
 */
int setup(const char *mode, int64_t version, int64_t tau_max, int n, int *w, int *a0);
/* capture_stderr - send the daemon's log (stderr) to a file in the test dir until
 * captured_lines(). */
void capture_stderr(void);
/* captured_lines - restore stderr; returns the number of captured log lines containing
 * @needle. */
int captured_lines(const char *needle);
/* jid - integer field @k of @m as uint64_t (0 if missing). */
uint64_t jid(json_t *m, const char *k);
/* expect_skip - wait (2 s) for a `skip` at the server's fake @ps whose first transfer is
 * @xfer; asserts both. */
void expect_skip(int ps, uint64_t xfer);
/* rec_count - the number of lines of records file @name containing @needle (0 if the file
 * is missing). */
int rec_count(const char *name, const char *needle);
/* rec_find - the first line of records file @name whose integer field @key is @val, parsed
 * (json_decref it), or NULL. */
json_t *rec_find(const char *name, const char *key, uint64_t val);
/* no_agg - start_daemon() tweak: the aggregator list is just w2 (so a0 is none). */
void no_agg(struct sched_config *c);

#endif
