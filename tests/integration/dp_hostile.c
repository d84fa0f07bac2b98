/* dp_hostile.c - a hostile or careless app of the dataplane's app socket (tests/integration/test_dp_appsock.sh). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "appmsg.h"

/* The options of every mode; unused ones keep their defaults. */
struct opts {
	const char *sock, *to, *save;
	uint64_t bytes;      /* memfd: bytes the request names */
	int seal;            /* memfd: add F_SEAL_SHRINK | F_SEAL_GROW */
	int truncate;        /* memfd: truncate the buffer to 0 once the dataplane accepted it */
	int short_buf;       /* memfd: the memfd holds half the bytes the request names */
	double rate;         /* memfd: Gbit/s of the transfer (0 = unpaced) */
	unsigned chan;       /* listen, memfd: channel */
	double wait_s;       /* listen: how long to read events; memfd: TX_DONE timeout */
	long count;          /* flood: requests */
	long uid, gid;       /* connect: credentials to take before connecting (-1 = keep) */
	long group;          /* connect: one supplementary group (-1 = none) */
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: dp_hostile memfd --sock PATH --to HOST [--bytes N] [--seal] [--truncate] [--short]\n"
		"                        [--rate GBPS] [--chan C] [--wait S] [--save FILE]\n"
		"       dp_hostile listen --sock PATH --chan C [--wait S]\n"
		"       dp_hostile flood --sock PATH [--count N]\n"
		"       dp_hostile connect --sock PATH [--uid U] [--gid G] [--group G]\n"
		"memfd: SEND a memfd buffer (N bytes, default 16 MiB, a pattern; --save writes it to FILE)\n"
		"  unsealed unless --seal (F_SEAL_SHRINK|F_SEAL_GROW), of N/2 bytes with --short; with\n"
		"  --truncate it is cut to 0 bytes right after the dataplane accepts it. Prints\n"
		"  `send status=accepted id=X` or `send status=refused reason=\"...\"`, `truncate rc=0|errno`,\n"
		"  `done status=ok|failed|none reason=\"...\"` (TX_DONE within --wait S, default 20).\n"
		"listen: LISTEN on channel C and read events for S seconds (default 3); prints\n"
		"  `error chan=C reason=\"...\"` per ERROR, `stole id=X bytes=N` per delivered transfer.\n"
		"flood: N requests of an unknown type (default 20000), never reading a reply; prints\n"
		"  `flood sent=K of=N closed=0|1` (closed: the dataplane disconnected us within 10 s).\n"
		"connect: take uid/gid/group (as root), connect, send an ORDER on channel 999 (refused with an\n"
		"  ERROR when served); prints `connect error=ERRNO`, `connect served` or `connect closed`.\n");
}

static int fail(const char *what)
{
	fprintf(stderr, "dp_hostile: %s: %s\n", what, strerror(errno));
	return 1;
}

static int connect_sock(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;
		if (s >= 0)
			close(s);
		errno = e;
		return -1;
	}
	return s;
}

