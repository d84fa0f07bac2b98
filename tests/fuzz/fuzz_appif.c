/* fuzz_appif.c - libFuzzer harness (docs/fuzzing.md): the dataplane's app-request handling
 * (dataplane/appif.c: SEND, LISTEN, ORDER, control JSON, replies and their backlog, ordered
 * delivery) above the real transport (transport.c, sender.c, receiver.c, egress.c). Only the DPDK
 * parts are replaced: portio, the port, and xfertab, the transfer tables on rte_hash (by a list;
 * tests/unit/test_dp_xfertab.c tests the real one): fakes at the bottom of this file; the port's
 * checks every frame the transport hands it (a DATA frame's bytes lie inside the app's buffer,
 * every frame parses).
 *
 * Per input, a fresh app socket and transport on a 3-host cluster (this host h0, peers h1 and
 * h2); 1-3 app connections; then the input is a program of operations, one byte each
 * (op = b % N_OPS, client = b / N_OPS % 3; the first byte of the input sets the connections,
 * zero-copy frames and the port's room) followed by its arguments (zero bytes once the input
 * ends): SEND with a memfd of a size from the input (sealed, unsealed, half-sealed, a pipe, or
 * none), LISTEN, ORDER, CTL, raw datagrams, reading replies, closing and reconnecting, time
 * passing, DATA/SACK/ABORT frames from the peers, a small socket buffer (backlog), repeating
 * an operation (a flood of replies, echoes of long CTLs past the backlog cap), and restarting appif and the transport.
 * appif_poll() runs after every operation.
 *
 * Checked, beyond the sanitizers: a SEND that must be refused (no buffer, unsealed, range
 * outside the memfd, no bytes, channel out of range, unknown host) is never ACCEPTED; TX_DONE
 * reaches only the app whose SEND was accepted under that id; RX_DONE only an app that asked to
 * LISTEN on its channel, with a memfd holding the bytes the peer sent when it succeeded and none
 * when it failed; every frame is well formed; no descriptor and no mapping of an app's buffer
 * outlives an input. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "appif.h"
#include "appmsg.h"
#include "dp.h"
#include "log.h"
#include "portio.h"
#include "transport.h"
#include "wire.h"
#include "xfertab.h"

#define N_CLIENTS 3
#define N_OPS 13
#define ANN_MAX 256 /* announcements remembered by the harness per input */
#define MAX_XFERS 16             /* small, so that "too many transfers" is reachable */
#define ACC_IDS 256              /* ids of accepted SENDs remembered per client */
#define EXPECT_MAX 4096          /* SENDs awaiting their ACCEPTED per client */
#define OUT_MAX 16               /* outgoing transfers seen on the wire, for SACKs and ABORTs */
#define RX_POOL 8                /* ids of the peers' transfers to this host */
#define FRAME_MAX 10000

/* Fail with a message: every check here is a bug of the code under test (or of the harness). */
#define CHECK(cond, ...) do { if (!(cond)) { fprintf(stderr, "fuzz_appif: " __VA_ARGS__); \
	fputc('\n', stderr); abort(); } } while (0)

static const char *cluster_json =
	"{\"name\":\"fz\",\"mtu\":1500,\"udp_port\":47000,\"hosts\":["
	"{\"name\":\"h0\",\"ip\":\"10.83.0.1\",\"up_gbps\":10,\"down_gbps\":10,\"roles\":[\"worker\"]},"
	"{\"name\":\"h1\",\"ip\":\"10.83.0.2\",\"up_gbps\":10,\"down_gbps\":10,\"roles\":[\"server\"]},"
	"{\"name\":\"h2\",\"ip\":\"10.83.0.3\",\"up_gbps\":10,\"down_gbps\":10,\"roles\":[\"worker\"]}]}";

/* One app connection of the harness (the far end of an appif client slot). */
struct fclient {
	int fd;                        /* -1: not connected */
	uint64_t listened;             /* channels (< 64) it sent LISTEN for */
	uint64_t announced_only;       /* of those, the ones whose last LISTEN asked for announced
					* transfers only (APPMSG_LISTEN_ANNOUNCED) */
	uint64_t acc[ACC_IDS];         /* ids of its accepted SENDs */
	int nacc;
	uint8_t expect[EXPECT_MAX];    /* per SEND sent, oldest first: 1 = must be refused */
	int ehead, nexpect;
};

/* An outgoing transfer as its DATA frames show it. */
struct out_xfer {
	uint64_t id, total;
	int peer;
	uint16_t seg;
};

static struct {
	const uint8_t *d;
	size_t n, off;
	struct fclient cl[N_CLIENTS];
	struct out_xfer out[OUT_MAX];
	int nout, out_next;
	int use_ext;                   /* portio_extmem_new gives regions (zero-copy) this input */
	unsigned tx_room;              /* what portio_tx_room says */
	long live_ext;                 /* extmem regions not yet unmapped */
	uint64_t frames;
	unsigned replies[APPMSG_CTL + 1]; /* read by the apps, per type (MLF_FUZZ_VERBOSE) */
	struct ann_rec { uint64_t id; int peer; unsigned chan; } ann[ANN_MAX]; /* op_announce */
	int nann, ann_lost;            /* ann_lost: more than ANN_MAX announcements */
	uint64_t standing_ever[3];     /* per host: channels ever announced standing */
} fz;

