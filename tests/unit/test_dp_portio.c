/* test_dp_portio.c - the dataplane's port layer (dataplane/portio.c) over DPDK's ring PMD
 * (--vdev=net_ring0: what a port transmits comes back on its rx queue): the set-up (name, ring
 * sizes, promiscuous mode off), a frame the driver hands over in chained mbufs (scatter rx)
 * reaching the engine whole instead of dropped, a frame longer than the MTU allows dropped and
 * counted, a frame sent through portio coming back well formed (checksums), and the port
 * counters' link state following the link; a set-up that fails after the mbuf pool was made
 * (an MTU the port cannot carry) leaves no pool behind. Needs DPDK's EAL (no hugepages, PCI or shared
 * config): linked with DPDK. */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "dp.h"
#include "portio.h"
#include "test_dp_main.h"
#include "wire.h"

#define MTU 1500
#define T0 1000000000ULL                       /* monotonic ns of the first counter read */
#define STEP ((uint64_t)(PORTIO_POLL_S * 1e9)) /* between reads */

static const struct wire_addr addr = {
	.src_mac = { 2, 0, 10, 0, 0, 1 }, .dst_mac = { 2, 0, 10, 0, 0, 2 },
	.src_ip = 0x0100000a, .dst_ip = 0x0200000a, .udp_port = 47000,
};

/* A full-sized DATA frame into @buf; returns its length (1514 at MTU 1500). */
static size_t data_frame(uint8_t *buf)
{
	struct wire_hdr h = { .type = WIRE_DATA, .id = 0x1234, .offset = 0, .seg = 1432, .len = 1432,
			      .total = 1432 * 4 };
	size_t off = wire_body_off(0);

	for (size_t i = 0; i < h.len; i++)
		buf[off + i] = (uint8_t)(i * 7 + 1);
	return wire_encode(buf, &addr, &h);
}

/* @len bytes of @src in mbufs of at most @piece bytes each, chained. */
static struct rte_mbuf *chain(struct rte_mempool *mp, const uint8_t *src, size_t len, size_t piece)
{
	struct rte_mbuf *head = NULL;

	for (size_t off = 0; off < len; off += piece) {
		size_t n = len - off < piece ? len - off : piece;
		struct rte_mbuf *m = rte_pktmbuf_alloc(mp);
		ck_assert_ptr_nonnull(m);
		memcpy(rte_pktmbuf_append(m, (uint16_t)n), src + off, n);
		if (!head)
			head = m;
		else
			ck_assert_int_eq(rte_pktmbuf_chain(head, m), 0);
	}
	return head;
}

