/* sched_fake.c - shared harness of test_sched*.c: fake dataplanes over TCP, daemon thread, hook. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "ctl.h"
#include "sched_batch.h"
#include "sched_daemon.h"
#include "sched_fake.h"
#include "sched_lead.h"

/* Cluster "sch": the server's downlink (1 Gbit/s) is the bottleneck, so aggregating at a0 pays. */
const char *cluster_json =
	"{\"name\":\"sch\",\"hosts\":["
	"{\"name\":\"ps\",\"ip\":\"10.81.0.2\",\"up_gbps\":10,\"down_gbps\":1,"
	"\"roles\":[\"server\",\"scheduler\"]},"
	"{\"name\":\"w0\",\"ip\":\"10.81.0.10\",\"up_gbps\":10,\"down_gbps\":10,\"roles\":[\"worker\"]},"
	"{\"name\":\"w1\",\"ip\":\"10.81.0.11\",\"up_gbps\":10,\"down_gbps\":10,\"roles\":[\"worker\"]},"
	"{\"name\":\"w2\",\"ip\":\"10.81.0.12\",\"up_gbps\":10,\"down_gbps\":10,\"roles\":[\"worker\"]},"
	"{\"name\":\"a0\",\"ip\":\"10.81.0.20\",\"up_gbps\":10,\"down_gbps\":10,"
	"\"roles\":[\"aggregator\"]},"
	"{\"name\":\"r0\",\"ip\":\"10.81.0.30\",\"up_gbps\":10,\"down_gbps\":0.5,"
	"\"roles\":[\"replica\"]}]}";

struct fake fakes[MAX_FAKES];
int n_fakes;
struct got got[MAX_MSGS];
int n_got;

static struct sched *daemon_s;
int want_r0 = 0, r0 = -1; /* setup() also opens r0 (right after ps) when want_r0 */
static pthread_t daemon_thread;
static volatile sig_atomic_t daemon_stop;
static char dir[64], port_addr[64], records[128];

/* What the hook saw: the last batch the daemon built and its plan. */
pthread_mutex_t hook_mu = PTHREAD_MUTEX_INITIALIZER;
int hook_batches, hook_mode, hook_n_updates, hook_n_commits, hook_n_changes;
double hook_up[8], hook_down[8], hook_now;
double hook_lead; /* the daemon's lead when it built the last batch (seconds) */
int64_t hook_v_init;
uint64_t hook_commit_first[64]; /* id of each commit's (first) update */
int hook_commit_parts[64];
/* Replica fields of batches 1..15: replica host, replica_lag, replica commits, punted. */
int hook_replica[16], hook_lag[16], hook_rcommits[16], hook_punted[16];

static void hook(void *arg, int no, const struct plan_batch *b, const struct plan *p)
{
	pthread_mutex_lock(&hook_mu);
	hook_batches = no;
	hook_mode = b->mode;
	hook_n_updates = b->n_updates;
	hook_v_init = b->v_init;
	hook_now = b->now_s;
	hook_n_changes = b->n_changes;
	/* the hook runs on the daemon's thread right after the plan: the lead that plan used */
	hook_lead = sched_lead_s(daemon_s);
	if (no < 16) {
		hook_replica[no] = b->replica;
		hook_lag[no] = (int)b->replica_lag;
		hook_rcommits[no] = p->n_replica_commits;
		hook_punted[no] = p->n_punted;
	}
	for (int h = 0; h < b->n_hosts && h < 8; h++) {
		hook_up[h] = b->hosts[h].up_gbps;
		hook_down[h] = b->hosts[h].down_gbps;
	}
	hook_n_commits = p->n_commits < 64 ? p->n_commits : 64;
	for (int c = 0; c < hook_n_commits; c++) {
		const struct plan_commit *pc = &p->commits[c];
		int u = pc->kind == PLAN_CARRY_AGGREGATE ? p->aggregates[pc->carries].inputs[0] :
			pc->carries;
		hook_commit_first[c] = strtoull(b->updates[u].id, NULL, 10);
		hook_commit_parts[c] = pc->kind == PLAN_CARRY_AGGREGATE ?
			p->aggregates[pc->carries].n_inputs : 1;
	}
	pthread_mutex_unlock(&hook_mu);
}

static void *daemon_main(void *arg)
{
	sched_daemon_run(daemon_s, &daemon_stop);
	return NULL;
}