static char sock_path[108];
static uint32_t seg_size;

/* ---- input ---- */

static unsigned u8(void)
{
	return fz.off < fz.n ? fz.d[fz.off++] : 0;
}

static unsigned u16(void)
{
	unsigned v = u8();

	return v | u8() << 8;
}

/* ---- the clock: fixed at the start of each input, moved by the input ---- */

static void clock_set(uint64_t mono)
{
	dp.clk.mono_ns = mono;
	dp.clk.tsc = mono; /* dp.hz = 1e9: one tick per ns */
	dp.clk.real_ns = 1700000000000000000ULL + mono;
}

/* ---- the cluster's side of the wire ---- */

static uint64_t rx_id(unsigned k)
{
	/* the id the peers' dataplanes would choose, sender host index in the top 16 bits */
	return (uint64_t)(1 + 1 + k % 2) << 48 | (0x100 + k % RX_POOL);
}

static uint8_t pattern(uint64_t id, uint64_t off)
{
	return (uint8_t)(id * 31 + off * 7 + (off >> 9));
}

/* Builds a frame from host @peer to this host into @buf; returns its length. */
static size_t frame_from(uint8_t *buf, int peer, struct wire_hdr *h, const void *body)
{
	struct wire_addr a;

	memcpy(a.src_mac, dp.cluster.hosts[peer].mac, 6);
	memcpy(a.dst_mac, dp.my_mac, 6);
	a.src_ip = dp.cluster.hosts[peer].ip;
	a.dst_ip = dp.cluster.hosts[dp.me].ip;
	a.udp_port = dp.cluster.udp_port;
	if (h->len)
		memcpy(buf + wire_body_off(h->flags), body, h->len);
	return wire_encode(buf, &a, h);
}

/* DATA of a transfer of the rx pool from a peer: every segment, one, or all but the last. */
static void peer_data(void)
{
	static uint8_t frames[64][FRAME_MAX];
	unsigned k = u8(), mode = u8(), ch = u8(), sel = u8();
	int peer = 1 + (int)(k % 2); /* the host rx_id(k) names */
	uint64_t id = rx_id(k), total = (u16() % 12000) + (mode & 0x80 ? 0 : 1), nseg;
	uint16_t chan = ch & 0x80 ? (uint16_t)(ch | (unsigned)u8() << 8) : ch % 4;
	int nf = 0;

	nseg = (total + seg_size - 1) / seg_size;
	for (uint64_t s = 0; s < nseg && nf < 64; s++) {
		uint8_t body[FRAME_MAX];
		struct wire_hdr h = { .type = WIRE_DATA, .chan = chan, .seg = (uint16_t)seg_size, .id = id,
				      .total = total, .offset = s * seg_size };
		h.len = (uint32_t)(total - h.offset < seg_size ? total - h.offset : seg_size);
		if ((mode & 3) == 1 && s != sel % nseg)
			continue;
		if ((mode & 3) == 2 && s == nseg - 1)
			continue;
		if (mode & 4)
			h.flags |= WIRE_F_ACKREQ;
		for (uint32_t i = 0; i < h.len; i++)
			body[i] = pattern(id, h.offset + i);
		frame_from(frames[nf], peer, &h, body);
		transport_rx(frames[nf], (uint16_t)(wire_body_off(h.flags) + h.len));
		nf++;
	}
	transport_rx_flush(); /* before the frames are reused */
}

/* A SACK from the peer of an outgoing transfer seen on the wire: all done, or forged. */
static void peer_sack(void)
{
	unsigned k = u8(), mode = u8(), nb = u8() % 16;
	uint8_t bm[16], frame[256];
	struct out_xfer *o;
	struct wire_hdr h = { .type = WIRE_SACK };
	uint64_t nseg;

	for (unsigned i = 0; i < nb; i++)
		bm[i] = (uint8_t)u8();
	if (fz.nout == 0)
		return;
	o = &fz.out[k % fz.nout];
	nseg = (o->total + o->seg - 1) / (o->seg ? o->seg : 1);
	h.id = o->id;
	h.total = o->total;
	h.seg = o->seg;
	if (mode & 1) {
		h.offset = nseg;
		h.flags = WIRE_F_DONE;
	} else {
		h.offset = (mode >> 1) % (nseg + 2);
		h.len = nb;
	}
	frame_from(frame, mode & 0x80 ? 1 + (int)(k & 1) : o->peer, &h, bm);
	transport_rx(frame, (uint16_t)(wire_body_off(h.flags) + h.len));
	transport_rx_flush();
}

/* An ABORT from a peer: of an outgoing transfer, of one of the pool (maybe never started). */
static void peer_abort(void)
{
	unsigned k = u8(), mode = u8();
	uint8_t frame[256];
	const char *why = "fuzz peer says no";
	struct wire_hdr h = { .type = WIRE_ABORT, .len = (uint32_t)strlen(why) };
	int peer = 1 + (int)((k + (mode & 1)) % 2); /* mode & 1: not the host the id names */

	if (mode & 2 && fz.nout) {
		h.id = fz.out[k % fz.nout].id;
		if (!(mode & 4))
			peer = fz.out[k % fz.nout].peer;
	} else {
		h.id = rx_id(k);
	}
	frame_from(frame, peer, &h, why);
	transport_rx(frame, (uint16_t)(wire_body_off(0) + h.len));
	transport_rx_flush();
}

