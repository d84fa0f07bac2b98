/* sched_bench.c - bench-sched: the scheduler daemon's batch cost and update-to-command latency. */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "ctl.h"
#include "log.h"
#include "sched_daemon.h"

#define AGGS 4

struct bench_plan_stats {
	pthread_mutex_t mu;
	int batches, updates, punted, rcommits;
	double plan_ms_sum, plan_ms_max, bound_max;
};

static struct bench_plan_stats stats = { .mu = PTHREAD_MUTEX_INITIALIZER };
static volatile sig_atomic_t stop_flag;
static double replica_div = -1; /* --replica DIV_MAX: a replica host r0 (-1: none) */

static void on_batch(void *arg, int no, const struct plan_batch *b, const struct plan *p)
{
	pthread_mutex_lock(&stats.mu);
	stats.batches++;
	stats.updates += b->n_updates;
	stats.plan_ms_sum += p->plan_ms;
	stats.punted += p->n_punted;
	stats.rcommits += p->n_replica_commits;
	if (p->divergence_bound > stats.bound_max)
		stats.bound_max = p->divergence_bound;
	if (p->plan_ms > stats.plan_ms_max)
		stats.plan_ms_max = p->plan_ms;
	pthread_mutex_unlock(&stats.mu);
}

static void *run_daemon(void *s)
{
	sched_daemon_run(s, &stop_flag);
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Host i of the bench cluster: 0 = ps, 1..n = workers, then AGGS aggregators, then r0. */
static void host_name(int i, int n, char *buf, size_t len)
{
	if (i == 0)
		snprintf(buf, len, "ps");
	else if (i <= n)
		snprintf(buf, len, "w%d", i - 1);
	else if (i <= n + AGGS)
		snprintf(buf, len, "a%d", i - n - 1);
	else
		snprintf(buf, len, "r0");
}

static const char *host_role(int i, int n)
{
	return i == 0 ? "server" : i <= n ? "worker" : i <= n + AGGS ? "aggregator" : "replica";
}

static int write_cluster(const char *path, int n)
{
	FILE *f = fopen(path, "w");
	char name[16];

	if (!f)
		return -errno;
	fprintf(f, "{\"name\":\"schb\",\"hosts\":[");
	for (int i = 0; i < n + 2 + AGGS; i++) {
		host_name(i, n, name, sizeof(name));
		fprintf(f, "%s{\"name\":\"%s\",\"ip\":\"10.81.%d.%d\",\"up_gbps\":10,\"down_gbps\":%d,"
			"\"roles\":[\"%s\"]}", i ? "," : "", name, 1 + i / 200, 1 + i % 200,
			i == 0 || i > n + AGGS ? 1 : 10, host_role(i, n));
	}
	fprintf(f, "]}\n");
	fclose(f);
	return 0;
}

/* Send @m (stolen) and read until a message of @type arrives on @c; returns it or NULL. */
static json_t *call(struct ctl_conn *c, json_t *m, const char *type)
{
	char err[128];
	json_t *r = NULL;

	ctl_send(c, m);
	json_decref(m);
	for (int tries = 0; tries < 200 && !r; tries++) {
		struct pollfd pf = { .fd = c->fd, .events = POLLIN };
		poll(&pf, 1, 10);
		ctl_read(c);
		while (!r && ctl_next(c, &r, err, sizeof(err)) == 1)
			if (strcmp(ctl_type(r), type)) {
				json_decref(r);
				r = NULL;
			}
	}
	return r;
}

/* One configuration: @n workers push one update each per round, @rounds rounds. */
static int bench_one(int n, int rounds, double batch_ms, const char *dir, int port)
{
	char path[256], err[256], name[16], app[48];
	struct sched_config cfg;
	int n_hosts = n + 1 + AGGS + (replica_div >= 0);
	struct ctl_conn *c = calloc((size_t)n_hosts, sizeof(*c));
	double *lat = calloc((size_t)n * rounds, sizeof(double));
	int n_lat = 0, dropped = 0;

	snprintf(path, sizeof(path), "%s/cluster-%d.json", dir, n);
	if (!c || !lat || write_cluster(path, n))
		return -ENOMEM;
	sched_daemon_defaults(&cfg);
	cfg.batch_s = batch_ms / 1e3;
	cfg.peer_timeout_s = 30;
	snprintf(cfg.listen, sizeof(cfg.listen), "127.0.0.1:%d", port);
	struct sched *s = sched_daemon_create(&cfg, path, err, sizeof(err));
	if (!s) {
		fprintf(stderr, "bench-sched: %s\n", err);
		return -EINVAL;
	}
	sched_daemon_set_hook(s, on_batch, NULL);
	stats.batches = stats.updates = stats.punted = stats.rcommits = 0;
	stats.plan_ms_sum = stats.plan_ms_max = stats.bound_max = 0;
	pthread_t th;
	stop_flag = 0;
	pthread_create(&th, NULL, run_daemon, s);
	for (int i = 0; i < n_hosts; i++) {
		int fd = ctl_connect(cfg.listen, err, sizeof(err));
		if (fd < 0) {
			fprintf(stderr, "bench-sched: %s\n", err);
			exit(1);
		}
		ctl_init(&c[i], fd);
		host_name(i, n, name, sizeof(name));
		json_decref(call(&c[i], json_pack("{s:s, s:s}", "type", "hello", "host", name),
				 "welcome"));
		const char *role = host_role(i, n);
		snprintf(app, sizeof(app), "%s@%s", role, name);
		json_t *reg = json_pack("{s:s, s:s, s:s, s:s}", "type", "register", "app", app,
					"role", role, "server", "ps");
		if (i == 0)
			json_object_update_new(reg, json_pack("{s:s, s:i, s:i, s:i, s:i, s:f, s:i}",
				"mode", "mlfabric-a", "n_floats", 250000, "bytes", 1001024, "version", 0,
				"tau_max", 1000000, "momentum", 0.9, "n_workers", n));
		if (i > n + AGGS)
			json_object_update_new(reg, json_pack("{s:f, s:i, s:i, s:i, s:f}", "div_max",
				replica_div, "n_floats", 250000, "bytes", 1001024, "version", 0,
				"momentum", 0.9));
		json_decref(call(&c[i], reg, "registered"));
	}
	double spread_max = 0;
	srand(1);
	for (int r = 0; r < rounds; r++) {
		usleep((useconds_t)(rand() % (int)(batch_ms * 1000))); /* random phase to the tick */
		double t_push = clock_real_s(), first = 0, last = 0;
		for (int w = 1; w <= n; w++) {
			host_name(w, n, name, sizeof(name));
			snprintf(app, sizeof(app), "worker@%s", name);
			json_t *u = json_pack("{s:s, s:s, s:I, s:s, s:i, s:i, s:f}", "type", "update",
					      "app", app, "id", (json_int_t)(((uint64_t)w << 40) | r),
					      "server", "ps", "bytes", 1001024, "version", r * n,
					      "norm", 1.0);
			ctl_send(&c[w], u);
			json_decref(u);
		}
		for (int w = 1; w <= n; w++) {
			json_t *m = NULL;
			char e[128];
			while (!m) {
				struct pollfd pf = { .fd = c[w].fd, .events = POLLIN };
				poll(&pf, 1, 100);
				ctl_read(&c[w]);
				while (!m && ctl_next(&c[w], &m, e, sizeof(e)) == 1)
					if (strcmp(ctl_type(m), "send") && strcmp(ctl_type(m), "drop")) {
						json_decref(m);
						m = NULL;
					}
			}
			dropped += !strcmp(ctl_type(m), "drop");
			last = clock_real_s();
			if (w == 1)
				first = last;
			lat[n_lat++] = (last - t_push) * 1e3;
			json_decref(m);
		}
		if ((last - first) * 1e3 > spread_max)
			spread_max = (last - first) * 1e3;
		for (int i = 0; i < n_hosts; i++) {
			ctl_read(&c[i]);
			c[i].in_off = c[i].in_len = 0; /* orders and aggregates: not timed */
		}
	}
	stop_flag = 1;
	pthread_join(th, NULL);
	qsort(lat, (size_t)n_lat, sizeof(double), cmp_double);
	double sum = 0;
	for (int i = 0; i < n_lat; i++)
		sum += lat[i];
	printf("| %d | %d | %.1f | %.3f | %.3f | %.1f | %.1f | %.1f | %.2f | %d |", n, stats.batches,
	       stats.batches ? (double)stats.updates / stats.batches : 0.0,
	       stats.batches ? stats.plan_ms_sum / stats.batches : 0.0, stats.plan_ms_max,
	       sum / n_lat, lat[n_lat / 2], lat[n_lat - 1], spread_max, dropped);
	if (replica_div >= 0)
		printf(" %d | %d | %.3g |", stats.rcommits, stats.punted, stats.bound_max);
	printf("\n");
	fflush(stdout);
	for (int i = 0; i < n_hosts; i++)
		ctl_close(&c[i]);
	sched_daemon_free(s);
	free(c);
	free(lat);
	return 0;
}

/* CPU seconds thread @th has used. */
static double thread_cpu_s(pthread_t th)
{
	clockid_t cid;
	struct timespec ts;

	if (pthread_getcpuclockid(th, &cid) || clock_gettime(cid, &ts))
		return 0;
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * One flood run (docs/scheduler.md "Benchmark"): worker w0 announces @n updates while no server
 * is registered, then a malformed update whose error answer marks the end. @mode 0: the id
 * lookups scan the update table (the id index off), no per-host limit; 1: indexed, no limit;
 * 2: indexed with the default --max-updates-per-host. Returns the daemon thread's CPU seconds
 * from the first update to the answer (-1 on failure); *@wall_s the wall time.
 */
static double flood_one(int n, int mode, const char *dir, int port, double *wall_s, int *held)
{
	char path[256], err[256];
	struct sched_config cfg;
	struct ctl_conn c;
	json_t *m;

	snprintf(path, sizeof(path), "%s/cluster-flood.json", dir);
	if (write_cluster(path, 1))
		return -1;
	sched_daemon_defaults(&cfg);
	cfg.peer_timeout_s = 300;
	if (mode < 2)
		cfg.max_upd_per_host = 0;
	snprintf(cfg.listen, sizeof(cfg.listen), "127.0.0.1:%d", port);
	struct sched *s = sched_daemon_create(&cfg, path, err, sizeof(err));
	if (!s) {
		fprintf(stderr, "bench-sched: %s\n", err);
		return -1;
	}
	s->upd_ix.off = s->xfer_ix.off = mode == 0;
	pthread_t th;
	stop_flag = 0;
	pthread_create(&th, NULL, run_daemon, s);
	int fd = ctl_connect(cfg.listen, err, sizeof(err));
	if (fd < 0) {
		fprintf(stderr, "bench-sched: %s\n", err);
		exit(1);
	}
	ctl_init(&c, fd);
	c.out_max = (size_t)n * 256 + CTL_OUT_MAX;
	json_decref(call(&c, json_pack("{s:s, s:s}", "type", "hello", "host", "w0"), "welcome"));
	json_decref(call(&c, json_pack("{s:s, s:s, s:s, s:s}", "type", "register", "app",
				       "worker@w0", "role", "worker", "server", "ps"), "registered"));
	for (int i = 0; i < n; i++) {
		m = json_pack("{s:s, s:s, s:I, s:s, s:i, s:i, s:f}", "type", "update", "app",
			      "worker@w0", "id", (json_int_t)(((uint64_t)1 << 40) | (uint64_t)i),
			      "server", "ps", "bytes", 1001024, "version", 0, "norm", 1.0);
		ctl_queue(&c, m);
		json_decref(m);
	}
	m = json_pack("{s:s, s:s, s:s}", "type", "update", "app", "worker@w0", "server", "ps");
	ctl_queue(&c, m); /* no "id": answered with an error once everything before is handled */
	json_decref(m);
	double cpu0 = thread_cpu_s(th), t0 = clock_mono_s();
	int done = 0;
	while (!done) {
		struct pollfd pf = { .fd = fd, .events = POLLIN | (ctl_pending(&c) ? POLLOUT : 0) };
		poll(&pf, 1, 100);
		if (ctl_pending(&c) && ctl_flush(&c) < 0)
			break;
		if (ctl_read(&c) == 0)
			break;
		while (!done && ctl_next(&c, &m, err, sizeof(err)) == 1) {
			done = !strcmp(ctl_type(m), "error");
			json_decref(m);
		}
	}
	double cpu = thread_cpu_s(th) - cpu0;
	*wall_s = clock_mono_s() - t0;
	*held = s->n_upd;
	stop_flag = 1;
	pthread_join(th, NULL);
	ctl_close(&c);
	sched_daemon_free(s);
	return done ? cpu : -1;
}

/* --flood N: the three flood_one modes, @reps times each; medians, min-max and the ratio. */
static int bench_flood(int n, int reps, const char *dir)
{
	static const char *const names[] = { "scan (before the index), no limit",
		"indexed, no limit", "indexed, --max-updates-per-host 4096" };
	double cpu[3][16], wall[3][16];
	int held[3] = { 0 };

	if (reps > 16)
		reps = 16;
	for (int r = 0; r < reps; r++)
		for (int mode = 0; mode < 3; mode++) {
			cpu[mode][r] = flood_one(n, mode, dir, 20000 + (int)(getpid() % 20000) + 100 +
						 r * 3 + mode, &wall[mode][r], &held[mode]);
			if (cpu[mode][r] < 0) {
				fprintf(stderr, "bench-sched: flood run %d mode %d failed\n", r, mode);
				return 1;
			}
		}
	printf("bench-sched --flood: %d updates from one worker, no server registered, %d "
	       "repeats (CPU of the daemon thread from the first update to the answer of the "
	       "last message)\n\n| lookup | CPU s median | min-max | wall s median | updates held |\n"
	       "|---|---|---|---|---|\n", n, reps);
	double med[3];
	for (int mode = 0; mode < 3; mode++) {
		qsort(cpu[mode], (size_t)reps, sizeof(double), cmp_double);
		qsort(wall[mode], (size_t)reps, sizeof(double), cmp_double);
		med[mode] = cpu[mode][reps / 2];
		printf("| %s | %.3f | %.3f-%.3f | %.3f | %d |\n", names[mode], med[mode],
		       cpu[mode][0], cpu[mode][reps - 1], wall[mode][reps / 2], held[mode]);
	}
	printf("\nCPU ratio scan / indexed: %.1fx; scan / indexed with the limit: %.1fx\n",
	       med[0] / (med[1] > 1e-6 ? med[1] : 1e-6), med[0] / (med[2] > 1e-6 ? med[2] : 1e-6));
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = { { "workers", required_argument, 0, 'w' },
		{ "rounds", required_argument, 0, 'r' }, { "batch-ms", required_argument, 0, 'b' },
		{ "replica", required_argument, 0, 'R' }, { "flood", required_argument, 0, 'F' },
		{ "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 } };
	char workers[256] = "8,32,62", dir[64], *save = NULL;
	int rounds = 20, c, flood = 0;
	double batch_ms = 100;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'w')
			snprintf(workers, sizeof(workers), "%s", optarg);
		else if (c == 'r')
			rounds = atoi(optarg);
		else if (c == 'b')
			batch_ms = atof(optarg);
		else if (c == 'R')
			replica_div = atof(optarg);
		else if (c == 'F')
			flood = atoi(optarg);
		else {
			printf("usage: bench-sched [--workers 8,32,62] [--rounds 20] [--batch-ms 100]\n"
			       "                   [--replica DIV_MAX] [--flood N [--rounds R]]\n"
			       "The scheduler daemon in-process with fake dataplanes on 127.0.0.1: every\n"
			       "round each worker announces one 1 MB update; prints per worker count the\n"
			       "batches, updates per batch, plan_compute ms, and the latency from the\n"
			       "update message to the worker's send command (ms; includes waiting for\n"
			       "the batch tick, so about batch-ms/2 on average), and the largest spread\n"
			       "between the first and last worker's send of one batch. With --replica,\n"
			       "a replica r0 (downlink 1 Gbit/s) at Div_max DIV_MAX is planned too (replica\n"
			       "commits, punted copies, largest divergence bound are added).\n"
			       "With --flood N: one worker announces N updates with no server\n"
			       "registered; the daemon's CPU with id lookups by scan (before the index),\n"
			       "indexed, and indexed with the default per-host limit, R repeats (default\n"
			       "3), medians and the ratio.\n");
			return c == 'h' ? 0 : 2;
		}
	}
	snprintf(dir, sizeof(dir), "/tmp/bench-sched.%d", (int)getpid());
	if (rounds < 1 || batch_ms <= 0 || mkdir(dir, 0700) < 0) {
		fprintf(stderr, "bench-sched: --rounds >= 1, --batch-ms > 0, and a writable /tmp\n");
		return 2;
	}
	log_threshold = getenv("BENCH_SCHED_LOG") ? LOG_INFO : LOG_WARN;
	if (flood > 0) {
		log_threshold = LOG_ERR; /* the per-host limit's drops are not the figure */
		char cf[128];
		int rc = bench_flood(flood, rounds == 20 ? 3 : rounds, dir);
		snprintf(cf, sizeof(cf), "%s/cluster-flood.json", dir);
		unlink(cf);
		rmdir(dir);
		return rc;
	}
	printf("bench-sched: %d rounds, batch %.0f ms, 4 aggregators, server downlink 1 Gbit/s",
	       rounds, batch_ms);
	if (replica_div >= 0)
		printf(", replica r0 with Div_max %g (norm 1 per update)", replica_div);
	printf("\n\n| workers | batches | updates/batch | plan ms mean | plan ms max | "
	       "update->send ms mean | p50 | max | send spread ms max | dropped |%s\n"
	       "|---|---|---|---|---|---|---|---|---|---|%s\n", replica_div >= 0 ?
	       " replica commits | punted | bound max |" : "", replica_div >= 0 ? "---|---|---|" : "");
	for (char *t = strtok_r(workers, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int n = atoi(t);
		if (n < 1 || n > 62) {
			fprintf(stderr, "bench-sched: --workers: %s is not in 1..62\n", t);
			return 2;
		}
		if (bench_one(n, rounds, batch_ms, dir, 20000 + (int)(getpid() % 20000) + n))
			return 1;
	}
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) ? 1 : 0;
}
