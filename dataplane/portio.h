/* portio.h - the packet I/O wrapper of the dataplane: one DPDK port, rx/tx bursts, fault injection. */
#ifndef MLF_PORTIO_H
#define MLF_PORTIO_H

#include <stddef.h>
#include <stdint.h>

#include "fault.h"

struct rte_mbuf;

#define PORTIO_BURST 32

/** Port settings from the command line and the cluster config (portio_init). */
struct portio_conf {
	uint16_t port;          /* DPDK port id */
	int mtu;                /* IP MTU of the cluster config, bytes */
	double link_timeout_s;  /* wait this long for link-up after start (0: do not wait) */
	const uint8_t *cfg_mac; /* this host's "mac" when the config gives one, else NULL: frames
				 * addressed to it must arrive (promiscuous when it is not the port's) */
};

/** Default of --link-timeout, seconds: a NIC negotiating autoneg needs a few. */
#define PORTIO_LINK_TIMEOUT_S 10.0

/**
 * portio_init - configure and start the DPDK port @c->port (1 rx + 1 tx queue) for real hardware
 * (docs/dataplane.md "Port set-up"): ring sizes from the port's limits (rx at least twice
 * DP_WINDOW_SEGS), IPv4/UDP checksum offloads and scatter rx where the port offers them, MTU
 * @c->mtu set (or found on the kernel interface of a kernel-backed port), link-up awaited,
 * promiscuous only when the config's MAC is not the port's. Mbufs hold frames of IP MTU @c->mtu;
 * pool and rings on the port's NUMA socket (any socket when it is unknown or has no memory;
 * logged). Reads the port MAC into @mac.
 * Returns 0, or -errno with @err naming the port and the failing step (no port, mempool,
 * configure, MTU the port cannot carry, queues, start, link down after the timeout). A failure
 * after the port was configured leaves it stopped and closed, the mbuf pool and rx buffers freed.
 */
int portio_init(const struct portio_conf *c, uint8_t mac[6], char *err, size_t errlen);

/** portio_name - "port N (name[, interface IF])" for messages; valid after portio_init. */
const char *portio_name(void);

/**
 * Port counters and link state read from the driver (rte_eth_stats_get,
 * rte_eth_link_get_nowait) by portio_poll_port; monotonic since start, except the link fields.
 */
struct portio_port_stats {
	uint64_t imissed;     /* frames the NIC dropped: rx ring full (frames) */
	uint64_t ierrors;     /* erroneous received frames (frames) */
	uint64_t rx_nombuf;   /* rx mbuf allocation failures (frames) */
	uint64_t oerrors;     /* failed transmissions (frames) */
	int link_up;          /* 1 up, 0 down */
	int full_duplex;      /* 1 full, 0 half */
	uint32_t speed_mbps;  /* link speed, Mbit/s (0: unknown) */
	uint64_t link_changes; /* link up/down transitions seen since start */
	uint16_t nb_rxd, nb_txd; /* ring sizes in use, descriptors */
	int rx_cksum, tx_cksum, scatter; /* offloads in use (1) or done in software / off (0) */
	int promisc;          /* promiscuous mode on */
	uint64_t polls;       /* reads done so far (0: none yet) */
};

/** Seconds between two reads of the port counters by portio_poll_port. */
#define PORTIO_POLL_S 0.1

/**
 * portio_poll_port - read the port counters and link state when PORTIO_POLL_S has passed since
 * the last read (@now_ns: monotonic ns). A rising drop counter (imissed, ierrors, rx_nombuf,
 * oerrors) is logged naming the port (at most one line per second); a link change always.
 * Returns 1 when it read, 0 otherwise.
 */
int portio_poll_port(uint64_t now_ns);

/** portio_port_stats - the counters of the last read into @out. */
void portio_port_stats(struct portio_port_stats *out);

/**
 * portio_socket - the NUMA socket of the port (rte_eth_dev_socket_id), -1 when unknown. The
 * mbuf pool and rings live there (docs/dataplane.md "NUMA"); SOCKET_ID_ANY when it is unknown.
 */