/* ---- the apps ---- */

static void client_close(int c)
{
	struct fclient *cl = &fz.cl[c];

	if (cl->fd >= 0)
		close(cl->fd);
	memset(cl, 0, sizeof(*cl));
	cl->fd = -1;
}

static void client_connect(int c)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	client_close(c);
	strcpy(sa.sun_path, sock_path);
	if (fd < 0)
		return;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return;
	}
	fz.cl[c].fd = fd;
	(void)appif_poll(); /* accepts it */
}

static int client_accepted(const struct fclient *cl, uint64_t id)
{
	if (cl->nacc > ACC_IDS)
		return 1; /* forgotten: not checked */
	for (int i = 0; i < cl->nacc; i++)
		if (cl->acc[i] == id)
			return 1;
	return 0;
}

static int was_announced(int peer, unsigned chan, uint64_t id);

/* Checks one reply @m (with descriptor @fd) to client @c; closes @fd. */
static void check_reply(int c, const struct appmsg *m, int fd)
{
	struct fclient *cl = &fz.cl[c];
	struct stat st;

	if (m->type <= APPMSG_CTL)
		fz.replies[m->type]++;
	switch (m->type) {
	case APPMSG_ACCEPTED:
		CHECK(cl->nexpect > 0, "client %d: ACCEPTED (status %d, id %llx) without a SEND", c,
		      m->status, (unsigned long long)m->id);
		CHECK(!(cl->expect[cl->ehead] && m->status == 0),
		      "client %d: a SEND that must be refused was accepted (id %llx)", c, (unsigned long long)m->id);
		cl->ehead = (cl->ehead + 1) % EXPECT_MAX;
		cl->nexpect--;
		if (m->status == 0) {
			if (cl->nacc < ACC_IDS)
				cl->acc[cl->nacc] = m->id;
			cl->nacc++;
		}
		break;
	case APPMSG_TX_DONE:
		CHECK(client_accepted(cl, m->id), "client %d: TX_DONE of transfer %llx it never had accepted",
		      c, (unsigned long long)m->id);
		break;
	case APPMSG_RX_DONE:
		CHECK(m->chan < 64 && (cl->listened >> m->chan & 1),
		      "client %d: RX_DONE of transfer %llx on channel %u it never listened on", c,
		      (unsigned long long)m->id, m->chan);
		if (m->status != 0) {
			CHECK(fd < 0, "client %d: a failed RX_DONE carries a descriptor", c);
			break;
		}
		if (cl->announced_only >> m->chan & 1) {
			int peer = cluster_find(&dp.cluster, m->peer);
			CHECK(peer == dp.me || was_announced(peer, m->chan, m->id),
			      "client %d: transfer %llx from %s on channel %u delivered to a listener of "
			      "announced transfers only, never announced", c, (unsigned long long)m->id,
			      m->peer, m->chan);
		}
		CHECK(fd >= 0 && fstat(fd, &st) == 0 && (uint64_t)st.st_size >= m->bytes,
		      "client %d: RX_DONE of %llu bytes without a memfd that holds them", c,
		      (unsigned long long)m->bytes);
		for (unsigned k = 0; k < RX_POOL; k++) {
			uint8_t buf[4096];
			uint64_t id = rx_id(k);
			if (m->id != id)
				continue;
			for (uint64_t off = 0; off < m->bytes; off += sizeof(buf)) {
				size_t n = m->bytes - off < sizeof(buf) ? m->bytes - off : sizeof(buf);
				CHECK(pread(fd, buf, n, (off_t)off) == (ssize_t)n, "RX_DONE memfd short");
				for (size_t i = 0; i < n; i++)
					CHECK(buf[i] == pattern(id, off + i), "transfer %llx delivered with byte %llu wrong",
					      (unsigned long long)id, (unsigned long long)(off + i));
			}
		}
		break;
	case APPMSG_ERROR:
	case APPMSG_CTL:
		break;
	default:
		CHECK(0, "client %d: reply of type %u", c, m->type);
	}
	if (fd >= 0)
		close(fd);
}

/* Reads up to @max replies of client @c (0: all waiting); a closed connection is closed here too. */
static void client_read(int c, unsigned max)
{
	static struct appmsg m;
	unsigned n = 0;

	while (fz.cl[c].fd >= 0 && (max == 0 || n < max)) {
		int fd = -1, rc = appmsg_recv(fz.cl[c].fd, &m, &fd);
		if (rc == -EAGAIN)
			return;
		CHECK(rc != -EPROTO, "client %d: malformed reply", c);
		if (rc <= 0) {
			client_close(c); /* appif dropped it */
			return;
		}
		check_reply(c, &m, fd);
		n++;
	}
}

/* Sends @m (with @fd) from client @c, letting appif read while the socket is full. */
static int client_send(int c, const struct appmsg *m, int fd)
{
	int rc = -ENOTCONN;

	for (int tries = 0; fz.cl[c].fd >= 0 && tries < 64; tries++) {
		rc = appmsg_send(fz.cl[c].fd, m, fd);
		if (rc != -EAGAIN)
			break;
		(void)appif_poll();
	}
	return rc;
}

