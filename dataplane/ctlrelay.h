/* ctlrelay.h - the dataplane as the host's MLfabric daemon (paper §4): control connection to the
 * scheduler (hello, heartbeats, link reports) and relay of the applications' control messages. */
#ifndef MLF_CTLRELAY_H
#define MLF_CTLRELAY_H

#include <stddef.h>

/**
 * ctlrelay_init - set up the relay. @sched: "IP:PORT" of the scheduler, or NULL for none (mode
 * DIRECT: apps get an error for every message they send upwards). @t_report: seconds between
 * link reports (> 0). The connection is made by ctlrelay_poll (non-blocking, retried every
 * 0.5 s). Returns 0, or -EINVAL with @err naming a malformed address.
 */
int ctlrelay_init(const char *sched, double t_report, char *err, size_t errlen);

/**
 * ctlrelay_poll - called by the main loop's slow path: advance the connection attempt, read and
 * route the scheduler's messages, send heartbeats (every 0.25 s) and link reports (every
 * t_report s), flush what is queued. Never blocks. Returns 1 when messages moved, else 0.
 */
int ctlrelay_poll(void);

struct pollfd;
/**
 * ctlrelay_wait_fds - fill @p (at most @max entries) with the scheduler connection the main loop
 * sleeps on: the established connection (POLLIN, POLLOUT while output is queued) or the
 * connection in progress (POLLOUT). Returns the number filled (0 without a scheduler).
 */
int ctlrelay_wait_fds(struct pollfd *p, int max);

/**
 * ctlrelay_from_app - a control JSON @text from app connection @client: remember its "app"
 * name, add "host", queue it to the scheduler. Malformed text or no scheduler connection is
 * answered to the app with {"type":"error","reason":...}.
 */
void ctlrelay_from_app(int client, const char *text);

/** ctlrelay_client_gone - app connection @client closed: tell the scheduler (`error` with the app
 * name, docs/control.md: it unregisters the app and fails what depends on it, e.g. a fail-over
 * when it was the server) and forget the name. */
void ctlrelay_client_gone(int client);

/** ctlrelay_close - close the scheduler connection. */
void ctlrelay_close(void);

#endif
