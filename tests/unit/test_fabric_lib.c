/* test_fabric_lib.c - Check tests of libmlfabric (lib/mlfabric/) against a scripted fake dataplane (a Unix
 * SOCK_SEQPACKET server in a thread): registration, payload validation at the server, commits,
 * refusal of a malformed command, skip (ORDER flag, late arrival not applied), a get that times
 * out naming the server; mlf_recv_model refusing other hosts and bad payloads, mlf_send_model
 * retrying failed transfers until its timeout; MLfabric-S: one step per iteration, `sync_step`;
 * fresh pulls: a pull names the update pushed before it, an unsharded server's model copy waits
 * for its at_version (at least); a completed copy's `done` carries its first byte's time
 * (`t_start`) when the dataplane knows it; mlf_push refuses an update whose length differs from
 * the server's model; mlf_push reuses a buffer once its transfer ended (and not before); a get
 * beyond the 8 in flight in direct mode waits for a slot. */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <jansson.h>

#include "appmsg.h"
#include "ck_run.h"
#include "clock.h"
#include "dpclient.h"
#include "fake_dp.h"
#include "mlf_payload.h"
#include "mlfabric.h"

#define N 16

static char dir[64], cfg[96], sock[96];
static int lfd;

/* What the fake dataplane saw. */
static struct {
	char commit[1024], error[1024], commit2[1024];
	int listens, skip_orders;
	uint64_t skipped_id;
} seen;

static void setup(void)
{
	strcpy(dir, "/tmp/test_fabric_XXXXXX");
	lfd = fake_dp_listen(dir, cfg, sock, "{\"name\":\"fabu\",\"hosts\":[{\"name\":\"x\",\"ip\":\"10.82.9.1\"},"
			     "{\"name\":\"w0\",\"ip\":\"10.82.9.2\"},{\"name\":\"w7\",\"ip\":\"10.82.9.3\"}]}", 4);
	memset(&seen, 0, sizeof(seen));
}

static void teardown(void)
{
	close(lfd);
	unlink(sock);
	unlink(cfg);
	rmdir(dir);
}

static void send_ctl(int fd, const char *text)
{
	struct appmsg m;
	ck_assert_int_eq(appmsg_ctl(&m, text), 0);
	ck_assert_int_eq(appmsg_send(fd, &m, -1), 0);
}

/* A received update: header @magic with one part (id 42), N floats of value @v. */
static void send_update(int fd, uint32_t magic, float v, const char *peer, uint64_t xfer)
{
	struct mlfabric_buf b;
	struct mlf_payload_hdr *h;
	struct appmsg m = { .type = APPMSG_RX_DONE, .id = xfer, .chan = 1 };

	ck_assert_int_eq(mlfabric_buf_alloc(mlf_payload_bytes(N), &b), 0);
	h = b.data;
	h->magic = magic;
	h->n_parts = 1;
	h->n_floats = N;
	h->parts[0].id = 42;
	for (int i = 0; i < N; i++)
		((float *)((char *)b.data + MLF_PAYLOAD_HDR))[i] = v;
	m.bytes = b.size;
	strcpy(m.peer, peer);
	ck_assert_int_eq(appmsg_send(fd, &m, b.fd), 0);
	mlfabric_buf_free(&b);
}

/* Waits for the next CTL message whose text contains @want; other messages are counted. */
static void expect_ctl(int fd, const char *want, char *out, size_t cap)
{
	struct appmsg m;
	int mfd;

	for (;;) {
		ck_assert_int_eq(appmsg_recv(fd, &m, &mfd), 1);
		if (mfd >= 0)
			close(mfd);
		if (m.type == APPMSG_LISTEN)
			seen.listens++;
		/* the library also marks every arrival done with a skip ORDER (an arrival may
		 * overtake its `order`); count only the skips of transfer 9, the one the
		 * scheduler reported lost */
		if (m.type == APPMSG_ORDER && (m.flags & APPMSG_ORDER_SKIP) && m.n == 1 && m.u.ids[0] == 9) {
			seen.skip_orders++;
			seen.skipped_id = m.u.ids[0];
		}
		if (m.type == APPMSG_CTL && strstr(m.u.text, want)) {
			size_t l = strnlen(m.u.text, cap - 1);
			memcpy(out, m.u.text, l);
			out[l] = '\0';
			return;
		}
	}
}

/* Accepts the endpoint's connection and answers its `register` as @app (a server@x gets the
 * server's transfer id base, a worker the worker's). Returns the connection. */
static int accept_registered(const char *app)
{
	int fd = accept(lfd, NULL, NULL);
	char buf[1024], text[160];

	expect_ctl(fd, "\"register\"", buf, sizeof(buf));
	snprintf(text, sizeof(text), "{\"type\":\"registered\",\"app\":\"%s\",\"xfer_base\":%s}",
		 app, strncmp(app, "server", 6) ? "2199023255552" : "1099511627776");
	send_ctl(fd, text);
	return fd;
}

/* Reads (and drops) what comes on @fd until the endpoint closes it (mlf_close), then closes it. */
static void drain(int fd)
{
	struct appmsg m;
	int mfd;

	while (appmsg_recv(fd, &m, &mfd) == 1)
		if (mfd >= 0)
			close(mfd);
	close(fd);
}

/*
 * A worker test whose pushes are never commanded (no scheduler) would wait in mlf_close for the
 * endpoint's timeout_s (5 s): the fake dataplane, once it read everything the test checks, posts
 * its connection (fake_read_all_done) and the test hangs it up (fake_hang_up) before mlf_close,
 * which stops waiting when the dataplane is lost.
 */
static sem_t fake_read_all;
static int fake_fd = -1;

static void fake_read_all_done(int fd)
{
	fake_fd = fd;
	sem_post(&fake_read_all);
}

static void fake_hang_up(void)
{
	ck_assert_int_eq(sem_wait(&fake_read_all), 0);
	ck_assert_int_eq(shutdown(fake_fd, SHUT_RDWR), 0);
}

static void *fake_server_dp(void *arg)
{
	int fd = accept(lfd, NULL, NULL);
	char buf[1024];

	(void)arg;
	expect_ctl(fd, "\"register\"", buf, sizeof(buf));
	send_ctl(fd, "{\"type\":\"registered\",\"app\":\"server@x\",\"xfer_base\":1099511627776}");
	send_update(fd, 0x12345678, 1.0f, "w7", 7);            /* bad magic: never applied */
	send_update(fd, MLF_PAYLOAD_MAGIC_UPDATE, 2.5f, "w0", 8);
	expect_ctl(fd, "\"commit\"", seen.commit, sizeof(seen.commit));
	send_ctl(fd, "{\"type\":\"send\",\"app\":\"server@x\",\"id\":1}"); /* no "what" */
	expect_ctl(fd, "\"error\"", seen.error, sizeof(seen.error));
	/* transfer 9 is reported lost; when it turns up anyway it must not be applied */
	send_ctl(fd, "{\"type\":\"skip\",\"app\":\"server@x\",\"chan\":1,\"xfers\":[9]}");
	send_update(fd, MLF_PAYLOAD_MAGIC_UPDATE, 100.0f, "w0", 9);
	send_update(fd, MLF_PAYLOAD_MAGIC_UPDATE, 1.0f, "w0", 10);
	expect_ctl(fd, "\"commit\"", seen.commit2, sizeof(seen.commit2));
	close(fd);
	return NULL;
}