/* Remembers that the SEND just sent by @c must be refused (@must) or may be accepted. */
static void expect(int c, int must)
{
	struct fclient *cl = &fz.cl[c];

	if (cl->nexpect == EXPECT_MAX) /* too many unread: stop checking this connection */
		return;
	cl->expect[(cl->ehead + cl->nexpect++) % EXPECT_MAX] = (uint8_t)must;
}

/* A buffer of @size bytes holding the pattern of transfer @id (what a peer would send under that
 * id), sealed per @mode (see op_send). */
static int make_buffer(unsigned mode, uint64_t size, uint64_t id)
{
	int fd;

	if (mode == 6)
		return -1;
	if (mode == 7) {
		int p[2];
		if (pipe2(p, O_CLOEXEC) < 0)
			return -1;
		close(p[1]);
		return p[0];
	}
	fd = memfd_create("fz-buf", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -1;
	if (ftruncate(fd, (off_t)size) < 0) {
		close(fd);
		return -1;
	}
	if (size) {
		uint8_t *p = mmap(NULL, size, PROT_WRITE, MAP_SHARED, fd, 0);
		if (p != MAP_FAILED) {
			for (uint64_t i = 0; i < size; i++)
				p[i] = pattern(id, i);
			munmap(p, size);
		}
	}
	if (mode < 4)
		fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | (mode == 3 ? F_SEAL_WRITE : 0));
	else if (mode == 5)
		fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK); /* half sealed: may still grow */
	return fd;
}

/*
 * SEND. Arguments: destination (h1, h2, this host, unknown), flags, buffer size, bytes, then
 * per flag the offset, id, channel, rate steps, start and timeout. Buffer modes (flags & 7):
 * 0-3 a sealed memfd (3 also write-sealed), 4 unsealed (truncated to 0 once sent: accepting
 * it would let the app pull the pages from under the sender), 5 sealed against shrinking
 * only, 6 no descriptor, 7 a pipe.
 */
static void op_send(int c)
{
	static const char *const dsts[] = { "h1", "h2", "h1", "h0", "nohost" };
	static struct appmsg m;
	unsigned d = u8() % 5, f = u8(), f2 = u8(), mode = f & 7;
	uint64_t size = u16(), bytes;
	int fd, must, local = d == 3;

	if (f2 & 1)
		size <<= 4; /* up to 1 MiB */
	memset(&m, 0, sizeof(m));
	m.type = APPMSG_SEND;
	snprintf(m.peer, sizeof(m.peer), "%s", dsts[d]);
	m.offset = f & 0x10 ? u16() : 0;
	bytes = u16();
	if (f & 0x08) /* exactly the rest of the buffer (most SENDs of an app) */
		bytes = size > m.offset ? size - m.offset : 0;
	else if (f2 & 2)
		bytes += size; /* past the end */
	m.bytes = bytes;
	if (f & 0x20)
		m.id = f2 & 4 ? rx_id(u8()) : (uint64_t)u8() << 40 | 1;
	m.chan = f & 0x40 ? (uint16_t)u16() : (uint16_t)(u8() % 4);
	if (f & 0x80) {
		m.n = (uint16_t)(u8() % 5);
		if (f2 & 0x80)
			m.n = (uint16_t)(0x100 + u8()); /* maybe more than APPMSG_MAX_STEPS */
		for (int i = 0; i < m.n && i < APPMSG_MAX_STEPS; i++) {
			m.u.steps[i].at_ns = (uint64_t)u16() * 1000 * (unsigned)(i + 1);
			m.u.steps[i].gbps = (double)(int8_t)u8() / 8.0;
		}
	}
	if (f2 & 8)
		m.start_ns = dp.clk.real_ns + (uint64_t)u16() * 10000;
	if (f2 & 16)
		m.timeout_ns = (uint64_t)u8() * 1000000;
	fd = make_buffer(mode, size, m.id);
	must = mode >= 4 || fd < 0 || m.bytes == 0 || m.offset > size || m.bytes > size - m.offset ||
	       m.chan >= 64 || d == 4 || (local && m.offset != 0);
	if (client_send(c, &m, fd) == 0)
		expect(c, must);
	if (fd >= 0 && mode == 4)
		(void)ftruncate(fd, 0);
	if (fd >= 0)
		close(fd);
}

static uint16_t chan_arg(void)
{
	unsigned ch = u8();

	return ch & 0x80 ? (uint16_t)(ch | u8() << 8) : (uint16_t)(ch % 4);
}

/* LISTEN on a channel; bit 0x40 of a small channel byte asks for announced transfers only. */
static void op_listen(int c)
{
	unsigned ch = u8();
	struct appmsg m = { .type = APPMSG_LISTEN,
			    .chan = ch & 0x80 ? (uint16_t)(ch | u8() << 8) : (uint16_t)(ch % 4),
			    .flags = (ch & 0xc0) == 0x40 ? APPMSG_LISTEN_ANNOUNCED : 0 };

	if (m.flags)
		client_read(c, 0); /* deliveries queued before this LISTEN are checked without it */
	if (client_send(c, &m, -1) == 0 && m.chan < 64) {
		fz.cl[c].listened |= 1ULL << m.chan;
		if (m.flags)
			fz.cl[c].announced_only |= 1ULL << m.chan;
		else
			fz.cl[c].announced_only &= ~(1ULL << m.chan);
	}
}

