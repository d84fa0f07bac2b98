/* neigh.h - the dataplane's neighbours: ARP answers, gratuitous ARP, peers' MACs resolved and learned. */
#ifndef MLF_NEIGH_H
#define MLF_NEIGH_H

#include <stdint.h>

/**
 * neigh_init - the neighbour table of the cluster (docs/dataplane.md "Neighbours"): hosts with
 * a "mac" in the config are static entries (never replaced by ARP), the others are resolved by
 * ARP; their dp.cluster.hosts[].mac is zeroed until then, so that frames claiming to come from
 * them are dropped and no frame goes to a guessed address. This host's own entry takes the
 * port's MAC (dp.my_mac) when the config gives none. Sends a gratuitous ARP at once.
 * Call after portio_init() and dp.me, dp.clk are set. Returns 0 or -ENOMEM.
 */
int neigh_init(void);

/**
 * neigh_rx - handle received frame @frame of @len bytes if it is ARP: answer requests for our
 * IP, learn peers' MACs (arp_input rules), log what was learned, changed or conflicting.
 * Returns 1 when the frame was ARP (consumed, valid or not), 0 when it is not (for transport_rx).
 */
int neigh_rx(const uint8_t *frame, uint16_t len);

/**
 * neigh_poll - send the ARP requests that are due for peers whose MAC is unknown (backoff from
 * 50 ms to 1 s, indefinitely: a peer may start late). Returns 1 when it sent any, else 0.
 */
int neigh_poll(void);

/**
 * neigh_ready - 1 when host @peer's MAC is known (static or resolved) so frames may go to it;
 * else 0, with a log line naming the peer (rate-limited): its frames wait, never broadcast.
 * Before neigh_init() (tests without a port), 1: the config's addresses are used as they are.
 */
int neigh_ready(int peer);

/** neigh_close - free the table. */
void neigh_close(void);

#endif