struct srv {
	float w[N];
	int64_t version;
	int calls;
	char src[32];
};

static int64_t on_update(void *arg, const struct mlf_update *u)
{
	struct srv *s = arg;
	for (size_t i = 0; i < u->n; i++)
		s->w[i] += u->u[i];
	s->calls++;
	snprintf(s->src, sizeof(s->src), "%s", u->src);
	return s->version += u->hdr->n_parts;
}

static int64_t on_request(void *arg, float *model, size_t n)
{
	struct srv *s = arg;
	memcpy(model, s->w, n * sizeof(float));
	return s->version;
}

START_TEST(server_validates_applies_commits_and_refuses_bad_commands)
{
	struct mlf_opts o = { .cluster = cfg, .host = "x", .sock = sock, .timeout_s = 5 };
	struct mlf_params p = { .tau_max = 8, .n_workers = 1 };
	struct srv s = { .version = 10 };
	char err[256], logpath[128];
	pthread_t t;
	mlf_t *f;
	FILE *log;
	int saved = dup(2);

	snprintf(logpath, sizeof(logpath), "%s/log", dir);
	ck_assert_ptr_nonnull(freopen(logpath, "w", stderr));
	ck_assert_int_eq(pthread_create(&t, NULL, fake_server_dp, NULL), 0);
	f = mlf_open(&o, err, sizeof(err));
	ck_assert_msg(f != NULL, "%s", err);
	ck_assert_int_eq(mlf_register_as_server(f, &p, N, 10, on_update, on_request, &s), 0);
	pthread_join(t, NULL);
	mlf_close(f);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	ck_assert_int_eq(seen.listens, 1);
	/* the bad payload was skipped; the good one applied once, committed with its part and version */
	ck_assert_int_eq(s.calls, 2);
	ck_assert_str_eq(s.src, "w0");
	ck_assert_float_eq(s.w[N - 1], 3.5f); /* 2.5 + 1, not the skipped 100 */
	ck_assert_int_ge(seen.skip_orders, 1); /* the scheduler's skip, plus the arrival mark when 9 arrives */
	ck_assert_uint_eq(seen.skipped_id, 9);
	ck_assert_ptr_nonnull(strstr(seen.commit2, "\"xfer\":10,"));
	json_t *c = json_loads(seen.commit, 0, NULL);
	ck_assert_int_eq(json_integer_value(json_object_get(c, "xfer")), 8);
	ck_assert_int_eq(json_integer_value(json_object_get(c, "version")), 11);
	ck_assert_int_eq(json_integer_value(json_array_get(json_object_get(c, "parts"), 0)), 42);
	ck_assert_str_eq(json_string_value(json_object_get(c, "app")), "server@x");
	json_decref(c);
	ck_assert_msg(strstr(seen.error, "missing or bad field 'what'") != NULL, "error: %s", seen.error);
	/* the log names the source host of the bad payload */
	log = fopen(logpath, "r");
	ck_assert_ptr_nonnull(log);
	char line[512];
	int named = 0;
	while (fgets(line, sizeof(line), log))
		named |= (strstr(line, "bad update payload from host w7") != NULL && strstr(line, "magic") != NULL) |
			 2 * (strstr(line, "transfer 9 from host w0 arrived after the scheduler reported it lost") != NULL);
	fclose(log);
	unlink(logpath);
	ck_assert_msg(named & 1, "no log line naming host w7 and the bad magic");
	ck_assert_msg(named & 2, "no log line for the late skipped transfer 9");
}
END_TEST

/* MLfabric-S: what the fake dataplane saw of the commits (text of the first per step). */
static struct {
	char first[1024], second[1024], third[1024];
} sync_seen;

static void *fake_sync_dp(void *arg)
{
	int fd = accept(lfd, NULL, NULL);
	char buf[1024];

	(void)arg;
	expect_ctl(fd, "\"register\"", buf, sizeof(buf));
	send_ctl(fd, "{\"type\":\"registered\",\"app\":\"server@x\",\"xfer_base\":1099511627776}");
	/* iteration from version 10: three contributions (n_workers 3), the first two early */
	send_update(fd, MLF_PAYLOAD_MAGIC_UPDATE, 1.0f, "w0", 20);
	send_update(fd, MLF_PAYLOAD_MAGIC_UPDATE, 2.0f, "w7", 21);
	send_update(fd, MLF_PAYLOAD_MAGIC_UPDATE, 3.0f, "w0", 22);
	expect_ctl(fd, "\"commit\"", sync_seen.first, sizeof(sync_seen.first));
	expect_ctl(fd, "\"commit\"", buf, sizeof(buf));
	expect_ctl(fd, "\"commit\"", buf, sizeof(buf));
	/* iteration from version 13 closed by the sync timeout with 2 contributions; a newer
	 * sync_step for the same version replaces an older one (docs/scheduler.md "MLfabric-S",
	 * Lost parts: the scheduler tells a smaller size again) */
	send_ctl(fd, "{\"type\":\"sync_step\",\"app\":\"server@x\",\"version\":13,\"parts\":1}");
	send_ctl(fd, "{\"type\":\"sync_step\",\"app\":\"server@x\",\"version\":13,\"parts\":2}");
	send_update(fd, MLF_PAYLOAD_MAGIC_UPDATE, 4.0f, "w0", 23);
	send_update(fd, MLF_PAYLOAD_MAGIC_UPDATE, 5.0f, "w7", 24);
	expect_ctl(fd, "\"commit\"", sync_seen.second, sizeof(sync_seen.second));
	expect_ctl(fd, "\"commit\"", buf, sizeof(buf));
	/* a sync_step arriving after its iteration's contributions applies them at once */
	send_update(fd, MLF_PAYLOAD_MAGIC_UPDATE, 6.0f, "w0", 25);
	send_ctl(fd, "{\"type\":\"sync_step\",\"app\":\"server@x\",\"version\":15,\"parts\":1}");
	expect_ctl(fd, "\"commit\"", sync_seen.third, sizeof(sync_seen.third));
	close(fd);
	return NULL;
}

static int64_t commit_field(const char *text, const char *k)
{
	json_t *c = json_loads(text, 0, NULL);
	int64_t v;

	ck_assert_ptr_nonnull(c);
	v = json_integer_value(json_object_get(c, k));
	json_decref(c);
	return v;
}

/*
 * A server endpoint on host x in @mode (@n_workers, version 10, state @s) against the fake
 * dataplane thread @dp, until the thread ends; then closed.
 */
static void run_server(enum mlf_mode mode, int n_workers, void *(*dp)(void *), struct srv *s)
{
	struct mlf_opts o = { .cluster = cfg, .host = "x", .sock = sock, .timeout_s = 5,
			      .mode = mode };
	struct mlf_params p = { .tau_max = 8, .n_workers = n_workers };
	char err[256];
	pthread_t t;
	mlf_t *f;

	ck_assert_int_eq(pthread_create(&t, NULL, dp, NULL), 0);
	f = mlf_open(&o, err, sizeof(err));
	ck_assert_msg(f != NULL, "%s", err);
	ck_assert_int_eq(mlf_register_as_server(f, &p, N, 10, on_update, on_request, s), 0);
	pthread_join(t, NULL);
	mlf_close(f);
}