/* The scheduler's `expect` as the control relay passes it on: one transfer of the rx pool, or a
 * standing announcement, from any host index (valid or not) on a small channel or any. Every
 * accepted one is remembered (fz.ann) for the RX_DONE check. */
static void op_announce(void)
{
	unsigned k = u8(), mode = u8();
	int peer = (int)(mode & 3) + (mode & 0x20 ? 2 : 0) - 1; /* -1..4: this host, peers, invalid */
	unsigned chan = mode & 0x10 ? (unsigned)u8() : mode >> 6;
	uint64_t id = mode & 4 ? 0 : rx_id(k);

	if (transport_announce(peer, chan, id, !!(mode & 8)) != 0)
		return;
	if (!id && (mode & 8))
		fz.standing_ever[peer] |= 1ULL << chan;
	else if (id && fz.nann < ANN_MAX)
		fz.ann[fz.nann++] = (struct ann_rec){ .id = id, .peer = peer, .chan = chan };
	else if (id)
		fz.ann_lost = 1; /* forgotten: the delivery check is off for this input */
}

/* 1 when transfer @id from @peer on @chan was ever announced (consumption is not modelled). */
static int was_announced(int peer, unsigned chan, uint64_t id)
{
	if (fz.ann_lost || (peer >= 0 && peer < 3 && chan < 64 && (fz.standing_ever[peer] >> chan & 1)))
		return 1;
	for (int i = 0; i < fz.nann; i++)
		if (fz.ann[i].id == id && fz.ann[i].peer == peer && fz.ann[i].chan == chan)
			return 1;
	return 0;
}

/* ORDER of up to 7 ids of the rx pool (or one sent locally), REPLACE/SKIP from the input. */
static void op_order(int c)
{
	static struct appmsg m;
	unsigned f = u8();

	memset(&m, 0, sizeof(m));
	m.type = APPMSG_ORDER;
	m.chan = chan_arg();
	m.flags = f & 3;
	m.n = (uint16_t)((f >> 2) % 8);
	if (f & 0x80)
		m.n = (uint16_t)(APPMSG_MAX_IDS + (f >> 2 & 1)); /* the most, or one too many */
	for (int i = 0; i < m.n && i < APPMSG_MAX_IDS; i++)
		m.u.ids[i] = rx_id(u8());
	(void)client_send(c, &m, -1);
}

/*
 * CTL: 1-128 bytes of the input, or (first byte >= 0x80) an echo request "exx..." of 128-16384
 * bytes, so that a few hundred echoes fill the backlog of an app that does not read.
 */
static void op_ctl(int c)
{
	static struct appmsg m;
	unsigned n8 = u8(), n = n8 & 0x80 ? ((n8 & 0x7f) + 1) * 128 : n8 + 1;

	memset(&m, 0, offsetof(struct appmsg, u));
	m.type = APPMSG_CTL;
	m.n = (uint16_t)n;
	if (n8 & 0x80) {
		memset(m.u.text, 'x', n);
		m.u.text[0] = 'e';
	} else {
		for (unsigned i = 0; i < n; i++)
			m.u.text[i] = (char)u8();
	}
	(void)client_send(c, &m, -1);
}

/*
 * A datagram of the input's bytes (any length; never typed SEND, whose reply the checks would
 * not expect), or the fixed fields of a message from the input (any type) with n = 0.
 */
/* A raw datagram that may have been a LISTEN on @chan: the channel counts as listened on (the
 * RX_DONE check gets weaker, never wrong) and not as announced-only (the same). */
static void raw_listen(int c, uint32_t type, unsigned chan)
{
	if (type == APPMSG_LISTEN && chan < 64 && fz.cl[c].fd >= 0) {
		fz.cl[c].listened |= 1ULL << chan;
		fz.cl[c].announced_only &= ~(1ULL << chan);
	}
}

static void op_raw(int c)
{
	static struct appmsg m;
	unsigned f = u8();

	memset(&m, 0, sizeof(m));
	if (f & 1) {
		size_t head = offsetof(struct appmsg, u);
		for (size_t i = 0; i < head; i++)
			((uint8_t *)&m)[i] = (uint8_t)u8();
		m.n = 0;
		m.type = f >> 1 & 0xf;
		if (client_send(c, &m, -1) == 0 && m.type == APPMSG_SEND)
			expect(c, 1); /* no buffer */
		raw_listen(c, m.type, m.chan);
		return;
	}
	size_t len = u16() % (sizeof(m) + 16);
	uint8_t buf[sizeof(m) + 16];
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)u8();
	if (len >= 4 && buf[0] == APPMSG_SEND && !buf[1] && !buf[2] && !buf[3])
		buf[1] = 1;
	if (len && fz.cl[c].fd >= 0)
		(void)send(fz.cl[c].fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (len >= offsetof(struct appmsg, chan) + sizeof(m.chan)) {
		uint32_t type;
		uint16_t chan;
		memcpy(&type, buf + offsetof(struct appmsg, type), sizeof(type));
		memcpy(&chan, buf + offsetof(struct appmsg, chan), sizeof(chan));
		raw_listen(c, type, chan);
	}
}