/* Start a daemon on 127.0.0.1 with test timings; @tweak may change the config. */
void start_daemon(void (*tweak)(struct sched_config *))
{
	struct sched_config cfg;
	char path[128], err[256] = "";

	/* mkdtemp, not a name from the pid: a failed earlier run leaves its directory, and pids
	 * are reused. */
	snprintf(dir, sizeof(dir), "/tmp/test_sched.XXXXXX");
	ck_assert_msg(mkdtemp(dir) != NULL, "mkdtemp %s: %s", dir, strerror(errno));
	snprintf(path, sizeof(path), "%s/cluster.json", dir);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(cluster_json, f);
	fclose(f);
	snprintf(records, sizeof(records), "%s/rec", dir);
	sched_daemon_defaults(&cfg);
	cfg.batch_s = 0.02;
	cfg.peer_timeout_s = 0.5;
	cfg.t_lag_s = 0.3;
	snprintf(cfg.records, sizeof(cfg.records), "%s", records);
	if (tweak)
		tweak(&cfg);
	for (int i = 0; i < 50 && !daemon_s; i++) {
		snprintf(port_addr, sizeof(port_addr), "127.0.0.1:%d",
			 20000 + (int)((getpid() * 7 + i * 131) % 30000));
		snprintf(cfg.listen, sizeof(cfg.listen), "%s", port_addr);
		daemon_s = sched_daemon_create(&cfg, path, err, sizeof(err));
	}
	ck_assert_msg(daemon_s != NULL, "daemon: %s", err);
	sched_daemon_set_hook(daemon_s, hook, NULL);
	ck_assert_int_eq(pthread_create(&daemon_thread, NULL, daemon_main, NULL), 0);
}

void stop_daemon(void)
{
	daemon_stop = 1;
	pthread_join(daemon_thread, NULL);
	sched_daemon_free(daemon_s);
	daemon_s = NULL;
	for (int i = 0; i < n_fakes; i++)
		if (fakes[i].open)
			ctl_close(&fakes[i].c);
	for (int i = 0; i < n_got; i++)
		json_decref(got[i].m);
	n_got = n_fakes = 0;
	want_r0 = 0;
	r0 = -1;
	memset(hook_replica, 0, sizeof(hook_replica));
	memset(hook_punted, 0, sizeof(hook_punted));
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

void fake_send(int f, json_t *m)
{
	ck_assert_int_ge(ctl_send(&fakes[f].c, m), 0);
	json_decref(m);
}

/* Heartbeat the live fakes and collect what arrives, for @secs seconds. */
void pump(double secs)
{
	static double last_hb;
	double end = clock_real_s() + secs;

	do {
		if (clock_real_s() - last_hb > 0.1) {
			last_hb = clock_real_s();
			for (int i = 0; i < n_fakes; i++)
				if (fakes[i].open && !fakes[i].silent)
					fake_send(i, json_pack("{s:s, s:s, s:f}", "type", "heartbeat",
							       "host", fakes[i].host, "t", last_hb));
		}
		struct pollfd pf[MAX_FAKES];
		for (int i = 0; i < n_fakes; i++)
			pf[i] = (struct pollfd){ .fd = fakes[i].open ? fakes[i].c.fd : -1,
						 .events = POLLIN };
		poll(pf, (nfds_t)n_fakes, 5);
		for (int i = 0; i < n_fakes; i++) {
			if (!fakes[i].open)
				continue;
			long r = ctl_read(&fakes[i].c);
			if (r == 0) {
				ctl_close(&fakes[i].c);
				fakes[i].open = 0;
				continue;
			}
			json_t *m;
			char err[128];
			while (ctl_next(&fakes[i].c, &m, err, sizeof(err)) == 1 && n_got < MAX_MSGS)
				got[n_got++] = (struct got){ .fake = i, .m = m };
		}
	} while (clock_real_s() < end);
}

/* The first unused message of @type at fake @f (waiting up to @timeout s), marked used. */
json_t *wait_msg(int f, const char *type, double timeout)
{
	double end = clock_real_s() + timeout;
	for (;;) {
		for (int i = 0; i < n_got; i++)
			if (!got[i].used && got[i].fake == f && !strcmp(ctl_type(got[i].m), type)) {
				got[i].used = 1;
				return got[i].m;
			}
		if (clock_real_s() > end)
			return NULL;
		pump(0.01);
	}
}

int count_msgs(int f, const char *type)
{
	int n = 0;
	for (int i = 0; i < n_got; i++)
		n += got[i].fake == f && !strcmp(ctl_type(got[i].m), type);
	return n;
}

/* Connect a fake dataplane for @host without saying hello. */
int fake_connect(const char *host)
{
	char err[128];
	int fd = ctl_connect(port_addr, err, sizeof(err));
	ck_assert_msg(fd >= 0, "%s", err);
	int f = n_fakes++;
	ctl_init(&fakes[f].c, fd);
	snprintf(fakes[f].host, sizeof(fakes[f].host), "%s", host);
	fakes[f].open = 1;
	fakes[f].silent = 0;
	return f;
}

/* Connect and say hello; asserts the welcome. */
int fake_open(const char *host)
{
	int f = fake_connect(host);
	fake_send(f, json_pack("{s:s, s:s, s:f, s:f}", "type", "hello", "host", host, "up_gbps",
			       10.0, "down_gbps", 10.0));
	json_t *w = wait_msg(f, "welcome", 2.0);
	ck_assert_ptr_nonnull(w);
	ck_assert_str_eq(json_string_value(json_object_get(w, "host")), host);
	return f;
}

char *app_of(int f, const char *role, char *buf)
{
	sprintf(buf, "%s@%s", role, fakes[f].host);
	return buf;
}

void reg(int f, const char *role)
{
	char app[64];
	fake_send(f, json_pack("{s:s, s:s, s:s, s:s}", "type", "register", "app",
			       app_of(f, role, app), "role", role, "server", "ps"));
	ck_assert_ptr_nonnull(wait_msg(f, "registered", 2.0));
}

void reg_server(int f, const char *mode, int64_t version, int64_t tau_max, int n_workers)
{
	fake_send(f, json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:I, s:I, s:f, s:i}", "type",
			       "register", "app", "server@ps", "role", "server", "mode", mode,
			       "n_floats", 2500000, "bytes", 10001024, "version",
			       (json_int_t)version, "tau_max", (json_int_t)tau_max, "momentum",
			       0.9, "n_workers", n_workers));
	ck_assert_ptr_nonnull(wait_msg(f, "registered", 2.0));
}

