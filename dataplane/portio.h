/* portio.h - the packet I/O wrapper of the dataplane: one DPDK port, rx/tx bursts, fault injection. */
#ifndef MLF_PORTIO_H
#define MLF_PORTIO_H

#include <stddef.h>
#include <stdint.h>

#include "fault.h"

struct rte_mbuf;

#define PORTIO_BURST 32

/**
 * portio_init - configure and start DPDK port @port (1 rx + 1 tx queue) with mbufs large
 * enough for frames of IP MTU @mtu, pool and rings on the port's NUMA socket (any socket when
 * it is unknown or has no memory; logged). Reads the port MAC into @mac.
 * Returns 0, or -errno with @err naming the failing step (no port, mempool, configure, start).
 */
int portio_init(uint16_t port, int mtu, uint8_t mac[6], char *err, size_t errlen);

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
 * frame is given as data pointer and length and must be released with portio_rx_free().
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