/*
 * MLfabric-S (§6): contributions arriving in several transfers are applied as one step per
 * iteration (one on_update with their sum, version += parts), committed at that step; a
 * `sync_step` (straggler timeout) sets a shorter iteration, before or after its arrivals.
 */
START_TEST(sync_server_one_step_per_iteration)
{
	struct srv s = { .version = 10 };

	memset(&sync_seen, 0, sizeof(sync_seen));
	run_server(MLF_MODE_MLFABRIC_S, 3, fake_sync_dp, &s);
	ck_assert_int_eq(s.calls, 3);          /* three steps for six transfers */
	ck_assert_int_eq(s.version, 16);
	ck_assert_float_eq(s.w[0], 21.0f);     /* 1 + ... + 6: nothing lost or applied twice */
	/* the early contribution's commit comes with the step: version 13, not 11 */
	ck_assert_int_eq(commit_field(sync_seen.first, "xfer"), 20);
	ck_assert_int_eq(commit_field(sync_seen.first, "version"), 13);
	ck_assert_int_eq(commit_field(sync_seen.second, "xfer"), 23);
	ck_assert_int_eq(commit_field(sync_seen.second, "version"), 15);
	ck_assert_int_eq(commit_field(sync_seen.third, "xfer"), 25);
	ck_assert_int_eq(commit_field(sync_seen.third, "version"), 16);
}
END_TEST

static void *fake_silent_dp(void *arg)
{
	int fd = accept(lfd, NULL, NULL);
	char buf[1024];

	(void)arg;
	expect_ctl(fd, "\"register\"", buf, sizeof(buf));
	send_ctl(fd, "{\"type\":\"registered\",\"app\":\"worker@w0\",\"xfer_base\":2199023255552}");
	expect_ctl(fd, "\"pull\"", buf, sizeof(buf)); /* never answered */
	sleep(1);
	close(fd);
	return NULL;
}

START_TEST(get_times_out_naming_the_server)
{
	struct mlf_opts o = { .cluster = cfg, .host = "w0", .sock = sock, .timeout_s = 5 };
	float w[N];
	int64_t v = -7;
	char err[256];
	pthread_t t;
	mlf_t *f;

	ck_assert_int_eq(pthread_create(&t, NULL, fake_silent_dp, NULL), 0);
	f = mlf_open(&o, err, sizeof(err));
	ck_assert_msg(f != NULL, "%s", err);
	ck_assert_int_eq(mlf_register_as_worker(f, "nosuchhost"), -EINVAL);
	ck_assert_int_eq(mlf_register_as_worker(f, "x"), 0);
	ck_assert_int_eq(mlf_get(f, "x", w, N, &v, 0.3), -ETIMEDOUT);
	ck_assert_msg(strstr(mlf_error(f), "no model from server x within 0.3 s") != NULL, "%s", mlf_error(f));
	ck_assert_int_eq(v, -7);
	pthread_join(t, NULL);
	mlf_close(f);
}
END_TEST

/* A shard of a model (chan 3, a get's answer) from @peer: floats [@off, +@n) of value i + 0.5,
 * version @version. */
static void send_shard(int fd, uint64_t off, size_t n, int64_t version, const char *peer, uint64_t xfer)
{
	struct mlfabric_buf b;
	struct mlf_payload_hdr *h;
	struct appmsg m = { .type = APPMSG_RX_DONE, .id = xfer, .chan = 3 };

	ck_assert_int_eq(mlfabric_buf_alloc(mlf_payload_bytes(n), &b), 0);
	h = b.data;
	h->magic = MLF_PAYLOAD_MAGIC_MODEL;
	h->version = version;
	h->n_floats = n;
	h->offset = off;
	for (size_t i = 0; i < n; i++)
		((float *)((char *)b.data + MLF_PAYLOAD_HDR))[i] = (float)(off + i) + 0.5f;
	m.bytes = b.size;
	strcpy(m.peer, peer);
	ck_assert_int_eq(appmsg_send(fd, &m, b.fd), 0);
	mlfabric_buf_free(&b);
}

/* Gets of a model in two shards: the first answered with a shard at 1.4 s and the other at
 * 2.8 s after its pull, the second with one shard at 0.2 s and nothing more, the third with one
 * shard at 0.2 s and the same shard of a newer version at 1.2 s. */
static void *fake_slow_shards_dp(void *arg)
{
	int fd = accept_registered("worker@w0");
	char buf[1024];

	(void)arg;
	expect_ctl(fd, "\"pull\"", buf, sizeof(buf));
	usleep(1400000);
	send_shard(fd, 0, N / 2, 4, "x", 21);
	usleep(1400000);
	send_shard(fd, N / 2, N / 2, 4, "w7", 22);
	expect_ctl(fd, "\"pull\"", buf, sizeof(buf));
	usleep(200000);
	send_shard(fd, 0, N / 2, 5, "x", 23);
	/* a third get: half the model at version 6, then the pull answered again at version 7,
	 * which starts over with the same half (no more of the model than before) */
	expect_ctl(fd, "\"pull\"", buf, sizeof(buf));
	usleep(200000);
	send_shard(fd, 0, N / 2, 6, "x", 24);
	usleep(1000000);
	send_shard(fd, 0, N / 2, 7, "x", 25);
	drain(fd);
	return NULL;
}

/*
 * A sharded get's timeout counts from the latest shard that arrived, not from the pull: a get
 * with a 2 s timeout whose shards come 1.4 s and 2.8 s after the pull completes (Table 2's N3: the
 * last of four shard copies started seconds after its plan while the others had arrived). One
 * whose second shard never comes times out 2 s after the first, naming the server; one whose
 * pull is answered again at a newer version with no more of the model times out 2 s after the
 * first shard too (a get cannot wait forever on restarts).
 */
START_TEST(sharded_get_timeout_counts_from_latest_shard)
{
	struct mlf_opts o = { .cluster = cfg, .host = "w0", .sock = sock, .timeout_s = 5 };
	float w[N];
	int64_t v = -7;
	char err[256];
	pthread_t t;
	double t0, dt;
	mlf_t *f;

	ck_assert_int_eq(pthread_create(&t, NULL, fake_slow_shards_dp, NULL), 0);
	f = mlf_open(&o, err, sizeof(err));
	ck_assert_msg(f != NULL, "%s", err);
	ck_assert_int_eq(mlf_register_as_worker(f, "x"), 0);
	ck_assert_int_eq(mlf_get(f, "x", w, N, &v, 2.0), 0);
	ck_assert_int_eq(v, 4);
	for (int i = 0; i < N; i++)
		ck_assert_float_eq(w[i], (float)i + 0.5f);
	t0 = clock_real_s();
	ck_assert_int_eq(mlf_get(f, "x", w, N, &v, 2.0), -ETIMEDOUT);
	dt = clock_real_s() - t0;
	ck_assert_msg(dt > 2.1, "the get gave up %.2f s after its pull, before 2 s after its first shard", dt);
	ck_assert_msg(strstr(mlf_error(f), "no further shard of the model of server x within 2.0 s") != NULL,
		      "%s", mlf_error(f));
	ck_assert_int_eq(v, 4);
	/* starting over at a newer version is no progress: 2 s after the first shard, not the last */
	t0 = clock_real_s();
	ck_assert_int_eq(mlf_get(f, "x", w, N, &v, 2.0), -ETIMEDOUT);
	dt = clock_real_s() - t0;
	ck_assert_msg(dt > 2.1 && dt < 2.9, "the get gave up %.2f s after its pull: want 2 s after its "
		      "first shard (0.2 s), not after the restarted one (1.2 s)", dt);
	mlf_close(f);
	pthread_join(t, NULL);
}
END_TEST

