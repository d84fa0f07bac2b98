/* sender.h - outgoing transfers: paced segmentation, retransmission on SACKs, keepalives, timeouts. */
#ifndef MLF_SENDER_H
#define MLF_SENDER_H

#include <stddef.h>
#include <stdint.h>

#include "appmsg.h"
#include "wire.h"
#include "xfer.h"

/**
 * sender_init - empty table of at most @max outgoing transfers, cut in segments of @seg payload
 * bytes. @tx_done: called once when a transfer ends (see transport_ops.tx_done).
 * Returns 0 or -ENOMEM.
 */
int sender_init(int max, uint32_t seg, void (*tx_done)(const struct xfer_tx *x, int status));

/**
 * sender_submit - start an outgoing transfer from request @m (APPMSG_SEND) whose buffer is the
 * memfd @fd (consumed), tagged @owner. Returns its id, or 0 with @err saying why (see
 * transport_submit).
 */
uint64_t sender_submit(const struct appmsg *m, int fd, uint64_t owner, char *err, size_t errlen);

/**
 * sender_tx - send what pacing, the shaper and the tx queue allow, round robin over the
 * transfers. @active: unfinished transfers of this host in both directions, which share the
 * receivers' rx rings (the per-transfer window is cut accordingly). Returns frames queued.
 */
unsigned sender_tx(int active);

/** sender_on_sack - apply SACK @h/@body (h->len bitmap bytes) from host @peer; counted. */
void sender_on_sack(int peer, const struct wire_hdr *h, const uint8_t *body);

/**
 * sender_abort - host @peer aborted transfer @id with @reason: fail it (-ECONNABORTED) when it
 * is ours, to @peer and unfinished. Returns 1 when an outgoing transfer @id exists (any peer
 * or state), else 0.
 */
int sender_abort(int peer, uint64_t id, const char *reason);

/**
 * sender_timers - keepalives of paused transfers, completion, peer silence (-ETIMEDOUT, ABORT
 * sent), freeing finished transfers. Returns 1 if a transfer was freed.
 */
int sender_timers(void);

/** sender_cancel - fail (-ECANCELED, ABORT sent) the unfinished transfers tagged @owner. */
void sender_cancel(uint64_t owner);

/** sender_fail_all - fail every unfinished transfer (-ECANCELED, ABORT sent): shutting down. */
void sender_fail_all(void);

/** sender_free - free every transfer and the table. */
void sender_free(void);

/**
 * sender_next_due_ns - nanoseconds until an outgoing transfer next needs the loop (a dataplane
 * whose CPU follows its traffic, docs/dataplane.md "Idle behaviour"): the commanded start of a
 * waiting transfer (exact),
 * the next frame a paced transfer's rate allows, but at least the pacing grain of
 * min(@grain_ns, 32 frames at the current rate) so that a slow transfer sends small bursts
 * instead of waking per frame; @poll_ns for an unpaced transfer (it waits for SACKs or the
 * shaper); @grain_ns once everything was sent (repairs, SACKs, timers). UINT64_MAX when no
 * transfer is waiting or sending.
 */
uint64_t sender_next_due_ns(uint64_t grain_ns, uint64_t poll_ns);

/** sender_active - outgoing transfers waiting for their start or sending. */
int sender_active(void);

/** sender_stats - copy up to @max transfers' figures into @out; returns how many. */
int sender_stats(struct xfer_stat *out, int max);

#endif