/* Time passes (up to ~0.65 s, or seconds): the transport's timers, the hold of the commit order. */
static void op_time(void)
{
	unsigned f = u8();
	uint64_t step = f & 1 ? (uint64_t)u8() * 100000000ULL : (uint64_t)u16() * 10000;

	clock_set(dp.clk.mono_ns + step);
	(void)transport_tx();
	(void)transport_timers();
	(void)appif_poll();
	appif_check_order(f & 2 ? 1000000000ULL : 30000000000ULL);
}

/*
 * Every app socket of appif gets a small send buffer (@tiny: the smallest, which no CTL of 4 KB
 * fits; else 64 KB, a few of the largest replies): its replies soon wait in the backlog.
 */
static void op_shrink(int tiny)
{
	struct pollfd p[80];
	int n = appif_wait_fds(p, 80), size = tiny ? 1 : 32768; /* the kernel doubles it */

	for (int i = 1; i < n; i++)
		setsockopt(p[i].fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
}

/* ---- what appif passes up (the control relay in the dataplane) ---- */

static char long_text[APPMSG_CTL_MAX + 2];

/* Control JSON from an app: "e..." is echoed, "L..." answered with a text too long to send. */
static void fz_ctl_from_app(int client, const char *text)
{
	/* (a text may hold a NUL byte: the relay then sees what precedes it, and parses JSON) */
	CHECK(client >= 0 && client < 64 && strlen(text) <= APPMSG_CTL_MAX,
	      "ctl_from_app: client %d, %zu bytes", client, strlen(text));
	if (text[0] == 'e')
		appif_ctl_to(client, text);
	else if (text[0] == 'L')
		appif_ctl_to(client, long_text);
}

static void fz_client_gone(int client)
{
	CHECK(client >= 0 && client < 64, "client_gone: client %d", client);
}

static const struct appif_ops fz_ops = {
	.ctl_from_app = fz_ctl_from_app,
	.client_gone = fz_client_gone,
};

static void start(void)
{
	char err[256];

	if (transport_init(MAX_XFERS, &appif_transport_ops) < 0 ||
	    appif_init(sock_path, (gid_t)-1, &fz_ops, err, sizeof(err)) < 0) {
		fprintf(stderr, "fuzz_appif: cannot start: %s\n", err);
		abort(); /* the harness itself is broken */
	}
}

/* The dataplane stops (the transport first, as in main) and starts again; the apps that were
 * connected read what they were sent and reconnect. Unless @stuck, the apps read their replies
 * first: else appif_close may wait 200 ms per app for a full socket (slow to fuzz). */
static void restart(int stuck)
{
	int was[N_CLIENTS];

	for (int i = 0; i < 3 && !stuck; i++) {
		(void)appif_poll();
		for (int c = 0; c < N_CLIENTS; c++)
			client_read(c, 0);
	}
	transport_shutdown();
	appif_close();
	for (int c = 0; c < N_CLIENTS; c++) {
		was[c] = fz.cl[c].fd >= 0;
		client_read(c, 0);
		client_close(c);
	}
	fz.nout = 0;
	start();
	for (int c = 0; c < N_CLIENTS; c++)
		if (was[c])
			client_connect(c);
}

static void op(unsigned b, int depth);

/* Repeats the next operation 1-4081 times (LISTEN, ORDER, CTL, raw only: cheap replies). */
static void op_repeat(int c)
{
	unsigned k = u8() * 16 + 1, b = u8();
	size_t at = fz.off;

	if (b % N_OPS < 1 || b % N_OPS > 4)
		return;
	for (unsigned i = 0; i < k && fz.cl[c].fd >= 0; i++) {
		fz.off = at;
		op(b, 1);
		if (i % 64 == 63)
			(void)appif_poll();
	}
}

static void op(unsigned b, int depth)
{
	int c = (int)(b / N_OPS) % N_CLIENTS;

	switch (b % N_OPS) {
	case 0: op_send(c); break;
	case 1: op_listen(c); break;
	case 2: op_order(c); break;
	case 3: op_ctl(c); break;
	case 4: op_raw(c); break;
	case 5: client_read(c, u8()); break;
	case 6:
		if (fz.cl[c].fd >= 0)
			client_close(c);
		else
			client_connect(c);
		break;
	case 7: op_time(); break;
	case 8: peer_data(); break;
	case 9: peer_sack(); break;
	case 10: peer_abort(); break;
	case 11: {
		unsigned f = u8();
		if (f & 1)
			restart(f & 2);
		else if ((f & 0xc0) == 0xc0)
			op_announce();
		else
			op_shrink(f & 2);
		break;
	}
	case 12:
		if (!depth)
			op_repeat(c);
		break;
	}
}

/* ---- leaks across inputs ---- */

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)))
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n - 1; /* the directory's own */
}

/* Names what every open descriptor is (on stderr), when one leaked. */
static void list_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	while (d && (e = readdir(d))) {
		char p[300], t[256];
		ssize_t n;
		snprintf(p, sizeof(p), "/proc/self/fd/%s", e->d_name);
		if (e->d_name[0] != '.' && (n = readlink(p, t, sizeof(t) - 1)) > 0)
			fprintf(stderr, "fuzz_appif: fd %s: %.*s\n", e->d_name, (int)n, t);
	}
	if (d)
		closedir(d);
}

