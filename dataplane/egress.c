/* egress.c - this host's end of the links: frame addressing, the port's egress shaper, frames sent at once. */
#include "egress.h"

#include <errno.h>
#include <string.h>

#include "dp.h"
#include "log.h"
#include "neigh.h"
#include "portio.h"
#include "tbucket.h"

#define SHAPER_BURST_S 2e-3      /* shaper depth in seconds of its rate, like tc tbf's burst */
#define SHAPER_MIN_DEPTH 65536.0  /* bytes */

static struct tbucket shaper;

void egress_init(void)
{
	tbucket_init(&shaper, 0, SHAPER_MIN_DEPTH, dp.hz, dp.clk.tsc);
}

uint32_t egress_frame_len(uint32_t payload)
{
	return wire_body_off(dp_tx_flags()) + payload;
}

int egress_sign(uint8_t *frame, const struct wire_addr *a, const void *body, uint32_t len)
{
	uint8_t *m = frame + WIRE_ETH_LEN + WIRE_IP_LEN + WIRE_UDP_LEN;

	if (!dp.frame_auth)
		return 0;
	return auth_frame_tag(dp.frame_auth, a->src_ip, a->dst_ip, m, WIRE_MLF_LEN + WIRE_STAMP_LEN, body, len,
			      m + WIRE_MLF_LEN + WIRE_STAMP_LEN, m + WIRE_MLF_LEN + WIRE_STAMP_LEN + WIRE_NONCE_LEN);
}

int egress_ready(int peer)
{
	return neigh_ready(peer);
}

void egress_addr(int peer, struct wire_addr *a)
{
	const struct cluster_host *me = &dp.cluster.hosts[dp.me], *h = &dp.cluster.hosts[peer];

	memcpy(a->src_mac, dp.my_mac, 6);
	memcpy(a->dst_mac, h->mac, 6);
	a->src_ip = me->ip;
	a->dst_ip = h->ip;
	a->udp_port = dp.cluster.udp_port;
}

int egress_now(int peer, struct wire_hdr *h, const void *body)
{
	struct wire_addr a;
	struct rte_mbuf *f;
	uint8_t *p;

	if (!neigh_ready(peer))
		return -EHOSTUNREACH;
	p = portio_tx_alloc((uint16_t)egress_frame_len(h->len), &f);
	if (!p)
		return -ENOBUFS;
	egress_addr(peer, &a);
	h->flags |= dp_tx_flags();
	if (h->len)
		memcpy(p + wire_body_off(h->flags), body, h->len);
	wire_encode(p, &a, h);
	egress_sign(p, &a, p + wire_body_off(h->flags), h->len);
	tbucket_force(&shaper, egress_frame_len(h->len));
	portio_tx_send(f, dp.clk.tsc);
	return 0;
}

void egress_abort(int peer, uint64_t id, const char *why)
{
	struct wire_hdr h = { .type = WIRE_ABORT, .id = id, .len = (uint32_t)strlen(why) };

	if (egress_now(peer, &h, why) == 0)
		dp.cnt.tx_abort++;
}

void egress_set_shaper(double gbps)
{
	double depth = gbps * 1e9 / 8 * SHAPER_BURST_S;

	/* deep enough to ride out a short deschedule of the loop, shallow enough to stay a shaper */
	shaper.burst = depth > SHAPER_MIN_DEPTH ? depth : SHAPER_MIN_DEPTH;
	tbucket_set_rate(&shaper, gbps, dp.clk.tsc);
	if (gbps > 0)
		log_info("shaper: egress limited to %.3f Gbit/s, depth %.0f bytes", gbps, shaper.burst);
	else
		log_info("shaper: egress unlimited");
}

void egress_refill(void)
{
	tbucket_refill(&shaper, dp.clk.tsc);
}

int egress_take(uint32_t bytes)
{
	return tbucket_take(&shaper, bytes);
}

uint64_t egress_wait_ns(uint32_t bytes)
{
	tbucket_refill(&shaper, dp.clk.tsc);
	return (uint64_t)((double)tbucket_wait_ticks(&shaper, bytes) * 1e9 / dp.hz);
}

void egress_refund(uint32_t bytes)
{
	tbucket_refund(&shaper, bytes);
}
