/* test_dp_appmsg.c - Check tests of the app protocol (appmsg.c) and libmlfabric buffers (mlfabric.c). */
#include <check.h>
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "appmsg.h"
#include "mlfabric.h"
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

int main(void)
{
	const TTest *tests[] = { message_with_buffer_descriptor, bad_messages_and_closed_peer,
				 connect_to_missing_dataplane_names_the_path };
	return test_dp_run("appmsg", tests, 3);
}
