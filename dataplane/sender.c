/* sender.c - outgoing transfers: paced segmentation, retransmission on SACKs, keepalives, timeouts. */
#define _GNU_SOURCE
#include "sender.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dp.h"
#include "egress.h"
#include "log.h"
#include "portio.h"
#include "replay.h"
#include "xfertab.h"

#define PACE_BURST_S 16e-3       /* pacing credit cap in seconds of the current rate: a loop
                                  * descheduled for up to this long on a shared core catches up
                                  * (credit never exceeds the schedule's cumulative bytes) */
#define TX_BURST 128             /* DATA frames per transfer per loop: one sendto kicks them all */
#define RX_RING_SEGS DP_WINDOW_SEGS /* unacknowledged segments in flight per host: half of the
                                  * receiver's rx ring (dp.h; af_packet: framecnt=4096) */

static struct {
	void (*tx_done)(const struct xfer_tx *x, int status);
	struct xfer_tx **tx;
	struct xfertab *tx_tab;  /* id -> entry of tx (find_tx) */
	int ntx, max;
	int rr;                  /* round-robin position in tx */
	uint64_t next_id;
	uint32_t seg;            /* payload bytes per DATA frame */
	struct replay_tx *stamps; /* [n_hosts]: the transfer stamps given each destination */
} snd;

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

int sender_init(int max, uint32_t seg, void (*tx_done)(const struct xfer_tx *x, int status))
{
	snd.tx_done = tx_done;
	snd.max = max;
	snd.seg = seg;
	snd.tx = calloc((size_t)max, sizeof(*snd.tx));
	snd.stamps = calloc((size_t)(dp.cluster.n_hosts > 0 ? dp.cluster.n_hosts : 1), sizeof(*snd.stamps));
	snd.tx_tab = xfertab_new("tx", (unsigned)max, portio_socket());
	if (!snd.tx || !snd.stamps || !snd.tx_tab)
		return -ENOMEM;
	/* ids survive a restart: a receiver may still remember the ids of the previous run */
	snd.next_id = (dp.clk.real_ns / 1000) & ((1ULL << 48) - 1);
	return 0;
}

static struct xfer_tx *find_tx(uint64_t id)
{
	return xfertab_get(snd.tx_tab, 0, id);
}

/* The silence either end of @x tolerates: the shorter of the transfer's and the dataplane's
 * --timeout (the receiver's, taken to be ours). */
static uint64_t silence_ns(const struct xfer_tx *x)
{
	return x->timeout_ns < dp.timeout_ns ? x->timeout_ns : dp.timeout_ns;
}

uint64_t sender_submit(const struct appmsg *m, int fd, uint64_t owner, char *err, size_t errlen)
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
	if (fstat(fd, &st) < 0 || m->bytes == 0 || m->bytes > XFER_MAX_BYTES ||
	    m->n > PACER_MAX_STEPS || m->chan >= XFER_MAX_CHANS ||
	    m->offset > (uint64_t)st.st_size || m->bytes > (uint64_t)st.st_size - m->offset) {
		snprintf(err, errlen, "bad transfer to %s: %llu bytes at offset %llu, %u rate steps "
			 "(max %d), channel %u (max %d), buffer of %lld bytes", name,
			 (unsigned long long)m->bytes, (unsigned long long)m->offset, m->n, PACER_MAX_STEPS,
			 m->chan, XFER_MAX_CHANS - 1, (long long)st.st_size);
		close(fd);
		return 0;
	}
	if (snd.ntx >= snd.max) {
		snprintf(err, errlen, "too many transfers in flight (%d)", snd.max);
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
		steps[i].gbps = m->u.steps[i].gbps * egress_frame_len(snd.seg) / snd.seg;
	}
	for (int i = 0; i < m->n; i++)
		if (steps[i].gbps > 0)
			tail_gbps = steps[i].gbps;
	x->tail_gbps = tail_gbps;
	tbucket_init(&x->tail, tail_gbps, 2.0 * egress_frame_len(snd.seg), dp.hz, dp.clk.tsc);
	rc = pacer_init(&x->pacer, x->start_tsc, dp.hz, steps, m->n, PACE_BURST_S, 2.0 * egress_frame_len(snd.seg));
	if (rc == 0)
		rc = sack_tx_init(&x->sack, x->bytes, snd.seg, dp.clk.mono_ns);
	/* silent tail probes keep the receiver, which fails a transfer after its --timeout (taken
	 * to be ours) without DATA, hearing from us */
	x->sack.prm.probe_max_ns = silence_ns(x) / SACK_PROBE_DIV;
	x->sack.prm.rto_max_ns = silence_ns(x) / SACK_RTO_MAX_DIV;
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
	do /* a generated id skips one an app chose for a transfer still in the table */
		x->id = m->id ? m->id : ((uint64_t)(dp.me + 1) << 48) | (snd.next_id++ & ((1ULL << 48) - 1));
	while (!m->id && find_tx(x->id));
	if (xfertab_put(snd.tx_tab, 0, x->id, x) < 0) { /* cannot happen: ntx < max, its size */
		snprintf(err, errlen, "transfer table full");
		munmap(x->map, x->map_len);
		sack_tx_free(&x->sack);
		free(x);
		return 0;
	}
	x->ext = portio_extmem_new(x->map, x->map_len);
	snd.tx[snd.ntx++] = x;
	dp_xfer_info("xfer %llx: to %s, %llu bytes, start in %.3f ms, %d rate steps", (unsigned long long)x->id,
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
		/* the sender's state at the failure: enough to tell a starved pacer, a silent way
		 * back and an inflated RTO apart when reading a run afterwards */
		log_warn("xfer %llx to %s failed: %s (%llu of %llu segments acknowledged, %llu sent, "
			 "%llu retransmits, %llu SACKs, %llu rate cuts, scale %.3f, srtt %.1f ms, "
			 "rto %.1f ms (unbounded %.1f), tail backoff %u, last frame %.0f ms ago)",
			 (unsigned long long)x->id, dp_host_name(x->peer), x->reason,
			 (unsigned long long)x->sack.n_acked, (unsigned long long)x->sack.nseg,
			 (unsigned long long)x->sack.next_new, (unsigned long long)x->sack.retransmits,
			 (unsigned long long)x->sack.sacks, (unsigned long long)x->pacer.cuts,
			 x->pacer.scale, x->sack.srtt_us / 1e3, (double)sack_tx_rto_ns(&x->sack) / 1e6,
			 (x->sack.srtt_us + 4 * x->sack.rttvar_us) / 1e3,
			 x->sack.tail_backoff,
			 x->frames ? (double)(dp.clk.mono_ns - x->last_tx_mono) / 1e6 : -1.0);
	} else {
		dp.cnt.xfer_tx_ok++;
		dp_xfer_info("xfer %llx to %s complete: %llu bytes, %.3f Gbit/s, %llu retransmits, %llu "
			     "rate cuts (losses: %llu random, %llu congestion)", (unsigned long long)x->id,
			     dp_host_name(x->peer), (unsigned long long)x->bytes,
			 x->bytes * 8.0 / (double)(x->end_ns - x->first_tx_ns + 1),
			 (unsigned long long)x->sack.retransmits, (unsigned long long)x->pacer.cuts,
			 (unsigned long long)x->loss.random, (unsigned long long)x->loss.congested);
	}
	snd.tx_done(x, status);
}

