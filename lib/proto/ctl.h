/* ctl.h - framing of the control protocol: one JSON object per line over a stream socket
 * (docs/control.md). Used by the scheduler, the dataplane's relay and tests. */
#ifndef MLF_CTL_H
#define MLF_CTL_H

#include <stddef.h>
#include <jansson.h>

#define CTL_LINE_MAX (1u << 20)   /* longest message line, bytes including the '\n' */
#define CTL_OUT_MAX (16u << 20)   /* default cap of a connection's output queue, bytes */
#define CTL_DEFAULT_PORT 7070     /* default TCP port of the scheduler */
#define CTL_LISTEN_BACKLOG 1024   /* connections the kernel completes before accept: a host's
				   * SYN is not dropped (1 s resend) behind an outsider's many */

/**
 * A buffered connection: bytes read but not yet parsed, bytes queued but not yet written.
 * The socket may be blocking or non-blocking; ctl_* never block on a non-blocking one.
 */
struct ctl_conn {
	int fd;
	char *in;           /* received bytes [in_off, in_len) not parsed yet */
	size_t in_off, in_len, in_cap;
	int in_skip;        /* discarding the rest of an over-long line up to its '\n' */
	char *out;          /* queued bytes [out_off, out_len) */
	size_t out_off, out_len, out_cap;
	size_t out_max;     /* cap of the queued bytes (ctl_init: CTL_OUT_MAX; 0 also means that) */
	size_t in_max;      /* longest line taken, bytes with its '\n' (ctl_init: CTL_LINE_MAX;
			     * 0 also means that); the input buffer holds at most twice this, up
			     * to CTL_LINE_MAX + 64 KiB */
	int overflow;       /* a ctl_queue went over out_max: the peer does not read */
};

/**
 * ctl_init - wrap socket @fd (ownership passes to @c; ctl_close closes it). The output queue
 * is capped at CTL_OUT_MAX bytes and lines at CTL_LINE_MAX (c->out_max and c->in_max may be
 * changed after ctl_init, e.g. lowered for a connection that has not authenticated yet).
 */
void ctl_init(struct ctl_conn *c, int fd);

/** ctl_close - close the socket and free the buffers; safe twice. */
void ctl_close(struct ctl_conn *c);

/**
 * ctl_queue - encode @msg (compact, one line) and queue it; the reference is not stolen.
 * Returns 0, -ENOMEM, -EMSGSIZE (longer than CTL_LINE_MAX), or -ENOBUFS: the bytes queued and
 * not written would exceed c->out_max (the peer does not read); then nothing is queued,
 * c->overflow is set and stays set (every later ctl_queue returns -ENOBUFS too): the caller
 * should log it once and close the connection.
 */
int ctl_queue(struct ctl_conn *c, json_t *msg);

/**
 * ctl_flush - write queued bytes. Returns 1 when everything is written, 0 when some remain
 * (non-blocking socket full: poll for POLLOUT), -EPIPE / -ECONNRESET / other -errno on failure.
 */
int ctl_flush(struct ctl_conn *c);

/** ctl_send - ctl_queue + ctl_flush; same returns (0 means queued, not all written yet). */
int ctl_send(struct ctl_conn *c, json_t *msg);

/** ctl_pending - bytes queued but not written. */
size_t ctl_pending(const struct ctl_conn *c);

/**
 * ctl_read - read what the socket has (one read() call). The input buffer never holds more
 * than L + min(L, 64 KiB) bytes, L = c->in_max (CTL_LINE_MAX by default): when L bytes are
 * buffered, nothing is read and -EAGAIN is returned (take the lines with ctl_next first, which
 * always makes room).
 * Returns bytes read (> 0), 0 at end of stream (peer closed), -EAGAIN (nothing waiting, or
 * the buffer is full), -ENOMEM, or another -errno.
 */
long ctl_read(struct ctl_conn *c);

/**
 * ctl_next - take the next complete line out of the input buffer and parse it.
 * Returns 1 with *@msg set (a new reference to a JSON object: json_decref it), 0 when no
 * complete line is buffered, or -EBADMSG with @err saying why the line was refused (not JSON,
 * not an object, no string "type", longer than c->in_max); the bad line is consumed, so the
 * caller can answer with an error and go on. A line longer than c->in_max is refused once,
 * however its bytes arrive (in one read or many): the bytes up to its '\n' are discarded as
 * they come and never parsed as a line of their own.
 */
int ctl_next(struct ctl_conn *c, json_t **msg, char *err, size_t errlen);

/**
 * ctl_connect - blocking TCP connect to @host_port ("10.0.0.2:7070" or "10.0.0.2", default port).
 * Returns the socket (non-blocking, TCP_NODELAY), or -errno with @err naming the address.
 */
int ctl_connect(const char *host_port, char *err, size_t errlen);

/**
 * ctl_listen - TCP listening socket on @host_port (address may be "0.0.0.0"), SO_REUSEADDR,
 * non-blocking, backlog CTL_LISTEN_BACKLOG (the kernel caps it at net.core.somaxconn). Returns the socket or -errno with @err naming the address.
 */
int ctl_listen(const char *host_port, char *err, size_t errlen);

/** ctl_type - the "type" string of @msg, or "" when absent. */
const char *ctl_type(const json_t *msg);

#endif