/* Whether a mapping of an app buffer (memfd "fz-buf") is still in the address space. */
static int buffer_mapped(void)
{
	static char buf[1 << 16];
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC), found = 0;
	ssize_t n;
	size_t keep = 0;

	while (fd >= 0 && !found && (n = read(fd, buf + keep, sizeof(buf) - 1 - keep)) > 0) {
		size_t len = keep + (size_t)n;
		buf[len] = '\0';
		found = strstr(buf, "memfd:fz-buf") != NULL;
		keep = len > 16 ? 16 : len; /* a name cut by the read */
		memmove(buf, buf + len - keep, keep);
	}
	if (fd >= 0)
		close(fd);
	return found;
}

static void remove_sock(void)
{
	unlink(sock_path);
	*strrchr(sock_path, '/') = '\0';
	rmdir(sock_path);
}

static void setup_once(void)
{
	static int done;
	char err[256];

	if (done)
		return;
	done = 1;
	log_threshold = LOG_ERR; /* quiet: refusals are the point */
	signal(SIGPIPE, SIG_IGN);
	if (cluster_parse(cluster_json, "fuzz_appif", &dp.cluster, err, sizeof(err)) < 0) {
		fprintf(stderr, "fuzz_appif: %s\n", err);
		abort();
	}
	dp.me = 0;
	memcpy(dp.my_mac, dp.cluster.hosts[0].mac, 6);
	dp.hz = 1e9;
	dp.timeout_ns = 3000000000ULL;
	seg_size = wire_seg_payload(dp.cluster.mtu);
	memset(long_text, 'x', sizeof(long_text) - 1);
	snprintf(sock_path, sizeof(sock_path), "/tmp/mlf-fuzz-appif-%d/dp.sock", (int)getpid());
	atexit(remove_sock);
}

/* One input: a fresh appif and transport, its program of operations, shutdown, leak checks. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned first;
	int base_fds;

	setup_once();
	base_fds = count_fds(); /* per input: the replay driver keeps a directory open meanwhile */
	memset(&fz, 0, sizeof(fz));
	for (int c = 0; c < N_CLIENTS; c++)
		fz.cl[c].fd = -1;
	fz.d = data;
	fz.n = size;
	first = u8();
	fz.use_ext = first >> 2 & 1;
	fz.tx_room = (first >> 3 & 3) == 3 ? 8 : 256;
	clock_set(1000000000000ULL);
	start();
	for (int c = 0; c <= (int)(first % N_CLIENTS); c++)
		client_connect(c);
	while (fz.off < fz.n) {
		op(u8(), 0);
		(void)transport_tx();
		(void)appif_poll();
	}
	/* the apps read what is left and go; the dataplane stops */
	for (int c = 0; c < N_CLIENTS; c++) {
		client_read(c, 0);
		client_close(c);
	}
	(void)appif_poll();
	(void)appif_poll();
	transport_shutdown();
	appif_close();
	if (getenv("MLF_FUZZ_VERBOSE")) /* what an input reached, for writing seeds */
		fprintf(stderr, "fuzz_appif: %llu frames; replies: %u accepted, %u tx_done, %u rx_done, "
			"%u error, %u ctl\n", (unsigned long long)fz.frames, fz.replies[APPMSG_ACCEPTED],
			fz.replies[APPMSG_TX_DONE], fz.replies[APPMSG_RX_DONE], fz.replies[APPMSG_ERROR],
			fz.replies[APPMSG_CTL]);
	CHECK(fz.live_ext == 0, "%ld app buffer regions not released after shutdown", fz.live_ext);
	CHECK(!buffer_mapped(), "an app buffer is still mapped after shutdown");
	if (count_fds() != base_fds) {
		list_fds();
		CHECK(0, "%d descriptors open after the input, %d before", count_fds(), base_fds);
	}
	return 0;
}

/* ---- the fake port (portio.h without DPDK): checks and drops every frame ---- */

/* A frame being filled: header bytes here, payload here or in an app's buffer (zero-copy). */
struct rte_mbuf {
	struct portio_extmem *ext;
	const uint8_t *payload;
	uint16_t hlen, plen;
	uint8_t data[FRAME_MAX];
};

/* An app's buffer mapping lent to frames. */
struct portio_extmem {
	uint8_t *base;
	size_t len;
	int refs, released;
};

static void ext_put(struct portio_extmem *e)
{
	if (--e->refs > 0 || !e->released)
		return;
	munmap(e->base, e->len);
	free(e);
	fz.live_ext--;
}

struct portio_extmem *portio_extmem_new(void *base, size_t len)
{
	struct portio_extmem *e;

	if (!fz.use_ext || !(e = calloc(1, sizeof(*e))))
		return NULL;
	e->base = base;
	e->len = len;
	e->refs = 1; /* the owner's */
	fz.live_ext++;
	return e;
}

void portio_extmem_release(struct portio_extmem *e)
{
	CHECK(!e->released, "extmem released twice");
	e->released = 1;
	ext_put(e);
}

uint8_t *portio_tx_alloc(uint16_t len, struct rte_mbuf **frame)
{
	struct rte_mbuf *f;

	CHECK(len <= WIRE_ETH_LEN + dp.cluster.mtu, "frame of %u bytes for MTU %d", len, dp.cluster.mtu);
	if (fz.tx_room == 0 || !(f = calloc(1, sizeof(*f))))
		return NULL;
	f->hlen = len;
	*frame = f;
	return f->data;
}

