/* dataplane_txloop.c - mlf-txloop: bare DPDK tx and rx loops, the ceilings the dataplane's goodput is judged against. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_udp.h>

#include "cluster.h"
#include "log.h"

#define TXLOOP_BURST 32
#define TXLOOP_RX_SECONDS 3600 /* --rx without --seconds: run until SIGINT/SIGTERM (or an hour) */
#define TXLOOP_UDP_PORT 9 /* discard: nothing listens, the peer kernel drops the datagrams */

static volatile sig_atomic_t force_quit;

static const char usage[] =
	"usage: mlf-txloop [EAL ARGS] -- --cluster FILE --from HOST --to HOST [--seconds D]\n"
	"                  [--frame BYTES] [--port N]\n"
	"       mlf-txloop [EAL ARGS] -- --rx --cluster FILE --to HOST [--seconds D] [--port N]\n"
	"Sends fixed-size Ethernet/IPv4/UDP frames from HOST to HOST (addresses and MACs from the\n"
	"cluster config) as fast as the port takes them for D seconds (default 5), then prints\n"
	"  txloop frames=<n> bytes=<L2 bytes> seconds=<s> pps=<p> gbps=<L2 Gbit/s>\n"
	"Frame size defaults to the cluster MTU + 14 (a full Ethernet frame). Counts are what the\n"
	"port accepted; af_packet counts frames the kernel refused as sent, so measure the peer's\n"
	"rx_bytes for the delivered rate (bench/dataplane_bench.sh does).\n"
	"--rx: the bare rx loop at HOST instead: rte_eth_rx_burst and free every frame, counting\n"
	"them, for D seconds (default: until SIGINT/SIGTERM). Prints \"rxloop ready\" once the port\n"
	"has started, then at the end\n"
	"  rxloop frames=<n> bytes=<L2 bytes> seconds=<s> pps=<p> gbps=<L2 Gbit/s>\n"
	"where seconds run from the first received frame to the last.\n";

static void on_signal(int sig)
{
	(void)sig;
	force_quit = 1;
}

/* Fills @hdr with the Ethernet/IPv4/UDP headers of a @frame-byte frame from @src to @dst. */
static void build_headers(uint8_t *hdr, const struct cluster_host *src, const struct cluster_host *dst,
			  unsigned frame)
{
	struct rte_ether_hdr *eth = (struct rte_ether_hdr *)hdr;
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eth + 1);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);
	unsigned ip_len = frame - (unsigned)sizeof(*eth);

	memcpy(eth->src_addr.addr_bytes, src->mac, 6);
	memcpy(eth->dst_addr.addr_bytes, dst->mac, 6);
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	memset(ip, 0, sizeof(*ip));
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->time_to_live = 64;
	ip->next_proto_id = IPPROTO_UDP;
	ip->total_length = rte_cpu_to_be_16((uint16_t)ip_len);
	ip->src_addr = src->ip;
	ip->dst_addr = dst->ip;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	udp->src_port = rte_cpu_to_be_16(TXLOOP_UDP_PORT);
	udp->dst_port = rte_cpu_to_be_16(TXLOOP_UDP_PORT);
	udp->dgram_len = rte_cpu_to_be_16((uint16_t)(ip_len - sizeof(*ip)));
	udp->dgram_cksum = 0;
}

static int port_init(uint16_t port, struct rte_mempool *pool, int mtu)
{
	struct rte_eth_conf conf = { 0 };
	int rc;

	rc = rte_eth_dev_configure(port, 1, 1, &conf);
	if (rc < 0)
		return rc;
	rc = rte_eth_rx_queue_setup(port, 0, 512, rte_eth_dev_socket_id(port), NULL, pool);
	if (rc < 0)
		return rc;
	rc = rte_eth_tx_queue_setup(port, 0, 512, rte_eth_dev_socket_id(port), NULL);
	if (rc < 0)
		return rc;
	rc = rte_eth_dev_set_mtu(port, (uint16_t)mtu);
	if (rc < 0)
		log_warn("port %u: cannot set MTU %d: %s (continuing)", port, mtu, rte_strerror(-rc));
	return rte_eth_dev_start(port);
}

/*
 * Prints one "<what> frames= bytes= seconds= pps= gbps=" result line (bytes are L2 bytes, gbps
 * Gbit/s); rates are 0 when @s (seconds) is not positive (fewer than two frames received).
 */
static void print_rate(const char *what, uint64_t frames, uint64_t bytes, double s)
{
	double d = s > 0 ? s : 1;

	printf("%s frames=%lu bytes=%lu seconds=%.3f pps=%.0f gbps=%.3f\n", what, (unsigned long)frames,
	       (unsigned long)bytes, s, s > 0 ? (double)frames / d : 0, s > 0 ? (double)bytes * 8 / d / 1e9 : 0);
}

/*
 * The bare rx loop: receive bursts on @port and free every frame until @seconds have passed or
 * a signal arrived, then print the L2 bytes received over the time from the first frame to the last.
 */
