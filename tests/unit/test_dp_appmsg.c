/* test_dp_appmsg.c - Check tests of the app protocol (lib/proto/appmsg.c) and libmlfabric buffers (lib/mlfabric/dpclient.c). */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "appmsg.h"
#include "dpclient.h"
#include "test_dp_main.h"

/* A SEND with a memfd crosses the socket; the receiver maps the same bytes. */
START_TEST(message_with_buffer_descriptor)
{
	int sv[2], fd;
	struct mlfabric_buf b;
	struct appmsg m = { .type = APPMSG_SEND, .id = 42, .bytes = 4096, .chan = 3, .n = 1 }, got;
	uint8_t *view;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	ck_assert_int_eq(mlfabric_buf_alloc(4096, &b), 0);
	memset(b.data, 0xab, 4096);
	strcpy(m.peer, "b");
	m.u.steps[0] = (struct appmsg_step){ 0, 2.5 };
	ck_assert_int_eq(appmsg_send(sv[0], &m, b.fd), 0);
	ck_assert_int_eq(appmsg_recv(sv[1], &got, &fd), 1);
	ck_assert_int_ge(fd, 0);
	ck_assert_uint_eq(got.id, 42);
	ck_assert_uint_eq(got.chan, 3);
	ck_assert_str_eq(got.peer, "b");
	ck_assert_double_eq(got.u.steps[0].gbps, 2.5);
	view = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	ck_assert_ptr_ne(view, MAP_FAILED);
	ck_assert_uint_eq(view[4095], 0xab);
	/* writes by the owner are visible through the other mapping: it is shared memory */
	((uint8_t *)b.data)[7] = 0x11;
	ck_assert_uint_eq(view[7], 0x11);
	munmap(view, 4096);
	close(fd);
	mlfabric_buf_free(&b);
	ck_assert_int_eq(b.fd, -1);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

/* A plan's long schedule fits in one SEND; only the used steps cross the socket. */
START_TEST(many_rate_steps)
{
	int sv[2], fd;
	static struct appmsg m, got;
	ssize_t len;

	ck_assert_int_ge(APPMSG_MAX_STEPS, 256);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	memset(&m, 0, sizeof(m));
	m.type = APPMSG_SEND;
	m.n = 200;
	for (int i = 0; i < 200; i++)
		m.u.steps[i] = (struct appmsg_step){ (uint64_t)i * 1000, 0.5 + i };
	ck_assert_int_eq(appmsg_send(sv[0], &m, -1), 0);
	memset(&got, 0x5a, sizeof(got));
	ck_assert_int_eq(appmsg_recv(sv[1], &got, &fd), 1);
	ck_assert_uint_eq(got.n, 200);
	ck_assert_uint_eq(got.u.steps[199].at_ns, 199000);
	ck_assert_double_eq(got.u.steps[199].gbps, 199.5);
	ck_assert_uint_eq(got.u.steps[200].at_ns, 0); /* the unused part is zeroed */
	/* an event carries no array: a short datagram */
	m.type = APPMSG_TX_DONE;
	ck_assert_int_eq(appmsg_send(sv[0], &m, -1), 0);
	len = recv(sv[1], &got, sizeof(got), 0);
	ck_assert_int_eq(len, (ssize_t)appmsg_len(&m));
	ck_assert_int_lt(len, 400);
	/* a datagram whose size does not match its n is refused */
	m.type = APPMSG_ORDER;
	m.n = 3;
	ck_assert_int_eq(send(sv[0], &m, appmsg_len(&m) - 8, 0), (ssize_t)appmsg_len(&m) - 8);
	ck_assert_int_eq(appmsg_recv(sv[1], &got, &fd), -EPROTO);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

START_TEST(bad_messages_and_closed_peer)
{
	int sv[2], fd;
	struct appmsg got;
	char junk[10] = "short";
	struct mlfabric_buf b;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0, sv), 0);
	ck_assert_int_eq(appmsg_recv(sv[1], &got, &fd), -EAGAIN);
	ck_assert_int_eq(write(sv[0], junk, sizeof(junk)), (ssize_t)sizeof(junk));
	ck_assert_int_eq(appmsg_recv(sv[1], &got, &fd), -EPROTO);
	ck_assert_int_eq(fd, -1);
	close(sv[0]);
	ck_assert_int_eq(appmsg_recv(sv[1], &got, &fd), 0);
	ck_assert_int_eq(appmsg_send(sv[1], &got, -1), -EPIPE);
	close(sv[1]);
	ck_assert_int_eq(mlfabric_buf_alloc(0, &b), -EINVAL);
}
END_TEST

START_TEST(connect_to_missing_dataplane_names_the_path)
{
	char err[256] = "";

	ck_assert_ptr_null(mlfabric_connect("/nonexistent/mlf.sock", err, sizeof(err)));
	ck_assert_msg(strstr(err, "/nonexistent/mlf.sock") != NULL, "error '%s' does not name the path", err);
}
END_TEST

/* libmlfabric's buffers are sealed at their size: the dataplane refuses buffers that could shrink. */
START_TEST(buffers_are_sealed_against_resizing)
{
	struct mlfabric_buf b;
	int seals;

	ck_assert_int_eq(mlfabric_buf_alloc(8192, &b), 0);
	seals = fcntl(b.fd, F_GET_SEALS);
	ck_assert_int_ge(seals, 0);
	ck_assert_int_eq(seals & (F_SEAL_SHRINK | F_SEAL_GROW), F_SEAL_SHRINK | F_SEAL_GROW);
	ck_assert_int_eq(ftruncate(b.fd, 0), -1);
	ck_assert_int_eq(errno, EPERM);
	ck_assert_int_eq(ftruncate(b.fd, 16384), -1);
	/* still writable: the app fills it before each transfer */
	memset(b.data, 0x5a, 8192);
	ck_assert_uint_eq(((uint8_t *)b.data)[8191], 0x5a);
	mlfabric_buf_free(&b);
}
END_TEST

int main(void)
{
	const TTest *tests[] = { message_with_buffer_descriptor, many_rate_steps,
				 bad_messages_and_closed_peer, connect_to_missing_dataplane_names_the_path,
				 buffers_are_sealed_against_resizing };
	return test_dp_run("appmsg", tests, 5);
}