START_TEST(port_setup_chained_rx_oversize_loopback_link)
{
	char *eal[] = { "test_dp_portio", "--no-huge", "-m", "128", "--no-pci", "--no-shconf",
			"--no-telemetry", "-l", "0", "--log-level=*:error", "--vdev=net_ring0", NULL };
	struct portio_conf c = { .port = 0, .mtu = MTU, .link_timeout_s = 5, .cfg_mac = NULL };
	struct portio_port_stats st;
	const uint8_t *data[2 * PORTIO_BURST];
	uint16_t len[2 * PORTIO_BURST];
	struct rte_mbuf *out[2 * PORTIO_BURST], *m;
	struct rte_mempool *mp;
	uint8_t frame[2048], big[1600], mac[6];
	char err[512];
	size_t flen;
	unsigned n;

	ck_assert_int_ge(rte_eal_init(11, eal), 0);
	ck_assert_msg(portio_init(&c, mac, err, sizeof(err)) == 0, "portio_init: %s", err);
	ck_assert_str_eq(portio_name(), "port 0 (net_ring0)");
	portio_port_stats(&st);
	ck_assert_uint_ge(st.nb_rxd, 2 * DP_WINDOW_SEGS); /* two senders' windows */
	ck_assert_int_eq(st.promisc, 0);                  /* the config names no other MAC */
	mp = rte_pktmbuf_pool_create("test_small", 63, 0, 0, 512 + RTE_PKTMBUF_HEADROOM, SOCKET_ID_ANY);
	ck_assert_ptr_nonnull(mp);

	/* a 1514-byte frame in three mbufs: one frame, contiguous, the same bytes */
	flen = data_frame(frame);
	m = chain(mp, frame, flen, 512);
	ck_assert_int_eq(m->nb_segs, 3);
	ck_assert_int_eq(rte_eth_tx_burst(0, 0, &m, 1), 1);
	n = portio_rx(data, len, out, 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(len[0], flen);
	ck_assert_mem_eq(data[0], frame, flen);
	ck_assert_uint_eq(dp.cnt.rx_multiseg, 1);
	portio_rx_free(out, n);

	/* longer than MTU + Ethernet header, VLAN tag and FCS: dropped, counted */
	memset(big, 0xab, sizeof(big));
	m = chain(mp, big, sizeof(big), 512);
	ck_assert_int_eq(rte_eth_tx_burst(0, 0, &m, 1), 1);
	ck_assert_uint_eq(portio_rx(data, len, out, 0), 0);
	ck_assert_uint_eq(dp.cnt.rx_oversize, 1);

	/* through portio's own tx path: back well formed (IPv4 header checksum, in software here) */
	{
		struct rte_mbuf *f;
		uint8_t *p = portio_tx_alloc((uint16_t)flen, &f);
		struct wire_hdr h;
		const uint8_t *body;
		uint32_t src;

		ck_assert_ptr_nonnull(p);
		memcpy(p, frame, flen);
		portio_tx_send(f, 0);
		ck_assert_uint_eq(portio_flush(0), 1);
		n = portio_rx(data, len, out, 0);
		ck_assert_uint_eq(n, 1);
		ck_assert_int_eq(wire_parse(data[0], len[0], addr.dst_ip, addr.udp_port, &h, &src, &body), WIRE_OK);
		ck_assert_uint_eq(h.len, 1432);
		portio_rx_free(out, n);
	}

	/* the counters' link state follows the link (read at most every PORTIO_POLL_S). (A rising
	 * drop counter's log line is not tested: neither the ring PMD nor net_memif counts the
	 * frames its full ring refuses in any counter portio reads.) */
	ck_assert_int_eq(portio_poll_port(T0), 1);
	portio_port_stats(&st);
	ck_assert_int_eq(st.link_up, 1);
	ck_assert_uint_eq(st.link_changes, 0);
	ck_assert_int_eq(portio_poll_port(T0 + 1000), 0); /* not due yet */
	ck_assert_int_eq(rte_eth_dev_set_link_down(0), 0);
	ck_assert_int_eq(portio_poll_port(T0 + STEP), 1);
	portio_port_stats(&st);
	ck_assert_int_eq(st.link_up, 0);
	ck_assert_uint_eq(st.link_changes, 1);
	ck_assert_uint_eq(st.imissed + st.ierrors + st.rx_nombuf + st.oerrors, 0);
	portio_close();
}
END_TEST


/* rte_mempool_walk: count the pools portio made (named mlf_mbufs_<room>) */
static void count_portio_pool(struct rte_mempool *mp, void *arg)
{
	if (!strncmp(mp->name, "mlf_mbufs_", 10))
		(*(int *)arg)++;
}

START_TEST(port_setup_failure_frees_the_pool)
{
	char *eal[] = { "test_dp_portio", "--no-huge", "-m", "128", "--no-pci", "--no-shconf",
			"--no-telemetry", "-l", "0", "--log-level=*:error", "--vdev=net_ring0", NULL };
	/* above the largest MTU an ethdev takes (65535): the ring PMD sets none and stays at 1500,
	 * so portio_init fails at set_mtu, after the pool and the rx queue were set up */
	struct portio_conf c = { .port = 0, .mtu = 65536 + MTU, .link_timeout_s = 5, .cfg_mac = NULL };
	uint8_t mac[6];
	char err[512] = "";
	int pools = 0;

	ck_assert_int_ge(rte_eal_init(11, eal), 0);
	ck_assert_int_eq(portio_init(&c, mac, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "port 0 (net_ring0): cannot set MTU 67036") != NULL, "error: %s", err);
	rte_mempool_walk(count_portio_pool, &pools);
	ck_assert_int_eq(pools, 0);
}
END_TEST

int main(void)
{
	const TTest *tests[] = { port_setup_chained_rx_oversize_loopback_link, port_setup_failure_frees_the_pool };

	return test_dp_run("portio", tests, 2);
}