/* A model arrival on chan 6 from @peer: header @magic, @n floats i + 0.5, @version. */
static void send_model_rx(int fd, uint32_t magic, size_t n, int64_t version, const char *peer)
{
	struct mlfabric_buf b;
	struct mlf_payload_hdr *h;
	struct appmsg m = { .type = APPMSG_RX_DONE, .id = 5, .chan = 6 };

	ck_assert_int_eq(mlfabric_buf_alloc(mlf_payload_bytes(n), &b), 0);
	h = b.data;
	h->magic = magic;
	h->version = version;
	h->n_floats = n;
	for (size_t i = 0; i < n; i++)
		((float *)((char *)b.data + MLF_PAYLOAD_HDR))[i] = (float)i + 0.5f;
	m.bytes = b.size;
	strcpy(m.peer, peer);
	ck_assert_int_eq(appmsg_send(fd, &m, b.fd), 0);
	mlfabric_buf_free(&b);
}

/* The dataplane of mlf_recv_model: the endpoint's connection stays idle; on the private one a
 * LISTEN on chan 6, then a model from w7 (not the expected host), a bad payload from w0, the
 * model of w0 (7 floats, version 3). */
static void *fake_init_rx_dp(void *arg)
{
	int main_fd = accept(lfd, NULL, NULL), fd = accept(lfd, NULL, NULL), mfd;
	struct appmsg m;

	(void)arg;
	ck_assert_int_eq(appmsg_recv(fd, &m, &mfd), 1);
	ck_assert_int_eq(m.type, APPMSG_LISTEN);
	ck_assert_int_eq(m.chan, 6);
	send_model_rx(fd, MLF_PAYLOAD_MAGIC_MODEL, 9, 1, "w7");
	send_model_rx(fd, MLF_PAYLOAD_MAGIC_UPDATE, 7, 2, "w0");
	send_model_rx(fd, MLF_PAYLOAD_MAGIC_MODEL, 7, 3, "w0");
	while (appmsg_recv(fd, &m, &mfd) == 1) /* until the library closes it */
		;
	close(fd);
	while (appmsg_recv(main_fd, &m, &mfd) == 1) /* the endpoint's connection: until mlf_close */
		;
	close(main_fd);
	return NULL;
}

START_TEST(recv_model_refuses_other_hosts_and_bad_payloads)
{
	struct mlf_opts o = { .cluster = cfg, .host = "x", .sock = sock, .timeout_s = 5 };
	float *w = NULL;
	size_t n = 0;
	int64_t v = -1;
	char err[256];
	pthread_t t;
	mlf_t *f;

	ck_assert_int_eq(pthread_create(&t, NULL, fake_init_rx_dp, NULL), 0);
	f = mlf_open(&o, err, sizeof(err));
	ck_assert_msg(f != NULL, "%s", err);
	ck_assert_int_eq(mlf_recv_model(f, "nosuchhost", &w, &n, &v, 1), -EINVAL);
	ck_assert_int_eq(mlf_recv_model(f, "w0", &w, &n, &v, 5), 0);
	ck_assert_int_eq(n, 7);
	ck_assert_int_eq(v, 3);
	for (size_t i = 0; i < n; i++)
		ck_assert_float_eq(w[i], (float)i + 0.5f);
	free(w);
	mlf_close(f);
	pthread_join(t, NULL);
}
END_TEST

/* The dataplane of mlf_send_model: on the private connection the first SEND fails (peer silent),
 * the second is delivered; the payload is checked. */
static struct {
	int sends, chan_ok, payload_ok;
	char dst[32];
} sent;

static void *fake_init_tx_dp(void *arg)
{
	int fail_all = *(int *)arg;
	int main_fd = accept(lfd, NULL, NULL), fd = accept(lfd, NULL, NULL), mfd;
	struct appmsg m;

	while (appmsg_recv(fd, &m, &mfd) == 1) {
		if (m.type != APPMSG_SEND)
			continue;
		const struct mlf_payload_hdr *h = mmap(NULL, m.bytes, PROT_READ, MAP_SHARED, mfd, 0);
		const float *x = (const float *)((const char *)h + MLF_PAYLOAD_HDR);
		sent.sends++;
		sent.chan_ok = m.chan == 6;
		snprintf(sent.dst, sizeof(sent.dst), "%s", m.peer);
		sent.payload_ok = h != MAP_FAILED && m.bytes == mlf_payload_bytes(5) && h->magic == MLF_PAYLOAD_MAGIC_MODEL &&
				  h->n_parts == 0 && h->version == 4 && h->n_floats == 5 && x[0] == 1.0f && x[4] == 5.0f;
		if (h != MAP_FAILED)
			munmap((void *)h, m.bytes);
		close(mfd);
		struct appmsg r = { .type = APPMSG_ACCEPTED, .id = 100 + (uint64_t)sent.sends };
		ck_assert_int_eq(appmsg_send(fd, &r, -1), 0);
		r.type = APPMSG_TX_DONE;
		strcpy(r.peer, "x");
		if (fail_all || sent.sends == 1) {
			r.status = -ETIMEDOUT;
			strcpy(r.reason, "peer x silent for 1.0 s");
		}
		ck_assert_int_eq(appmsg_send(fd, &r, -1), 0);
	}
	close(fd);
	while (appmsg_recv(main_fd, &m, &mfd) == 1) /* the endpoint's connection: until mlf_close */
		;
	close(main_fd);
	return NULL;
}

