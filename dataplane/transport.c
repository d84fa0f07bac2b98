/* transport.c - the transfer engine's face to the loop: frame dispatch, timers and tables of both directions. */
#define _GNU_SOURCE
#include "transport.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "dp.h"
#include "egress.h"
#include "log.h"
#include "neigh.h"
#include "portio.h"
#include "receiver.h"
#include "sender.h"

static const struct transport_ops *ops; /* upward notifications (transport_init) */

int transport_init(int max_xfers, const struct transport_ops *o)
{
	uint32_t seg = wire_seg_payload(dp.cluster.mtu) - wire_tag_len(dp_tx_flags());
	int rx_rc;

	ops = o;
	egress_init();
	rx_rc = receiver_init(max_xfers, seg, o->rx_done, o->rx_room);
	if (sender_init(max_xfers, seg, o->tx_done) < 0 || rx_rc < 0)
		return -ENOMEM;
	return 0;
}

uint64_t transport_submit(const struct appmsg *m, int fd, uint64_t owner, char *err, size_t errlen)
{
	return sender_submit(m, fd, owner, err, errlen);
}

void transport_set_shaper(double gbps)
{
	egress_set_shaper(gbps);
}

/* ABORT from @peer: fail the transfer of that id in both directions; an id this host never saw
 * may still be awaited by an app's commit order (ops->rx_aborted). */
static void on_abort(int peer, const struct wire_hdr *h, const uint8_t *body)
{
	char why[96], reason[APPMSG_REASON_MAX];
	size_t n = h->len < sizeof(why) - 1 ? h->len : sizeof(why) - 1;
	int known;

	dp.cnt.rx_abort++;
	for (size_t i = 0; i < n; i++)
		why[i] = body[i] >= 32 && body[i] < 127 ? (char)body[i] : '?';
	why[n] = '\0';
	snprintf(reason, sizeof(reason), "peer %s aborted: %s", dp_host_name(peer), why);
	known = sender_abort(peer, h->id, reason);
	known |= receiver_abort(peer, h->id, reason);
	if (!known)
		ops->rx_aborted(peer, h->id, reason); /* aborted before its first frame reached us */
}

/* Is the tag of the frame from @peer (header @h, body @body, source @src) the cluster key's? */
static int frame_tag_ok(int peer, const struct wire_hdr *h, uint32_t src, const uint8_t *body)
{
	const uint8_t *hdr = body - WIRE_TAG_LEN - WIRE_MLF_LEN;

	(void)peer;
	return (h->flags & (WIRE_F_AUTH | WIRE_F_CHACHA)) == dp_tx_flags() &&
	       auth_frame_check(dp.frame_auth, src, dp.cluster.hosts[dp.me].ip, hdr, WIRE_MLF_LEN + WIRE_STAMP_LEN,
				body, h->len, body - WIRE_MAC_LEN - WIRE_NONCE_LEN, body - WIRE_MAC_LEN) == 0;
}

/* Why the tag of a frame with header flags @flags was refused, for the log. */
static const char *frame_tag_why(uint16_t flags)
{
	if (!(flags & WIRE_F_AUTH))
		return "has no tag";
	if ((flags & WIRE_F_CHACHA) != (dp_tx_flags() & WIRE_F_CHACHA))
		return flags & WIRE_F_CHACHA ? "has a chacha20-poly1305 tag, but this cluster's frame_mac is "
					       "aes256-gcm (the hosts read different cluster files)" :
					       "has an aes256-gcm tag, but this cluster's frame_mac is "
					       "chacha20-poly1305 (the hosts read different cluster files)";
	return "has a wrong tag";
}

void transport_rx(const uint8_t *frame, uint16_t len)
{
	struct wire_hdr h;
	uint32_t src;
	const uint8_t *body;
	enum wire_err e = wire_parse(frame, len, dp.cluster.hosts[dp.me].ip, dp.cluster.udp_port, &h,
				     &src, &body);
	int peer;

	if (neigh_rx(frame, len))
		return; /* ARP: answered or learned from (neigh.c) */
	if (e != WIRE_OK) {
		dp.cnt.rx_reject[e]++;
		return;
	}
	peer = cluster_find_ip(&dp.cluster, src);
	if (peer < 0 || peer == dp.me || memcmp(frame + 6, dp.cluster.hosts[peer].mac, 6) != 0) {
		static double last;
		dp.cnt.rx_reject[WIRE_EPEER]++;
		if (peer >= 0 && peer != dp.me && log_ratelimited(&last, 5.0))
			log_warn("frame claiming to be from %s came from MAC %02x:%02x:%02x:%02x:%02x:%02x, not "
				 "its configured address: dropped (spoofed, or a wrong mac in the cluster config)",
				 dp_host_name(peer), frame[6], frame[7], frame[8], frame[9], frame[10], frame[11]);
		return;
	}
	if (dp.frame_auth && !frame_tag_ok(peer, &h, src, body)) {
		static double last;
		dp.cnt.rx_reject[WIRE_EAUTH]++;
		if (log_ratelimited(&last, 5.0))
			log_warn("frame from %s (%s, transfer %llx) %s: dropped (forged, corrupt, or the peer "
				 "runs without frame_auth or with another key)", dp_host_name(peer),
				 h.type == WIRE_DATA ? "DATA" : h.type == WIRE_SACK ? "SACK" : "ABORT",
				 (unsigned long long)h.id, frame_tag_why(h.flags));
		return;
	}
	switch (h.type) {
	case WIRE_DATA:
		receiver_on_data(peer, &h, body);
		break;
	case WIRE_SACK:
		sender_on_sack(peer, &h, body);
		break;
	case WIRE_ABORT:
		on_abort(peer, &h, body);
		break;
	}
}

void transport_rx_flush(void)
{
	receiver_flush();
}

unsigned transport_tx(void)
{
	return sender_tx(transport_active());
}

int transport_timers(void)
{
	int changed = sender_timers();

	return receiver_timers() | changed;
}

void transport_cancel(uint64_t owner)
{
	sender_cancel(owner);
}

void transport_shutdown(void)
{
	sender_fail_all();
	receiver_fail_all();
	portio_flush(dp.clk.tsc);
	sender_free();
	receiver_free();
}

int transport_rx_busy(uint64_t id)
{
	return receiver_busy(id);
}

int transport_announce(int peer, unsigned chan, uint64_t id, int on)
{
	if (peer < 0 || peer >= dp.cluster.n_hosts || peer == dp.me || chan >= XFER_MAX_CHANS)
		return -EINVAL;
	return id ? receiver_announce(peer, chan, id) : receiver_announce_standing(peer, chan, on);
}

void transport_require_announce(unsigned chan, int on)
{
	receiver_require_announce(chan, on);
}

int transport_announce_required(unsigned chan)
{
	return receiver_announce_required(chan);
}

uint64_t transport_next_due_ns(uint64_t grain_ns, uint64_t rx_ns, uint64_t poll_ns)
{
	uint64_t d = sender_next_due_ns(grain_ns, poll_ns);

	if (receiver_active() && rx_ns < d)
		d = rx_ns;
	if (portio_holding() && poll_ns < d)
		d = poll_ns;
	return d;
}

int transport_active(void)
{
	return sender_active() + receiver_active();
}

int transport_stats(struct xfer_stat *out, int max)
{
	int n = sender_stats(out, max);

	return n + receiver_stats(out + n, max - n);
}