/* Next message within @ms: 1, 0 on timeout, -EPIPE when the dataplane closed, else -errno. */
static int recv_within(int s, struct appmsg *m, int *fd, int ms)
{
	struct pollfd p = { .fd = s, .events = POLLIN };
	int rc = poll(&p, 1, ms);

	if (rc <= 0)
		return rc < 0 ? -errno : 0;
	rc = appmsg_recv(s, m, fd);
	return rc == 0 ? -EPIPE : rc;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmd_memfd(const struct opts *o)
{
	static struct appmsg m, r;
	size_t size = o->short_buf ? o->bytes / 2 : o->bytes;
	int s, mfd, fd, rc;
	uint8_t *p;

	if (!o->to || o->bytes == 0)
		return usage(stderr), 2;
	mfd = memfd_create("hostile", MFD_CLOEXEC | (o->seal ? MFD_ALLOW_SEALING : 0));
	if (mfd < 0 || ftruncate(mfd, (off_t)size) < 0)
		return fail("memfd");
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	if (p == MAP_FAILED)
		return fail("mmap");
	for (size_t i = 0; i < size; i++)
		p[i] = (uint8_t)(i * 131 + (i >> 12));
	if (o->save) {
		FILE *f = fopen(o->save, "wb");
		if (!f || fwrite(p, 1, size, f) != size || fclose(f))
			return fail(o->save);
	}
	munmap(p, size);
	if (o->seal && fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0)
		return fail("F_ADD_SEALS");
	if ((s = connect_sock(o->sock)) < 0)
		return fail(o->sock);
	m.type = APPMSG_SEND;
	m.bytes = o->bytes;
	m.chan = (uint16_t)o->chan;
	snprintf(m.peer, sizeof(m.peer), "%s", o->to);
	if (o->rate > 0) {
		m.n = 1;
		m.u.steps[0] = (struct appmsg_step){ 0, o->rate };
	}
	if ((rc = appmsg_send(s, &m, mfd)) < 0) {
		errno = -rc;
		return fail("send");
	}
	do
		rc = recv_within(s, &r, &fd, 10000);
	while (rc == 1 && r.type != APPMSG_ACCEPTED);
	if (rc != 1) {
		printf("send status=none reason=\"%s\"\n", rc == 0 ? "no ACCEPTED within 10 s" : strerror(-rc));
		return 0;
	}
	if (r.status) {
		printf("send status=refused reason=\"%s\"\n", r.reason);
		return 0;
	}
	printf("send status=accepted id=%llx\n", (unsigned long long)r.id);
	fflush(stdout);
	if (o->truncate) {
		usleep(100000); /* the transfer is under way: its pages are being read */
		printf("truncate rc=%s\n", ftruncate(mfd, 0) < 0 ? strerrorname_np(errno) : "0");
		fflush(stdout);
	}
	do
		rc = recv_within(s, &r, &fd, (int)(o->wait_s * 1000));
	while (rc == 1 && r.type != APPMSG_TX_DONE);
	if (rc == 1)
		printf("done status=%s reason=\"%s\"\n", r.status ? "failed" : "ok", r.reason);
	else
		printf("done status=none reason=\"%s\"\n", rc == 0 ? "no TX_DONE in time" : strerror(-rc));
	close(s);
	close(mfd);
	return 0;
}

static int cmd_listen(const struct opts *o)
{
	static struct appmsg m;
	double end = now_s() + o->wait_s;
	int s, fd, rc;

	if ((s = connect_sock(o->sock)) < 0)
		return fail(o->sock);
	m.type = APPMSG_LISTEN;
	m.chan = (uint16_t)o->chan;
	if ((rc = appmsg_send(s, &m, -1)) < 0) {
		errno = -rc;
		return fail("send");
	}
	printf("listening chan=%u\n", o->chan);
	fflush(stdout);
	while (now_s() < end) {
		rc = recv_within(s, &m, &fd, (int)((end - now_s()) * 1000) + 1);
		if (rc < 0)
			break;
		if (rc == 0)
			continue;
		if (m.type == APPMSG_ERROR)
			printf("error chan=%u reason=\"%s\"\n", m.chan, m.reason);
		else if (m.type == APPMSG_RX_DONE)
			printf("stole id=%llx bytes=%llu status=%d\n", (unsigned long long)m.id,
			       (unsigned long long)m.bytes, m.status);
		fflush(stdout);
		if (fd >= 0)
			close(fd);
	}
	close(s);
	return 0;
}

static int cmd_flood(const struct opts *o)
{
	static struct appmsg m;
	struct timeval tv = { .tv_sec = 10 };
	struct pollfd p;
	long sent = 0;
	int s, closed;

	if ((s = connect_sock(o->sock)) < 0)
		return fail(o->sock);
	setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	m.type = 99; /* no such request: each is answered with an ERROR we never read */
	while (sent < o->count && appmsg_send(s, &m, -1) == 0)
		sent++;
	p = (struct pollfd){ .fd = s, .events = POLLRDHUP };
	closed = poll(&p, 1, 10000) > 0 && (p.revents & (POLLRDHUP | POLLHUP));
	printf("flood sent=%ld of=%ld closed=%d\n", sent, o->count, closed);
	close(s);
	return 0;
}

static int cmd_connect(const struct opts *o)
{
	static struct appmsg m;
	gid_t g = (gid_t)o->group;
	int s, fd, rc;

	if (setgroups(o->group >= 0 ? 1 : 0, &g) < 0)
		return fail("setgroups");
	if (o->gid >= 0 && setresgid((gid_t)o->gid, (gid_t)o->gid, (gid_t)o->gid) < 0)
		return fail("setresgid");
	if (o->uid >= 0 && setresuid((uid_t)o->uid, (uid_t)o->uid, (uid_t)o->uid) < 0)
		return fail("setresuid");
	if ((s = connect_sock(o->sock)) < 0) {
		printf("connect error=%s\n", strerrorname_np(errno));
		return 0;
	}
	m.type = APPMSG_ORDER;
	m.chan = 999;
	rc = appmsg_send(s, &m, -1);
	do
		rc = rc < 0 ? rc : recv_within(s, &m, &fd, 3000);
	while (rc == 1 && m.type != APPMSG_ERROR);
	printf("connect %s\n", rc == 1 ? "served" : rc == 0 ? "silent" : "closed");
	close(s);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "sock", required_argument, NULL, 's' },  { "to", required_argument, NULL, 't' },
		{ "bytes", required_argument, NULL, 'b' }, { "seal", no_argument, NULL, 'S' },
		{ "truncate", no_argument, NULL, 'T' },    { "short", no_argument, NULL, 'h' },
		{ "rate", required_argument, NULL, 'r' },  { "chan", required_argument, NULL, 'c' },
		{ "wait", required_argument, NULL, 'w' },  { "count", required_argument, NULL, 'n' },
		{ "uid", required_argument, NULL, 'u' },   { "gid", required_argument, NULL, 'g' },
		{ "group", required_argument, NULL, 'G' }, { "save", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { .bytes = 16 << 20, .wait_s = 3, .count = 20000, .uid = -1, .gid = -1, .group = -1 };
	const char *cmd = argc > 1 ? argv[1] : "";
	int c;

	optind = 2;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 's': o.sock = optarg; break;
		case 't': o.to = optarg; break;
		case 'b': o.bytes = strtoull(optarg, NULL, 10); break;
		case 'S': o.seal = 1; break;
		case 'T': o.truncate = 1; break;
		case 'h': o.short_buf = 1; break;
		case 'r': o.rate = strtod(optarg, NULL); break;
		case 'c': o.chan = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'w': o.wait_s = strtod(optarg, NULL); break;
		case 'n': o.count = strtol(optarg, NULL, 10); break;
		case 'u': o.uid = strtol(optarg, NULL, 10); break;
		case 'g': o.gid = strtol(optarg, NULL, 10); break;
		case 'G': o.group = strtol(optarg, NULL, 10); break;
		case 'o': o.save = optarg; break;
		default: usage(stderr); return 2;
		}
	}
	if (!o.sock || optind < argc) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(cmd, "memfd"))
		return cmd_memfd(&o);
	if (!strcmp(cmd, "listen"))
		return cmd_listen(&o);
	if (!strcmp(cmd, "flood"))
		return cmd_flood(&o);
	if (!strcmp(cmd, "connect"))
		return cmd_connect(&o);
	usage(stderr);
	return 2;
}