START_TEST(send_model_retries_failed_transfers_until_its_timeout)
{
	struct mlf_opts o = { .cluster = cfg, .host = "w0", .sock = sock, .timeout_s = 5 };
	const float w[5] = { 1, 2, 3, 4, 5 };
	char err[256];
	pthread_t t;
	mlf_t *f;
	int fail_all = _i;
	double t0;

	memset(&sent, 0, sizeof(sent));
	ck_assert_int_eq(pthread_create(&t, NULL, fake_init_tx_dp, &fail_all), 0);
	f = mlf_open(&o, err, sizeof(err));
	ck_assert_msg(f != NULL, "%s", err);
	ck_assert_int_eq(mlf_send_model(f, "nosuchhost", w, 5, 4, 1), -EINVAL);
	ck_assert_int_eq(mlf_send_model(f, "x", w, 0, 4, 1), -EINVAL);
	t0 = clock_real_s();
	if (!fail_all) {
		ck_assert_int_eq(mlf_send_model(f, "x", w, 5, 4, 3), 0);
		ck_assert_int_eq(sent.sends, 2);
	} else {
		ck_assert_int_eq(mlf_send_model(f, "x", w, 5, 4, 1.0), -ETIMEDOUT);
		ck_assert_msg(clock_real_s() - t0 < 1.8, "took %.2f s", clock_real_s() - t0);
		ck_assert_msg(strstr(mlf_error(f), "server x did not take the model (5 floats) within 1.0 s") &&
			      strstr(mlf_error(f), "peer x silent"), "%s", mlf_error(f));
		ck_assert_int_ge(sent.sends, 2);
	}
	ck_assert(sent.chan_ok && sent.payload_ok);
	ck_assert_str_eq(sent.dst, "x");
	mlf_close(f);
	pthread_join(t, NULL);
}
END_TEST

/* What the fake dataplanes of the fresh-pull tests saw: model sends (the header's version), the
 * pulls' texts. */
static struct {
	int sends, early;
	int64_t version[4];
	char pull[3][1024];
} fresh;

/* The next model SEND (chan 3) on @fd within about 1 s: its header version into fresh, or -1. */
static int64_t next_model_send(int fd, double wait_s)
{
	double until = clock_real_s() + wait_s;
	struct appmsg m;
	int mfd;

	while (clock_real_s() < until) {
		struct timeval tv = { 0, 20000 };
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		if (appmsg_recv(fd, &m, &mfd) != 1)
			continue;
		if (m.type != APPMSG_SEND || m.chan != 3) {
			if (mfd >= 0)
				close(mfd);
			continue;
		}
		const struct mlf_payload_hdr *h = mmap(NULL, m.bytes, PROT_READ, MAP_SHARED, mfd, 0);
		int64_t v = h != MAP_FAILED ? h->version : -2;
		if (h != MAP_FAILED)
			munmap((void *)h, m.bytes);
		close(mfd);
		struct appmsg r = { .type = APPMSG_ACCEPTED, .id = m.id };
		appmsg_send(fd, &r, -1);
		return v;
	}
	return -1;
}

/* A model `send` for pull @id (transfer @xfer, batch @batch) at @at_version, to w0. */
static void send_model_cmd(int fd, int id, int xfer, int batch, int at_version)
{
	char text[512];

	snprintf(text, sizeof(text), "{\"type\":\"send\",\"app\":\"server@x\",\"what\":\"model\","
		 "\"id\":%d,\"xfer\":%d,\"dst\":\"w0\",\"chan\":3,\"bytes\":%zu,\"start\":0,"
		 "\"steps\":[],\"batch\":%d,\"at_version\":%d}", id, xfer,
		 (size_t)mlf_payload_bytes(N), batch, at_version);
	send_ctl(fd, text);
}

/*
 * An unsharded server (version 10): a model copy at_version 11 waits until the update that
 * brings it there is applied, then goes with version 11; one at_version 10 while the server is
 * at 11 goes at once (at least that version: docs/scheduler.md "Fresh pulls").
 */
static void *fake_fresh_server_dp(void *arg)
{
	int fd = accept_registered("server@x");

	(void)arg;
	send_model_cmd(fd, 100, 50, 1, 11);
	fresh.early = next_model_send(fd, 0.3) != -1;
	send_update(fd, MLF_PAYLOAD_MAGIC_UPDATE, 1.0f, "w0", 8);
	fresh.version[fresh.sends++] = next_model_send(fd, 2.0);
	send_model_cmd(fd, 101, 51, 2, 10);
	fresh.version[fresh.sends++] = next_model_send(fd, 2.0);
	close(fd);
	return NULL;
}

START_TEST(server_model_copy_waits_for_its_version)
{
	struct srv s = { .version = 10 };

	memset(&fresh, 0, sizeof(fresh));
	run_server(MLF_MODE_MLFABRIC_A, 1, fake_fresh_server_dp, &s);
	ck_assert_int_eq(fresh.early, 0);
	ck_assert_int_eq(fresh.version[0], 11);
	ck_assert_int_eq(fresh.version[1], 11);
}
END_TEST

/* A worker's pulls: the first (no push before it) names no update, one after a push names that
 * update (`after`), also when the worker pushed to another server in between (parameter groups
 * on several servers, docs/python.md "Overlap"): each server's pull names the update pushed
 * last to that server. */
static void *fake_fresh_worker_dp(void *arg)
{
	int fd = accept_registered("worker@w0");
	char buf[1024];

	(void)arg;
	expect_ctl(fd, "\"pull\"", fresh.pull[0], sizeof(fresh.pull[0]));
	expect_ctl(fd, "\"update\"", buf, sizeof(buf));
	expect_ctl(fd, "\"update\"", buf, sizeof(buf));
	expect_ctl(fd, "\"pull\"", fresh.pull[1], sizeof(fresh.pull[1]));
	expect_ctl(fd, "\"pull\"", fresh.pull[2], sizeof(fresh.pull[2]));
	fake_read_all_done(fd);
	drain(fd);
	return NULL;
}

START_TEST(pull_names_the_update_pushed_before_it)
{
	struct mlf_opts o = { .cluster = cfg, .host = "w0", .sock = sock, .timeout_s = 5 };
	float w[N] = { 0 };
	int64_t v;
	char err[256];
	pthread_t t;
	mlf_t *f;

	memset(&fresh, 0, sizeof(fresh));
	ck_assert_int_eq(sem_init(&fake_read_all, 0, 0), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, fake_fresh_worker_dp, NULL), 0);
	f = mlf_open(&o, err, sizeof(err));
	ck_assert_msg(f != NULL, "%s", err);
	ck_assert_int_eq(mlf_register_as_worker(f, "x"), 0);
	ck_assert_int_eq(mlf_get(f, "x", w, N, &v, 0.2), -ETIMEDOUT);
	int64_t id = mlf_push(f, "x", w, N, 1.0, 0), id7 = mlf_push(f, "w7", w, N, 1.0, 0);
	ck_assert_int_gt(id, 0);
	ck_assert_int_gt(id7, id);
	ck_assert_int_eq(mlf_get(f, "x", w, N, &v, 0.2), -ETIMEDOUT);
	ck_assert_int_eq(mlf_get(f, "w7", w, N, &v, 0.2), -ETIMEDOUT);
	fake_hang_up();
	mlf_close(f);
	pthread_join(t, NULL);
	json_t *p0 = json_loads(fresh.pull[0], 0, NULL), *p1 = json_loads(fresh.pull[1], 0, NULL),
	       *p2 = json_loads(fresh.pull[2], 0, NULL);
	ck_assert_ptr_nonnull(p0);
	ck_assert_ptr_nonnull(p1);
	ck_assert_ptr_nonnull(p2);
	ck_assert_ptr_null(json_object_get(p0, "after"));
	ck_assert_str_eq(json_string_value(json_object_get(p1, "server")), "x");
	ck_assert_int_eq(json_integer_value(json_object_get(p1, "after")), id);
	ck_assert_str_eq(json_string_value(json_object_get(p2, "server")), "w7");
	ck_assert_int_eq(json_integer_value(json_object_get(p2, "after")), id7);
	json_decref(p0);
	json_decref(p1);
	json_decref(p2);
}
END_TEST

