/* portio.c - DPDK port set-up, rx/tx bursts, and the dataplane's own fault injection on both. */
#include "portio.h"

#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_devargs.h>
#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_udp.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include "dp.h"
#include "log.h"
#include "nodepick.h"

#define TXQ_CAP 256
#define HOLD_CAP 1024
#define REORDER_US 200 /* a reordered frame is held this long, so later frames overtake it */

struct held {
	struct rte_mbuf *m;
	uint64_t at; /* release tick */
};

static struct {
	uint16_t port;
	int socket;                /* of the pool and rings: the port's, or SOCKET_ID_ANY */
	struct rte_mempool *pool;
	struct rte_mbuf *txq[TXQ_CAP];
	unsigned ntx;
	struct held hold_rx[HOLD_CAP], hold_tx[HOLD_CAP];
	unsigned nhold_rx, nhold_tx;
	struct fault_spec faults;
	int rx_faulty, tx_faulty;
	uint32_t cut_ip;
	uint64_t rng;
	int driver_copies;  /* the driver copies tx frames into its own ring: zero-copy payloads */
	unsigned pool_n;    /* mbufs in the pool */
	unsigned frame_max; /* longest frame accepted (MTU + Ethernet, VLAN tag, FCS), bytes */
	uint8_t *scratch;   /* 2 * PORTIO_BURST slots of frame_max: chained frames made contiguous */
	char name[RTE_ETH_NAME_MAX_LEN + IF_NAMESIZE + 32]; /* for messages (portio_name) */
	struct portio_port_stats st; /* last read of the port's counters, offloads in use */
	uint64_t last_poll_ns;
	int rx_fd;          /* rx queue 0's interrupt event fd, -1 when the PMD has no rx interrupts */
	int rx_armed;       /* its interrupt is enabled (the loop sleeps) */
} pio = { .rng = 0x9e3779b97f4a7c15ULL, .rx_fd = -1 };

/*
 * Rx interrupts, where the PMD has them: rte_eth_dev_rx_intr_enable works and the queue has an
 * event fd the loop can add to its ppoll set. net_memif and net_af_packet (DPDK 22.11) answer
 * -ENOTSUP: the loop sleeps for a time there instead (main.c).
 */
static void rx_intr_probe(uint16_t port)
{
	int fd;

	pio.rx_fd = -1;
	if (rte_eth_dev_rx_intr_enable(port, 0) != 0)
		return;
	fd = rte_eth_dev_rx_intr_ctl_q_get_fd(port, 0);
	rte_eth_dev_rx_intr_disable(port, 0);
	pio.rx_fd = fd >= 0 ? fd : -1;
}

int portio_rx_wake_fd(void)
{
	return pio.rx_fd;
}

