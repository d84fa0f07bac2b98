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

/** appif_close - close every connection and remove the socket file. */
void appif_close(void);

#endif
