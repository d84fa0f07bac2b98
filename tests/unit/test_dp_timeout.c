/* test_dp_timeout.c - Check tests of libmlfabric's dataplane timeout (docs/api.md "Timeouts")
 * against a fake dataplane that accepts connections and never reads or answers: a transfer
 * request, a full socket, mlf_push (async mode and MLfabric-A) and mlf_close each end with
 * -ETIMEDOUT (mlf_close: returns) within the configured time, and the error names the socket;
 * against a hung dataplane that never accepts (its listen backlog full), mlf_open and
 * mlfabric_connect_within fail with ETIMEDOUT within the timeout, naming the host and socket. */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "ck_run.h"
#include "clock.h"
#include "dpclient.h"
#include "fake_dp.h"
#include "mlfabric.h"

/* the configured timeout, and the slack above it a call may take on a busy machine: the bound
 * checks that the call ends because of the timeout, not for ever */
#define TIMEOUT_S 0.5
#define SLACK_S 5.0
#define MAX_CONNS 8

static char dir[64], cfg[96], sock[96];
static int lfd;
static int conns[MAX_CONNS], nconns;
static pthread_t acceptor;

/* The silent dataplane: accepts every connection and keeps it open, reading nothing. */
static void *accept_silently(void *arg)
{
	int fd;

	(void)arg;
	while ((fd = accept(lfd, NULL, NULL)) >= 0)
		if (nconns < MAX_CONNS)
			conns[nconns++] = fd;
		else
			close(fd);
	return NULL;
}

static void setup(void)
{
	strcpy(dir, "/tmp/test_dp_timeout_XXXXXX");
	lfd = fake_dp_listen(dir, cfg, sock, "{\"name\":\"dpto\",\"hosts\":[{\"name\":\"ps\",\"ip\":\"10.82.8.1\"},"
			     "{\"name\":\"w0\",\"ip\":\"10.82.8.2\"}]}", 8);
	nconns = 0;
	ck_assert_int_eq(pthread_create(&acceptor, NULL, accept_silently, NULL), 0);
	/* the endpoints' dataplane timeout (their timeout_s alone counts only above 10 s) */
	setenv("MLF_DP_TIMEOUT_S", "0.5", 1);
}

static void teardown(void)
{
	shutdown(lfd, SHUT_RDWR);
	pthread_join(acceptor, NULL);
	close(lfd);
	for (int i = 0; i < nconns; i++)
		close(conns[i]);
	unlink(sock);
	unlink(cfg);
	rmdir(dir);
}

/* @took (s) is the configured timeout, give or take the slack of a busy machine */
static void assert_timed(double took, double timeout_s)
{
	ck_assert_msg(took >= timeout_s * 0.9, "ended after %.3f s, before the timeout %.1f s", took, timeout_s);
	ck_assert_msg(took < timeout_s + SLACK_S, "ended after %.3f s (timeout %.1f s)", took, timeout_s);
}

START_TEST(send_times_out_naming_the_socket)
{
	struct mlfabric_buf b;
	struct mlfabric_event ev;
	struct mlfabric_send req = { .dst = "ps", .bytes = 64 };
	char err[256];
	uint64_t id;
	double t;
	mlfabric_t *m;

	unsetenv("MLF_DP_TIMEOUT_S");
	m = mlfabric_connect(sock, err, sizeof(err));
	ck_assert_ptr_nonnull(m);
	ck_assert_double_eq(mlfabric_timeout(m), MLFABRIC_TIMEOUT_S); /* the documented default */
	mlfabric_set_timeout(m, TIMEOUT_S);
	ck_assert_int_eq(mlfabric_buf_alloc(64, &b), 0);
	req.buf = &b;
	t = clock_mono_s();
	ck_assert_int_eq(mlfabric_send(m, &req, &id, err, sizeof(err)), -ETIMEDOUT);
	assert_timed(clock_mono_s() - t, TIMEOUT_S);
	ck_assert_msg(strstr(err, sock) && strstr(err, "no reply"), "error: %s", err);
	/* given up: later calls fail at once, naming it */
	ck_assert_int_eq(mlfabric_poll(m, &ev, 1000), -ETIMEDOUT);
	ck_assert_int_eq(mlfabric_listen(m, 1), -ETIMEDOUT);
	ck_assert_ptr_nonnull(strstr(mlfabric_error(m), sock));
	mlfabric_buf_free(&b);
	mlfabric_close(m);
}
END_TEST