int portio_socket(void);

/** portio_set_faults - replace the fault spec; @cut_ip = address of the cut host (0 = none). */
void portio_set_faults(const struct fault_spec *f, uint32_t cut_ip);

/**
 * portio_rx - receive up to PORTIO_BURST frames and apply rx faults (drop, duplicate, hold for
 * reordering or delay, cut). @out must hold 2 * PORTIO_BURST entries (duplicates); each returned
 * frame is given as data pointer and length and must be released with portio_rx_free(). A frame
 * the driver split over chained mbufs (scatter rx) is copied into one buffer that stays valid
 * until the next portio_rx (counted in rx_multiseg); frames the port flagged with a bad IP or UDP
 * checksum (rx checksum offload) are dropped (rx_cksum_bad).
 * Returns the number of frames.
 */
unsigned portio_rx(const uint8_t **data, uint16_t *len, struct rte_mbuf **out, uint64_t now_tsc);

/** portio_rx_free - release @n frames returned by portio_rx(). */
void portio_rx_free(struct rte_mbuf **m, unsigned n);

/**
 * portio_tx_alloc - a frame buffer of @len bytes to fill; *@frame is the handle for
 * portio_tx_send(). Returns NULL when no buffer or tx queue slot is free (try later).
 */
uint8_t *portio_tx_alloc(uint16_t len, struct rte_mbuf **frame);

/**
 * A memory region (an app's send buffer mapping) whose bytes frames may point to instead of
 * copying them; reference-counted so that the mapping outlives frames still queued or held.
 */
struct portio_extmem;

/**
 * portio_extmem_new - register the mapping [@base, @base + @len) (from mmap) for zero-copy
 * transmission. Only done when the port's driver copies frames into its own ring (net_af_packet:
 * the copy into the mbuf would be a second one); a DMA NIC would need the region registered
 * for DMA, so there it returns NULL and the caller copies. NULL also when out of memory.
 */
struct portio_extmem *portio_extmem_new(void *base, size_t len);

/**
 * portio_extmem_release - the owner is done with the region: munmap()s it now, or when the last
 * frame pointing into it has been sent or dropped.
 */
void portio_extmem_release(struct portio_extmem *e);

/**
 * portio_tx_alloc_ext - a frame of @hdr_len header bytes (returned, to fill) followed by the
 * @len bytes at @payload inside region @e, which are not copied. *@frame is the handle for
 * portio_tx_send(). Returns NULL like portio_tx_alloc().
 */
uint8_t *portio_tx_alloc_ext(uint16_t hdr_len, struct portio_extmem *e, const void *payload, uint16_t len,
			     struct rte_mbuf **frame);

/** portio_tx_send - queue a filled frame for transmission, after tx faults. */
void portio_tx_send(struct rte_mbuf *frame, uint64_t now_tsc);

/** portio_tx_room - frames that can still be queued before the next flush. */
unsigned portio_tx_room(void);

/** portio_holding - frames the fault injector holds for later (delay, reordering), rx and tx. */
unsigned portio_holding(void);

/** portio_flush - hand queued and due held frames to the NIC. Returns frames sent. */
unsigned portio_flush(uint64_t now_tsc);

/**
 * portio_rx_wake_fd - a file descriptor that becomes readable when a frame arrives while the rx
 * interrupt is armed (portio_rx_arm), for the loop's ppoll set; -1 when the port's driver has no
 * rx interrupts (then the loop sleeps for a time). docs/dataplane.md "Idle behaviour".
 */
int portio_rx_wake_fd(void);

/**
 * portio_rx_arm - enable (@on, before sleeping) or disable (after waking: also drains the fd)
 * the rx interrupt of queue 0. No-op when the driver has none. A frame that arrived before the
 * interrupt was enabled does not wake the fd: poll once more after arming, before sleeping.
 */
void portio_rx_arm(int on);

/** portio_close - drop held frames, stop and close the port. */
void portio_close(void);

#endif
