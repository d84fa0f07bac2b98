/* dpclient.h - libmlfabric's client of the local dataplane (low level): buffers, transfers, events. */
#ifndef MLF_DPCLIENT_H
#define MLF_DPCLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "appmsg.h"

/** Opaque connection to the local dataplane. */
typedef struct mlfabric mlfabric_t;

/** A shared-memory buffer (memfd) the dataplane can map: updates, models, aggregates. */
struct mlfabric_buf {
	void *data;  /* mapped read-write in this process */
	size_t size; /* bytes */
	int fd;      /* the memfd, passed to the dataplane with every transfer */
};

/** A transfer request (paper Table 1's push/get are built on this in the next layer). */
struct mlfabric_send {
	const char *dst;                 /* destination host name (cluster config) */
	const struct mlfabric_buf *buf;  /* source buffer */
	uint64_t offset, bytes;          /* the bytes [offset, offset+bytes) of @buf are sent */
	uint64_t start_ns;               /* CLOCK_REALTIME start in ns, 0 = as soon as possible */
	uint64_t id;                     /* transfer id chosen by the caller (scheduler), 0 = auto */
	uint16_t chan;                   /* application channel at the destination */
	const struct appmsg_step *steps; /* rate schedule (offsets from start, Gbit/s), NULL = unpaced */
	int n_steps;
	double timeout_s;                /* peer silence that fails it (0 = dataplane default) */
};

/** What mlfabric_poll() returns. */
enum mlfabric_ev_kind {
	MLFABRIC_EV_SENT = 1, /* a transfer we sent ended (status 0 = byte-exact at the peer) */
	MLFABRIC_EV_RECEIVED, /* an incoming transfer ended; on success @buf holds its bytes */
	MLFABRIC_EV_ERROR,    /* the dataplane refused a LISTEN/ORDER request (reason) */
	MLFABRIC_EV_CTL,      /* a control message (docs/control.md) relayed by the dataplane: @ctl */
};

/** One completion or arrival. */
struct mlfabric_event {
	enum mlfabric_ev_kind kind;
	int status;                  /* 0 or -errno (-ETIMEDOUT: peer silent, -ECANCELED: shutdown) */
	uint64_t id, bytes;
	uint16_t chan;
	char peer[APPMSG_NAME_MAX];  /* destination (SENT) or source (RECEIVED) host */
	char reason[APPMSG_REASON_MAX]; /* failure text naming the peer */
	uint64_t first_tx_ns, end_ns;   /* CLOCK_REALTIME ns */
	int64_t start_error_ns;         /* SENT: first data frame time minus commanded start */
	uint64_t retransmits, frames;
	struct mlfabric_buf buf;        /* RECEIVED ok: read-only mapping, release with mlfabric_event_release */
	char *ctl;                      /* CTL: the JSON text (malloc'd, freed by mlfabric_event_release) */
};

/**
 * mlfabric_buf_alloc - create a shared-memory buffer of @size bytes (> 0), zero-filled. The
 * memfd is sealed with F_SEAL_SHRINK | F_SEAL_GROW (its size is fixed): the dataplane maps the
 * buffers it sends and refuses unsealed ones (docs/dataplane.md "App socket trust").
 * Returns 0, or -errno from memfd_create/ftruncate/fcntl/mmap.
 */
int mlfabric_buf_alloc(size_t size, struct mlfabric_buf *b);

/** mlfabric_buf_free - unmap and close; safe on a zeroed buffer. */
void mlfabric_buf_free(struct mlfabric_buf *b);

/** Default of the dataplane timeout (seconds): how long a request's send or reply may take. */
#define MLFABRIC_TIMEOUT_S 10.0

/**
 * mlfabric_connect - connect to the dataplane listening on Unix socket @path. Requests on the
 * connection wait at most the dataplane timeout: MLF_DP_TIMEOUT_S from the environment (seconds,
 * > 0) or MLFABRIC_TIMEOUT_S; see mlfabric_set_timeout (docs/api.md "Timeouts").
 * The connect itself waits at most that long (a dataplane whose listen backlog is full).
 * Returns a handle, or NULL with errno set and @err saying why, naming the socket: ETIMEDOUT
 * (the dataplane did not accept within the timeout), ENOENT/ECONNREFUSED (no dataplane at that
 * path), EACCES (permission), ENAMETOOLONG.
 */
mlfabric_t *mlfabric_connect(const char *path, char *err, size_t errlen);

