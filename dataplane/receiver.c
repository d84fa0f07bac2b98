/* receiver.c - incoming transfers: reassembly into memfds, SACKs, late frames, timeouts. */
#define _GNU_SOURCE
#include "receiver.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "announce.h"
#include "dp.h"
#include "egress.h"
#include "log.h"
#include "replay.h"
#include "placement.h"
#include "portio.h"
#include "xfertab.h"

#define SACK_EVERY_MIN 16        /* new segments between SACKs, at least ... */
#define SACK_EVERY_BYTES 98304   /* ... and ~96 KB of them: 64 at MTU 1500, where each SACK is a
				  * sendto and a ring delivery at 550k frames/s, 16 at MTU 9000 */
#define SACK_GAP_NS 50000        /* after a hole appears, SACK at most this often */
#define SACK_IDLE_NS 200000      /* SACK pending news at least this often */
#define LINGER_FACTOR 2          /* finished receive entries stay timeout x this (late duplicates) */
#define PAST_CAP 16384           /* finished incoming transfers remembered (oldest forgotten first) */
#define WR_IOV_MAX 64            /* segments gathered into one pwritev (>= 2 * PORTIO_BURST) */
#define ANNOUNCE_TTL_NS 60000000000ULL /* an announced transfer that never came is forgotten after
					* 60 s (the scheduler keeps its transfers as long) */
#define HOLD_MAX_NS 1000000000ULL /* an unannounced transfer is held at most 1 s (or half the
				   * timeout) for its announcement, then refused */

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
	void (*rx_done)(const struct xfer_rx *x, int status, const char *reason);
	int (*rx_room)(void);
	struct xfer_rx **rx;
	int nrx, max;
	uint32_t seg;            /* payload bytes per DATA frame */
	struct xfer_rx *rx_hint; /* last receive lookup */
	struct xfertab *rx_tab;  /* (peer, id) -> entry of rx (find_rx) */
	struct rx_past *past;    /* [PAST_CAP] finished incoming transfers, by slot of past_ring */
	struct xferring past_ring; /* their keys, oldest overwritten first (find_past) */
	/* received payload not yet written: consecutive segments [wr_off, wr_off + wr_len) of wr_x,
	 * pointing into the current rx burst's frames */
	struct xfer_rx *wr_x;
	uint64_t wr_off, wr_len;
	int wr_n;
	struct iovec wr_iov[WR_IOV_MAX];
	struct announce ann;     /* what the scheduler announced (receiver_announce) */
	struct replay_win *seen; /* [n_hosts]: stamps of the transfers each peer opened (frame_auth) */
	uint64_t require;        /* bit c: channel c takes only announced transfers */
} rcv;

int receiver_init(int max, uint32_t seg, void (*rx_done)(const struct xfer_rx *x, int status,
							const char *reason),
		  int (*rx_room)(void))
{
	rcv.rx_done = rx_done;
	rcv.rx_room = rx_room;
	rcv.max = max;
	rcv.seg = seg;
	rcv.require = 0;
	rcv.rx = calloc((size_t)max, sizeof(*rcv.rx));
	rcv.past = calloc(PAST_CAP, sizeof(*rcv.past));
	rcv.seen = calloc((size_t)(dp.cluster.n_hosts > 0 ? dp.cluster.n_hosts : 1), sizeof(*rcv.seen));
	rcv.rx_tab = xfertab_new("rx", (unsigned)max, portio_socket());
	if (!rcv.rx || !rcv.past || !rcv.seen || !rcv.rx_tab ||
	    xferring_init(&rcv.past_ring, "rx_past", PAST_CAP, portio_socket()) ||
	    announce_init(&rcv.ann, dp.cluster.n_hosts > 0 ? dp.cluster.n_hosts : 1, ANNOUNCE_TTL_NS))
		return -ENOMEM;
	return 0;
}

/* How long an unannounced transfer on a channel that requires announcements is held. */
static uint64_t hold_ns(void)
{
	return dp.timeout_ns / 2 < HOLD_MAX_NS ? dp.timeout_ns / 2 : HOLD_MAX_NS;
}

static struct xfer_rx *find_rx(int peer, uint64_t id)
{
	struct xfer_rx *x;

	if (rcv.rx_hint && rcv.rx_hint->id == id && rcv.rx_hint->peer == peer)
		return rcv.rx_hint;
	x = xfertab_get(rcv.rx_tab, peer, id);
	return x ? rcv.rx_hint = x : NULL;
}

/* Incoming transfers one peer may hold at once: a fair share of the table (at least
 * RX_PER_PEER_MIN), so that one host, or frames spoofing it, cannot exhaust it for the others. */
