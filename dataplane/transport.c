/* transport.c - the transfer engine: pacing, segmentation, SACK/retransmission, reassembly, timeouts. */
#define _GNU_SOURCE
#include "transport.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "dp.h"
#include "log.h"
#include "portio.h"
#include "tbucket.h"

#define SACK_EVERY_MIN 16        /* new segments between SACKs, at least ... */
#define SACK_EVERY_BYTES 98304   /* ... and ~96 KB of them: 64 at MTU 1500, where each SACK is a
				  * sendto and a ring delivery at 550k frames/s, 16 at MTU 9000 */
#define SACK_GAP_NS 50000        /* after a hole appears, SACK at most this often */
#define SACK_IDLE_NS 200000      /* SACK pending news at least this often */
#define LINGER_FACTOR 2          /* finished receive entries stay timeout x this (late duplicates) */
#define PAST_CAP 16384           /* finished incoming transfers remembered (oldest forgotten first) */
#define PACE_BURST_S 16e-3       /* pacing credit cap in seconds of the current rate: a loop
                                  * descheduled for up to this long on a shared core catches up
                                  * (credit never exceeds the schedule's cumulative bytes) */
#define SHAPER_BURST_S 2e-3      /* shaper depth in seconds of its rate, like tc tbf's burst */
#define SHAPER_MIN_DEPTH 65536.0  /* bytes */
#define MAX_TRANSFER_BYTES (64ULL << 30)
#define TX_BURST 128             /* DATA frames per transfer per loop: one sendto kicks them all */
#define WR_IOV_MAX 64            /* segments gathered into one pwritev (>= 2 * PORTIO_BURST) */
#define RX_RING_SEGS 2048        /* unacknowledged segments in flight per host: half of the
                                  * af_packet ring (framecnt=4096) of the receiver */

/*
 * A finished incoming transfer, remembered so that late DATA frames (our final SACK was lost, or
 * the sender did not hear our ABORT) get the right answer instead of starting a new transfer.
 */
struct rx_past {
	uint64_t id, bytes, nseg;
	int peer, failed;
	uint64_t until_ns, last_sack_ns;
};

static struct {
	const struct transport_ops *ops; /* upward notifications (transport_init) */
	struct xfer_tx **tx;
	struct xfer_rx **rx;
	int ntx, nrx, max;
	int rr;                  /* round-robin position in tx */
	uint64_t next_id;
	struct tbucket shaper;
	uint32_t seg;            /* payload bytes per DATA frame */
	struct xfer_rx *rx_hint; /* last receive lookup */
	struct rx_past *past;    /* ring of finished incoming transfers, newest at past_head - 1 */
	int npast, past_head;
	/* received payload not yet written: consecutive segments [wr_off, wr_off + wr_len) of wr_x,
	 * pointing into the current rx burst's frames */
	struct xfer_rx *wr_x;
	uint64_t wr_off, wr_len;
	int wr_n;
	struct iovec wr_iov[WR_IOV_MAX];
} tp;

/*
 * Prefault [*done, upto) of a shared mapping in POPULATE_CHUNK steps ahead of the copy cursor:
 * one madvise per 4 MB instead of a page fault per 4 KB page (a quarter of the receiver's CPU
 * at MTU 9000 went to faults). Mappings stay correct without it (plain faults) if it fails.
 */
#define POPULATE_CHUNK (4u << 20)
static void populate(uint8_t *base, uint64_t size, uint64_t *done, uint64_t upto, int advice)
{
	while (*done < upto && *done < size) {
		uint64_t n = size - *done < POPULATE_CHUNK ? size - *done : POPULATE_CHUNK;
		if (madvise(base + *done, n, advice) < 0) { /* *done stays a multiple of the chunk */
			*done = size; /* not supported: fall back to page faults */
			return;
		}
		*done += n;
	}
}

static uint32_t frame_len(uint32_t payload)
{
	return WIRE_HDRS_LEN + payload;
}

int transport_init(int max_xfers, const struct transport_ops *ops)
{
	tp.ops = ops;
	tp.max = max_xfers;
	tp.tx = calloc((size_t)max_xfers, sizeof(*tp.tx));
	tp.rx = calloc((size_t)max_xfers, sizeof(*tp.rx));
	tp.past = calloc(PAST_CAP, sizeof(*tp.past));
	if (!tp.tx || !tp.rx || !tp.past)
		return -ENOMEM;
	tp.seg = wire_seg_payload(dp.cluster.mtu);
	/* ids survive a restart: a receiver may still remember the ids of the previous run */
	tp.next_id = (dp.clk.real_ns / 1000) & ((1ULL << 48) - 1);
	tbucket_init(&tp.shaper, 0, SHAPER_MIN_DEPTH, dp.hz, dp.clk.tsc);
	return 0;
}

void transport_set_shaper(double gbps)
{
	double depth = gbps * 1e9 / 8 * SHAPER_BURST_S;

	/* deep enough to ride out a short deschedule of the loop, shallow enough to stay a shaper */
	tp.shaper.burst = depth > SHAPER_MIN_DEPTH ? depth : SHAPER_MIN_DEPTH;
	tbucket_set_rate(&tp.shaper, gbps, dp.clk.tsc);
	if (gbps > 0)
		log_info("shaper: egress limited to %.3f Gbit/s, depth %.0f bytes", gbps, tp.shaper.burst);
	else
		log_info("shaper: egress unlimited");
}

double transport_shaper_gbps(void)
{
	return tp.shaper.gbps;
}

static void addr_to(int peer, struct wire_addr *a)
{
	const struct cluster_host *me = &dp.cluster.hosts[dp.me], *h = &dp.cluster.hosts[peer];

	memcpy(a->src_mac, dp.my_mac, 6);
	memcpy(a->dst_mac, h->mac, 6);
	a->src_ip = me->ip;
	a->dst_ip = h->ip;
	a->udp_port = dp.cluster.udp_port;
}

/* Sends a control frame (SACK or ABORT) now, charged to the shaper without waiting. */
static int send_ctl(int peer, struct wire_hdr *h, const void *body)
{
	struct wire_addr a;
	struct rte_mbuf *f;
	uint8_t *p = portio_tx_alloc((uint16_t)frame_len(h->len), &f);

	if (!p)
		return -ENOBUFS;
	addr_to(peer, &a);
	if (h->len)
		memcpy(p + WIRE_HDRS_LEN, body, h->len);
	wire_encode(p, &a, h);
	tbucket_force(&tp.shaper, frame_len(h->len));
	portio_tx_send(f, dp.clk.tsc);
	return 0;
}

static void send_abort(int peer, uint64_t id, const char *why)
{
	struct wire_hdr h = { .type = WIRE_ABORT, .id = id, .len = (uint32_t)strlen(why) };

	if (send_ctl(peer, &h, why) == 0)
		dp.cnt.tx_abort++;
}

static const char *host_name(int i)
{
	return dp.cluster.hosts[i].name;
}

/* ---- sender side ---- */

static struct xfer_tx *find_tx(uint64_t id)
{
	for (int i = 0; i < tp.ntx; i++)
		if (tp.tx[i]->id == id)
			return tp.tx[i];
	return NULL;
}

uint64_t transport_submit(const struct appmsg *m, int fd, uint64_t owner, char *err, size_t errlen)
{
	struct pacer_step steps[PACER_MAX_STEPS];
	struct xfer_tx *x;
	struct stat st;
	char name[APPMSG_NAME_MAX + 1];
	double tail_gbps = 0;
	int peer, rc;

	memcpy(name, m->peer, APPMSG_NAME_MAX);
	name[APPMSG_NAME_MAX] = '\0';
	peer = cluster_find(&dp.cluster, name);
	if (fd < 0) {
		snprintf(err, errlen, "SEND without a buffer descriptor");
		return 0;
	}
	if (peer < 0 || peer == dp.me) {
		snprintf(err, errlen, peer < 0 ? "unknown destination host '%s'" :
			 "destination '%s' is this host", name);
		close(fd);
		return 0;
	}
	memset(&st, 0, sizeof(st));
	if (fstat(fd, &st) < 0 || m->bytes == 0 || m->bytes > MAX_TRANSFER_BYTES ||
	    m->n > PACER_MAX_STEPS || m->chan >= TRANSPORT_MAX_CHANS ||
	    m->offset > (uint64_t)st.st_size || m->bytes > (uint64_t)st.st_size - m->offset) {
		snprintf(err, errlen, "bad transfer to %s: %llu bytes at offset %llu, %u rate steps "
			 "(max %d), channel %u (max %d), buffer of %lld bytes", name,
			 (unsigned long long)m->bytes, (unsigned long long)m->offset, m->n, PACER_MAX_STEPS,
			 m->chan, TRANSPORT_MAX_CHANS - 1, (long long)st.st_size);
		close(fd);
		return 0;
	}
	if (tp.ntx >= tp.max) {
		snprintf(err, errlen, "too many transfers in flight (%d)", tp.max);
		close(fd);
		return 0;
	}
	if (m->id && find_tx(m->id)) {
		snprintf(err, errlen, "transfer id %llx already in use", (unsigned long long)m->id);
		close(fd);
		return 0;
	}
	x = calloc(1, sizeof(*x));
	if (!x) {
		snprintf(err, errlen, "out of memory");
		close(fd);
		return 0;
	}
	x->map_len = m->offset + m->bytes;
	x->map = mmap(NULL, x->map_len, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (x->map == MAP_FAILED) {
		snprintf(err, errlen, "cannot map the app's buffer: %s", strerror(errno));
		free(x);
		return 0;
	}
	madvise(x->map, x->map_len, MADV_SEQUENTIAL);
	x->data = (const uint8_t *)x->map + m->offset;
	x->bytes = m->bytes;
	x->peer = peer;
	x->chan = m->chan;
	x->owner = owner;
	x->timeout_ns = m->timeout_ns ? m->timeout_ns : dp.timeout_ns;
	x->start_ns = m->start_ns ? m->start_ns : dp.clk.real_ns;
	x->start_tsc = dp.clk.tsc;
	if (x->start_ns > dp.clk.real_ns)
		x->start_tsc += (uint64_t)((double)(x->start_ns - dp.clk.real_ns) * dp.hz / 1e9);
	/* apps and plans give update (payload) Gbit/s; the pacer counts whole L2 frames */
	for (int i = 0; i < m->n; i++) {
		steps[i].at_ns = m->u.steps[i].at_ns;
		steps[i].gbps = m->u.steps[i].gbps * frame_len(tp.seg) / tp.seg;
	}
	for (int i = 0; i < m->n; i++)
		if (steps[i].gbps > 0)
			tail_gbps = steps[i].gbps;
	tbucket_init(&x->tail, tail_gbps, 2.0 * frame_len(tp.seg), dp.hz, dp.clk.tsc);
	rc = pacer_init(&x->pacer, x->start_tsc, dp.hz, steps, m->n, PACE_BURST_S, 2.0 * frame_len(tp.seg));
	if (rc == 0)
		rc = sack_tx_init(&x->sack, x->bytes, tp.seg, dp.clk.mono_ns);
	if (rc) {
		int bad = rc == -EINVAL ? pacer_bad_step(steps, m->n) : -1;
		if (bad >= 0)
			snprintf(err, errlen, "bad rate schedule (offsets must increase, rates >= 0): "
				 "step %d of %d at %llu ns, %g Gbit/s%s", bad, m->n,
				 (unsigned long long)steps[bad].at_ns, steps[bad].gbps,
				 bad ? " (not after the previous step)" : "");
		else
			snprintf(err, errlen, rc == -EINVAL ? "bad rate schedule (offsets must increase, rates >= 0)" :
				 "out of memory for transfer state");
		munmap(x->map, x->map_len);
		sack_tx_free(&x->sack);
		free(x);
		return 0;
	}
	x->id = m->id ? m->id : ((uint64_t)(dp.me + 1) << 48) | (tp.next_id++ & ((1ULL << 48) - 1));
	x->ext = portio_extmem_new(x->map, x->map_len);
	tp.tx[tp.ntx++] = x;
	log_info("xfer %llx: to %s, %llu bytes, start in %.3f ms, %d rate steps", (unsigned long long)x->id,
		 name, (unsigned long long)x->bytes,
		 x->start_ns > dp.clk.real_ns ? (double)(x->start_ns - dp.clk.real_ns) / 1e6 : 0.0, m->n);
	return x->id;
}

static void finish_tx(struct xfer_tx *x, int status, const char *reason)
{
	x->state = status ? XFER_FAILED : XFER_DONE;
	x->end_ns = dp.clk.real_ns;
	snprintf(x->reason, sizeof(x->reason), "%s", reason ? reason : "");
	if (status) {
		dp.cnt.xfer_tx_failed++;
		log_warn("xfer %llx to %s failed: %s", (unsigned long long)x->id, host_name(x->peer), x->reason);
	} else {
		dp.cnt.xfer_tx_ok++;
		log_info("xfer %llx to %s complete: %llu bytes, %.3f Gbit/s, %llu retransmits",
			 (unsigned long long)x->id, host_name(x->peer), (unsigned long long)x->bytes,
			 x->bytes * 8.0 / (double)(x->end_ns - x->first_tx_ns + 1),
			 (unsigned long long)x->sack.retransmits);
	}
	tp.ops->tx_done(x, status);
}

static void free_tx(int i)
{
	struct xfer_tx *x = tp.tx[i];

	if (x->ext)
		portio_extmem_release(x->ext); /* unmapped once no queued frame points into it */
	else
		munmap(x->map, x->map_len);
	sack_tx_free(&x->sack);
	free(x);
	tp.tx[i] = tp.tx[--tp.ntx];
}

/*
 * The schedule ended in a pause (its last step is 0) with everything sent once but holes left:
 * 1 when one repair frame of @bytes may go now at the last non-zero rate of the schedule.
 */
static int tail_repair(struct xfer_tx *x, uint32_t bytes)
{
	if (x->sack.next_new < x->sack.nseg || x->sack.done || !(x->tail.gbps > 0) ||
	    pacer_gbps_at(&x->pacer, dp.clk.tsc, dp.hz) != 0)
		return 0;
	tbucket_refill(&x->tail, dp.clk.tsc);
	return tbucket_take(&x->tail, bytes);
}

static void refund(struct xfer_tx *x, int repair, uint32_t bytes)
{
	if (repair)
		tbucket_refund(&x->tail, bytes);
	else
		pacer_refund(&x->pacer, bytes);
}

/* Sends what one transfer may send now; returns frames queued, -1 when the port is full. */
static int tx_one(struct xfer_tx *x, unsigned budget)
{
	uint32_t full = frame_len(tp.seg);
	int n = 0;
	struct wire_addr a;

	if (x->state == XFER_WAITING) {
		/* the wall clock decides: the TSC rate estimate drifts ~0.1% over long waits */
		if (dp.clk.real_ns < x->start_ns)
			return 0;
		x->start_tsc = dp.clk.tsc;
		pacer_restart(&x->pacer, dp.clk.tsc);
		x->state = XFER_ACTIVE;
		x->sack.last_ack_ns = dp.clk.mono_ns;
	}
	if (x->state != XFER_ACTIVE)
		return 0;
	pacer_advance(&x->pacer, dp.clk.tsc);
	addr_to(x->peer, &a);
	while ((unsigned)n < budget) {
		struct wire_hdr h = { .type = WIRE_DATA, .chan = x->chan, .seg = (uint16_t)tp.seg,
				      .id = x->id, .total = x->bytes };
		struct rte_mbuf *f;
		uint8_t *p;
		int retx = 0, repair = 0;
		int64_t s;
		uint64_t moff;

		if (!pacer_allow(&x->pacer, full) && !(repair = tail_repair(x, full)))
			break;
		if (!tbucket_take(&tp.shaper, full)) {
			refund(x, repair, full);
			return -1;
		}
		s = sack_tx_next(&x->sack, dp.clk.mono_ns, &retx);
		if (s < 0) {
			refund(x, repair, full);
			tbucket_refund(&tp.shaper, full);
			break;
		}
		h.offset = (uint64_t)s * tp.seg;
		h.len = sack_seg_len(x->bytes, tp.seg, (uint64_t)s);
		h.flags = retx ? WIRE_F_RETX | WIRE_F_ACKREQ : 0;
		p = x->ext ? portio_tx_alloc_ext(WIRE_HDRS_LEN, x->ext, x->data + h.offset, (uint16_t)h.len, &f) :
			     portio_tx_alloc((uint16_t)frame_len(h.len), &f);
		if (!p)
			return -1; /* the segment counts as sent; loss recovery resends it */
		moff = (uint64_t)(x->data - (const uint8_t *)x->map) + h.offset + h.len;
		if (moff > x->populated)
			populate(x->map, x->map_len, &x->populated, moff, MADV_POPULATE_READ);
		if (!x->ext)
			memcpy(p + WIRE_HDRS_LEN, x->data + h.offset, h.len);
		wire_encode(p, &a, &h);
		portio_tx_send(f, dp.clk.tsc);
		x->last_tx_mono = dp.clk.mono_ns;
		if (!x->first_tx_ns)
			x->first_tx_ns = dp.clk.real_ns;
		x->frames++;
		dp.cnt.tx_data++;
		dp.cnt.tx_retx += (uint64_t)retx;
		n++;
	}
	return n;
}

unsigned transport_tx(void)
{
	unsigned sent = 0;

	tbucket_refill(&tp.shaper, dp.clk.tsc);
	int active = transport_active();
	/* the window shares the receivers' rx rings between concurrent transfers */
	uint64_t window = RX_RING_SEGS / (uint64_t)(active > 0 ? active : 1);

	if (window < 64)
		window = 64;
	for (int k = 0; k < tp.ntx; k++) {
		int i = (tp.rr + k) % tp.ntx, rc;
		unsigned room = portio_tx_room();
		if (room == 0)
			break;
		tp.tx[i]->sack.prm.window = window;
		rc = tx_one(tp.tx[i], room < TX_BURST ? room : TX_BURST);
		if (rc < 0)
			break;
		sent += (unsigned)rc;
	}
	if (tp.ntx)
		tp.rr = (tp.rr + 1) % tp.ntx;
	return sent;
}

static void on_sack(int peer, const struct wire_hdr *h, const uint8_t *body)
{
	struct xfer_tx *x = find_tx(h->id);

	dp.cnt.rx_sack++;
	if (!x || x->peer != peer) {
		dp.cnt.rx_stray++;
		return;
	}
	if (x->state != XFER_ACTIVE)
		return;
	if (sack_tx_on_sack(&x->sack, h->offset, body, h->len, h->flags & WIRE_F_DONE, dp.clk.mono_ns) < 0)
		dp.cnt.rx_reject[WIRE_ELEN]++;
	if (x->sack.done)
		finish_tx(x, 0, NULL);
}

/* ---- receiver side ---- */

static struct xfer_rx *find_rx(int peer, uint64_t id)
{
	if (tp.rx_hint && tp.rx_hint->id == id && tp.rx_hint->peer == peer)
		return tp.rx_hint;
	for (int i = 0; i < tp.nrx; i++)
		if (tp.rx[i]->id == id && tp.rx[i]->peer == peer)
			return tp.rx_hint = tp.rx[i];
	return NULL;
}

/* Why the first DATA frame of a transfer cannot start one, or NULL (written into @buf). */
static const char *refuse_rx(const struct wire_hdr *h, char *buf, size_t len)
{
	if (tp.nrx >= tp.max)
		snprintf(buf, len, "receiver refused the transfer: %d incoming transfers already", tp.max);
	else if (h->total > MAX_TRANSFER_BYTES)
		snprintf(buf, len, "receiver refused the transfer: %llu bytes, at most %llu",
			 (unsigned long long)h->total, MAX_TRANSFER_BYTES);
	else if (h->seg != tp.seg)
		snprintf(buf, len, "receiver refused the transfer: segment size %u, expected %u",
			 h->seg, tp.seg);
	else if (h->chan >= TRANSPORT_MAX_CHANS)
		snprintf(buf, len, "receiver refused the transfer: channel %u, at most %d", h->chan,
			 TRANSPORT_MAX_CHANS - 1);
	else
		return NULL;
	return buf;
}

static struct xfer_rx *new_rx(int peer, const struct wire_hdr *h)
{
	struct xfer_rx *x;
	char why[96];

	if (refuse_rx(h, why, sizeof(why))) {
		static double last;
		if (log_ratelimited(&last, 1.0))
			log_warn("transfer %llx from %s: %s", (unsigned long long)h->id, host_name(peer), why);
		send_abort(peer, h->id, why);
		return NULL;
	}
	x = calloc(1, sizeof(*x));
	if (!x)
		return NULL;
	x->fd = memfd_create("mlfabric-rx", MFD_CLOEXEC);
	if (x->fd < 0 || ftruncate(x->fd, (off_t)h->total) < 0 || sack_rx_init(&x->sack, h->total, h->seg) < 0) {
		log_err("transfer %llx from %s: cannot allocate %llu bytes of shared memory: %s",
			(unsigned long long)h->id, host_name(peer), (unsigned long long)h->total, strerror(errno));
		if (x->fd >= 0)
			close(x->fd);
		free(x);
		send_abort(peer, h->id, "receiver out of memory");
		return NULL;
	}
	x->id = h->id;
	x->peer = peer;
	x->chan = h->chan;
	x->bytes = h->total;
	x->state = XFER_ACTIVE;
	x->first_ns = x->last_data_ns = x->last_sack_ns = dp.clk.mono_ns;
	tp.rx[tp.nrx++] = x;
	log_info("xfer %llx: from %s, %llu bytes, channel %u", (unsigned long long)x->id, host_name(peer),
		 (unsigned long long)x->bytes, x->chan);
	return tp.rx_hint = x;
}

static void send_sack(struct xfer_rx *x)
{
	uint8_t bm[WIRE_SACK_MAX_BYTES];
	uint64_t cum;
	size_t n = sack_rx_build(&x->sack, &cum, bm, sizeof(bm));
	struct wire_hdr h = { .type = WIRE_SACK, .id = x->id, .offset = cum, .len = (uint32_t)n,
			      .total = x->bytes, .seg = (uint16_t)x->sack.seg };

	if (sack_rx_complete(&x->sack))
		h.flags |= WIRE_F_DONE;
	if (send_ctl(x->peer, &h, bm) == 0)
		dp.cnt.tx_sack++;
	x->last_sack_ns = dp.clk.mono_ns;
}

static void finish_rx(struct xfer_rx *x, int status, const char *reason)
{
	x->state = status ? XFER_FAILED : XFER_DONE;
	x->end_ns = dp.clk.real_ns;
	x->linger_until_ns = dp.clk.mono_ns + LINGER_FACTOR * dp.timeout_ns;
	if (tp.wr_x == x) /* a complete transfer was flushed before; a failed one needs no bytes */
		tp.wr_x = NULL;
	if (status) {
		dp.cnt.xfer_rx_failed++;
		log_warn("xfer %llx from %s failed: %s", (unsigned long long)x->id, host_name(x->peer), reason);
	} else {
		dp.cnt.xfer_rx_ok++;
		log_info("xfer %llx from %s complete: %llu bytes", (unsigned long long)x->id,
			 host_name(x->peer), (unsigned long long)x->bytes);
	}
	tp.ops->rx_done(x, status, reason); /* takes x->fd */
	x->fd = -1;
	sack_rx_free(&x->sack);
}

static struct rx_past *find_past(int peer, uint64_t id)
{
	for (int k = 1; k <= tp.npast; k++) {
		struct rx_past *p = &tp.past[(tp.past_head - k + PAST_CAP) % PAST_CAP];
		if (p->id == id && p->peer == peer)
			return p->until_ns > dp.clk.mono_ns ? p : NULL;
	}
	return NULL;
}

static void remember(const struct xfer_rx *x)
{
	tp.past[tp.past_head] = (struct rx_past){ .id = x->id, .bytes = x->bytes, .nseg = x->sack.nseg,
		.peer = x->peer, .failed = x->state == XFER_FAILED, .until_ns = x->linger_until_ns,
		.last_sack_ns = x->last_sack_ns };
	tp.past_head = (tp.past_head + 1) % PAST_CAP;
	if (tp.npast < PAST_CAP)
		tp.npast++;
}

/* DATA of a finished transfer: repeat the final SACK (at most every 100 us) or the ABORT. */
static void answer_late(int failed, int peer, uint64_t id, uint64_t nseg, uint64_t bytes,
			uint64_t *last_ns)
{
	struct wire_hdr d = { .type = WIRE_SACK, .flags = WIRE_F_DONE, .id = id, .offset = nseg,
			      .total = bytes };

	dp.cnt.rx_data_dup++;
	if (dp.clk.mono_ns - *last_ns < 100000)
		return;
	*last_ns = dp.clk.mono_ns;
	if (failed)
		send_abort(peer, id, "receiver already failed this transfer");
	else if (send_ctl(peer, &d, NULL) == 0)
		dp.cnt.tx_sack++;
}

void transport_rx_flush(void)
{
	struct xfer_rx *x = tp.wr_x;
	struct iovec *iov = tp.wr_iov;
	int n = tp.wr_n;
	uint64_t off = tp.wr_off;

	tp.wr_x = NULL;
	tp.wr_n = 0;
	tp.wr_len = 0;
	if (!x)
		return;
	while (n > 0) {
		ssize_t w = pwritev(x->fd, iov, n, (off_t)off);
		char reason[APPMSG_REASON_MAX];
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			snprintf(reason, sizeof(reason), "cannot write received data into shared memory: %s",
				 w < 0 ? strerror(errno) : "no progress");
			send_abort(x->peer, x->id, "receiver out of memory");
			finish_rx(x, -ENOMEM, reason);
			return;
		}
		off += (uint64_t)w;
		/* a short write (signal, memory pressure): continue where it stopped */
		while (n > 0 && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (uint8_t *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
}

/* New segments of @seg payload bytes each between two SACKs of a receiver. */
static uint32_t sack_every(uint32_t seg)
{
	uint32_t n = SACK_EVERY_BYTES / (seg ? seg : 1);

	return n > SACK_EVERY_MIN ? n : SACK_EVERY_MIN;
}

static void on_data(int peer, const struct wire_hdr *h, const uint8_t *body)
{
	struct xfer_rx *x = find_rx(peer, h->id);
	int rc;

	dp.cnt.rx_data++;
	if (!x) {
		struct rx_past *p = find_past(peer, h->id);
		if (p) {
			answer_late(p->failed, peer, h->id, p->nseg, p->bytes, &p->last_sack_ns);
			return;
		}
		if (!(x = new_rx(peer, h)))
			return;
	}
	if (x->state != XFER_ACTIVE) {
		answer_late(x->state == XFER_FAILED, peer, h->id, x->sack.nseg, x->bytes, &x->last_sack_ns);
		return;
	}
	if (h->total != x->bytes || h->seg != x->sack.seg) {
		dp.cnt.rx_reject[WIRE_ELEN]++;
		return;
	}
	x->last_data_ns = dp.clk.mono_ns;
	rc = sack_rx_on_data(&x->sack, h->offset, h->len);
	if (rc < 0) {
		dp.cnt.rx_reject[WIRE_ELEN]++;
		return;
	}
	if (rc == 0)
		dp.cnt.rx_data_dup++;
	else {
		if (tp.wr_x != x || tp.wr_off + tp.wr_len != h->offset || tp.wr_n == WR_IOV_MAX) {
			transport_rx_flush();
			if (x->state != XFER_ACTIVE)
				return;
			tp.wr_x = x;
			tp.wr_off = h->offset;
		}
		tp.wr_iov[tp.wr_n++] = (struct iovec){ .iov_base = (void *)(uintptr_t)body, .iov_len = h->len };
		tp.wr_len += h->len;
		x->frames++;
	}
	if (sack_rx_complete(&x->sack)) {
		transport_rx_flush(); /* every byte is in the memfd before the sender hears DONE */
		if (x->state != XFER_ACTIVE)
			return;
	}
	if (sack_rx_complete(&x->sack) && !tp.ops->rx_room()) {
		/* no room to queue it for the app: the sender must not be told it succeeded */
		const char *why = "receiver's delivery queue is full (apps do not collect transfers)";
		send_abort(peer, x->id, why);
		finish_rx(x, -ENOBUFS, why);
	} else if (sack_rx_complete(&x->sack)) {
		send_sack(x);
		finish_rx(x, 0, NULL);
	} else if (x->sack.since_sack >= sack_every(x->sack.seg) || (h->flags & WIRE_F_ACKREQ) ||
		   ((x->sack.gap || rc == 0) && dp.clk.mono_ns - x->last_sack_ns > SACK_GAP_NS)) {
		send_sack(x);
	}
}

static void on_abort(int peer, const struct wire_hdr *h, const uint8_t *body)
{
	char why[96], reason[APPMSG_REASON_MAX];
	size_t n = h->len < sizeof(why) - 1 ? h->len : sizeof(why) - 1;
	struct xfer_tx *t = find_tx(h->id);
	struct xfer_rx *r = find_rx(peer, h->id);

	dp.cnt.rx_abort++;
	for (size_t i = 0; i < n; i++)
		why[i] = body[i] >= 32 && body[i] < 127 ? (char)body[i] : '?';
	why[n] = '\0';
	snprintf(reason, sizeof(reason), "peer %s aborted: %s", host_name(peer), why);
	if (t && t->peer == peer && (t->state == XFER_ACTIVE || t->state == XFER_WAITING))
		finish_tx(t, -ECONNABORTED, reason);
	if (r && r->state == XFER_ACTIVE)
		finish_rx(r, -ECONNABORTED, reason);
	if (!t && !r && !find_past(peer, h->id))
		tp.ops->rx_aborted(peer, h->id, reason); /* aborted before its first frame reached us */
}

void transport_rx(const uint8_t *frame, uint16_t len)
{
	struct wire_hdr h;
	uint32_t src;
	const uint8_t *body;
	enum wire_err e = wire_parse(frame, len, dp.cluster.hosts[dp.me].ip, dp.cluster.udp_port, &h,
				     &src, &body);
	int peer;

	if (e != WIRE_OK) {
		dp.cnt.rx_reject[e]++;
		return;
	}
	peer = cluster_find_ip(&dp.cluster, src);
	if (peer < 0 || peer == dp.me) {
		dp.cnt.rx_reject[WIRE_ENOTOURS]++;
		return;
	}
	switch (h.type) {
	case WIRE_DATA:
		on_data(peer, &h, body);
		break;
	case WIRE_SACK:
		on_sack(peer, &h, body);
		break;
	case WIRE_ABORT:
		on_abort(peer, &h, body);
		break;
	}
}

/* ---- timers ---- */

/*
 * A transfer paused by a rate step of 0 sends nothing, so both ends would take the other for
 * dead: every timeout/3 of silence, resend segment 0 asking for a SACK (a harmless duplicate).
 * The receiver fails after its own --timeout, so the shorter of the two timeouts counts.
 */
static void keepalive(struct xfer_tx *x)
{
	struct wire_hdr h = { .type = WIRE_DATA, .flags = WIRE_F_RETX | WIRE_F_ACKREQ, .chan = x->chan,
			      .seg = (uint16_t)tp.seg, .id = x->id, .total = x->bytes };
	struct wire_addr a;
	struct rte_mbuf *f;
	uint8_t *p;

	if (dp.clk.mono_ns - x->last_tx_mono < (x->timeout_ns < dp.timeout_ns ? x->timeout_ns :
						 dp.timeout_ns) / 3)
		return;
	h.len = sack_seg_len(x->bytes, tp.seg, 0);
	if (!(p = portio_tx_alloc((uint16_t)frame_len(h.len), &f)))
		return;
	addr_to(x->peer, &a);
	memcpy(p + WIRE_HDRS_LEN, x->data, h.len);
	wire_encode(p, &a, &h);
	tbucket_force(&tp.shaper, frame_len(h.len));
	portio_tx_send(f, dp.clk.tsc);
	x->last_tx_mono = dp.clk.mono_ns;
}

int transport_timers(void)
{
	int changed = 0;
	char reason[APPMSG_REASON_MAX];

	for (int i = 0; i < tp.ntx; i++) {
		struct xfer_tx *x = tp.tx[i];
		int rc;
		if (x->state == XFER_ACTIVE) {
			/* paused, or a final pause with holes left: keep both ends alive */
			if (!x->sack.done && pacer_gbps_at(&x->pacer, dp.clk.tsc, dp.hz) == 0)
				keepalive(x);
			rc = sack_tx_check(&x->sack, dp.clk.mono_ns, x->timeout_ns);
			if (rc == 1) {
				finish_tx(x, 0, NULL);
			} else if (rc == -ETIMEDOUT) {
				snprintf(reason, sizeof(reason), "peer %s silent for %.1f s",
					 host_name(x->peer), (double)x->timeout_ns / 1e9);
				send_abort(x->peer, x->id, "sender timed out waiting for acknowledgements");
				finish_tx(x, -ETIMEDOUT, reason);
			}
		}
		if (x->state == XFER_DONE || x->state == XFER_FAILED) {
			free_tx(i--);
			changed = 1;
		}
	}
	for (int i = 0; i < tp.nrx; i++) {
		struct xfer_rx *x = tp.rx[i];
		if (x->state == XFER_ACTIVE) {
			if (dp.clk.mono_ns - x->last_data_ns > dp.timeout_ns) {
				snprintf(reason, sizeof(reason), "peer %s silent for %.1f s",
					 host_name(x->peer), (double)dp.timeout_ns / 1e9);
				send_abort(x->peer, x->id, "receiver timed out waiting for data");
				finish_rx(x, -ETIMEDOUT, reason);
				changed = 1;
			} else if (x->sack.since_sack > 0 && dp.clk.mono_ns - x->last_sack_ns > SACK_IDLE_NS) {
				send_sack(x);
			}
		} else {
			/* finished: keep only a small record for late frames */
			remember(x);
			if (tp.rx_hint == x)
				tp.rx_hint = NULL;
			free(x);
			tp.rx[i--] = tp.rx[--tp.nrx];
			changed = 1;
		}
	}
	return changed;
}

void transport_cancel(uint64_t owner)
{
	for (int i = 0; i < tp.ntx; i++) {
		struct xfer_tx *x = tp.tx[i];
		if (x->owner != owner)
			continue;
		if (x->state == XFER_WAITING || x->state == XFER_ACTIVE) {
			send_abort(x->peer, x->id, "sending application went away");
			finish_tx(x, -ECANCELED, "sending application went away");
		}
	}
}

void transport_shutdown(void)
{
	for (int i = 0; i < tp.ntx; i++) {
		struct xfer_tx *x = tp.tx[i];
		if (x->state == XFER_WAITING || x->state == XFER_ACTIVE) {
			send_abort(x->peer, x->id, "sender dataplane shutting down");
			finish_tx(x, -ECANCELED, "dataplane shutting down");
		}
	}
	for (int i = 0; i < tp.nrx; i++) {
		struct xfer_rx *x = tp.rx[i];
		if (x->state == XFER_ACTIVE) {
			send_abort(x->peer, x->id, "receiver dataplane shutting down");
			finish_rx(x, -ECANCELED, "dataplane shutting down");
		}
	}
	portio_flush(dp.clk.tsc);
	while (tp.ntx)
		free_tx(0);
	for (int i = 0; i < tp.nrx; i++)
		free(tp.rx[i]);
	tp.nrx = 0;
	free(tp.tx);
	free(tp.rx);
	free(tp.past);
	tp.tx = NULL;
	tp.rx = NULL;
	tp.past = NULL;
}

int transport_rx_busy(uint64_t id)
{
	for (int i = 0; i < tp.nrx; i++)
		if (tp.rx[i]->id == id && tp.rx[i]->state == XFER_ACTIVE)
			return 1;
	return 0;
}

int transport_active(void)
{
	int n = 0;

	for (int i = 0; i < tp.ntx; i++)
		n += tp.tx[i]->state <= XFER_ACTIVE;
	for (int i = 0; i < tp.nrx; i++)
		n += tp.rx[i]->state == XFER_ACTIVE;
	return n;
}

int transport_stats(struct transport_stat *out, int max)
{
	int n = 0;

	for (int i = 0; i < tp.ntx && n < max; i++, n++) {
		struct xfer_tx *x = tp.tx[i];
		uint64_t acked = x->sack.n_acked * tp.seg;
		out[n] = (struct transport_stat){ .id = x->id, .outgoing = 1, .peer = x->peer,
			.state = x->state, .bytes = x->bytes, .done_bytes = acked < x->bytes ? acked : x->bytes,
			.frames = x->frames, .retransmits = x->sack.retransmits,
			.gbps_cmd = pacer_gbps_at(&x->pacer, dp.clk.tsc, dp.hz) };
	}
	for (int i = 0; i < tp.nrx && n < max; i++, n++) {
		struct xfer_rx *x = tp.rx[i];
		uint64_t got = x->sack.n_got * x->sack.seg;
		out[n] = (struct transport_stat){ .id = x->id, .outgoing = 0, .peer = x->peer,
			.state = x->state, .bytes = x->bytes,
			.done_bytes = x->state == XFER_DONE ? x->bytes : got < x->bytes ? got : x->bytes,
			.frames = x->frames };
	}
	return n;
}
