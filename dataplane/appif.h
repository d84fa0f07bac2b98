/* appif.h - the dataplane's application interface: Unix socket server, events, ordered delivery. */
#ifndef MLF_APPIF_H
#define MLF_APPIF_H

#include <sys/types.h>

#include "transport.h"

/**
 * Upward notifications of the app interface: what it passes to the layer above (the control
 * relay) without calling it by name. Registered once at start-up by appif_init; every field
 * must be set. Called from appif_poll (main loop) only.
 */
struct appif_ops {
	/**
	 * ctl_from_app - app connection @client (0..63) sent the control JSON @text (NUL-terminated,
	 * at most APPMSG_CTL_MAX bytes); the callee may answer with appif_ctl_to(@client, ...).
	 */
	void (*ctl_from_app)(int client, const char *text);
	/**
	 * client_gone - app connection @client closed (or broke); its outgoing transfers have
	 * already been cancelled. The slot number may be reused by a later connection.
	 */
	void (*client_gone)(int client);
};

/**
 * The app interface's answers to the transport's notifications (struct transport_ops):
 * completion and failure events to the apps, ordered delivery of incoming transfers. Given to
 * transport_init by main at start-up.
 */
extern const struct transport_ops appif_transport_ops;

/**
 * APPIF_BACKLOG_MAX_BYTES - replies (bytes as on the socket, ~300 per event) queued to one app
 * connection whose socket is full. An app that lets more pile up (it never reads) is
 * disconnected with one WARN naming it: its transfers fail as if it had closed, and no event it
 * would read is silently skipped (docs/dataplane.md "App socket trust").
 */
#define APPIF_BACKLOG_MAX_BYTES (4u << 20)

/**
 * appif_init - listen on the Unix SOCK_SEQPACKET socket @path (a stale file is replaced, the
 * directory created). The socket is mode 0660, group @group ((gid_t)-1: the dataplane's own
 * group); a connecting process is served only if it is root, has the dataplane's uid, or has
 * @group among its groups (SO_PEERCRED, SO_PEERGROUPS), else closed with a WARN naming its pid
 * and uid. @ops: upward notifications (kept, not copied: static storage).
 * Returns 0 or -errno with @err naming the path.
 */
int appif_init(const char *path, gid_t group, const struct appif_ops *ops, char *err, size_t errlen);

/** appif_poll - accept connections and serve requests without blocking. Returns 1 if any. */
int appif_poll(void);

struct pollfd;
/**
 * appif_wait_fds - fill @p (at most @max entries) with the sockets the main loop sleeps on
 * between events: the listening socket and every client (POLLIN; POLLOUT while a client has a
 * backlog). Returns the number filled. The loop calls appif_poll() after any of them is ready.
 */
int appif_wait_fds(struct pollfd *p, int max);

/**
 * appif_check_order - hold timeout of ordered delivery: when the next id of a channel's commit
 * order has neither arrived nor been in progress for @hold_ns (ns) while later transfers wait,
 * deliver a failure event for it (status -ETIMEDOUT, reason naming the id) so the rest can go.
 * Also hands over the arrivals whose wait for their own order (DELIVERY_UNKNOWN_HOLD_NS,
 * delivery.h) ended. Called from the loop's slow path.
 */
void appif_check_order(uint64_t hold_ns);

/**
 * appif_ctl_to - send the control JSON @text to app connection @c (an APPMSG_CTL; queued when
 * the app's socket is full). A text longer than APPMSG_CTL_MAX is logged and not sent.
 */
void appif_ctl_to(int c, const char *text);

/** appif_close - close every connection and remove the socket file; appif_init may follow. */
void appif_close(void);

#endif
