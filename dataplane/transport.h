/* transport.h - transfers of the dataplane: paced segmentation, SACK reliability, reassembly, timeouts.
 *
 * The interface the loop and the app interface use; below it, sender.c (outgoing transfers),
 * receiver.c (incoming ones) and egress.c (addressing, shaper, frames sent at once) share the
 * records of xfer.h. Calls go down only: transport -> sender, receiver -> egress -> portio;
 * what goes up (ends of transfers) goes through struct transport_ops. */
#ifndef MLF_TRANSPORT_H
#define MLF_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "appmsg.h"
#include "xfer.h"

/** Application channels 0..TRANSPORT_MAX_CHANS-1; SEND and DATA naming another are refused. */
#define TRANSPORT_MAX_CHANS XFER_MAX_CHANS

/**
 * Upward notifications of the transport: how the layer above (the app interface) hears about
 * the end of transfers without the transport calling it by name. Registered once at start-up
 * by transport_init; every field must be set. All are called from the dataplane's main loop,
 * inside transport_rx/transport_rx_flush/transport_tx/transport_timers/transport_cancel/
 * transport_shutdown, never from another thread.
 */
struct transport_ops {
	/**
	 * tx_done - outgoing transfer @x ended, once per transfer: @status 0 when the peer
	 * acknowledged every byte, else -errno (-ECONNABORTED peer abort, -ETIMEDOUT silent peer,
	 * -ECANCELED cancelled or shutting down) with x->reason saying why. x->end_ns (CLOCK_REALTIME
	 * ns), x->first_tx_ns, x->frames, x->sack.retransmits are final. @x is valid during the call
	 * only; x->owner is the tag given to transport_submit.
	 */
	void (*tx_done)(const struct xfer_tx *x, int status);
	/**
	 * rx_done - incoming transfer @x ended, once per transfer: @status 0 with every byte of
	 * x->bytes in the memfd x->fd, else -errno with @reason (text, never NULL on failure).
	 * The callee takes ownership of x->fd in both cases (closes it or hands it on); @x is valid
	 * during the call only.
	 */
	void (*rx_done)(const struct xfer_rx *x, int status, const char *reason);
	/**
	 * rx_room - asked just before a complete incoming transfer is acknowledged: 1 when rx_done
	 * can still queue it for an app, 0 when not (the transport then fails it with -ENOBUFS and
	 * tells the sender, which must not hear that it succeeded).
	 */
	int (*rx_room)(void);
	/**
	 * rx_aborted - host @peer (index in the cluster) aborted transfer @id of which this host
	 * never received a frame; @reason names the peer and its reason. Lets an app waiting for
	 * @id (a commit order) fail it instead of holding later transfers.
	 */
	void (*rx_aborted)(int peer, uint64_t id, const char *reason);
};

/**
 * transport_init - empty transfer tables. @max_xfers bounds concurrent outgoing and incoming
 * transfers each. @ops: the upward notifications (kept, not copied: static storage).
 * Returns 0 or -ENOMEM.
 */
int transport_init(int max_xfers, const struct transport_ops *ops);

/**
 * transport_submit - start an outgoing transfer from request @m (APPMSG_SEND) whose buffer is
 * the memfd @fd (consumed). @owner: an opaque tag of the requester, stored in xfer_tx.owner
 * (given back with ops->tx_done) and matched by transport_cancel.
 * Returns the new transfer's id, or 0 with @err saying why (unknown host, bad schedule,
 * buffer too small, duplicate id, too many transfers).
 */
uint64_t transport_submit(const struct appmsg *m, int fd, uint64_t owner, char *err, size_t errlen);

/**
 * transport_rx - handle one received frame (already counted by portio). The payload of DATA
 * frames is written into the transfer's memfd by transport_rx_flush(), so @frame must stay
 * valid until then.
 */
void transport_rx(const uint8_t *frame, uint16_t len);

/**
 * transport_rx_flush - write the payload gathered by transport_rx() since the last call into the
 * receivers' memfds: one pwritev per run of consecutive segments of one transfer instead of a
 * copy through a mapping (whose page faults cost a quarter of the receiver's CPU). Call it after
 * each rx burst, before the frames are freed. A transfer whose memfd cannot be written (out of
 * memory) fails with a reason saying so, and its sender is told by ABORT.
 */
void transport_rx_flush(void);

/**
 * transport_tx - send what pacing, the shaper and the tx queue allow, round robin over the
 * active transfers. Returns the number of frames queued.
 */
unsigned transport_tx(void);

/**
 * transport_timers - SACK timers, retransmission rounds, timeouts (failing transfers naming the
 * silent peer), completions and cleanup. Returns 1 if anything changed.
 */
int transport_timers(void);

/**
 * transport_cancel - the requester @owner went away: abort its unfinished outgoing transfers
 * (ABORT to the peer, ops->tx_done with -ECANCELED).
 */
void transport_cancel(uint64_t owner);

/**
 * transport_shutdown - fail every unfinished transfer with -ECANCELED ("dataplane shutting
 * down"), tell the peers (ABORT) and the apps, free everything.
 */
void transport_shutdown(void);

/** transport_rx_busy - 1 when incoming transfer @id (any peer) is being received now, else 0. */
int transport_rx_busy(uint64_t id);

/**
 * transport_next_due_ns - nanoseconds the main loop may sleep before a transfer needs it
 * (docs/dataplane.md "Idle behaviour"): the earliest of sender_next_due_ns(@grain_ns,
 * @poll_ns), @rx_ns while an incoming transfer is active (its frames wait in the rx ring
 * meanwhile; the caller sizes @rx_ns from the arrival rate) and @poll_ns while the fault
 * injector holds frames. UINT64_MAX when no transfer is in progress.
 */
uint64_t transport_next_due_ns(uint64_t grain_ns, uint64_t rx_ns, uint64_t poll_ns);

/** transport_active - number of unfinished transfers (both directions); idle back-off uses it. */
int transport_active(void);

/** transport_stats - copy up to @max transfers' figures into @out; returns how many. */
int transport_stats(struct xfer_stat *out, int max);

/**
 * transport_announce - the scheduler announced incoming transfer @id from host index @peer on
 * channel @chan (receiver_announce); with @id 0, a standing announcement of every transfer
 * from @peer on @chan (@on 1) or its end (@on 0). Returns 0 or -EINVAL (bad peer or channel).
 */
int transport_announce(int peer, unsigned chan, uint64_t id, int on);

/**
 * transport_require_announce - channel @chan takes only announced transfers (@on) or any
 * (receiver_require_announce; docs/security.md "Announced transfers").
 */
void transport_require_announce(unsigned chan, int on);

/** transport_announce_required - 1 when channel @chan takes only announced transfers, else 0. */
int transport_announce_required(unsigned chan);

/** transport_set_shaper - port egress shaper rate in Gbit/s of L2 frames (0 = off). */
void transport_set_shaper(double gbps);

#endif
