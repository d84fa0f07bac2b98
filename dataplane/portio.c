/* portio.c - DPDK port set-up, rx/tx bursts, and the dataplane's own fault injection on both. */
#include "portio.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rte_devargs.h>
#include <rte_ethdev.h>
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
	mp = rte_pktmbuf_pool_create(name, 8191, 256, 0, (uint16_t)(room + RTE_PKTMBUF_HEADROOM), pio.socket);
	if (!mp && pio.socket != SOCKET_ID_ANY && rte_errno == ENOMEM) {
		log_warn("port %u: no memory on its socket %d for mbufs (EAL --socket-mem): using any socket",
			 pio.port, pio.socket);
		pio.socket = SOCKET_ID_ANY;
		mp = rte_pktmbuf_pool_create(name, 8191, 256, 0, (uint16_t)(room + RTE_PKTMBUF_HEADROOM), pio.socket);
	}
	return mp;
}

static const char *driver_name(uint16_t port)
{
	struct rte_eth_dev_info info;

	return rte_eth_dev_info_get(port, &info) == 0 && info.driver_name ? info.driver_name : "?";
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

int portio_init(uint16_t port, int mtu, uint8_t mac[6], char *err, size_t errlen)
{
	struct rte_eth_conf conf;
	struct rte_ether_addr ea;
	unsigned room = (unsigned)(mtu + RTE_ETHER_HDR_LEN + 64);
	int rc;

	memset(&conf, 0, sizeof(conf));
	if (!rte_eth_dev_is_valid_port(port)) {
		snprintf(err, errlen, "no DPDK port %u (pass --vdev=net_af_packet0,iface=... or bind a NIC)", port);
		return -ENODEV;
	}
	if (room < 2048)
		room = 2048;
	pio.port = port;
	pio.socket = nodepick_pool_socket(rte_eth_dev_socket_id(port));
	if ((rc = rte_eth_dev_configure(port, 1, 1, &conf)) < 0) {
		snprintf(err, errlen, "cannot configure port %u: %s", port, strerror(-rc));
		return rc;
	}
	/*
	 * net_af_packet refuses mbufs smaller than its ring frames (framesz in the vdev args, which
	 * the port does not report): grow the mbufs until the rx queue accepts them.
	 */
	for (;;) {
		pio.pool = make_pool(room);
		if (!pio.pool) {
			snprintf(err, errlen, "cannot create mbuf pool of %u-byte mbufs: %s", room,
				 rte_strerror(rte_errno));
			return -ENOMEM;
		}
		rc = rte_eth_rx_queue_setup(port, 0, 1024, (unsigned)pio.socket, NULL, pio.pool);
		if (rc != -ENOMEM || room >= UINT16_MAX - RTE_PKTMBUF_HEADROOM)
			break;
		rte_mempool_free(pio.pool);
		room = room * 2 > UINT16_MAX - RTE_PKTMBUF_HEADROOM ? UINT16_MAX - RTE_PKTMBUF_HEADROOM : room * 2;
	}
	/*
	 * A real NIC needs the config's MTU (jumbo frames). net_af_packet refuses (it reports a
	 * 1518-byte maximum) and follows the kernel interface's MTU instead: only warn.
	 */
	if (rc == 0) {
		int mrc = rte_eth_dev_set_mtu(port, (uint16_t)mtu);
		if (mrc < 0)
			log_warn("port %u: cannot set MTU %d (%s); frames of that size need the NIC or "
				 "interface MTU set to it", port, mtu, strerror(-mrc));
	}
	if (rc < 0 || (rc = rte_eth_tx_queue_setup(port, 0, 1024, (unsigned)pio.socket, NULL)) < 0) {
		snprintf(err, errlen, "cannot set up queues of port %u: %s", port, strerror(-rc));
		return rc;
	}
	if ((rc = rte_eth_dev_start(port)) < 0) {
		snprintf(err, errlen, "cannot start port %u: %s", port, strerror(-rc));
		return rc;
	}
	pio.driver_copies = driver_copies(port);
	rx_intr_probe(port);
	log_info("port %u: driver %s: DATA payloads %s", port, driver_name(port), pio.driver_copies ?
		 "sent from the app's buffer (the driver copies frames into its ring)" : "copied into mbufs");
	log_info("port %u: rx %s", port, pio.rx_fd >= 0 ? "interrupts: the idle loop sleeps until a frame arrives" :
		 "interrupts not supported by the driver: the idle loop sleeps for a time");
	log_info("port %u: NUMA socket %d (rte_eth_dev_socket_id), mbuf pool and rings on %s %d", port,
		 rte_eth_dev_socket_id(port), pio.socket == SOCKET_ID_ANY ? "any socket," : "socket", pio.socket);
	rte_eth_promiscuous_enable(port);
	rte_eth_macaddr_get(port, &ea);
	memcpy(mac, ea.addr_bytes, 6);
	return 0;
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
		if (in[i]->nb_segs != 1) {
			dp.cnt.rx_multiseg++;
			rte_pktmbuf_free(in[i]);
			continue;
		}
		if (pio.rx_faulty)
			copies = apply(&pio.faults.rx, in[i], 1, now_tsc, pio.hold_rx, &pio.nhold_rx);
		while (copies-- > 0)
			out[n++] = in[i];
	}
	for (unsigned i = 0; i < n; i++) {
		data[i] = rte_pktmbuf_mtod(out[i], const uint8_t *);
		len[i] = out[i]->data_len;
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

void portio_tx_send(struct rte_mbuf *m, uint64_t now_tsc)
{
	int copies = 1;

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
}