void push(int f, uint64_t id, int64_t version, uint64_t bytes)
{
	char app[64];
	fake_send(f, json_pack("{s:s, s:s, s:I, s:s, s:I, s:I, s:f}", "type", "update", "app",
			       app_of(f, "worker", app), "id", (json_int_t)id, "server", "ps",
			       "bytes", (json_int_t)bytes, "version", (json_int_t)version, "norm",
			       1.0));
}

/*
 * Open the fakes ps, w0..w(@n-1) (into @w) and, with @a0, a0; register the workers, the
 * aggregator and (unless @mode is NULL) the server with @mode, @version, @tau_max, n workers.
 * Returns the server's fake.
 */
int setup(const char *mode, int64_t version, int64_t tau_max, int n, int *w, int *a0)
{
	char name[16]; /* w<int>: no -Wformat-truncation now that setup() is not static */
	int ps = fake_open("ps");

	if (want_r0)
		r0 = fake_open("r0");
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "w%d", i);
		w[i] = fake_open(name);
	}
	if (a0)
		*a0 = fake_open("a0");
	if (mode)
		reg_server(ps, mode, version, tau_max, n);
	for (int i = 0; i < n; i++)
		reg(w[i], "worker");
	if (a0)
		reg(*a0, "aggregator");
	return ps;
}

static int saved_stderr = -1;
static char stderr_path[128];

/* Send the daemon's log (stderr) to a file until captured_lines(). */
void capture_stderr(void)
{
	snprintf(stderr_path, sizeof(stderr_path), "%s/stderr", dir);
	int lf = open(stderr_path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	ck_assert_int_ge(lf, 0);
	saved_stderr = dup(2);
	dup2(lf, 2);
	close(lf);
}

/* Restore stderr; the number of captured log lines containing @needle. */
int captured_lines(const char *needle)
{
	char line[512];
	int n = 0;

	dup2(saved_stderr, 2);
	close(saved_stderr);
	FILE *f = fopen(stderr_path, "r");
	while (f && fgets(line, sizeof(line), f))
		n += strstr(line, needle) != NULL;
	if (f)
		fclose(f);
	return n;
}

uint64_t jid(json_t *m, const char *k)
{
	return (uint64_t)json_integer_value(json_object_get(m, k));
}

/* Wait for a `skip` at the server's fake @ps whose first transfer is @xfer. */
void expect_skip(int ps, uint64_t xfer)
{
	json_t *k = wait_msg(ps, "skip", 2.0);
	ck_assert_ptr_nonnull(k);
	ck_assert_uint_eq((uint64_t)json_integer_value(json_array_get(json_object_get(k, "xfers"),
								      0)), xfer);
}

/* Lines of records file @name containing @needle. */
int rec_count(const char *name, const char *needle)
{
	char path[256], line[1024];
	int n = 0;
	snprintf(path, sizeof(path), "%s/%s", records, name);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, needle) != NULL;
	fclose(f);
	return n;
}

json_t *rec_find(const char *name, const char *key, uint64_t val)
{
	char path[256], line[4096];
	json_t *found = NULL;
	snprintf(path, sizeof(path), "%s/%s", records, name);
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	while (!found && fgets(line, sizeof(line), f)) {
		json_t *o = json_loads(line, 0, NULL);
		json_t *v = json_object_get(o, key);
		if (json_is_integer(v) && (uint64_t)json_integer_value(v) == val)
			found = o;
		else
			json_decref(o);
	}
	fclose(f);
	return found;
}

/* start_daemon() tweak: the aggregator list is just w2 (so a0 is none). */
void no_agg(struct sched_config *c)
{
	snprintf(c->aggregators, sizeof(c->aggregators), "w2");
}