static void free_tx(int i)
{
	struct xfer_tx *x = snd.tx[i];

	if (x->ext)
		portio_extmem_release(x->ext); /* unmapped once no queued frame points into it */
	else
		munmap(x->map, x->map_len);
	xfertab_del(snd.tx_tab, 0, x->id);
	sack_tx_free(&x->sack);
	free(x);
	snd.tx[i] = snd.tx[--snd.ntx];
}

/*
 * The schedule ended in a pause (its last step is 0) with everything sent once but holes left:
 * 1 when one repair frame of @bytes may go now at the last non-zero rate of the schedule times
 * the pacer's loss scale (docs/dataplane.md "Loss response"). Before 2026-11-27 repairs kept the
 * full rate and never cut it, so a leg commanded at 10 Mbit/s over a 1 Mbit/s link resent its
 * holes at 10x the link's rate in every round.
 */
static int tail_repair(struct xfer_tx *x, uint32_t bytes)
{
	double gbps = x->tail_gbps * x->pacer.scale;

	if (x->sack.next_new < x->sack.nseg || x->sack.done || !(x->tail_gbps > 0) ||
	    pacer_gbps_at(&x->pacer, dp.clk.tsc, dp.hz) != 0)
		return 0;
	if (x->tail.gbps != gbps)
		tbucket_set_rate(&x->tail, gbps, dp.clk.tsc); /* refills at the old rate first */
	else
		tbucket_refill(&x->tail, dp.clk.tsc);
	return tbucket_take(&x->tail, bytes);
}