/**
 * mlfabric_connect_within - mlfabric_connect with the dataplane timeout @timeout_s (seconds;
 * <= 0: MLF_DP_TIMEOUT_S or MLFABRIC_TIMEOUT_S) for the connect and every later request.
 * Returns as mlfabric_connect.
 */
mlfabric_t *mlfabric_connect_within(const char *path, double timeout_s, char *err, size_t errlen);

/**
 * mlfabric_set_timeout - how long (seconds, > 0; other values are ignored) a request may wait
 * for the dataplane: to be sent (the dataplane reads its socket) and, for SEND, for its
 * ACCEPTED reply. A dataplane that misses it fails the call with -ETIMEDOUT and the connection
 * is given up: every later call returns -ETIMEDOUT and mlfabric_error names the socket.
 */
void mlfabric_set_timeout(mlfabric_t *m, double timeout_s);

/** mlfabric_timeout - the dataplane timeout of @m in seconds. */
double mlfabric_timeout(const mlfabric_t *m);

/** mlfabric_env_timeout_s - MLF_DP_TIMEOUT_S from the environment (seconds), 0 when unset or not a number > 0. */
double mlfabric_env_timeout_s(void);

/**
 * mlfabric_error - why the connection was given up ("" while it works): the dataplane's socket
 * path, what it did not do, and the timeout.
 */
const char *mlfabric_error(const mlfabric_t *m);

/** mlfabric_close - disconnect; the dataplane fails this app's unfinished transfers. */
void mlfabric_close(mlfabric_t *m);

/** mlfabric_fd - the socket, readable when an event is waiting (for poll/epoll loops). */
int mlfabric_fd(const mlfabric_t *m);

/**
 * mlfabric_send - hand a transfer to the dataplane and wait for its acceptance (not completion),
 * at most the dataplane timeout (mlfabric_set_timeout).
 * @id: set to the transfer id. Returns 0, or -errno with @err naming the problem (unknown host,
 * bad schedule, buffer too small, duplicate id, dataplane gone; -ETIMEDOUT: no reply in time,
 * @err names the socket).
 */
int mlfabric_send(mlfabric_t *m, const struct mlfabric_send *req, uint64_t *id, char *err, size_t errlen);

/** mlfabric_listen - receive incoming transfers of channel @chan. 0 or -errno (dataplane gone, -ETIMEDOUT). */
int mlfabric_listen(mlfabric_t *m, uint16_t chan);

/**
 * mlfabric_listen_announced - as mlfabric_listen, but the dataplane hands this app only the
 * transfers of @chan that the scheduler announced to it (docs/security.md "Announced
 * transfers"); others are held for their announcement, then refused. For the channels of
 * scheduled transfers (1-4) when a scheduler plans them. 0 or -errno (dataplane gone).
 */
int mlfabric_listen_announced(mlfabric_t *m, uint16_t chan);

/**
 * mlfabric_commit_order - tell the dataplane the commit order of incoming transfers of @chan:
 * ids in this order are handed over only after every earlier one of the list arrived or failed.
 * @replace: 1 replaces the current order, 0 appends. Returns 0 or -errno.
 */
int mlfabric_commit_order(mlfabric_t *m, uint16_t chan, const uint64_t *ids, int n, int replace);

/**
 * mlfabric_order_skip - transfers @ids of @chan will never arrive (the scheduler reported them
 * lost): ordered delivery stops waiting for them (ORDER with APPMSG_ORDER_SKIP).
 * Returns 0 or -errno (dataplane gone).
 */
int mlfabric_order_skip(mlfabric_t *m, uint16_t chan, const uint64_t *ids, int n);

/**
 * mlfabric_ctl_send - send the control JSON @text (one object, docs/control.md) to the dataplane,
 * which relays it to the scheduler (or answers it). Safe to call from a thread other than the one
 * polling. Returns 0, -EMSGSIZE (empty or longer than APPMSG_CTL_MAX), or -errno (dataplane gone).
 */
int mlfabric_ctl_send(mlfabric_t *m, const char *text);

/**
 * mlfabric_poll - wait up to @timeout_ms (-1 = forever) for the next event.
 * Returns 1 with @ev filled, 0 on timeout, -EPIPE when the dataplane went away, -ETIMEDOUT when
 * the connection was given up (mlfabric_error), other -errno.
 */
int mlfabric_poll(mlfabric_t *m, struct mlfabric_event *ev, int timeout_ms);

/** mlfabric_event_release - unmap a received buffer of @ev, free a CTL text (no-op for other events). */
void mlfabric_event_release(struct mlfabric_event *ev);

#endif
