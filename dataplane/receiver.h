/* receiver.h - incoming transfers: reassembly into memfds, SACKs, late frames, timeouts. */
#ifndef MLF_RECEIVER_H
#define MLF_RECEIVER_H

#include <stdint.h>

#include "wire.h"
#include "xfer.h"

/**
 * receiver_init - empty table of at most @max incoming transfers in segments of @seg payload
 * bytes (DATA with another segment size is refused). @rx_done, @rx_room: see transport_ops.
 * Returns 0 or -ENOMEM.
 */
int receiver_init(int max, uint32_t seg, void (*rx_done)(const struct xfer_rx *x, int status,
							const char *reason),
		  int (*rx_room)(void));

/**
 * receiver_on_data - DATA @h/@body (h->len payload bytes) from host @peer: start, continue or
 * complete a transfer, answer late frames of finished ones, SACK when due. The payload is
 * written by receiver_flush, so @body must stay valid until then.
 */
void receiver_on_data(int peer, const struct wire_hdr *h, const uint8_t *body);

/**
 * receiver_flush - write the payload gathered since the last call into the memfd (one pwritev
 * per run of consecutive segments); a transfer whose memfd cannot be written fails (-ENOMEM)
 * and its sender is told by ABORT.
 */
void receiver_flush(void);

/**
 * receiver_abort - host @peer aborted transfer @id with @reason: fail it (-ECONNABORTED) when
 * it is being received. Returns 1 when this host receives or recently received @id from
 * @peer, 0 when it never saw a frame of it.
 */
int receiver_abort(int peer, uint64_t id, const char *reason);

/**
 * receiver_timers - SACKs of idle transfers, peer silence (-ETIMEDOUT, ABORT sent), finished
 * transfers reduced to a small record for late frames. Returns 1 if anything changed.
 */
int receiver_timers(void);

/** receiver_fail_all - fail every active transfer (-ECANCELED, ABORT sent): shutting down. */
void receiver_fail_all(void);

/** receiver_free - free every transfer and the tables. */
void receiver_free(void);

/** receiver_busy - 1 when transfer @id (any peer) is being received now, else 0. */
int receiver_busy(uint64_t id);

/** receiver_active - incoming transfers being received. */
int receiver_active(void);

/** receiver_stats - copy up to @max transfers' figures into @out; returns how many. */
int receiver_stats(struct xfer_stat *out, int max);

/**
 * receiver_announce - the scheduler announced transfer @id from host index @peer on channel
 * @chan (docs/security.md "Announced transfers"): remembered for 60 s, taken when its first
 * frame arrives; a transfer already here and held is released (SACKed, completed when whole).
 * Returns 0, or -EINVAL (bad peer, channel or id 0).
 */
int receiver_announce(int peer, unsigned chan, uint64_t id);

/**
 * receiver_announce_standing - every transfer from @peer on @chan counts as announced (@on) or
 * no longer (chain replication: the server forwards what it applied). Returns 0 or -EINVAL.
 */
int receiver_announce_standing(int peer, unsigned chan, int on);

/**
 * receiver_require_announce - channel @chan takes only announced transfers (@on; its listener
 * asked for it) or any transfer from a cluster host. An unannounced transfer on a channel that
 * requires it is held (no SACK, not completed) for at most min(1 s, timeout / 2) waiting for
 * its announcement, then refused: ABORT to the sender, -EACCES, counter rx_unannounced.
 * Transfers already in flight on @chan follow the new rule at once: unannounced ones are held
 * from now on (@on) or released (not @on).
 */
void receiver_require_announce(unsigned chan, int on);

/** receiver_announce_required - 1 when channel @chan takes only announced transfers, else 0. */
int receiver_announce_required(unsigned chan);

#endif
