/* neigh.c - the dataplane's neighbours: ARP answers, gratuitous ARP, peers' MACs resolved and learned. */
#include "neigh.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "arp.h"
#include "dp.h"
#include "log.h"
#include "portio.h"

#define ARP_MIN_FRAME 60 /* Ethernet minimum without FCS: ARP frames are padded to it */

static struct {
	struct arp_table t;
	struct arp_entry *e;
	int cursor;          /* arp_due() search position */
	double *last_wait;   /* per peer: last "frames wait" log (log_ratelimited) */
	uint64_t rx_bad[ARP_ERR_MAX];
} nb;

#define MACF "%02x:%02x:%02x:%02x:%02x:%02x"
#define MACA(m) (m)[0], (m)[1], (m)[2], (m)[3], (m)[4], (m)[5]

static const char *ipstr(uint32_t ip, char *buf)
{
	struct in_addr a = { .s_addr = ip };

	return inet_ntop(AF_INET, &a, buf, INET_ADDRSTRLEN) ? buf : "?";
}

/* Queues ARP message @m to Ethernet @dst; 0, or -ENOBUFS (the next poll or request retries). */
static int send_arp(const uint8_t dst[6], const struct arp_msg *m)
{
	struct rte_mbuf *f;
	uint8_t *p = portio_tx_alloc(ARP_MIN_FRAME, &f);

	if (!p)
		return -ENOBUFS;
	memset(p, 0, ARP_MIN_FRAME);
	arp_build(p, dst, m);
	portio_tx_send(f, dp.clk.tsc);
	return 0;
}

int neigh_init(void)
{
	struct cluster_host *me = &dp.cluster.hosts[dp.me];
	struct arp_msg g;
	int n = dp.cluster.n_hosts, unknown = 0, fixed = 0;
	char ip[INET_ADDRSTRLEN];

	nb.e = calloc((size_t)n, sizeof(*nb.e));
	nb.last_wait = calloc((size_t)n, sizeof(*nb.last_wait));
	if (!nb.e || !nb.last_wait)
		return -ENOMEM;
	if (!me->mac_given)
		memcpy(me->mac, dp.my_mac, 6);
	for (int i = 0; i < n; i++) {
		struct cluster_host *h = &dp.cluster.hosts[i];
		nb.e[i].ip = h->ip;
		if (i == dp.me)
			continue;
		if (h->mac_given) {
			nb.e[i].state = ARP_STATIC;
			memcpy(nb.e[i].mac, h->mac, 6);
			fixed++;
		} else {
			nb.e[i].state = ARP_UNKNOWN;
			memset(h->mac, 0, 6);
			unknown++;
		}
	}
	arp_table_init(&nb.t, nb.e, n, dp.me, dp.my_mac, dp.clk.mono_ns);
	arp_request(&g, dp.my_mac, me->ip, me->ip);
	send_arp(arp_broadcast, &g);
	log_info("ARP: gratuitous ARP for %s at " MACF " sent; %d peers to resolve by ARP, %d static "
		 "(mac in the config)", ipstr(me->ip, ip), MACA(dp.my_mac), unknown, fixed);
	return 0;
}

/* Takes peer @i's learned MAC into the addresses frames are sent to and accepted from. */
static void adopt(int i)
{
	memcpy(dp.cluster.hosts[i].mac, nb.e[i].mac, 6);
}

int neigh_rx(const uint8_t *frame, uint16_t len)
{
	struct arp_msg m, r;
	enum arp_parse_err e = arp_parse(frame, len, &m);
	unsigned act;
	int peer;
	char ip[INET_ADDRSTRLEN];

	if (e == ARP_ENOTARP)
		return 0;
	if (!nb.e)
		return 1; /* before neigh_init: not answered */
	if (e != ARP_OK) {
		nb.rx_bad[e]++;
		return 1;
	}
	act = arp_input(&nb.t, &m, &peer);
	if (act & ARP_ACT_REPLY) {
		arp_reply(&r, dp.my_mac, dp.cluster.hosts[dp.me].ip, &m);
		send_arp(m.sha, &r);
	}
	if (act & ARP_ACT_LEARNED) {
		adopt(peer);
		log_info("ARP: peer %s (%s) resolved at " MACF " after %u request(s)", dp_host_name(peer),
			 ipstr(m.spa, ip), MACA(m.sha), nb.e[peer].tries);
	}
	if (act & ARP_ACT_CHANGED) {
		adopt(peer);
		log_warn("ARP: peer %s (%s) moved to " MACF " (it announced a new address)", dp_host_name(peer),
			 ipstr(m.spa, ip), MACA(m.sha));
	}
	if (act & ARP_ACT_CONFLICT)
		log_warn("ARP: " MACF " claims %s's address %s, but the config gives %s the static mac "
			 MACF ": kept the config's (reported once)", MACA(m.sha), dp_host_name(peer),
			 ipstr(m.spa, ip), dp_host_name(peer), MACA(nb.e[peer].mac));
	return 1;
}

int neigh_poll(void)
{
	int i, sent = 0;
	struct arp_msg q;
	uint32_t my_ip;

	if (!nb.e)
		return 0;
	my_ip = dp.cluster.hosts[dp.me].ip;
	while ((i = arp_due(&nb.t, dp.clk.mono_ns, &nb.cursor)) >= 0) {
		arp_request(&q, dp.my_mac, my_ip, nb.e[i].ip);
		if (send_arp(arp_broadcast, &q) == 0)
			sent = 1;
	}
	nb.cursor = 0;
	return sent;
}

int neigh_ready(int peer)
{
	char ip[INET_ADDRSTRLEN];

	if (!nb.e || arp_mac(&nb.t, peer))
		return 1;
	if (log_ratelimited(&nb.last_wait[peer], 1.0))
		log_warn("ARP: frames to %s wait: the MAC of %s (%s) is not resolved yet (%u ARP request(s) "
			 "unanswered; is its dataplane up, or set its mac in the cluster config)",
			 dp_host_name(peer), dp_host_name(peer), ipstr(nb.e[peer].ip, ip), nb.e[peer].tries);
	return 0;
}

void neigh_close(void)
{
	free(nb.e);
	free(nb.last_wait);
	nb.e = NULL;
	nb.last_wait = NULL;
}