#define RX_PER_PEER_MIN 64
static int per_peer_max(void)
{
	int share = dp.cluster.n_hosts > 1 ? rcv.max / (dp.cluster.n_hosts - 1) : rcv.max;

	return share > RX_PER_PEER_MIN ? share : RX_PER_PEER_MIN < rcv.max ? RX_PER_PEER_MIN : rcv.max;
}

/* Why the first DATA frame of a transfer from @peer cannot start one, or NULL (written into @buf). */
static const char *refuse_rx(int peer, const struct wire_hdr *h, char *buf, size_t len)
{
	int from_peer = 0;

	for (int i = 0; i < rcv.nrx; i++)
		from_peer += rcv.rx[i]->peer == peer;
	if (rcv.nrx >= rcv.max)
		snprintf(buf, len, "receiver refused the transfer: %d incoming transfers already", rcv.max);
	else if (from_peer >= per_peer_max())
		snprintf(buf, len, "receiver refused the transfer: %d incoming transfers from %s already",
			 from_peer, dp_host_name(peer));
	else if (h->total > XFER_MAX_BYTES)
		snprintf(buf, len, "receiver refused the transfer: %llu bytes, at most %llu",
			 (unsigned long long)h->total, XFER_MAX_BYTES);
	else if (h->seg != rcv.seg)
		snprintf(buf, len, "receiver refused the transfer: segment size %u, expected %u",
			 h->seg, rcv.seg);
	else if (h->chan >= XFER_MAX_CHANS)
		snprintf(buf, len, "receiver refused the transfer: channel %u, at most %d", h->chan,
			 XFER_MAX_CHANS - 1);
	else
		return NULL;
	return buf;
}

static struct xfer_rx *new_rx(int peer, const struct wire_hdr *h)
{
	struct xfer_rx *x;
	char why[160];