/* One round trip of @x in TSC ticks for the pacer's loss response: its smoothed RTT, at least
 * 1 ms (no sample yet, or a loopback-fast path: one cut per loss burst, not per frame). */
static uint64_t rtt_ticks(const struct xfer_tx *x)
{
	double us = x->sack.srtt_us > 1000.0 ? x->sack.srtt_us : 1000.0;
	return (uint64_t)(us * dp.hz / 1e6);
}

static void refund(struct xfer_tx *x, int repair, uint32_t bytes)
{
	if (repair)
		tbucket_refund(&x->tail, bytes);
	else
		pacer_refund(&x->pacer, bytes);
}

/* The stamp of @x's frames (tagged frames only): given at its first frame, so a destination sees
 * the stamps of one sender in the order the transfers began to arrive (docs/security.md "Replays"). */
static uint64_t tx_stamp(struct xfer_tx *x)
{
	if (!dp.frame_auth)
		return 0;
	if (!x->stamp)
		x->stamp = replay_next(&snd.stamps[x->peer], dp.clk.real_ns);
	return x->stamp;
}

/* Sends what one transfer may send now; returns frames queued, -1 when the port is full. */
static int tx_one(struct xfer_tx *x, unsigned budget)
{
	uint32_t full = egress_frame_len(snd.seg);
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
	if (x->state != XFER_ACTIVE || !egress_ready(x->peer))
		return 0;
	pacer_advance(&x->pacer, dp.clk.tsc);
	egress_addr(x->peer, &a);
	while ((unsigned)n < budget) {
		struct wire_hdr h = { .type = WIRE_DATA, .chan = x->chan, .seg = (uint16_t)snd.seg,
				      .id = x->id, .total = x->bytes, .stamp = tx_stamp(x) };
		struct rte_mbuf *f;
		uint8_t *p;
		int retx = 0, repair = 0;
		int64_t s;
		uint64_t moff;

		if (!pacer_allow(&x->pacer, full) && !(repair = tail_repair(x, full)))
			break;
		if (!egress_take(full)) {
			refund(x, repair, full);
			return -1;
		}
		s = sack_tx_next(&x->sack, dp.clk.mono_ns, &retx);
		if (s < 0) {
			refund(x, repair, full);
			egress_refund(full);
			break;
		}
		h.offset = (uint64_t)s * snd.seg;
		h.len = sack_seg_len(x->bytes, snd.seg, (uint64_t)s);
		h.flags = (retx ? WIRE_F_RETX | WIRE_F_ACKREQ : 0) | dp_tx_flags();
		p = x->ext ? portio_tx_alloc_ext((uint16_t)wire_body_off(h.flags), x->ext, x->data + h.offset,
						 (uint16_t)h.len, &f) :
			     portio_tx_alloc((uint16_t)egress_frame_len(h.len), &f);
		if (!p)
			return -1; /* the segment counts as sent; loss recovery resends it */
		moff = (uint64_t)(x->data - (const uint8_t *)x->map) + h.offset + h.len;
		if (moff > x->populated)
			populate(x->map, x->map_len, &x->populated, moff, MADV_POPULATE_READ);
		if (!x->ext)
			memcpy(p + wire_body_off(h.flags), x->data + h.offset, h.len);
		wire_encode(p, &a, &h);
		egress_sign(p, &a, x->data + h.offset, h.len);
		portio_tx_send(f, dp.clk.tsc);
		x->last_tx_mono = dp.clk.mono_ns;
		if (!x->first_tx_ns)
			x->first_tx_ns = dp.clk.real_ns;
		x->frames++;
		dp.cnt.tx_data++;
		dp.cnt.tx_retx += (uint64_t)retx;
		/* a loss of a segment first sent after the last cut, or of a copy resent after it,
		 * while the path queues or loses in bursts: the links carry less than the commanded
		 * rate x scale (losses of copies sent before the cut belong to the episode already
		 * cut for; a silent tail's probe is no evidence of loss; random loss, with flat
		 * round trips and few losses, is no congestion: docs/dataplane.md "Loss response") */
		if (!retx)
			lossresp_sent(&x->loss);
		if (retx && !x->sack.last_probe && lossresp_lost(&x->loss) &&
		    ((uint64_t)s >= x->recover_seg || x->sack.prev_sent_ns >= x->cut_ns) &&
		    pacer_on_loss(&x->pacer, dp.clk.tsc, rtt_ticks(x))) {
			x->recover_seg = x->sack.next_new;
			x->cut_ns = dp.clk.mono_ns;
			dp.cnt.tx_rate_cuts++;
		}
		n++;
	}
	return n;
}