uint8_t *portio_tx_alloc_ext(uint16_t hdr_len, struct portio_extmem *e, const void *payload, uint16_t len,
			     struct rte_mbuf **frame)
{
	const uint8_t *p = payload;
	struct rte_mbuf *f;

	CHECK(e && !e->released && e->refs > 0, "a frame points into a released buffer");
	CHECK(p >= e->base && p <= e->base + e->len && len <= e->base + e->len - p,
	      "payload of %u bytes at offset %td of a buffer of %zu bytes", len, p - e->base, e->len);
	CHECK(hdr_len + len <= WIRE_ETH_LEN + dp.cluster.mtu, "frame of %u + %u bytes", hdr_len, len);
	if (fz.tx_room == 0 || !(f = calloc(1, sizeof(*f))))
		return NULL;
	f->ext = e;
	f->payload = p;
	f->hlen = hdr_len;
	f->plen = len;
	e->refs++;
	*frame = f;
	return f->data;
}

/* Every frame must parse as the peer receives it; DATA frames are remembered for SACKs. */
void portio_tx_send(struct rte_mbuf *f, uint64_t now_tsc)
{
	struct wire_hdr h;
	const uint8_t *body;
	uint32_t dst, src;
	size_t len = (size_t)f->hlen + f->plen;
	enum wire_err e;
	int peer, i;

	if (f->ext) /* what the NIC reads: a buffer shorter than its mapping would fault here */
		memcpy(f->data + f->hlen, f->payload, f->plen);
	memcpy(&dst, f->data + WIRE_ETH_LEN + 16, 4);
	peer = cluster_find_ip(&dp.cluster, dst);
	CHECK(peer > 0, "frame to %08x, not a peer", dst);
	e = wire_parse(f->data, len, dst, dp.cluster.udp_port, &h, &src, &body);
	CHECK(e == WIRE_OK, "frame of %zu bytes to %s does not parse: %s", len, dp.cluster.hosts[peer].name,
	      wire_err_name(e));
	CHECK(src == dp.cluster.hosts[dp.me].ip, "frame from another source");
	fz.frames++;
	if (h.type == WIRE_DATA) {
		CHECK(h.chan < 64 && h.seg == seg_size && h.len <= seg_size && h.offset % seg_size == 0,
		      "DATA of transfer %llx: channel %u, segment %u, %u bytes at %llu",
		      (unsigned long long)h.id, h.chan, h.seg, h.len, (unsigned long long)h.offset);
		for (i = 0; i < fz.nout && fz.out[i].id != h.id; i++)
			;
		if (i == fz.nout) {
			if (fz.nout < OUT_MAX)
				fz.nout++;
			else
				i = fz.out_next++ % OUT_MAX;
		}
		fz.out[i] = (struct out_xfer){ .id = h.id, .total = h.total, .peer = peer, .seg = h.seg };
	}
	if (f->ext)
		ext_put(f->ext);
	free(f);
}

unsigned portio_tx_room(void)
{
	return fz.tx_room;
}

unsigned portio_holding(void)
{
	return 0;
}

unsigned portio_flush(uint64_t now_tsc)
{
	return 0;
}

int portio_socket(void)
{
	return -1;
}

/* ---- the fake transfer tables (xfertab.h without DPDK's rte_hash): a list, the semantics of
 * the real one (put replaces, get of a missing key is NULL), checked on every call ---- */

struct xfertab {
	unsigned cap, n;
	struct { int peer; uint64_t id; void *v; } *e;
};

struct xfertab *xfertab_new(const char *what, unsigned entries, int socket)
{
	struct xfertab *t = calloc(1, sizeof(*t));

	if (!t || !(t->e = calloc(entries ? entries : 1, sizeof(*t->e)))) {
		free(t);
		return NULL;
	}
	t->cap = entries;
	return t;
}

void xfertab_free(struct xfertab *t)
{
	if (t)
		free(t->e);
	free(t);
}

static int tab_at(const struct xfertab *t, int peer, uint64_t id)
{
	for (unsigned i = 0; i < t->n; i++)
		if (t->e[i].peer == peer && t->e[i].id == id)
			return (int)i;
	return -1;
}

int xfertab_put(struct xfertab *t, int peer, uint64_t id, void *v)
{
	int i = tab_at(t, peer, id);

	CHECK(v, "xfertab_put: NULL value");
	if (i >= 0) {
		t->e[i].v = v;
		return 0;
	}
	CHECK(t->n < t->cap, "xfertab_put: table of %u full (the caller keeps within its size)", t->cap);
	t->e[t->n].peer = peer;
	t->e[t->n].id = id;
	t->e[t->n++].v = v;
	return 0;
}

void *xfertab_get(const struct xfertab *t, int peer, uint64_t id)
{
	int i = tab_at(t, peer, id);

	return i >= 0 ? t->e[i].v : NULL;
}

int xfertab_del(struct xfertab *t, int peer, uint64_t id)
{
	int i = tab_at(t, peer, id);

	if (i < 0)
		return -ENOENT;
	t->e[i] = t->e[--t->n];
	return 0;
}

void xfertab_clear(struct xfertab *t)
{
	t->n = 0;
}

unsigned xfertab_count(const struct xfertab *t)
{
	return t->n;
}