void portio_rx_arm(int on)
{
	if (pio.rx_fd < 0 || pio.rx_armed == on)
		return;
	if (on) {
		pio.rx_armed = rte_eth_dev_rx_intr_enable(pio.port, 0) == 0;
		return;
	}
	{
		uint64_t v;
		/* drain the event count (the fd is non-blocking for the PMDs that give one) */
		if (read(pio.rx_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
			log_debug("port %u: reading the rx interrupt fd: %s", pio.port, strerror(errno));
	}
	rte_eth_dev_rx_intr_disable(pio.port, 0);
	pio.rx_armed = 0;
}

/*
 * Creates the mbuf pool with @room data bytes per mbuf on pio.socket; NULL on failure (rte_errno).
 * When that socket has no memory (EAL --socket-mem gave it none), any socket, with a warning.
 */
static struct rte_mempool *make_pool(unsigned room)
{
	char name[32];
	struct rte_mempool *mp;

	snprintf(name, sizeof(name), "mlf_mbufs_%u", room);
	mp = rte_pktmbuf_pool_create(name, pio.pool_n, 256, 0, (uint16_t)(room + RTE_PKTMBUF_HEADROOM), pio.socket);
	if (!mp && pio.socket != SOCKET_ID_ANY && rte_errno == ENOMEM) {
		log_warn("%s: no memory on its socket %d for mbufs (EAL --socket-mem): using any socket",
			 pio.name, pio.socket);
		pio.socket = SOCKET_ID_ANY;
		mp = rte_pktmbuf_pool_create(name, pio.pool_n, 256, 0, (uint16_t)(room + RTE_PKTMBUF_HEADROOM),
					     pio.socket);
	}
	return mp;
}

/*
 * Does the port's driver copy every tx frame into a ring of its own, reading the mbufs' bytes by
 * their virtual address? Then a payload needs no copy into an mbuf first: net_af_packet (the
 * kernel's ring) and net_memif unless zero-copy=yes (the shared memory region; in zero-copy mode
 * its rings point at mbufs of the region instead). Both take multi-segment frames.
 */
static int driver_copies(uint16_t port)
{
	struct rte_eth_dev_info info;
	const struct rte_devargs *da;

	if (rte_eth_dev_info_get(port, &info) != 0 || !info.driver_name ||
	    !(info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS))
		return 0;
	if (strcmp(info.driver_name, "net_af_packet") == 0)
		return 1;
	if (strcmp(info.driver_name, "net_memif") == 0) {
		da = info.device ? rte_dev_devargs(info.device) : NULL;
		return !(da && da->args && strstr(da->args, "zero-copy=yes"));
	}
	return 0;
}

/* Frame bytes beyond the IP MTU a received frame may carry: Ethernet header, one VLAN tag, FCS. */
#define FRAME_OVERHEAD (RTE_ETHER_HDR_LEN + 4 + RTE_ETHER_CRC_LEN)

/* "port N (name[, interface IF])" into pio.name. */
static void make_name(uint16_t port, const struct rte_eth_dev_info *info)
{
	char dev[RTE_ETH_NAME_MAX_LEN] = "?", ifn[IF_NAMESIZE];
	int n;

	rte_eth_dev_get_name_by_port(port, dev);
	n = snprintf(pio.name, sizeof(pio.name), "port %u (%s", port, dev);
	if (info && info->if_index && if_indextoname(info->if_index, ifn) && n > 0 &&
	    (size_t)n < sizeof(pio.name))
		n += snprintf(pio.name + n, sizeof(pio.name) - (size_t)n, ", interface %s", ifn);
	if (n > 0 && (size_t)n < sizeof(pio.name))
		snprintf(pio.name + n, sizeof(pio.name) - (size_t)n, ")");
}

/* The MTU of kernel interface @if_index (SIOCGIFMTU), or -errno. */
static int kernel_mtu(unsigned if_index)
{
	struct ifreq ifr;
	int fd, rc;

	memset(&ifr, 0, sizeof(ifr));
	if (!if_indextoname(if_index, ifr.ifr_name))
		return -errno;
	if ((fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
		return -errno;
	rc = ioctl(fd, SIOCGIFMTU, &ifr) < 0 ? -errno : ifr.ifr_mtu;
	close(fd);
	return rc;
}

/*
 * The port must carry IP MTU @mtu: set it (a real NIC: jumbo frames need it). A kernel-backed
 * port (net_af_packet, net_tap: it names an interface) whose driver refuses follows the kernel
 * interface's MTU: enough when that is at least @mtu. Otherwise -EINVAL with @err naming the port.
 */
static int set_mtu(uint16_t port, int mtu, const struct rte_eth_dev_info *info, char *err, size_t errlen)
{
	uint16_t cur = 0;
	int rc = rte_eth_dev_set_mtu(port, (uint16_t)mtu), kmtu;

	if (rc == 0)
		return 0;
	if (info->if_index && (kmtu = kernel_mtu(info->if_index)) > 0) {
		if (kmtu >= mtu) {
			log_info("%s: the driver keeps its MTU (%s); the interface's MTU %d carries the "
				 "config's %d", pio.name, strerror(-rc), kmtu, mtu);
			return 0;
		}
		snprintf(err, errlen, "%s: interface MTU %d is below the cluster config's mtu %d (the driver "
			 "cannot set it: %s): set the interface MTU (ip link set dev IF mtu %d) or lower \"mtu\"",
			 pio.name, kmtu, mtu, strerror(-rc), mtu);
		return -EINVAL;
	}
	if (rte_eth_dev_get_mtu(port, &cur) == 0 && cur >= mtu)
		return 0;
	if (rc == -ENOTSUP && info->max_mtu >= mtu) {
		/* a PMD without an MTU setting and without a kernel interface (net_memif chains its
		 * descriptors): nothing limits a frame below its max_mtu */
		log_warn("%s: the driver has no MTU to set (%s); frames of the config's mtu %d pass up to "
			 "its maximum %u", pio.name, strerror(-rc), mtu, info->max_mtu);
		return 0;
	}
	snprintf(err, errlen, "%s: cannot set MTU %d, the cluster config's mtu (port maximum %u, now %u): %s",
		 pio.name, mtu, info->max_mtu, cur, strerror(-rc));
	return -EINVAL;
}

/*
 * Waits up to @timeout_s for the link to come up (polling rte_eth_link_get_nowait every 10 ms;
 * @timeout_s 0: no wait, the port starts with its link down).
 * Returns 0, or -ETIMEDOUT with @err naming the port.
 */
static int wait_link(uint16_t port, double timeout_s, char *err, size_t errlen)
{
	struct rte_eth_link l;
	double waited = 0;

	for (;;) {
		memset(&l, 0, sizeof(l));
		if (rte_eth_link_get_nowait(port, &l) < 0 || l.link_status == RTE_ETH_LINK_UP)
			break; /* a driver without link state: nothing to wait for */
		if (timeout_s <= 0) {
			log_info("%s: link down at start; not waiting for it (--link-timeout 0)", pio.name);
			return 0;
		}
		if (waited >= timeout_s) {
			snprintf(err, errlen, "%s: link still down after %.1f s (--link-timeout; check the "
				 "cable and the peer port, or --link-timeout 0 to start without waiting)",
				 pio.name, timeout_s);
			return -ETIMEDOUT;
		}
		rte_delay_us_sleep(10000);
		waited += 0.01;
	}
	if (l.link_status == RTE_ETH_LINK_UP)
		log_info("%s: link up, %u Mbit/s %s duplex%s", pio.name, l.link_speed,
			 l.link_duplex == RTE_ETH_LINK_FULL_DUPLEX ? "full" : "half",
			 waited > 0 ? " (waited for it)" : "");
	return 0;
}

/* The smallest 2^k - 1 of at least @n (mempools are most efficient at such sizes). */
static unsigned pow2m1(unsigned n)
{
	unsigned p = 1;

	while (p - 1 < n)
		p <<= 1;
	return p - 1;
}

int portio_init(const struct portio_conf *c, uint8_t mac[6], char *err, size_t errlen)
{
	struct rte_eth_conf conf;
	struct rte_eth_dev_info info;
	struct rte_ether_addr ea;
	uint16_t port = c->port, nb_rxd, nb_txd;
	unsigned room = (unsigned)(c->mtu + FRAME_OVERHEAD + 64);
	uint64_t txo;
	int rc, started = 0;

	memset(&conf, 0, sizeof(conf));
	if (!rte_eth_dev_is_valid_port(port)) {
		snprintf(err, errlen, "no DPDK port %u (pass --vdev=net_af_packet0,iface=... or bind a NIC)", port);
		return -ENODEV;
	}
	pio.port = port;
	if ((rc = rte_eth_dev_info_get(port, &info)) < 0) {
		make_name(port, NULL);
		snprintf(err, errlen, "%s: cannot read device info: %s", pio.name, strerror(-rc));
		return rc;
	}
	make_name(port, &info);
	if (room < 2048)
		room = 2048;
	pio.frame_max = (unsigned)c->mtu + FRAME_OVERHEAD;
	pio.socket = nodepick_pool_socket(rte_eth_dev_socket_id(port));
	/* offloads the port has: checksums in hardware, frames over several mbufs where it splits them */
	if ((info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_IPV4_CKSUM) &&
	    (info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_UDP_CKSUM)) {
		conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_IPV4_CKSUM | RTE_ETH_RX_OFFLOAD_UDP_CKSUM;
		pio.st.rx_cksum = 1;
	}
	if ((info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_SCATTER) && c->mtu > RTE_ETHER_MTU) {
		conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_SCATTER;
		pio.st.scatter = 1;
	}
	txo = info.tx_offload_capa;
	if (txo & RTE_ETH_TX_OFFLOAD_MULTI_SEGS) /* header + external payload mbufs (zero-copy) */
		conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
	if ((txo & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM) && (txo & RTE_ETH_TX_OFFLOAD_UDP_CKSUM)) {
		conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_IPV4_CKSUM | RTE_ETH_TX_OFFLOAD_UDP_CKSUM;
		pio.st.tx_cksum = 1;
	}
	/* the MTU at configure when the port takes it (ethdev checks the frame against
	 * max_rx_pktlen too); else set_mtu below decides */
	if (c->mtu <= info.max_mtu && c->mtu >= info.min_mtu &&
	    (uint32_t)c->mtu + RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN <= info.max_rx_pktlen)
		conf.rxmode.mtu = (uint32_t)c->mtu;
	if ((rc = rte_eth_dev_configure(port, 1, 1, &conf)) < 0) {
		snprintf(err, errlen, "%s: cannot configure (offloads rx %#llx tx %#llx): %s", pio.name,
			 (unsigned long long)conf.rxmode.offloads, (unsigned long long)conf.txmode.offloads,
			 strerror(-rc));
		return rc;
	}
	/*
	 * Rings: the driver's preferred size, the rx ring at least two senders' windows (a burst of
	 * them arrives while the loop sleeps), both within the port's limits.
	 */
	nb_rxd = info.default_rxportconf.ring_size > 2 * DP_WINDOW_SEGS ? info.default_rxportconf.ring_size :
		 2 * DP_WINDOW_SEGS;
	nb_txd = info.default_txportconf.ring_size > 1024 ? info.default_txportconf.ring_size : 1024;
	if ((rc = rte_eth_dev_adjust_nb_rx_tx_desc(port, &nb_rxd, &nb_txd)) < 0) {
		snprintf(err, errlen, "%s: cannot fit %u rx / %u tx descriptors to its limits: %s", pio.name,
			 nb_rxd, nb_txd, strerror(-rc));
		goto fail;
	}
	if (nb_rxd < 2 * DP_WINDOW_SEGS)
		log_warn("%s: rx ring of %u descriptors (the port's maximum) is below two senders' windows "
			 "(%u segments): bursts may be dropped (imissed)", pio.name, nb_rxd, 2 * DP_WINDOW_SEGS);
	pio.st.nb_rxd = nb_rxd;
	pio.st.nb_txd = nb_txd;
	pio.pool_n = pow2m1((unsigned)nb_rxd + nb_txd + TXQ_CAP + 2 * HOLD_CAP + 512);
	/*
	 * net_af_packet refuses mbufs smaller than its ring frames (framesz in the vdev args, which
	 * the port does not report): grow the mbufs until the rx queue accepts them.
	 */
	for (;;) {
		pio.pool = make_pool(room);
		if (!pio.pool) {
			snprintf(err, errlen, "%s: cannot create mbuf pool of %u %u-byte mbufs: %s", pio.name,
				 pio.pool_n, room, rte_strerror(rte_errno));
			rc = -ENOMEM;
			goto fail;
		}
		rc = rte_eth_rx_queue_setup(port, 0, nb_rxd, (unsigned)pio.socket, NULL, pio.pool);
		if (rc != -ENOMEM || room >= UINT16_MAX - RTE_PKTMBUF_HEADROOM)
			break;
		rte_mempool_free(pio.pool);
		pio.pool = NULL;
		room = room * 2 > UINT16_MAX - RTE_PKTMBUF_HEADROOM ? UINT16_MAX - RTE_PKTMBUF_HEADROOM : room * 2;
	}
	if (rc == 0 && (rc = set_mtu(port, c->mtu, &info, err, errlen)) < 0)
		goto fail;
	if (rc < 0 || (rc = rte_eth_tx_queue_setup(port, 0, nb_txd, (unsigned)pio.socket, NULL)) < 0) {
		snprintf(err, errlen, "%s: cannot set up queues (%u rx / %u tx descriptors): %s", pio.name,
			 nb_rxd, nb_txd, strerror(-rc));
		goto fail;
	}
	/* frames a driver splits over several mbufs are copied into one slot each (portio_rx) */
	pio.scratch = rte_malloc_socket("mlf_rx_linear", (size_t)2 * PORTIO_BURST * pio.frame_max, 64,
					pio.socket);
	if (!pio.scratch) {
		snprintf(err, errlen, "%s: no memory for %u rx frame buffers of %u bytes", pio.name,
			 2 * PORTIO_BURST, pio.frame_max);
		rc = -ENOMEM;
		goto fail;
	}
	if ((rc = rte_eth_dev_start(port)) < 0) {
		snprintf(err, errlen, "%s: cannot start: %s", pio.name, strerror(-rc));
		goto fail;
	}
	started = 1;
	pio.driver_copies = driver_copies(port);
	rx_intr_probe(port);
	log_info("%s: driver %s, NUMA socket %d (rte_eth_dev_socket_id), mbuf pool and rings on %s %d; "
		 "rings %u rx / %u tx descriptors, %u mbufs of %u bytes; checksums rx %s, tx %s; scatter rx %s",
		 pio.name, info.driver_name ? info.driver_name : "?", rte_eth_dev_socket_id(port),
		 pio.socket == SOCKET_ID_ANY ? "any socket," : "socket", pio.socket, nb_rxd, nb_txd, pio.pool_n,
		 room, pio.st.rx_cksum ? "offloaded" : "in software (IPv4)",
		 pio.st.tx_cksum ? "offloaded (IPv4, UDP)" : "in software (IPv4; UDP 0)",
		 pio.st.scatter ? "on" : "off");
	log_info("%s: DATA payloads %s", pio.name, pio.driver_copies ?
		 "sent from the app's buffer (the driver copies frames into its ring)" : "copied into mbufs");
	log_info("%s: rx %s", pio.name, pio.rx_fd >= 0 ? "interrupts: the idle loop sleeps until a frame arrives" :
		 "interrupts not supported by the driver: the idle loop sleeps for a time");
	if ((rc = wait_link(port, c->link_timeout_s, err, errlen)) < 0)
		goto fail;
	rte_eth_macaddr_get(port, &ea);
	memcpy(mac, ea.addr_bytes, 6);
	/*
	 * Frames come to the port's MAC (peers learn it by ARP, or the config gives it): no need for
	 * promiscuous mode, unless the config names another MAC for this host, to which peers send.
	 */
	if (c->cfg_mac && memcmp(c->cfg_mac, mac, 6) != 0) {
		rte_eth_promiscuous_enable(port);
		pio.st.promisc = rte_eth_promiscuous_get(port) == 1;
		log_info("%s: promiscuous mode on: the config's mac for this host is not the port's", pio.name);
	} else {
		rte_eth_promiscuous_disable(port);
		pio.st.promisc = rte_eth_promiscuous_get(port) == 1;
	}
	rte_eth_stats_reset(port);
	return 0;
fail:
	/* after a successful configure: the port stopped (when started) and closed, which releases
	 * its queues and with them the last references to the pool, then the pool and the rx
	 * scratch freed; nothing of this call stays allocated */
	if (started)
		rte_eth_dev_stop(port);
	rte_eth_dev_close(port);
	pio.rx_fd = -1;
	rte_mempool_free(pio.pool);
	pio.pool = NULL;
	rte_free(pio.scratch);
	pio.scratch = NULL;
	return rc;
}

const char *portio_name(void)
{
	return pio.name;
}

int portio_poll_port(uint64_t now_ns)
{
	static double last_log;
	struct rte_eth_stats s;
	struct rte_eth_link l;
	struct portio_port_stats o = pio.st;

	if (pio.st.polls && now_ns - pio.last_poll_ns < (uint64_t)(PORTIO_POLL_S * 1e9))
		return 0;
	pio.last_poll_ns = now_ns;
	if (rte_eth_stats_get(pio.port, &s) == 0) {
		pio.st.imissed = s.imissed;
		pio.st.ierrors = s.ierrors;
		pio.st.rx_nombuf = s.rx_nombuf;
		pio.st.oerrors = s.oerrors;
	}
	memset(&l, 0, sizeof(l));
	if (rte_eth_link_get_nowait(pio.port, &l) == 0) {
		pio.st.link_up = l.link_status == RTE_ETH_LINK_UP;
		pio.st.full_duplex = l.link_duplex == RTE_ETH_LINK_FULL_DUPLEX;
		pio.st.speed_mbps = l.link_speed == RTE_ETH_SPEED_NUM_UNKNOWN ? 0 : l.link_speed;
	}
	if (o.polls && o.link_up != pio.st.link_up) {
		pio.st.link_changes++;
		if (pio.st.link_up)
			log_info("%s: link up, %u Mbit/s", pio.name, pio.st.speed_mbps);
		else
			log_warn("%s: link down", pio.name);
	}
	if (o.polls && (pio.st.imissed > o.imissed || pio.st.ierrors > o.ierrors ||
			pio.st.rx_nombuf > o.rx_nombuf || pio.st.oerrors > o.oerrors) &&
	    log_ratelimited(&last_log, 1.0))
		log_warn("%s: frames dropped by the port in the last %.2f s: imissed +%llu (rx ring full), "
			 "ierrors +%llu, rx_nombuf +%llu, oerrors +%llu (totals %llu %llu %llu %llu)", pio.name,
			 PORTIO_POLL_S, (unsigned long long)(pio.st.imissed - o.imissed),
			 (unsigned long long)(pio.st.ierrors - o.ierrors),
			 (unsigned long long)(pio.st.rx_nombuf - o.rx_nombuf),
			 (unsigned long long)(pio.st.oerrors - o.oerrors), (unsigned long long)pio.st.imissed,
			 (unsigned long long)pio.st.ierrors, (unsigned long long)pio.st.rx_nombuf,
			 (unsigned long long)pio.st.oerrors);
	pio.st.polls++;
	return 1;
}

void portio_port_stats(struct portio_port_stats *out)
{
	*out = pio.st;
}

int portio_socket(void)
{
	return rte_eth_dev_socket_id(pio.port);
}

void portio_set_faults(const struct fault_spec *f, uint32_t cut_ip)
{
	pio.faults = *f;
	pio.cut_ip = cut_ip;
	pio.rx_faulty = fault_active(&f->rx) || cut_ip;
	pio.tx_faulty = fault_active(&f->tx) || cut_ip;
}

static void hold(struct held *q, unsigned *n, struct rte_mbuf *m, uint64_t at, int *sent_now)
{
	*sent_now = *n >= HOLD_CAP;
	if (!*sent_now)
		q[(*n)++] = (struct held){ m, at };
}

/* Applies faults to one frame; returns how many copies continue now (0, 1 or 2). */
static int apply(const struct fault_dir *d, struct rte_mbuf *m, int rx, uint64_t now, struct held *q,
		 unsigned *nq)
{
	uint64_t hz = (uint64_t)dp.hz;
	const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
	int now_too;

	if (pio.cut_ip && m->data_len >= WIRE_ETH_LEN + WIRE_IP_LEN &&
	    memcmp(p + WIRE_ETH_LEN + (rx ? 12 : 16), &pio.cut_ip, 4) == 0) {
		dp.cnt.fault_cut++;
		rte_pktmbuf_free(m);
		return 0;
	}
	switch (fault_decide(d, &pio.rng)) {
	case FAULT_DROP:
		(rx ? dp.cnt.fault_rx_drop++ : dp.cnt.fault_tx_drop++);
		rte_pktmbuf_free(m);
		return 0;
	case FAULT_DUP:
		(rx ? dp.cnt.fault_rx_dup++ : dp.cnt.fault_tx_dup++);
		for (struct rte_mbuf *s = m; s; s = s->next) /* freeing walks every segment */
			rte_mbuf_refcnt_update(s, 1);
		return 2;
	case FAULT_REORDER:
		(rx ? dp.cnt.fault_rx_reorder++ : dp.cnt.fault_tx_reorder++);
		hold(q, nq, m, now + hz * (REORDER_US + d->delay_us) / 1000000, &now_too);
		return now_too;
	default:
		break;
	}
	if (d->delay_us) {
		(rx ? dp.cnt.fault_rx_delay++ : dp.cnt.fault_tx_delay++);
		hold(q, nq, m, now + hz * d->delay_us / 1000000, &now_too);
		return now_too;
	}
	return 1;
}

/* Moves held frames due at @now to @out (at most @max); returns how many. */
static unsigned release(struct held *q, unsigned *nq, struct rte_mbuf **out, unsigned max, uint64_t now)
{
	unsigned n = 0, i = 0;

	while (i < *nq && n < max) {
		if (q[i].at <= now) {
			out[n++] = q[i].m;
			q[i] = q[--(*nq)];
		} else {
			i++;
		}
	}
	return n;
}

/* A frame of the rx burst the engine must not see: bad checksum (hardware says), too long. */
static int rx_refuse(const struct rte_mbuf *m)
{
	if (m->pkt_len > pio.frame_max) {
		dp.cnt.rx_oversize++;
		return 1;
	}
	if (pio.st.rx_cksum &&
	    ((m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK) == RTE_MBUF_F_RX_IP_CKSUM_BAD ||
	     (m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK) == RTE_MBUF_F_RX_L4_CKSUM_BAD)) {
		dp.cnt.rx_cksum_bad++;
		return 1;
	}
	return 0;
}

unsigned portio_rx(const uint8_t **data, uint16_t *len, struct rte_mbuf **out, uint64_t now_tsc)
{
	struct rte_mbuf *in[PORTIO_BURST];
	unsigned n = 0, got;

	if (pio.nhold_rx)
		n = release(pio.hold_rx, &pio.nhold_rx, out, PORTIO_BURST, now_tsc);
	/* each received frame may become two (duplication): keep within 2 * PORTIO_BURST */
	got = rte_eth_rx_burst(pio.port, 0, in, (uint16_t)((2 * PORTIO_BURST - n) / 2));
	for (unsigned i = 0; i < got; i++) {
		int copies = 1;
		dp.cnt.rx_frames++;
		dp.cnt.rx_bytes += in[i]->pkt_len;
		if (rx_refuse(in[i])) {
			rte_pktmbuf_free(in[i]);
			continue;
		}
		dp.cnt.rx_multiseg += in[i]->nb_segs != 1;
		if (pio.rx_faulty)
			copies = apply(&pio.faults.rx, in[i], 1, now_tsc, pio.hold_rx, &pio.nhold_rx);
		while (copies-- > 0)
			out[n++] = in[i];
	}
	for (unsigned i = 0; i < n; i++) {
		len[i] = (uint16_t)out[i]->pkt_len;
		/* one segment: the mbuf's data; chained: copied into slot i (pkt_len <= frame_max) */
		data[i] = out[i]->nb_segs == 1 ? rte_pktmbuf_mtod(out[i], const uint8_t *) :
			  rte_pktmbuf_read(out[i], 0, out[i]->pkt_len, pio.scratch + (size_t)i * pio.frame_max);
	}
	return n;
}

void portio_rx_free(struct rte_mbuf **m, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		rte_pktmbuf_free(m[i]);
}

unsigned portio_tx_room(void)
{
	return TXQ_CAP - pio.ntx > 2 ? TXQ_CAP - pio.ntx - 2 : 0;
}

uint8_t *portio_tx_alloc(uint16_t len, struct rte_mbuf **frame)
{
	struct rte_mbuf *m;
	uint8_t *p;

	if (portio_tx_room() == 0 || !(m = rte_pktmbuf_alloc(pio.pool))) {
		dp.cnt.tx_nobuf++;
		return NULL;
	}
	p = (uint8_t *)rte_pktmbuf_append(m, len);
	if (!p) {
		rte_pktmbuf_free(m);
		dp.cnt.tx_nobuf++;
		return NULL;
	}
	*frame = m;
	return p;
}

struct portio_extmem {
	struct rte_mbuf_ext_shared_info sh; /* refcnt: the owner + one per frame pointing here */
	void *base;
	size_t len;
};

static void extmem_free(void *addr, void *opaque)
{
	struct portio_extmem *e = opaque;

	munmap(e->base, e->len);
	free(e);
}

struct portio_extmem *portio_extmem_new(void *base, size_t len)
{
	struct portio_extmem *e;

	if (!pio.driver_copies || !(e = calloc(1, sizeof(*e))))
		return NULL;
	e->base = base;
	e->len = len;
	e->sh.free_cb = extmem_free;
	e->sh.fcb_opaque = e;
	rte_mbuf_ext_refcnt_set(&e->sh, 1);
	return e;
}

void portio_extmem_release(struct portio_extmem *e)
{
	if (rte_mbuf_ext_refcnt_update(&e->sh, -1) == 0)
		extmem_free(e->base, e);
}

uint8_t *portio_tx_alloc_ext(uint16_t hdr_len, struct portio_extmem *e, const void *payload, uint16_t len,
			     struct rte_mbuf **frame)
{
	struct rte_mbuf *m[2];
	uint8_t *p;

	if (portio_tx_room() == 0 || rte_pktmbuf_alloc_bulk(pio.pool, m, 2) != 0) {
		dp.cnt.tx_nobuf++;
		return NULL;
	}
	p = (uint8_t *)rte_pktmbuf_append(m[0], hdr_len);
	if (!p) {
		rte_pktmbuf_free_bulk(m, 2);
		dp.cnt.tx_nobuf++;
		return NULL;
	}
	rte_mbuf_ext_refcnt_update(&e->sh, 1);
	/* the driver only reads the payload; DPDK's mbuf API has no const external buffers */
	rte_pktmbuf_attach_extbuf(m[1], (void *)(uintptr_t)payload, RTE_BAD_IOVA, len, &e->sh);
	m[1]->data_len = len;
	m[1]->pkt_len = len;
	rte_pktmbuf_chain(m[0], m[1]);
	*frame = m[0];
	return p;
}

/*
 * Checksum offload (the port has it): the NIC fills the IPv4 header checksum (wire_encode's is
 * cleared) and the UDP checksum over the pseudo-header and the whole datagram (0 in software,
 * which IPv4 allows). Frames other than IPv4/UDP (ARP) go as they are.
 */
static void tx_offload(struct rte_mbuf *m)
{
	uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(p + RTE_ETHER_HDR_LEN);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);

	if (m->data_len < RTE_ETHER_HDR_LEN + sizeof(*ip) + sizeof(*udp) || p[12] != 0x08 || p[13] != 0 ||
	    ip->version_ihl != RTE_IPV4_VHL_DEF || ip->next_proto_id != IPPROTO_UDP)
		return;
	m->l2_len = RTE_ETHER_HDR_LEN;
	m->l3_len = sizeof(*ip);
	m->ol_flags |= RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM | RTE_MBUF_F_TX_UDP_CKSUM;
	ip->hdr_checksum = 0;
	udp->dgram_cksum = rte_ipv4_phdr_cksum(ip, m->ol_flags);
}

void portio_tx_send(struct rte_mbuf *m, uint64_t now_tsc)
{
	int copies = 1;

	if (pio.st.tx_cksum)
		tx_offload(m);
	if (pio.tx_faulty)
		copies = apply(&pio.faults.tx, m, 0, now_tsc, pio.hold_tx, &pio.nhold_tx);
	while (copies-- > 0)
		pio.txq[pio.ntx++] = m;
}

unsigned portio_holding(void)
{
	return pio.nhold_rx + pio.nhold_tx;
}

unsigned portio_flush(uint64_t now_tsc)
{
	unsigned sent;

	if (pio.nhold_tx)
		pio.ntx += release(pio.hold_tx, &pio.nhold_tx, pio.txq + pio.ntx, TXQ_CAP - pio.ntx, now_tsc);
	if (pio.ntx == 0)
		return 0;
	sent = rte_eth_tx_burst(pio.port, 0, pio.txq, (uint16_t)pio.ntx);
	for (unsigned i = 0; i < sent; i++) {
		dp.cnt.tx_frames++;
		dp.cnt.tx_bytes += pio.txq[i]->pkt_len;
	}
	if (sent < pio.ntx)
		memmove(pio.txq, pio.txq + sent, (pio.ntx - sent) * sizeof(pio.txq[0]));
	pio.ntx -= sent;
	return sent;
}

void portio_close(void)
{
	for (unsigned i = 0; i < pio.ntx; i++)
		rte_pktmbuf_free(pio.txq[i]);
	for (unsigned i = 0; i < pio.nhold_rx; i++)
		rte_pktmbuf_free(pio.hold_rx[i].m);
	for (unsigned i = 0; i < pio.nhold_tx; i++)
		rte_pktmbuf_free(pio.hold_tx[i].m);
	pio.ntx = pio.nhold_rx = pio.nhold_tx = 0;
	rte_eth_dev_stop(pio.port);
	rte_eth_dev_close(pio.port);
	rte_free(pio.scratch);
	pio.scratch = NULL;
}