/* A worker's gets: the first answered with the whole model (N floats) of server x, the second
 * with a model of N floats although the get asked for N / 2. */
static void *fake_size_worker_dp(void *arg)
{
	int fd = accept_registered("worker@w0");
	char buf[1024];

	(void)arg;
	expect_ctl(fd, "\"pull\"", buf, sizeof(buf));
	send_shard(fd, 0, N, 3, "x", 31);
	expect_ctl(fd, "\"pull\"", buf, sizeof(buf));
	send_shard(fd, 0, N, 4, "x", 32);
	fake_read_all_done(fd);
	drain(fd);
	return NULL;
}

/*
 * mlf_push refuses an update whose length differs from the server's model (docs/api.md
 * "Errors"): once a get received the model of server x (N floats), a push of N + 1 or N - 1
 * floats to x is -EINVAL naming x and both sizes, one of N is taken; before any get the size is
 * unknown and a push is taken; a push to another server is not checked against x's model. A
 * get with a wrong-sized buffer leaves the model's real size in force.
 */
START_TEST(push_refuses_a_length_other_than_the_model)
{
	struct mlf_opts o = { .cluster = cfg, .host = "w0", .sock = sock, .timeout_s = 5 };
	float w[N + 1] = { 0 };
	int64_t v;
	char err[256];
	pthread_t t;
	mlf_t *f;

	ck_assert_int_eq(sem_init(&fake_read_all, 0, 0), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, fake_size_worker_dp, NULL), 0);
	f = mlf_open(&o, err, sizeof(err));
	ck_assert_msg(f != NULL, "%s", err);
	ck_assert_int_eq(mlf_register_as_worker(f, "x"), 0);
	ck_assert_int_gt(mlf_push(f, "x", w, N + 1, 1.0, 0), 0); /* the size is not known yet */
	ck_assert_int_eq(mlf_get(f, "x", w, N, &v, 2.0), 0);
	ck_assert_int_eq(v, 3);
	ck_assert_int_eq(mlf_push(f, "x", w, N + 1, 1.0, 3), -EINVAL);
	ck_assert_msg(strstr(mlf_error(f), "push: an update of 17 floats, but the model of server x has 16") != NULL,
		      "%s", mlf_error(f));
	ck_assert_int_eq(mlf_push(f, "x", w, N - 1, 1.0, 3), -EINVAL);
	ck_assert_int_gt(mlf_push(f, "x", w, N, 1.0, 3), 0);
	ck_assert_int_gt(mlf_push(f, "w7", w, N + 1, 1.0, 3), 0);
	/* a get of N / 2 floats answered with the N-float model: -EINVAL, and N is still the size */
	ck_assert_int_eq(mlf_get(f, "x", w, N / 2, &v, 2.0), -EINVAL);
	ck_assert_int_eq(mlf_push(f, "x", w, N / 2, 1.0, 4), -EINVAL);
	ck_assert_int_gt(mlf_push(f, "x", w, N, 1.0, 4), 0);
	fake_hang_up();
	mlf_close(f);
	pthread_join(t, NULL);
}
END_TEST

/* What the fake dataplane of push_reuses_a_buffer_once_its_transfer_ended saw, per SEND. */
static struct {
	int sends, fds[8];
	ino_t ino[8];
	uint64_t bytes[8];
	int payload_ok[8]; /* the header names the SEND's update id, the floats hold push k's value */
} reuse;

/*
 * The next SEND of a push on @fd into `reuse` (its memfd kept open, so that its inode stays its
 * own): its index k, after an ACCEPTED; -1 at the end of the connection. Other messages and
 * SENDs beyond 8 are dropped. @m: the SEND.
 */
static int reuse_next_send(int fd, struct appmsg *m)
{
	struct stat st;
	int mfd;

	while (appmsg_recv(fd, m, &mfd) == 1) {
		if (m->type != APPMSG_SEND || mfd < 0 || reuse.sends >= 8) {
			if (mfd >= 0)
				close(mfd);
			continue;
		}
		int k = reuse.sends++;
		reuse.ino[k] = fstat(mfd, &st) == 0 ? st.st_ino : 0;
		reuse.bytes[k] = m->bytes;
		reuse.fds[k] = mfd;
		struct appmsg r = { .type = APPMSG_ACCEPTED, .id = m->id };
		appmsg_send(fd, &r, -1);
		return k;
	}
	return -1;
}

/* The end of a fake push dataplane: its connection and the kept memfds closed. */
static void reuse_close(int fd)
{
	close(fd);
	for (int k = 0; k < reuse.sends; k++)
		close(reuse.fds[k]);
}

/*
 * A direct-mode worker's pushes: each SEND's memfd is kept open (so that its inode stays its
 * own) and accepted; the first one's TX_DONE comes only after the second SEND (both in flight
 * at once), the others' at once.
 */
static void *fake_reuse_dp(void *arg)
{
	int fd = accept(lfd, NULL, NULL), k;
	struct appmsg m;

	(void)arg;
	while ((k = reuse_next_send(fd, &m)) >= 0) {
		const struct mlf_payload_hdr *h = mmap(NULL, m.bytes, PROT_READ, MAP_SHARED, reuse.fds[k], 0);
		const float *x = (const float *)((const char *)h + MLF_PAYLOAD_HDR);
		reuse.payload_ok[k] = h != MAP_FAILED && h->magic == MLF_PAYLOAD_MAGIC_UPDATE && h->n_parts == 1 &&
				      h->parts[0].id == m.id && h->offset == 0 && h->version == k &&
				      x[0] == (float)(k + 1) && x[h->n_floats - 1] == (float)(k + 1);
		if (h != MAP_FAILED)
			munmap((void *)h, m.bytes);
		static uint64_t first;
		struct appmsg r = { .type = APPMSG_TX_DONE, .id = m.id, .chan = 1, .bytes = m.bytes };
		strcpy(r.peer, "x");
		if (k == 0) {
			first = m.id;
			continue;
		}
		if (k == 1) {
			struct appmsg r0 = r;
			r0.id = first;
			appmsg_send(fd, &r0, -1);
		}
		appmsg_send(fd, &r, -1);
	}
	reuse_close(fd);
	return NULL;
}

/* A direct-mode worker w0 against the fake dataplane @fake (started on @t), registered with
 * server @server. */
static mlf_t *open_direct_worker(void *(*fake)(void *), pthread_t *t, const char *server)
{
	struct mlf_opts o = { .cluster = cfg, .host = "w0", .sock = sock, .timeout_s = 5,
			      .mode = MLF_MODE_DIRECT };
	char err[256];
	mlf_t *f;

	ck_assert_int_eq(pthread_create(t, NULL, fake, NULL), 0);
	f = mlf_open(&o, err, sizeof(err));
	ck_assert_msg(f != NULL, "%s", err);
	ck_assert_int_eq(mlf_register_as_worker(f, server), 0);
	return f;
}

