/* appif.h - the dataplane's application interface: Unix socket server, events, ordered delivery. */
#ifndef MLF_APPIF_H
#define MLF_APPIF_H

#include "transport.h"

/**
 * appif_init - listen on the Unix SOCK_SEQPACKET socket @path (a stale file is replaced, the
 * directory created). Returns 0 or -errno with @err naming the path.
 */
int appif_init(const char *path, char *err, size_t errlen);

/** appif_poll - accept connections and serve requests without blocking. Returns 1 if any. */
int appif_poll(void);

/** appif_tx_done - report the end of outgoing transfer @x (status 0 or -errno) to its app. */
void appif_tx_done(const struct xfer_tx *x, int status);

/**
 * appif_rx_done - an incoming transfer ended: queue it for the listener of its channel, in the
 * commit order when one was given. Takes ownership of x->fd. @reason: failure text or NULL.
 */
void appif_rx_done(const struct xfer_rx *x, int status, const char *reason);

/**
 * appif_rx_room - 1 when a finished incoming transfer can still be queued for its listener, 0
 * when the delivery queue is full (the caller fails the transfer and tells the sender).
 */
int appif_rx_room(void);

/**
 * appif_rx_aborted - host @peer aborted transfer @id that this host never started receiving:
 * a channel whose commit order waits for @id gets a failure event (status -ECONNABORTED,
 * @reason) instead of holding later transfers forever.
 */
void appif_rx_aborted(int peer, uint64_t id, const char *reason);

/**
 * appif_check_order - hold timeout of ordered delivery: when the next id of a channel's commit
 * order has neither arrived nor been in progress for @hold_ns (ns) while later transfers wait,
 * deliver a failure event for it (status -ETIMEDOUT, reason naming the id) so the rest can go.
 */
void appif_check_order(uint64_t hold_ns);

/**
 * appif_ctl_to - send the control JSON @text to app connection @c (an APPMSG_CTL; queued when
 * the app's socket is full). A text longer than APPMSG_CTL_MAX is logged and not sent.
 */
void appif_ctl_to(int c, const char *text);

/** appif_close - close every connection and remove the socket file. */
void appif_close(void);

#endif