START_TEST(env_sets_the_timeout_and_a_full_socket_times_out)
{
	char err[256], text[APPMSG_CTL_MAX];
	double t = 0;
	int rc = 0, n;
	mlfabric_t *m;

	m = mlfabric_connect(sock, err, sizeof(err));
	ck_assert_ptr_nonnull(m);
	ck_assert_double_eq(mlfabric_timeout(m), TIMEOUT_S);
	memset(text, ' ', sizeof(text) - 1);
	text[0] = '{';
	text[sizeof(text) - 2] = '}';
	text[sizeof(text) - 1] = '\0';
	/* the dataplane reads nothing: the socket fills, then a send waits the timeout */
	for (n = 0; n < 100000 && rc == 0; n++) {
		t = clock_mono_s();
		rc = mlfabric_ctl_send(m, text);
	}
	ck_assert_int_eq(rc, -ETIMEDOUT);
	assert_timed(clock_mono_s() - t, TIMEOUT_S);
	ck_assert_msg(strstr(mlfabric_error(m), sock) && strstr(mlfabric_error(m), "does not read"),
		      "error: %s", mlfabric_error(m));
	mlfabric_close(m);
}
END_TEST

static const float u[4] = { 1, 2, 3, 4 };

/* An async-mode worker of ps on the silent dataplane that pushed one update (queued: the call
 * returns at once). */
static mlf_t *async_worker_pushed(void)
{
	struct mlf_opts o = { .cluster = cfg, .host = "w0", .sock = sock, .mode = MLF_MODE_DIRECT,
			      .timeout_s = TIMEOUT_S };
	char err[256];
	mlf_t *f = mlf_open(&o, err, sizeof(err));

	ck_assert_msg(f != NULL, "%s", err);
	ck_assert_int_eq(mlf_register_as_worker(f, "ps"), 0);
	ck_assert_int_gt(mlf_push(f, "ps", u, 4, 1.0, 0), 0);
	return f;
}

START_TEST(async_push_and_close_time_out)
{
	int64_t rc = 0;
	double t = clock_mono_s();
	/* the event thread's request to the dataplane for the first push times out, and a later
	 * push says so */
	mlf_t *f = async_worker_pushed();

	while (clock_mono_s() - t < TIMEOUT_S + SLACK_S && (rc = mlf_push(f, "ps", u, 4, 1.0, 0)) > 0)
		usleep(20000);
	ck_assert_int_eq(rc, -ETIMEDOUT);
	assert_timed(clock_mono_s() - t, TIMEOUT_S);
	ck_assert_msg(strstr(mlf_error(f), sock) && strstr(mlf_error(f), "w0"), "error: %s", mlf_error(f));
	t = clock_mono_s();
	mlf_close(f);
	ck_assert_msg(clock_mono_s() - t < TIMEOUT_S + SLACK_S, "mlf_close took %.3f s", clock_mono_s() - t);
}
END_TEST

START_TEST(close_right_after_a_push_returns)
{
	double t;
	mlf_t *f = async_worker_pushed();

	/* a worker's close waits for its pushed update (at most the timeout); the event thread
	 * waits for the dataplane's reply to its transfer (at most the timeout): never for ever */
	t = clock_mono_s();
	mlf_close(f);
	ck_assert_msg(clock_mono_s() - t < 2 * TIMEOUT_S + SLACK_S, "mlf_close took %.3f s", clock_mono_s() - t);
}
END_TEST