/* Waits (up to 5 s: a hang guard) until @f's dataplane reported @n transfers sent; asserts it. */
static void wait_sent(mlf_t *f, uint64_t n)
{
	struct mlf_worker_stats ws;

	for (double until = clock_real_s() + 5;; usleep(1000)) {
		mlf_get_worker_stats(f, &ws);
		if (ws.sent == n || clock_real_s() > until)
			break;
	}
	ck_assert_uint_eq(ws.sent, n);
}

/*
 * mlf_push keeps its buffers (docs/api.md "Push buffers"): two pushes in flight at once get two
 * buffers; once the dataplane reported both transfers ended, a third push of the same size is
 * written into one of them (the same memfd: no new buffer, no page faults) with its own header
 * and values, and a push of another size gets a new one; mlf_get_push_buffers counts 3
 * allocated, 1 reused. Before the pool every push created a memfd (4 allocated, 4 inodes).
 */
START_TEST(push_reuses_a_buffer_once_its_transfer_ended)
{
	static float w[4][2 * N];
	struct mlf_push_buffers pb;
	pthread_t t;
	mlf_t *f;

	memset(&reuse, 0, sizeof(reuse));
	for (int k = 0; k < 4; k++)
		for (int i = 0; i < 2 * N; i++)
			w[k][i] = (float)(k + 1);
	f = open_direct_worker(fake_reuse_dp, &t, "x");
	ck_assert_int_gt(mlf_push(f, "x", w[0], N, 1.0, 0), 0);
	ck_assert_int_gt(mlf_push(f, "x", w[1], N, 1.0, 1), 0);
	wait_sent(f, 2); /* both SENT events taken */
	ck_assert_int_gt(mlf_push(f, "x", w[2], N, 1.0, 2), 0);
	ck_assert_int_gt(mlf_push(f, "x", w[3], 2 * N, 1.0, 3), 0);
	mlf_get_push_buffers(f, &pb);
	mlf_close(f); /* waits until the last two are sent */
	pthread_join(t, NULL);
	ck_assert_int_eq(reuse.sends, 4);
	for (int k = 0; k < 4; k++)
		ck_assert_msg(reuse.payload_ok[k], "push %d: wrong header or values", k);
	ck_assert_uint_ne(reuse.ino[0], reuse.ino[1]);
	ck_assert_msg(reuse.ino[2] == reuse.ino[0] || reuse.ino[2] == reuse.ino[1],
		      "third push in a new buffer (inode %lu; the first two %lu %lu)", (unsigned long)reuse.ino[2],
		      (unsigned long)reuse.ino[0], (unsigned long)reuse.ino[1]);
	ck_assert_uint_ne(reuse.ino[3], reuse.ino[0]);
	ck_assert_uint_ne(reuse.ino[3], reuse.ino[1]);
	ck_assert_uint_eq(reuse.bytes[3], mlf_payload_bytes(2 * N));
	ck_assert_uint_eq(pb.allocated, 3);
	ck_assert_uint_eq(pb.reused, 1);
}
END_TEST

/* The first buffer's first value, read through the listener's fd after the second push
 * (push_handed_over_locally_is_not_reused). */
static float local_first_after;

/*
 * A dataplane that hands every push over to an app on its own host, as appif.c's send_local
 * does: the SEND's memfd itself goes to the local listener (kept open here, as the listener
 * would), and TX_DONE names this host (w0) as the peer at once. After the second SEND it reads
 * the first buffer again through the kept fd.
 */
static void *fake_local_dp(void *arg)
{
	int fd = accept(lfd, NULL, NULL), k;
	struct appmsg m;

	(void)arg;
	while ((k = reuse_next_send(fd, &m)) >= 0) {
		struct appmsg r = { .type = APPMSG_TX_DONE, .id = m.id, .chan = 1, .bytes = m.bytes };
		strcpy(r.peer, "w0");
		appmsg_send(fd, &r, -1);
		if (k == 1) {
			const struct mlf_payload_hdr *h = mmap(NULL, m.bytes, PROT_READ, MAP_SHARED, reuse.fds[0], 0);
			local_first_after = h == MAP_FAILED ? -1 : ((const float *)((const char *)h + MLF_PAYLOAD_HDR))[0];
			if (h != MAP_FAILED)
				munmap((void *)h, m.bytes);
		}
	}
	reuse_close(fd);
	return NULL;
}

/*
 * A push to an app on the worker's own host (its server or aggregator co-hosted) hands the
 * push buffer itself to that app (the dataplane passes the same memfd), so its TX_DONE must not
 * put the buffer back in the pool: the next push of the same size gets a new buffer, and the
 * first one still holds the first update when the listener reads it after the second push.
 * Under load a worker's next update overwrote an update an aggregator on its host had not
 * forwarded yet: the replica applied the wrong values (fault_cut_link, divergence 0.0124 at
 * equal versions). Fails when every SENT returns its buffer to the pool.
 */
START_TEST(push_handed_over_locally_is_not_reused)
{
	static float w[2][N];
	struct mlf_push_buffers pb;
	pthread_t t;
	mlf_t *f;

	memset(&reuse, 0, sizeof(reuse));
	local_first_after = 0;
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < N; i++)
			w[k][i] = (float)(k + 1);
	f = open_direct_worker(fake_local_dp, &t, "w0");
	ck_assert_int_gt(mlf_push(f, "w0", w[0], N, 1.0, 0), 0);
	wait_sent(f, 1); /* its SENT taken */
	ck_assert_int_gt(mlf_push(f, "w0", w[1], N, 1.0, 1), 0);
	mlf_get_push_buffers(f, &pb);
	mlf_close(f);
	pthread_join(t, NULL);
	ck_assert_int_eq(reuse.sends, 2);
	ck_assert_uint_ne(reuse.ino[0], reuse.ino[1]);
	ck_assert_uint_eq(pb.reused, 0);
	ck_assert_msg(local_first_after == 1.0f, "the first update's buffer holds %g after the second push",
		      (double)local_first_after);
}
END_TEST

/* The pulls a direct-mode fake dataplane took (gets_beyond_the_slots_wait_for_one). */
static int direct_pulls;

/*
 * A dataplane without a scheduler that takes every direct send (a get's pull, chan 5) and
 * reports it sent, and never answers with a model: every get times out.
 */
static void *fake_direct_silent_dp(void *arg)
{
	int fd = accept(lfd, NULL, NULL);
	struct appmsg m;
	int mfd;

	(void)arg;
	while (appmsg_recv(fd, &m, &mfd) == 1) {
		if (mfd >= 0)
			close(mfd);
		if (m.type != APPMSG_SEND)
			continue;
		if (m.chan == 5)
			__atomic_add_fetch(&direct_pulls, 1, __ATOMIC_SEQ_CST);
		struct appmsg r = { .type = APPMSG_ACCEPTED, .id = m.id };
		ck_assert_int_eq(appmsg_send(fd, &r, -1), 0);
		r = (struct appmsg){ .type = APPMSG_TX_DONE, .id = m.id, .chan = m.chan, .bytes = m.bytes };
		strcpy(r.peer, "x");
		ck_assert_int_eq(appmsg_send(fd, &r, -1), 0);
	}
	close(fd);
	return NULL;
}