unsigned sender_tx(int active)
{
	unsigned sent = 0;

	egress_refill();
	/* the window shares the receivers' rx rings between concurrent transfers */
	uint64_t window = RX_RING_SEGS / (uint64_t)(active > 0 ? active : 1);

	if (window < 64)
		window = 64;
	for (int k = 0; k < snd.ntx; k++) {
		int i = (snd.rr + k) % snd.ntx, rc;
		unsigned room = portio_tx_room();
		if (room == 0)
			break;
		snd.tx[i]->sack.prm.window = window;
		rc = tx_one(snd.tx[i], room < TX_BURST ? room : TX_BURST);
		if (rc < 0)
			break;
		sent += (unsigned)rc;
	}
	if (snd.ntx)
		snd.rr = (snd.rr + 1) % snd.ntx;
	return sent;
}

void sender_on_sack(int peer, const struct wire_hdr *h, const uint8_t *body)
{
	struct xfer_tx *x = find_tx(h->id);

	dp.cnt.rx_sack++;
	if (!x || x->peer != peer) {
		dp.cnt.rx_stray++;
		return;
	}
	if (x->state != XFER_ACTIVE)
		return;
	dp.cnt.rx_sack_held += h->flags & WIRE_F_HELD ? 1 : 0;
	uint64_t samples = x->sack.rtt_samples;
	int acked = sack_tx_on_sack(&x->sack, h->offset, body, h->len,
				    (h->flags & WIRE_F_DONE ? SACK_DONE : 0) |
				    (h->flags & WIRE_F_HELD ? SACK_HELD : 0), dp.clk.mono_ns);
	if (x->sack.rtt_samples != samples)
		lossresp_rtt(&x->loss, x->sack.last_rtt_us);
	if (acked < 0)
		dp.cnt.rx_reject[WIRE_ELEN]++;
	else if (acked > 0)
		pacer_on_progress(&x->pacer, dp.clk.tsc, rtt_ticks(x));
	if (x->sack.done)
		finish_tx(x, 0, NULL);
}

/*
 * A transfer paused by a rate step of 0 sends nothing, so both ends would take the other for
 * dead: every timeout/3 of silence, resend segment 0 asking for a SACK (a harmless duplicate).
 * The receiver fails after its own --timeout, so the shorter of the two timeouts counts.
 */
static void keepalive(struct xfer_tx *x)
{
	struct wire_hdr h = { .type = WIRE_DATA, .flags = WIRE_F_RETX | WIRE_F_ACKREQ, .chan = x->chan,
			      .seg = (uint16_t)snd.seg, .id = x->id, .total = x->bytes, .stamp = tx_stamp(x) };

	if (dp.clk.mono_ns - x->last_tx_mono < silence_ns(x) / 3)
		return;
	h.len = sack_seg_len(x->bytes, snd.seg, 0);
	if (egress_now(x->peer, &h, x->data) == 0)
		x->last_tx_mono = dp.clk.mono_ns;
}

int sender_timers(void)
{
	int changed = 0;
	char reason[APPMSG_REASON_MAX];

	for (int i = 0; i < snd.ntx; i++) {
		struct xfer_tx *x = snd.tx[i];
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
					 dp_host_name(x->peer), (double)x->timeout_ns / 1e9);
				egress_abort(x->peer, x->id, "sender timed out waiting for acknowledgements");
				finish_tx(x, -ETIMEDOUT, reason);
			}
		}
		if (x->state == XFER_DONE || x->state == XFER_FAILED) {
			free_tx(i--);
			changed = 1;
		}
	}
	return changed;
}