START_TEST(mlfabric_a_register_times_out_naming_the_socket)
{
	struct mlf_opts o = { .cluster = cfg, .host = "w0", .sock = sock, .timeout_s = TIMEOUT_S };
	char err[256];
	double t;
	int rc;
	mlf_t *f = mlf_open(&o, err, sizeof(err));

	ck_assert_msg(f != NULL, "%s", err);
	t = clock_mono_s();
	rc = mlf_register_as_worker(f, "ps");
	ck_assert_msg(rc == -ENOTCONN || rc == -ETIMEDOUT, "rc %d", rc);
	assert_timed(clock_mono_s() - t, TIMEOUT_S);
	ck_assert_msg(strstr(mlf_error(f), sock), "error: %s", mlf_error(f));
	t = clock_mono_s();
	mlf_close(f);
	ck_assert_msg(clock_mono_s() - t < TIMEOUT_S + SLACK_S, "mlf_close took %.3f s", clock_mono_s() - t);
}
END_TEST

/* The hung dataplane: listens with its backlog full and never accepts (a dataplane stopped or
 * stuck in its loop while apps keep connecting). */
static int hung_lfd, hung_fill[4], n_fill;

static void setup_hung(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	strcpy(dir, "/tmp/test_dp_timeout_XXXXXX");
	hung_lfd = fake_dp_listen(dir, cfg, sock, "{\"name\":\"dpto\",\"hosts\":[{\"name\":\"ps\",\"ip\":\"10.82.8.1\"},"
				  "{\"name\":\"w0\",\"ip\":\"10.82.8.2\"}]}", 0);
	strcpy(sa.sun_path, sock);
	/* queued connections fill the backlog (Linux queues backlog + 1); the next connect blocks */
	for (n_fill = 0; n_fill < 4; n_fill++) {
		hung_fill[n_fill] = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0);
		if (connect(hung_fill[n_fill], (struct sockaddr *)&sa, sizeof(sa)) < 0) {
			ck_assert_int_eq(errno, EAGAIN);
			close(hung_fill[n_fill]);
			break;
		}
	}
	ck_assert_int_lt(n_fill, 4);
	setenv("MLF_DP_TIMEOUT_S", "0.5", 1);
}

static void teardown_hung(void)
{
	for (int i = 0; i < n_fill; i++)
		close(hung_fill[i]);
	close(hung_lfd);
	unlink(sock);
	unlink(cfg);
	rmdir(dir);
	unsetenv("MLF_DP_TIMEOUT_S");
}

START_TEST(open_times_out_on_a_dataplane_that_does_not_accept)
{
	struct mlf_opts o = { .cluster = cfg, .host = "w0", .sock = sock, .mode = MLF_MODE_DIRECT,
			      .timeout_s = TIMEOUT_S };
	char err[512] = "";
	double t = clock_mono_s();
	mlf_t *f;

	errno = 0;
	f = mlf_open(&o, err, sizeof(err));
	ck_assert_ptr_null(f);
	ck_assert_int_eq(errno, ETIMEDOUT);
	assert_timed(clock_mono_s() - t, TIMEOUT_S);
	ck_assert_msg(strstr(err, sock) && strstr(err, "w0") && strstr(err, "did not accept"), "error: %s", err);
}
END_TEST

START_TEST(connect_times_out_on_a_dataplane_that_does_not_accept)
{
	char err[256] = "";
	double t = clock_mono_s();

	errno = 0;
	ck_assert_ptr_null(mlfabric_connect_within(sock, TIMEOUT_S, err, sizeof(err)));
	ck_assert_int_eq(errno, ETIMEDOUT);
	assert_timed(clock_mono_s() - t, TIMEOUT_S);
	ck_assert_msg(strstr(err, sock) && strstr(err, "within 0.5 s"), "error: %s", err);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("dp_timeout");
	TCase *tc = tcase_create("silent dataplane");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, send_times_out_naming_the_socket);
	tcase_add_test(tc, env_sets_the_timeout_and_a_full_socket_times_out);
	tcase_add_test(tc, async_push_and_close_time_out);
	tcase_add_test(tc, close_right_after_a_push_returns);
	tcase_add_test(tc, mlfabric_a_register_times_out_naming_the_socket);
	suite_add_tcase(s, tc);
	tc = tcase_create("hung dataplane");
	tcase_add_checked_fixture(tc, setup_hung, teardown_hung);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, open_times_out_on_a_dataplane_that_does_not_accept);
	tcase_add_test(tc, connect_times_out_on_a_dataplane_that_does_not_accept);
	suite_add_tcase(s, tc);
	return ck_run(s);
}