static void rx_loop(uint16_t port, double seconds)
{
	struct rte_mbuf *burst[TXLOOP_BURST];
	uint64_t frames = 0, bytes = 0, first = 0, last = 0, hz = rte_get_tsc_hz();
	uint64_t deadline = rte_rdtsc() + (uint64_t)(seconds * (double)hz);

	printf("rxloop ready\n");
	fflush(stdout);
	while (!force_quit && rte_rdtsc() < deadline) {
		uint16_t n = rte_eth_rx_burst(port, 0, burst, TXLOOP_BURST);

		if (!n)
			continue;
		last = rte_rdtsc();
		if (!frames)
			first = last;
		for (uint16_t i = 0; i < n; i++)
			bytes += burst[i]->pkt_len;
		frames += n;
		rte_pktmbuf_free_bulk(burst, n);
	}
	print_rate("rxloop", frames, bytes, (double)(last - first) / (double)hz);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cluster", required_argument, NULL, 'c' }, { "from", required_argument, NULL, 'f' },
		{ "to", required_argument, NULL, 't' },      { "seconds", required_argument, NULL, 's' },
		{ "frame", required_argument, NULL, 'b' },   { "port", required_argument, NULL, 'p' },
		{ "rx", no_argument, NULL, 'r' },            { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const char *cluster_path = NULL, *from = NULL, *to = NULL;
	double seconds = 0;
	int rx = 0;
	unsigned frame = 0;
	uint16_t port = 0;
	struct cluster c = { 0 };
	char err[512];
	uint8_t hdr[64];
	struct rte_mempool *pool;
	struct rte_mbuf *burst[TXLOOP_BURST];
	uint64_t frames = 0, start, deadline, hz;
	int ret, opt, si, di;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(usage, stdout);
			return 0;
		}
	}
	log_component = "mlf-txloop";
	ret = rte_eal_init(argc, argv);
	if (ret < 0)
		rte_exit(EXIT_FAILURE, "EAL init failed: %s\n%s", rte_strerror(rte_errno), usage);
	argc -= ret;
	argv += ret;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		char *end = NULL;
		switch (opt) {
		case 'c': cluster_path = optarg; break;
		case 'f': from = optarg; break;
		case 't': to = optarg; break;
		case 's':
			seconds = strtod(optarg, &end);
			if (*end || seconds <= 0)
				rte_exit(EXIT_FAILURE, "--seconds %s: must be a positive number\n", optarg);
			break;
		case 'b':
			frame = (unsigned)strtoul(optarg, &end, 10);
			if (*end || frame < 64 || frame > 9014)
				rte_exit(EXIT_FAILURE, "--frame %s: must be 64..9014 bytes\n", optarg);
			break;
		case 'p':
			port = (uint16_t)strtoul(optarg, &end, 10);
			if (*end)
				rte_exit(EXIT_FAILURE, "--port %s: not a port number\n", optarg);
			break;
		case 'r': rx = 1; break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			rte_exit(EXIT_FAILURE, "%s", usage);
		}
	}
	if (!cluster_path || (!rx && !from) || !to)
		rte_exit(EXIT_FAILURE, "need --cluster, --to and (without --rx) --from\n%s", usage);
	if (!seconds)
		seconds = rx ? TXLOOP_RX_SECONDS : 5;
	if (cluster_load(cluster_path, &c, err, sizeof(err)))
		rte_exit(EXIT_FAILURE, "%s\n", err);
	si = rx ? 0 : cluster_find(&c, from);
	di = cluster_find(&c, to);
	if (si < 0 || di < 0)
		rte_exit(EXIT_FAILURE, "%s: unknown host '%s'\n", cluster_path, si < 0 ? from : to);
	if (!frame)
		frame = (unsigned)c.mtu + RTE_ETHER_HDR_LEN;
	if (frame > (unsigned)c.mtu + RTE_ETHER_HDR_LEN)
		rte_exit(EXIT_FAILURE, "--frame %u exceeds the cluster MTU %d + 14\n", frame, c.mtu);
	if (!rte_eth_dev_is_valid_port(port))
		rte_exit(EXIT_FAILURE, "port %u does not exist (pass --vdev=net_af_packet0,iface=...)\n", port);

	pool = rte_pktmbuf_pool_create("txloop", 8191, 256, 0,
				       (uint16_t)(RTE_PKTMBUF_HEADROOM + (frame > 1600 ? 16384 : 2048)),
				       (int)rte_socket_id());
	if (!pool)
		rte_exit(EXIT_FAILURE, "cannot create the mbuf pool: %s\n", rte_strerror(rte_errno));
	ret = port_init(port, pool, c.mtu);
	if (ret < 0)
		rte_exit(EXIT_FAILURE, "port %u: init failed: %s\n", port, rte_strerror(-ret));
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (rx) {
		rx_loop(port, seconds);
		goto out;
	}
	build_headers(hdr, &c.hosts[si], &c.hosts[di], frame);

	hz = rte_get_tsc_hz();
	start = rte_rdtsc();
	deadline = start + (uint64_t)(seconds * (double)hz);
	while (!force_quit && rte_rdtsc() < deadline) {
		uint16_t sent = 0;

		if (rte_pktmbuf_alloc_bulk(pool, burst, TXLOOP_BURST) != 0)
			continue;
		for (int i = 0; i < TXLOOP_BURST; i++) {
			struct rte_mbuf *m = burst[i];
			uint8_t *d = rte_pktmbuf_mtod(m, uint8_t *);

			memcpy(d, hdr, RTE_ETHER_HDR_LEN + sizeof(struct rte_ipv4_hdr) + sizeof(struct rte_udp_hdr));
			m->data_len = (uint16_t)frame;
			m->pkt_len = frame;
		}
		while (sent < TXLOOP_BURST && !force_quit)
			sent += rte_eth_tx_burst(port, 0, burst + sent, (uint16_t)(TXLOOP_BURST - sent));
		if (sent < TXLOOP_BURST)
			rte_pktmbuf_free_bulk(burst + sent, TXLOOP_BURST - sent);
		frames += sent;
	}
	print_rate("txloop", frames, frames * frame, (double)(rte_rdtsc() - start) / (double)hz);
out:
	rte_eth_dev_stop(port);
	rte_eth_dev_close(port);
	cluster_free(&c);
	rte_eal_cleanup();
	return 0;
}
