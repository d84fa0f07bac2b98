/* test_ctl.c - Check tests of the control framing's bounds (lib/proto/ctl.c, docs/security.md). */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ck_run.h"
#include "ctl.h"

static int sv[2];
static struct ctl_conn c;

/* c reads sv[0] (non-blocking); the test writes into sv[1]. */
static void open_pair(void)
{
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
	int big = 8 << 20;
	setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	ctl_init(&c, sv[0]);
}

static void close_pair(void)
{
	ctl_close(&c);
	close(sv[1]);
}

/*
 * Write @len bytes of @buf into the pair while reading them into c and taking what it parses:
 * *@bad counts the refused lines (the last reason in @err), the parsed messages' types are
 * appended to @types (space-separated).
 */
static void feed(const char *buf, size_t len, int *bad, char *types, char *err)
{
	size_t off = 0;
	json_t *m;
	int rc;

	for (int spins = 0; spins < 100000; spins++) {
		if (off < len) {
			ssize_t w = write(sv[1], buf + off, len - off);
			if (w > 0)
				off += (size_t)w;
		}
		size_t before = c.in_len - c.in_off;
		long r = ctl_read(&c);
		ck_assert(r > 0 || r == -EAGAIN);
		ck_assert_uint_le(c.in_len, CTL_LINE_MAX + 65536); /* bounded however bytes come */
		while ((rc = ctl_next(&c, &m, err, 256)) != 0) {
			if (rc < 0) {
				(*bad)++;
				continue;
			}
			strcat(types, ctl_type(m));
			strcat(types, " ");
			json_decref(m);
		}
		if (off == len && r == -EAGAIN && before < CTL_LINE_MAX)
			break; /* nothing more in the socket (not just a full buffer) */
	}
	ck_assert_uint_le(c.in_cap, 2 * CTL_LINE_MAX);
}

/* A line of @n bytes ending in '\n' whose last bytes are the valid message @tail. */
static char *long_line(size_t n, const char *tail)
{
	char *b = malloc(n);
	size_t t = strlen(tail);

	memset(b, 'x', n);
	memcpy(b + n - 1 - t, tail, t);
	b[n - 1] = '\n';
	return b;
}

START_TEST(over_long_line_in_one_read_refused)
{
	/* a valid 1.5 MiB message, then a small one, all in the socket before any ctl_next (a
	 * caller that reads until EAGAIN, like the dataplane's relay): the first is refused */
	const char *ok = "{\"type\":\"b\"}\n";
	size_t n = CTL_LINE_MAX + CTL_LINE_MAX / 2, k = strlen(ok);
	char *all = malloc(n + k);
	char types[256] = "", err[256] = "";
	int bad = 0;
	long r;

	memset(all, 'x', n);
	memcpy(all, "{\"type\":\"a\",\"pad\":\"", 20);
	memcpy(all + n - 3, "\"}\n", 3);
	memcpy(all + n, ok, k);
	open_pair();
	ck_assert_int_eq(write(sv[1], all, n + k), (ssize_t)(n + k));
	while ((r = ctl_read(&c)) > 0)
		;
	ck_assert_int_eq(r, -EAGAIN);
	feed("", 0, &bad, types, err);
	ck_assert_int_eq(bad, 1);
	ck_assert_ptr_nonnull(strstr(err, "line longer than"));
	ck_assert_str_eq(types, "b ");
	close_pair();
	free(all);
}
END_TEST

START_TEST(tail_of_over_long_line_not_parsed)
{
	/* 3 MiB arriving in pieces, ending in a valid-looking message: one refusal, no "a" */
	size_t n = 3 * CTL_LINE_MAX;
	char *line = long_line(n, "{\"type\":\"a\"}");
	char types[256] = "", err[256] = "";
	int bad = 0;

	open_pair();
	for (size_t off = 0; off < n; off += 100000)
		feed(line + off, n - off < 100000 ? n - off : 100000, &bad, types, err);
	feed("{\"type\":\"b\"}\n", 13, &bad, types, err);
	ck_assert_int_eq(bad, 1);
	ck_assert_str_eq(types, "b ");
	close_pair();
	free(line);
}
END_TEST

START_TEST(line_at_the_limit_accepted)
{
	/* exactly CTL_LINE_MAX bytes with the '\n': a message (padded with spaces) */
	char *line = malloc(CTL_LINE_MAX);
	char types[256] = "", err[256] = "";
	int bad = 0;

	memset(line, ' ', CTL_LINE_MAX);
	memcpy(line, "{\"type\":\"a\"}", 12);
	line[CTL_LINE_MAX - 1] = '\n';
	open_pair();
	feed(line, CTL_LINE_MAX, &bad, types, err);
	ck_assert_int_eq(bad, 0);
	ck_assert_str_eq(types, "a ");
	close_pair();
	free(line);
}
END_TEST

START_TEST(output_queue_capped)
{
	json_t *m = json_pack("{s:s, s:s}", "type", "x", "pad", "0123456789012345678901234567890123456789");
	int rc = 0, n = 0;

	open_pair();
	c.fd = sv[1]; /* queue towards sv[0], which nobody reads */
	c.out_max = 100000;
	while (n < 100000 && (rc = ctl_send(&c, m)) == 0)
		n++;
	ck_assert_int_eq(rc, -ENOBUFS);
	ck_assert_int_eq(c.overflow, 1);
	ck_assert_uint_le(ctl_pending(&c), 100000);
	ck_assert_int_eq(ctl_queue(&c, m), -ENOBUFS); /* stays refused */
	c.fd = sv[0];
	close_pair();
	json_decref(m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ctl");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, over_long_line_in_one_read_refused);
	tcase_add_test(tc, tail_of_over_long_line_not_parsed);
	tcase_add_test(tc, line_at_the_limit_accepted);
	tcase_add_test(tc, output_queue_capped);
	suite_add_tcase(s, tc);
	return ck_run(s);
}
