/* fuzz_sched.c - libFuzzer harness (docs/fuzzing.md): the scheduler daemon's message handlers
 * (sched_msg_handle, docs/control.md) and its batch planning on whatever state they leave. A fresh
 * daemon per input on a 6-host cluster without a key (ps server+scheduler, w0-w2 workers, a0
 * aggregator, r0 replica), one connection per host said `hello`; then each input line is
 * "<digit><JSON>": the message from connection <digit> % 6. Every 4 messages, and at the end,
 * a batch is planned with the clock moved on by 50 ms, and what the daemon queued is drained. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "arr.h"
#include "clock.h"
#include "ctl.h"
#include "log.h"
#include "sched_batch.h"
#include "sched_daemon.h"
#include "sched_msg.h"

#define N_HOSTS 6

static const char *const hosts[N_HOSTS] = { "ps", "w0", "w1", "w2", "a0", "r0" };
static char cluster_path[64];

static const char *cluster_json =
	"{\"name\":\"fz\",\"hosts\":["
	"{\"name\":\"ps\",\"ip\":\"10.82.0.2\",\"up_gbps\":10,\"down_gbps\":1,"
	"\"roles\":[\"server\",\"scheduler\"]},"
	"{\"name\":\"w0\",\"ip\":\"10.82.0.10\",\"up_gbps\":10,\"down_gbps\":10,\"roles\":[\"worker\"]},"
	"{\"name\":\"w1\",\"ip\":\"10.82.0.11\",\"up_gbps\":10,\"down_gbps\":10,\"roles\":[\"worker\"]},"
	"{\"name\":\"w2\",\"ip\":\"10.82.0.12\",\"up_gbps\":10,\"down_gbps\":10,\"roles\":[\"worker\"]},"
	"{\"name\":\"a0\",\"ip\":\"10.82.0.20\",\"up_gbps\":10,\"down_gbps\":10,"
	"\"roles\":[\"aggregator\"]},"
	"{\"name\":\"r0\",\"ip\":\"10.82.0.30\",\"up_gbps\":10,\"down_gbps\":0.5,"
	"\"roles\":[\"replica\"]}]}";

static void remove_cluster(void)
{
	unlink(cluster_path);
}

static int setup_once(void)
{
	static int done;
	FILE *f;

	if (done)
		return 0;
	log_threshold = LOG_ERR; /* quiet: the handlers' refusals are the point */
	snprintf(cluster_path, sizeof(cluster_path), "/tmp/mlf-fuzz-sched-%d.json", (int)getpid());
	f = fopen(cluster_path, "w");
	if (!f)
		return -1;
	fputs(cluster_json, f);
	fclose(f);
	atexit(remove_cluster);
	done = 1;
	return 0;
}

/* A connection as the accept loop makes it, over a socket pair; *@peer is the far end. */
static int add_conn(struct sched *s, int *peer)
{
	int sv[2], ci;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) < 0)
		return -1;
	if (arr_grow((void **)&s->conns, &s->cap_conns, s->n_conns + 1, sizeof(*s->conns))) {
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	ci = s->n_conns++;
	memset(&s->conns[ci], 0, sizeof(s->conns[ci]));
	ctl_init(&s->conns[ci].c, sv[1]);
	s->conns[ci].host = -1;
	s->conns[ci].auth_host = -1;
	s->conns[ci].t_open = clock_real_s();
	*peer = sv[0];
	return ci;
}

static void drain(struct sched *s, const int *peer)
{
	char buf[65536];

	for (int i = 0; i < s->n_conns; i++)
		if (s->conns[i].c.fd >= 0)
			(void)ctl_flush(&s->conns[i].c);
	for (int i = 0; i < N_HOSTS; i++)
		while (peer[i] >= 0 && read(peer[i], buf, sizeof(buf)) > 0)
			;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sched_config cfg;
	struct sched *s;
	char err[256];
	int ci[N_HOSTS], peer[N_HOSTS], n = 0;
	double now;
	size_t off = 0;

	if (setup_once())
		return 0;
	sched_daemon_defaults(&cfg);
	/* ADSP on: `loss` reports feed the commit-rate search, checkpoints every 0.1 s
	 * send `commit_rate` to the workers (sched_policy_tick below) */
	cfg.adsp.gamma_s = 0.1;
	cfg.adsp.eval_s = 0.2;
	/* a port of its own (nothing connects to it: the connections are socket pairs) */
	snprintf(cfg.listen, sizeof(cfg.listen), "127.0.0.1:%d", 20000 + (int)getpid() % 20000);
	s = sched_daemon_create(&cfg, cluster_path, err, sizeof(err));
	if (!s) {
		fprintf(stderr, "fuzz_sched: %s\n", err);
		abort(); /* the harness itself is broken */
	}
	now = clock_real_s();
	for (int h = 0; h < N_HOSTS; h++) {
		peer[h] = -1;
		ci[h] = add_conn(s, &peer[h]);
		if (ci[h] < 0)
			continue;
		json_t *hello = json_pack("{s:s, s:s}", "type", "hello", "host", hosts[h]);
		sched_msg_handle(s, ci[h], hello);
		json_decref(hello);
	}
	while (off < size) {
		const uint8_t *nl = memchr(data + off, '\n', size - off);
		size_t len = nl ? (size_t)(nl - (data + off)) : size - off;
		int who = len > 0 ? data[off] % N_HOSTS : 0;

		if (len > 1 && ci[who] >= 0 && s->conns[ci[who]].c.fd >= 0) {
			json_error_t je;
			json_t *m = json_loadb((const char *)data + off + 1, len - 1, 0, &je);

			if (m && json_is_object(m))
				sched_msg_handle(s, ci[who], m);
			json_decref(m);
		}
		off += len + 1;
		if (++n % 4 == 0) {
			now += 0.05;
			(void)sched_batch_tick(s, now);
			sched_policy_tick(s, now);
			drain(s, peer);
		}
	}
	(void)sched_batch_tick(s, now + 0.05);
	drain(s, peer);
	if (getenv("MLF_FUZZ_VERBOSE")) /* what an input reached, for writing seeds */
		fprintf(stderr, "fuzz_sched: %d messages, %d batches planned, %d updates, %d pulls, "
			"server %s\n", n, s->batch_no, s->n_upd, s->n_pulls,
			s->server.host >= 0 ? "registered" : "none");
	sched_daemon_free(s);
	for (int h = 0; h < N_HOSTS; h++)
		if (peer[h] >= 0)
			close(peer[h]);
	return 0;
}
