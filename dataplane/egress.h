/* egress.h - this host's end of the links: frame addressing, the port's egress shaper, frames sent at once. */
#ifndef MLF_EGRESS_H
#define MLF_EGRESS_H

#include <stdint.h>

#include "wire.h"

/** egress_init - the shaper off (rate 0), full. Call after dp.hz and dp.clk are set. */
void egress_init(void);

/**
 * egress_frame_len - bytes of the L2 frame (Ethernet header included, and the frame tag when
 * frame_auth is on) carrying @payload bytes.
 */
uint32_t egress_frame_len(uint32_t payload);

/**
 * egress_sign - with frame_auth on, write the nonce and MAC of @frame (encoded by wire_encode
 * with WIRE_F_AUTH, addresses @a) over its MLfabric header, its stamp and the @len bytes of
 * @body, which may live outside the frame (zero-copy payloads); nothing with frame_auth off.
 * Returns 0, or -EIO when libsodium or getrandom failed (the receiver then drops the frame as
 * forged).
 */
int egress_sign(uint8_t *frame, const struct wire_addr *a, const void *body, uint32_t len);

/**
 * egress_ready - 1 when frames may go to host @peer: its MAC is static or resolved by ARP
 * (neigh_ready, docs/dataplane.md "Neighbours"); 0 while it is not (the caller waits; logged).
 */
int egress_ready(int peer);

/** egress_addr - fill @a with the Ethernet/IP/UDP addresses from this host to host @peer. */
void egress_addr(int peer, struct wire_addr *a);

/**
 * egress_now - send the frame of header @h (h->len bytes of @body follow it) to host @peer at
 * once, charged to the shaper without waiting for tokens (acknowledgements, aborts and
 * keepalives must not queue behind data). Returns 0, -ENOBUFS when no frame buffer is free, or
 * -EHOSTUNREACH while @peer's MAC is not resolved yet (egress_ready).
 */
int egress_now(int peer, struct wire_hdr *h, const void *body);

/** egress_abort - send ABORT of transfer @id to @peer with the text @why; counted when sent. */
void egress_abort(int peer, uint64_t id, const char *why);

/** egress_set_shaper - the port's egress rate in Gbit/s of L2 frames (0 = off); logged. */
void egress_set_shaper(double gbps);

/** egress_refill - add the shaper tokens earned up to this loop iteration's TSC sample. */
void egress_refill(void);

/** egress_take - 1 and spend @bytes of shaper tokens if there are enough (or it is off), else 0. */
int egress_take(uint32_t bytes);

/** egress_refund - give back @bytes taken by egress_take() for a frame that was not sent. */
void egress_refund(uint32_t bytes);

/**
 * egress_wait_ns - nanoseconds until the port's shaper lets a frame of @bytes (L2 bytes) go;
 * 0 when it may go now or the shaper is off. The loop sleeps this long when only the shaper
 * holds frames back.
 */
uint64_t egress_wait_ns(uint32_t bytes);

#endif