	if (refuse_rx(peer, h, why, sizeof(why))) {
		static double last;
		if (log_ratelimited(&last, 1.0))
			log_warn("transfer %llx from %s: %s", (unsigned long long)h->id, dp_host_name(peer), why);
		egress_abort(peer, h->id, why);
		return NULL;
	}
	x = calloc(1, sizeof(*x));
	if (!x)
		return NULL;
	/* sealed at its size: the app it goes to may send it on (the app socket requires seals) */
	x->fd = memfd_create("mlfabric-rx", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (x->fd < 0 || ftruncate(x->fd, (off_t)h->total) < 0 ||
	    fcntl(x->fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0 || sack_rx_init(&x->sack, h->total, h->seg) < 0) {
		log_err("transfer %llx from %s: cannot allocate %llu bytes of shared memory: %s",
			(unsigned long long)h->id, dp_host_name(peer), (unsigned long long)h->total, strerror(errno));
		if (x->fd >= 0)
			close(x->fd);
		free(x);
		egress_abort(peer, h->id, "receiver out of memory");
		return NULL;
	}
	placement_bind_fd(x->fd, h->total); /* pages on the port's node, before the first write */
	x->id = h->id;
	x->peer = peer;
	x->chan = h->chan;
	x->bytes = h->total;
	x->state = XFER_ACTIVE;
	x->first_ns = x->last_data_ns = x->last_sack_ns = dp.clk.mono_ns;
	x->announced = announce_take(&rcv.ann, peer, x->chan, x->id, dp.clk.mono_ns) == 1;
	x->held = !x->announced && (rcv.require >> x->chan & 1);
	x->hold_since_ns = x->first_ns;
	if (xfertab_put(rcv.rx_tab, peer, x->id, x) < 0) { /* cannot happen: nrx < max, its size */
		log_err("transfer %llx from %s: receive table full", (unsigned long long)h->id, dp_host_name(peer));
		close(x->fd);
		sack_rx_free(&x->sack);
		free(x);
		egress_abort(peer, h->id, "receiver out of memory");
		return NULL;
	}
	rcv.rx[rcv.nrx++] = x;
	if (x->held)
		dp.cnt.rx_held++;
	dp_xfer_info("xfer %llx: from %s, %llu bytes, channel %u%s", (unsigned long long)x->id, dp_host_name(peer),
		 (unsigned long long)x->bytes, x->chan,
		 x->held ? ", not announced yet: held for its announcement" : "");
	return rcv.rx_hint = x;
}

static void send_sack(struct xfer_rx *x)
{
	uint8_t bm[WIRE_SACK_MAX_BYTES];
	uint64_t cum;
	size_t n;
	struct wire_hdr h = { .type = WIRE_SACK, .id = x->id, .total = x->bytes,
			      .seg = (uint16_t)x->sack.seg };

	if (x->held) /* the sender hears nothing until the transfer is announced */
		return;
	n = sack_rx_build(&x->sack, &cum, bm, sizeof(bm));
	h.offset = cum;
	h.len = (uint32_t)n;
	if (sack_rx_complete(&x->sack))
		h.flags |= WIRE_F_DONE;
	if (x->held_sack)
		h.flags |= WIRE_F_HELD;
	if (egress_now(x->peer, &h, bm) == 0) {
		dp.cnt.tx_sack++;
		dp.cnt.tx_sack_held += x->held_sack ? 1 : 0;
	}
	x->last_sack_ns = dp.clk.mono_ns;
}

static void finish_rx(struct xfer_rx *x, int status, const char *reason)
{
	x->state = status ? XFER_FAILED : XFER_DONE;
	x->end_ns = dp.clk.real_ns;
	x->linger_until_ns = dp.clk.mono_ns + LINGER_FACTOR * dp.timeout_ns;
	if (rcv.wr_x == x) /* a complete transfer was flushed before; a failed one needs no bytes */
		rcv.wr_x = NULL;
	if (status) {
		dp.cnt.xfer_rx_failed++;
		log_warn("xfer %llx from %s failed: %s (%llu of %llu segments received, %llu frames, "
			 "%llu duplicates)", (unsigned long long)x->id, dp_host_name(x->peer), reason,
			 (unsigned long long)x->sack.n_got, (unsigned long long)x->sack.nseg,
			 (unsigned long long)x->frames, (unsigned long long)x->sack.dups);
	} else {
		dp.cnt.xfer_rx_ok++;
		dp_xfer_info("xfer %llx from %s complete: %llu bytes", (unsigned long long)x->id,
			 dp_host_name(x->peer), (unsigned long long)x->bytes);
	}
	rcv.rx_done(x, status, reason); /* takes x->fd */
	x->fd = -1;
	sack_rx_free(&x->sack);
}

/* The newest record of (@peer, @id) in the ring while it lingers, else NULL (an expired newest
 * record hides older ones of the same key, as the newest-first scan this replaced did). */
static struct rx_past *find_past(int peer, uint64_t id)
{
	int k = xferring_find(&rcv.past_ring, peer, id);
	struct rx_past *p = k >= 0 ? &rcv.past[k] : NULL;

	return p && p->until_ns > dp.clk.mono_ns ? p : NULL;
}

static void remember(const struct xfer_rx *x)
{
	rcv.past[xferring_push(&rcv.past_ring, x->peer, x->id)] = (struct rx_past){ .id = x->id, .bytes = x->bytes, .nseg = x->sack.nseg,
		.peer = x->peer, .failed = x->state == XFER_FAILED, .until_ns = x->linger_until_ns,
		.last_sack_ns = x->last_sack_ns };
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
		egress_abort(peer, id, "receiver already failed this transfer");
	else if (egress_now(peer, &d, NULL) == 0)
		dp.cnt.tx_sack++;
}

void receiver_flush(void)
{
	struct xfer_rx *x = rcv.wr_x;
	struct iovec *iov = rcv.wr_iov;
	int n = rcv.wr_n;
	uint64_t off = rcv.wr_off;

	rcv.wr_x = NULL;
	rcv.wr_n = 0;
	rcv.wr_len = 0;
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
			egress_abort(x->peer, x->id, "receiver out of memory");
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

/* Every byte of @x is here (and it is not held): into the memfd, DONE to the sender, to the app. */
static void complete_rx(struct xfer_rx *x)
{
	receiver_flush(); /* every byte is in the memfd before the sender hears DONE */
	if (x->state != XFER_ACTIVE)
		return;
	if (!rcv.rx_room()) {
		/* no room to queue it for the app: the sender must not be told it succeeded */
		const char *why = "receiver's delivery queue is full (apps do not collect transfers)";
		egress_abort(x->peer, x->id, why);
		finish_rx(x, -ENOBUFS, why);
		return;
	}
	send_sack(x);
	finish_rx(x, 0, NULL);
}

/*
 * Would the tagged DATA frame @h from @peer open a transfer it opened before (or one too old to
 * tell)? Then it is a replay, of a capture made after its transfer's linger here ended: dropped
 * without an answer (the real sender is done with that id), counted and logged (docs/security.md
 * "Replays"). Without frame_auth there are no stamps (and no defence: anyone can forge frames).
 */
static int replayed(int peer, const struct wire_hdr *h)
{
	enum replay_verdict v;
	static double last;

	if (!dp.frame_auth || (v = replay_check(&rcv.seen[peer], h->stamp)) == REPLAY_FRESH)
		return 0;
	dp.cnt.rx_reject[WIRE_EREPLAY]++;
	if (log_ratelimited(&last, 5.0))
		log_warn("transfer %llx from %s: correctly tagged DATA with stamp %llx (%s; the newest from "
			 "%s is %llx, the window %d transfers): refused as a replay", (unsigned long long)h->id,
			 dp_host_name(peer), (unsigned long long)h->stamp,
			 v == REPLAY_SEEN ? "a transfer this host already received" :
			 v == REPLAY_STALE ? "older than the window" : "no stamp", dp_host_name(peer),
			 (unsigned long long)rcv.seen[peer].top, REPLAY_WINDOW);
	return 1;
}

void receiver_on_data(int peer, const struct wire_hdr *h, const uint8_t *body)
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
		if (replayed(peer, h) || !(x = new_rx(peer, h)))
			return;
		if (dp.frame_auth)
			replay_mark(&rcv.seen[peer], h->stamp);
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
		if (!x->held && !(h->flags & WIRE_F_RETX))
			x->held_sack = 0; /* a first copy that did not wait: the sender's sample */
		if (rcv.wr_x != x || rcv.wr_off + rcv.wr_len != h->offset || rcv.wr_n == WR_IOV_MAX) {
			receiver_flush();
			if (x->state != XFER_ACTIVE)
				return;
			rcv.wr_x = x;
			rcv.wr_off = h->offset;
		}
		rcv.wr_iov[rcv.wr_n++] = (struct iovec){ .iov_base = (void *)(uintptr_t)body, .iov_len = h->len };
		rcv.wr_len += h->len;
		x->frames++;
	}
	if (x->held) /* nothing is acknowledged or completed before its announcement */
		return;
	if (sack_rx_complete(&x->sack))
		complete_rx(x);
	else if (x->sack.since_sack >= sack_every(x->sack.seg) || (h->flags & WIRE_F_ACKREQ) ||
		 ((x->sack.gap || rc == 0) && dp.clk.mono_ns - x->last_sack_ns > SACK_GAP_NS))
		send_sack(x);
}

int receiver_timers(void)
{
	int changed = 0;
	char reason[APPMSG_REASON_MAX];

	for (int i = 0; i < rcv.nrx; i++) {
		struct xfer_rx *x = rcv.rx[i];
		if (x->state == XFER_ACTIVE) {
			if (x->held && dp.clk.mono_ns - x->hold_since_ns > hold_ns()) {
				snprintf(reason, sizeof(reason), "transfer from %s on channel %u was not "
					 "announced by the scheduler within %.1f s: refused",
					 dp_host_name(x->peer), x->chan, (double)hold_ns() / 1e9);
				static double last;
				if (log_ratelimited(&last, 5.0))
					log_warn("xfer %llx: %s", (unsigned long long)x->id, reason);
				dp.cnt.rx_unannounced++;
				egress_abort(x->peer, x->id, "receiver refused the transfer: not announced "
					     "by the scheduler");
				x->held = 0; /* failed: the late-frame answers are ABORTs */
				finish_rx(x, -EACCES, reason);
				changed = 1;
			} else if (dp.clk.mono_ns - x->last_data_ns > dp.timeout_ns) {
				snprintf(reason, sizeof(reason), "peer %s silent for %.1f s",
					 dp_host_name(x->peer), (double)dp.timeout_ns / 1e9);
				egress_abort(x->peer, x->id, "receiver timed out waiting for data");
				finish_rx(x, -ETIMEDOUT, reason);
				changed = 1;
			} else if (x->sack.since_sack > 0 && dp.clk.mono_ns - x->last_sack_ns > SACK_IDLE_NS) {
				send_sack(x);
			}
		} else {
			/* finished: keep only a small record for late frames */
			remember(x);
			if (rcv.rx_hint == x)
				rcv.rx_hint = NULL;
			xfertab_del(rcv.rx_tab, x->peer, x->id);
			free(x);
			rcv.rx[i--] = rcv.rx[--rcv.nrx];
			changed = 1;
		}
	}
	return changed;
}

void receiver_fail_all(void)
{
	for (int i = 0; i < rcv.nrx; i++) {
		struct xfer_rx *x = rcv.rx[i];
		if (x->state == XFER_ACTIVE) {
			egress_abort(x->peer, x->id, "receiver dataplane shutting down");
			finish_rx(x, -ECANCELED, "dataplane shutting down");
		}
	}
}

void receiver_free(void)
{
	for (int i = 0; i < rcv.nrx; i++)
		free(rcv.rx[i]);
	rcv.nrx = 0;
	free(rcv.rx);
	free(rcv.past);
	free(rcv.seen);
	xfertab_free(rcv.rx_tab);
	rcv.rx_tab = NULL;
	xferring_free(&rcv.past_ring);
	rcv.rx = NULL;
	rcv.past = NULL;
	rcv.seen = NULL;
	/* a later receiver_init starts clean: no lookup hint or pending write into the freed
	 * transfers, no finished ones remembered (found by fuzz_appif, which restarts the transport) */
	rcv.rx_hint = NULL;
	rcv.wr_x = NULL;
	rcv.wr_n = 0;
	rcv.wr_len = 0;
	announce_free(&rcv.ann);
	rcv.require = 0;
}

int receiver_busy(uint64_t id)
{
	for (int i = 0; i < rcv.nrx; i++)
		if (rcv.rx[i]->id == id && rcv.rx[i]->state == XFER_ACTIVE)
			return 1;
	return 0;
}

int receiver_active(void)
{
	int n = 0;

	for (int i = 0; i < rcv.nrx; i++)
		n += rcv.rx[i]->state == XFER_ACTIVE;
	return n;
}

int receiver_stats(struct xfer_stat *out, int max)
{
	int n = 0;

	for (int i = 0; i < rcv.nrx && n < max; i++, n++) {
		struct xfer_rx *x = rcv.rx[i];
		uint64_t got = x->sack.n_got * x->sack.seg;
		out[n] = (struct xfer_stat){ .id = x->id, .outgoing = 0, .peer = x->peer,
			.state = x->state, .bytes = x->bytes,
			.done_bytes = x->state == XFER_DONE ? x->bytes : got < x->bytes ? got : x->bytes,
			.frames = x->frames };
	}
	return n;
}

int receiver_abort(int peer, uint64_t id, const char *reason)
{
	struct xfer_rx *r = find_rx(peer, id);

	if (r && r->state == XFER_ACTIVE)
		finish_rx(r, -ECONNABORTED, reason);
	return r || find_past(peer, id);
}

/* Held transfer @x may go on (@why: "announced" or "no longer required"): SACK, complete. */
static void release_rx(struct xfer_rx *x, const char *why)
{
	x->held = 0;
	/* the arrivals the next SACKs report waited here: no RTT sample from them (the first such
	 * SACK may be lost, so every one until a new segment's first copy arrives) */
	x->held_sack = 1;
	dp_xfer_info("xfer %llx from %s: %s after %.3f s held", (unsigned long long)x->id,
		 dp_host_name(x->peer), why, (double)(dp.clk.mono_ns - x->hold_since_ns) / 1e9);
	if (sack_rx_complete(&x->sack))
		complete_rx(x);
	else
		send_sack(x);
}

int receiver_announce(int peer, unsigned chan, uint64_t id)
{
	struct xfer_rx *x = find_rx(peer, id);
	int rc;

	if (x && x->state == XFER_ACTIVE && x->chan == chan) {
		/* it came before its announcement: release it */
		x->announced = 1;
		if (x->held)
			release_rx(x, "announced");
		return 0;
	}
	rc = announce_add(&rcv.ann, peer, chan, id, dp.clk.mono_ns);
	return rc;
}

int receiver_announce_standing(int peer, unsigned chan, int on)
{
	int rc = announce_standing(&rcv.ann, peer, chan, on);

	for (int i = 0; rc == 0 && on && i < rcv.nrx; i++) {
		struct xfer_rx *x = rcv.rx[i];
		if (x->peer == peer && x->chan == chan && x->state == XFER_ACTIVE && !x->announced)
			receiver_announce(peer, chan, x->id);
	}
	return rc;
}

void receiver_require_announce(unsigned chan, int on)
{
	if (chan >= XFER_MAX_CHANS)
		return;
	if (on)
		rcv.require |= 1ULL << chan;
	else
		rcv.require &= ~(1ULL << chan);
	/* transfers in flight follow the channel's new rule: held from now on, or released */
	for (int i = 0; i < rcv.nrx; i++) {
		struct xfer_rx *x = rcv.rx[i];
		if (x->chan != chan || x->state != XFER_ACTIVE || x->announced)
			continue;
		if (on && !x->held) {
			x->held = 1;
			x->hold_since_ns = dp.clk.mono_ns;
			dp.cnt.rx_held++;
		} else if (!on && x->held) {
			release_rx(x, "no longer required to be announced");
		}
	}
}

int receiver_announce_required(unsigned chan)
{
	return chan < XFER_MAX_CHANS && (rcv.require >> chan & 1);
}