/* One of gets_beyond_the_slots_wait_for_one's threads: a get of x's model, its status kept. */
struct slot_get {
	mlf_t *f;
	float w[N];
	int rc;
};

static void *slot_get_thread(void *arg)
{
	struct slot_get *g = arg;
	int64_t v;

	g->rc = mlf_get(g->f, "x", g->w, N, &v, 0.3);
	return NULL;
}

/*
 * In direct mode the endpoint keeps up to 8 gets in flight (FABRIC_GETS_MAX); a 9th called
 * meanwhile waits for a slot while the gets ahead of it may still progress, then makes its own
 * get: 9 gets from 9 threads against a dataplane that never answers all time out, each with its
 * own pull sent (9). Before, the 9th failed at once with -EBUSY.
 */
START_TEST(gets_beyond_the_slots_wait_for_one)
{
	struct mlf_opts o = { .cluster = cfg, .host = "w0", .sock = sock, .timeout_s = 5,
			      .mode = MLF_MODE_DIRECT };
	static struct slot_get g[9];
	pthread_t dp, t[9];
	char err[256];
	mlf_t *f;

	direct_pulls = 0;
	ck_assert_int_eq(pthread_create(&dp, NULL, fake_direct_silent_dp, NULL), 0);
	f = mlf_open(&o, err, sizeof(err));
	ck_assert_msg(f != NULL, "%s", err);
	ck_assert_int_eq(mlf_register_as_worker(f, "x"), 0);
	for (int i = 0; i < 9; i++) {
		g[i].f = f;
		g[i].rc = 1;
		ck_assert_int_eq(pthread_create(&t[i], NULL, slot_get_thread, &g[i]), 0);
	}
	for (int i = 0; i < 9; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < 9; i++)
		ck_assert_msg(g[i].rc == -ETIMEDOUT, "get %d returned %d (%s), not -ETIMEDOUT", i, g[i].rc,
			      strerror(-g[i].rc));
	mlf_close(f);
	pthread_join(dp, NULL);
	ck_assert_int_eq(direct_pulls, 9);
}
END_TEST

/* What the `done`s of two completed model copies said (done_reports_first_byte_time). */
static struct {
	char done[2][1024];
} dn;

/*
 * The server's model copies for pulls 100 and 101: the dataplane completes the first with its
 * first byte's time (first_tx_ns) and the second without one (0 = unknown); their `done`s
 * are kept in dn.
 */
static void *fake_done_server_dp(void *arg)
{
	static const uint64_t first_tx_ns[2] = { 1700000000250000000ull, 0 };
	int fd = accept_registered("server@x");
	struct appmsg m;
	int mfd;

	(void)arg;
	for (int k = 0; k < 2; k++) {
		send_model_cmd(fd, 100 + k, 50 + k, 1 + k, 10);
		do {
			ck_assert_int_eq(appmsg_recv(fd, &m, &mfd), 1);
			if (mfd >= 0)
				close(mfd);
		} while (m.type != APPMSG_SEND || m.chan != 3);
		struct appmsg r = { .type = APPMSG_ACCEPTED, .id = m.id };
		ck_assert_int_eq(appmsg_send(fd, &r, -1), 0);
		r = (struct appmsg){ .type = APPMSG_TX_DONE, .id = m.id, .chan = 3, .bytes = m.bytes,
				     .first_tx_ns = first_tx_ns[k], .end_ns = 1700000000500000000ull };
		strcpy(r.peer, "w0");
		ck_assert_int_eq(appmsg_send(fd, &r, -1), 0);
		expect_ctl(fd, "\"done\"", dn.done[k], sizeof(dn.done[k]));
	}
	close(fd);
	return NULL;
}

/*
 * A completed transfer's `done` carries `t_start`, the dataplane completion's first_tx_ns in
 * CLOCK_REALTIME seconds, next to `t` (end_ns), and omits it when the dataplane does not know
 * it (docs/scheduler.md "The lead").
 */
START_TEST(done_reports_first_byte_time)
{
	struct srv s = { .version = 10 };

	memset(&dn, 0, sizeof(dn));
	run_server(MLF_MODE_MLFABRIC_A, 1, fake_done_server_dp, &s);
	json_t *d0 = json_loads(dn.done[0], 0, NULL), *d1 = json_loads(dn.done[1], 0, NULL);
	ck_assert_ptr_nonnull(d0);
	ck_assert_ptr_nonnull(d1);
	ck_assert_int_eq(json_integer_value(json_object_get(d0, "xfer")), 50);
	ck_assert_int_eq(json_integer_value(json_object_get(d0, "status")), 0);
	ck_assert(json_is_number(json_object_get(d0, "t_start")));
	ck_assert_double_eq_tol(json_number_value(json_object_get(d0, "t_start")), 1700000000.25, 1e-6);
	ck_assert_double_eq_tol(json_number_value(json_object_get(d0, "t")), 1700000000.5, 1e-6);
	ck_assert_int_eq(json_integer_value(json_object_get(d1, "xfer")), 51);
	ck_assert_ptr_null(json_object_get(d1, "t_start"));
	ck_assert_double_eq_tol(json_number_value(json_object_get(d1, "t")), 1700000000.5, 1e-6);
	json_decref(d0);
	json_decref(d1);
}
END_TEST

START_TEST(open_names_the_missing_dataplane)
{
	struct mlf_opts o = { .cluster = cfg, .host = "w0", .sock = "/nonexistent/dp.sock" };
	char err[256] = "";

	ck_assert_ptr_null(mlf_open(&o, err, sizeof(err)));
	ck_assert_msg(strstr(err, "/nonexistent/dp.sock") != NULL, "%s", err);
	o.host = "nobody";
	ck_assert_ptr_null(mlf_open(&o, err, sizeof(err)));
	ck_assert_msg(strstr(err, "no host named 'nobody'") != NULL, "%s", err);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fabric_lib");
	TCase *tc = tcase_create("fabric_lib");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, server_validates_applies_commits_and_refuses_bad_commands);
	tcase_add_test(tc, sync_server_one_step_per_iteration);
	tcase_add_test(tc, get_times_out_naming_the_server);
	tcase_add_test(tc, sharded_get_timeout_counts_from_latest_shard);
	tcase_add_test(tc, open_names_the_missing_dataplane);
	tcase_add_test(tc, server_model_copy_waits_for_its_version);
	tcase_add_test(tc, pull_names_the_update_pushed_before_it);
	tcase_add_test(tc, push_refuses_a_length_other_than_the_model);
	tcase_add_test(tc, push_reuses_a_buffer_once_its_transfer_ended);
	tcase_add_test(tc, gets_beyond_the_slots_wait_for_one);
	tcase_add_test(tc, push_handed_over_locally_is_not_reused);
	tcase_add_test(tc, done_reports_first_byte_time);
	tcase_add_test(tc, recv_model_refuses_other_hosts_and_bad_payloads);
	tcase_add_loop_test(tc, send_model_retries_failed_transfers_until_its_timeout, 0, 2);
	suite_add_tcase(s, tc);
	return ck_run(s);
}