void sender_cancel(uint64_t owner)
{
	for (int i = 0; i < snd.ntx; i++) {
		struct xfer_tx *x = snd.tx[i];
		if (x->owner != owner)
			continue;
		if (x->state == XFER_WAITING || x->state == XFER_ACTIVE) {
			egress_abort(x->peer, x->id, "sending application went away");
			finish_tx(x, -ECANCELED, "sending application went away");
		}
	}
}

void sender_fail_all(void)
{
	for (int i = 0; i < snd.ntx; i++) {
		struct xfer_tx *x = snd.tx[i];
		if (x->state == XFER_WAITING || x->state == XFER_ACTIVE) {
			egress_abort(x->peer, x->id, "sender dataplane shutting down");
			finish_tx(x, -ECANCELED, "dataplane shutting down");
		}
	}
}

#define GRAIN_FRAMES 32.0 /* a paced transfer wakes the loop at most once per this many frames */

uint64_t sender_next_due_ns(uint64_t grain_ns, uint64_t poll_ns)
{
	uint32_t full = egress_frame_len(snd.seg);
	uint64_t best = UINT64_MAX, shaper = egress_wait_ns(full);

	for (int i = 0; i < snd.ntx; i++) {
		struct xfer_tx *x = snd.tx[i];
		uint64_t d, w;
		double gbps;

		if (x->state == XFER_WAITING) {
			d = x->start_ns > dp.clk.real_ns ? x->start_ns - dp.clk.real_ns : 0;
		} else if (x->state != XFER_ACTIVE) {
			continue;
		} else if (x->sack.done || x->sack.next_new >= x->sack.nseg) {
			d = grain_ns;
		} else if (x->pacer.n_steps == 0) {
			d = shaper > poll_ns ? shaper : poll_ns;
		} else {
			uint64_t g = grain_ns;
			gbps = pacer_gbps_at(&x->pacer, dp.clk.tsc, dp.hz);
			if (gbps > 0 && GRAIN_FRAMES * full * 8.0 / gbps < (double)g)
				g = (uint64_t)(GRAIN_FRAMES * full * 8.0 / gbps);
			w = pacer_wait_ticks(&x->pacer, full);
			d = w == UINT64_MAX ? grain_ns : (uint64_t)((double)w * 1e9 / dp.hz);
			if (d < shaper)
				d = shaper;
			if (d < g)
				d = g;
		}
		if (d < best)
			best = d;
	}
	return best;
}

int sender_active(void)
{
	int n = 0;

	for (int i = 0; i < snd.ntx; i++)
		n += snd.tx[i]->state <= XFER_ACTIVE;
	return n;
}

int sender_stats(struct xfer_stat *out, int max)
{
	int n = 0;

	for (int i = 0; i < snd.ntx && n < max; i++, n++) {
		struct xfer_tx *x = snd.tx[i];
		uint64_t acked = x->sack.n_acked * snd.seg;
		out[n] = (struct xfer_stat){ .id = x->id, .outgoing = 1, .peer = x->peer,
			.state = x->state, .bytes = x->bytes, .done_bytes = acked < x->bytes ? acked : x->bytes,
			.frames = x->frames, .retransmits = x->sack.retransmits,
			.gbps_cmd = pacer_gbps_at(&x->pacer, dp.clk.tsc, dp.hz),
			.srtt_us = x->sack.rtt_samples ? x->sack.srtt_us : 0,
			.first_ns = x->first_tx_ns, .end_ns = x->state >= XFER_DONE ? x->end_ns : 0 };
	}
	return n;
}

int sender_abort(int peer, uint64_t id, const char *reason)
{
	struct xfer_tx *t = find_tx(id);

	if (t && t->peer == peer && (t->state == XFER_ACTIVE || t->state == XFER_WAITING))
		finish_tx(t, -ECONNABORTED, reason);
	return t != NULL;
}

void sender_free(void)
{
	while (snd.ntx)
		free_tx(0);
	free(snd.tx);
	free(snd.stamps);
	xfertab_free(snd.tx_tab);
	snd.tx_tab = NULL;
	snd.tx = NULL;
	snd.stamps = NULL;
}
