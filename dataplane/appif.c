/* appif.c - serve local apps: SEND/LISTEN/ORDER requests, completion events, commit-order delivery. */
#define _GNU_SOURCE
#include "appif.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "appmsg.h"
#include "arr.h"
#include "dp.h"
#include "log.h"
#include "delivery.h"
#include "placement.h"

#define MAX_CLIENTS 64
#define MAX_CHANS TRANSPORT_MAX_CHANS
#define MAX_PENDING 4096
#define WARN_BURST 10             /* WARN lines per app connection per second, then counted */

/* A log rate limit: at most WARN_BURST lines per 1 s window; the others are counted. */
struct warn_rate {
	uint64_t start_ns;       /* start of the current window (mono ns), 0 = none yet */
	unsigned n, quiet;       /* lines in that window; lines not logged since the last one */
};

/*
 * One app connection. Its backlog holds replies the socket refused (full), resent in order by
 * appif_poll; each is stored compactly (appmsg_len bytes) and their sum is capped by
 * APPIF_BACKLOG_MAX_BYTES: an app that never reads is disconnected rather than let grow.
 */
struct client {
	int fd;           /* -1 when the slot is free */
	uint32_t gen;
	pid_t pid;        /* peer credentials at connect (SO_PEERCRED), for log lines */
	uid_t uid;
	struct appmsg **backlog; /* malloc'd copies of appmsg_len bytes each */
	int nbacklog, capbacklog;
	size_t backlog_bytes;    /* sum of appmsg_len of the backlog */
	int overflow;            /* backlog cap exceeded, or a reply the socket refused for good
				  * (not EAGAIN): disconnected by the next appif_poll */
	struct warn_rate warns;  /* WARN lines about this connection */
};

/* A finished incoming transfer waiting for its listener or its turn in the commit order. */
struct delivery {
	struct appmsg msg;
	int fd;
	int unannounced; /* the scheduler did not announce it: its bytes are never handed to a
			  * listener that requires announcements (APPMSG_LISTEN_ANNOUNCED); a
			  * failure event carries no bytes and goes (a commit order may wait for it) */
	uint64_t since_ns; /* queued at (monotonic ns): an unordered arrival on an ordered channel
			    * waits DELIVERY_UNKNOWN_HOLD_NS for its order from then */
};

static struct {
	const struct appif_ops *ops; /* upward notifications (appif_init) */
	int lfd;
	gid_t gid;                /* group allowed on the socket (mode 0660, SO_PEERCRED check) */
	char path[108];
	struct client cl[MAX_CLIENTS];
	int listener[MAX_CHANS];  /* client index per channel, -1 = none */
	struct delivery pend[MAX_PENDING];
	int npend;
	struct delivery_list order[MAX_CHANS];
} ai = { .lfd = -1 };

int appif_init(const char *path, gid_t group, const struct appif_ops *ops, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[sizeof(sa.sun_path)], *slash;
	mode_t old_mask;
	int rc;

	ai.ops = ops;
	ai.gid = group == (gid_t)-1 ? getegid() : group;
	for (int i = 0; i < MAX_CLIENTS; i++)
		ai.cl[i].fd = -1;
	for (int i = 0; i < MAX_CHANS; i++)
		ai.listener[i] = -1;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "socket path '%s' too long", path);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, path);
	strcpy(dir, path);
	if ((slash = strrchr(dir, '/')) && slash != dir) {
		*slash = '\0';
		mkdir(dir, 0755);
	}
	unlink(path);
	ai.lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	/* created 0660 (never wider, not even for a moment), then given to the app group */
	old_mask = umask(0117);
	rc = ai.lfd < 0 ? -1 : bind(ai.lfd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old_mask);
	if (rc == 0 && (chown(path, (uid_t)-1, ai.gid) < 0 || chmod(path, 0660) < 0)) {
		int e = errno;
		snprintf(err, errlen, "cannot give socket %s to group %u (mode 0660): %s", path,
			 (unsigned)ai.gid, strerror(e));
		close(ai.lfd);
		unlink(path);
		ai.lfd = -1;
		return -e;
	}
	if (rc < 0 || listen(ai.lfd, 64) < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot listen on %s: %s", path, strerror(e));
		if (ai.lfd >= 0)
			close(ai.lfd);
		ai.lfd = -1;
		return -e;
	}
	strcpy(ai.path, path);
	return 0;
}

/*
 * warn_allowed - whether a WARN line may be logged now under the limit @w; *@quiet is set to
 * the number of lines suppressed since the last one logged (then reset).
 */
static int warn_allowed(struct warn_rate *w, unsigned *quiet)
{
	if (w->start_ns == 0 || dp.clk.mono_ns - w->start_ns >= 1000000000ULL) {
		w->start_ns = dp.clk.mono_ns ? dp.clk.mono_ns : 1;
		w->n = 0;
	}
	if (++w->n > WARN_BURST) {
		w->quiet++;
		return 0;
	}
	*quiet = w->quiet;
	w->quiet = 0;
	return 1;
}

/*
 * A WARN about app connection @c, at most WARN_BURST lines per second per connection (a client
 * sending a flood of bad requests cannot flood the log); the next line logged says how many
 * were not.
 */
static void client_warn(int c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void client_warn(int c, const char *fmt, ...)
{
	char text[APPMSG_REASON_MAX + 96];
	unsigned quiet;
	va_list ap;

	if (!warn_allowed(&ai.cl[c].warns, &quiet))
		return;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	log_warn("app connection %d (pid %d): %s%s", c, (int)ai.cl[c].pid, text,
		 quiet ? " (more lines like it were not logged)" : "");
}

/* Sends what waits in @c's backlog; 1 when it is empty afterwards. */
/* A send error that may pass on retry (the socket is full, or the kernel briefly short of
 * buffers or of descriptors in flight): kept for the next poll, never a disconnection. */
static int send_transient(int rc)
{
	return rc == -EAGAIN || rc == -ENOBUFS || rc == -ENOMEM || rc == -ETOOMANYREFS;
}

/* Client @c cannot take what was sent to it (@rc, not transient): mark it for disconnection,
 * with one WARN (@what names the message) unless it is simply gone, so it never reads on past
 * an event it missed. */
static void client_broken(int c, int rc, const char *what)
{
	if (!ai.cl[c].overflow && rc != -EPIPE && rc != -ECONNRESET)
		log_warn("app connection %d (pid %d): %s failed (%s); disconnecting it", c,
			 (int)ai.cl[c].pid, what, strerror(-rc));
	ai.cl[c].overflow = 1;
}

static int flush_backlog(int c)
{
	struct client *cl = &ai.cl[c];
	int sent = 0, rc = 0;

	/* nothing waits (every reply asks): the backlog array may be NULL, and memmove from NULL
	 * is undefined even for 0 bytes (found by fuzz_appif) */
	if (cl->nbacklog == 0)
		return 1;
	while (sent < cl->nbacklog && (rc = appmsg_send(cl->fd, cl->backlog[sent], -1)) == 0)
		sent++;
	if (rc < 0 && !send_transient(rc)) {
		/* the app is gone (EPIPE), or a reply can never pass its socket (EMSGSIZE: a send
		 * buffer smaller than one reply, found by fuzz_appif) */
		client_broken(c, rc, "a reply");
		sent = cl->nbacklog;
	}
	for (int i = 0; i < sent; i++) {
		cl->backlog_bytes -= appmsg_len(cl->backlog[i]);
		free(cl->backlog[i]);
	}
	memmove(cl->backlog, cl->backlog + sent, (size_t)(cl->nbacklog - sent) * sizeof(*cl->backlog));
	cl->nbacklog -= sent;
	return cl->nbacklog == 0;
}

/*
 * Sends event @m to client @c, never losing it to a full socket: it waits in the backlog. An app
 * whose backlog would exceed APPIF_BACKLOG_MAX_BYTES does not read its replies: it is marked
 * for disconnection (one WARN naming it) and gets nothing more, so no event is silently skipped
 * in what it does read.
 */
static void reply(int c, struct appmsg *m)
{
	struct client *cl;
	struct appmsg *copy;
	size_t len = appmsg_len(m);
	int rc = -EAGAIN;

	if (c < 0 || ai.cl[c].fd < 0 || ai.cl[c].overflow)
		return;
	cl = &ai.cl[c];
	/* after flush_backlog dropped the backlog of an app it disconnects, send it nothing more */
	if (flush_backlog(c) && !cl->overflow)
		rc = appmsg_send(cl->fd, m, -1);
	if (rc == 0 || cl->overflow)
		return;
	if (!send_transient(rc)) { /* as in flush_backlog: never skip an event silently */
		client_broken(c, rc, "an event");
		return;
	}
	if (cl->backlog_bytes + len > APPIF_BACKLOG_MAX_BYTES) {
		cl->overflow = 1;
		log_warn("app connection %d (pid %d, uid %u) does not read its replies: %d (%zu bytes) "
			 "queued, cap %u bytes; disconnecting it", c, (int)cl->pid, (unsigned)cl->uid,
			 cl->nbacklog, cl->backlog_bytes, APPIF_BACKLOG_MAX_BYTES);
		return;
	}
	void *b = cl->backlog;
	if (arr_grow(&b, &cl->capbacklog, cl->nbacklog + 1, sizeof(*cl->backlog)) < 0 ||
	    !(copy = malloc(len))) {
		if (b)
			cl->backlog = b;
		log_err("app connection %d: out of memory, event of transfer %llx lost", c,
			(unsigned long long)m->id);
		return;
	}
	memcpy(copy, m, len);
	cl->backlog = b;
	cl->backlog[cl->nbacklog++] = copy;
	cl->backlog_bytes += len;
}

/*
 * The transport's opaque owner tag of a transfer: connection slot and its generation, so that
 * an event of a transfer whose app went away never reaches a later app on the same slot.
 */
static uint64_t owner_of(int c)
{
	return (uint64_t)ai.cl[c].gen << 32 | (uint32_t)c;
}

/* The connection slot that still owns @owner, or -1 when that app went away. */
static int owner_client(uint64_t owner)
{
	int c = (int)(uint32_t)owner;

	return c >= 0 && c < MAX_CLIENTS && ai.cl[c].gen == (uint32_t)(owner >> 32) ? c : -1;
}

/* An ERROR reply (status -EINVAL, channel @chan) to @c whose reason is @fmt..., also logged. */
static void error_to(int c, uint16_t chan, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void error_to(int c, uint16_t chan, const char *fmt, ...)
{
	struct appmsg m = { .type = APPMSG_ERROR, .status = -EINVAL, .chan = chan };
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m.reason, sizeof(m.reason), fmt, ap);
	va_end(ap);
	client_warn(c, "%s", m.reason);
	reply(c, &m);
}

/* Hands over every delivery whose listener exists and whose turn came; repeats until stable. */
static void deliver(void)
{
	int progress = 1;

	while (progress) {
		progress = 0;
		for (int i = 0; i < ai.npend; i++) {
			struct delivery *d = &ai.pend[i];
			int c = ai.listener[d->msg.chan], rc;
			if (c >= 0 && d->unannounced && d->msg.status == 0 && transport_announce_required(d->msg.chan)) {
				/* it arrived before its listener, which takes only announced ones */
				log_warn("transfer %llx from %s on channel %u dropped: not announced by the "
					 "scheduler, and the channel's listener takes only announced transfers",
					 (unsigned long long)d->msg.id, d->msg.peer, d->msg.chan);
				if (d->fd >= 0)
					close(d->fd);
				ai.pend[i--] = ai.pend[--ai.npend];
				progress = 1;
				continue;
			}
			if (c < 0 || ai.cl[c].fd < 0 || ai.cl[c].overflow ||
			    !delivery_may_deliver(&ai.order[d->msg.chan], d->msg.id))
				continue;
			if (d->msg.status == 0 && delivery_unknown_waits(&ai.order[d->msg.chan], d->msg.id)) {
				/* its data came before its `order` (delivery.h): wait for the order */
				if (dp.clk.mono_ns - d->since_ns < DELIVERY_UNKNOWN_HOLD_NS)
					continue;
				log_warn("transfer %llx from %s on channel %u: no commit order named it "
					 "within %.1f s of its arrival; handed over unordered",
					 (unsigned long long)d->msg.id, d->msg.peer, d->msg.chan,
					 (double)DELIVERY_UNKNOWN_HOLD_NS / 1e9);
			}
			rc = appmsg_send(ai.cl[c].fd, &d->msg, d->fd);
			if (send_transient(rc))
				return; /* the app is slow to read: try again next poll */
			if (rc < 0) /* the listener cannot take it: disconnected, as above */
				client_broken(c, rc, "a delivery");
			delivery_mark_done(&ai.order[d->msg.chan], d->msg.id);
			if (d->fd >= 0)
				close(d->fd);
			ai.pend[i--] = ai.pend[--ai.npend];
			progress = 1;
		}
	}
}

/* Queues a delivery event (takes @fd; @unannounced: see struct delivery) and hands over what
 * may go; logs and drops it when full. */
static void enqueue_rx(const struct appmsg *m, int fd, int unannounced)
{
	if (ai.npend >= MAX_PENDING) {
		log_err("transfer %llx from %s dropped: %d deliveries already wait for listeners",
			(unsigned long long)m->id, m->peer, MAX_PENDING);
		if (fd >= 0)
			close(fd);
		return;
	}
	ai.pend[ai.npend].msg = *m;
	ai.pend[ai.npend].unannounced = unannounced;
	ai.pend[ai.npend].since_ns = dp.clk.mono_ns;
	ai.pend[ai.npend++].fd = fd;
	deliver();
}

static void enqueue(const struct appmsg *m, int fd)
{
	enqueue_rx(m, fd, 0);
}

static int rx_room(void)
{
	return ai.npend < MAX_PENDING;
}

static void fail_awaited(uint64_t id, int status, const char *peer, const char *reason);

static void rx_done(const struct xfer_rx *x, int status, const char *reason)
{
	struct appmsg m = { .type = APPMSG_RX_DONE, .status = status, .id = x->id, .bytes = x->bytes,
			    .chan = x->chan, .end_ns = x->end_ns, .frames = x->frames };

	snprintf(m.peer, sizeof(m.peer), "%s", dp.cluster.hosts[x->peer].name);
	snprintf(m.reason, sizeof(m.reason), "%s", reason ? reason : "");
	if (status && x->fd >= 0)
		close(x->fd);
	if (status == -EACCES && !x->announced) {
		/* refused for want of an announcement: no app expected it, unless an order waits */
		fail_awaited(x->id, status, m.peer, m.reason);
		return;
	}
	enqueue_rx(&m, status == 0 ? x->fd : -1, !x->announced);
}

/* A failure event for @id on every channel whose commit order still waits for it. */
static void fail_awaited(uint64_t id, int status, const char *peer, const char *reason)
{
	for (int c = 0; c < MAX_CHANS; c++) {
		struct appmsg m = { .type = APPMSG_RX_DONE, .status = status, .id = id, .chan = (uint16_t)c,
				    .end_ns = dp.clk.real_ns };
		int queued = 0;
		if (!delivery_waits_for(&ai.order[c], id))
			continue;
		for (int i = 0; i < ai.npend && !queued; i++)
			queued = ai.pend[i].msg.id == id && ai.pend[i].msg.chan == c;
		if (queued)
			continue;
		snprintf(m.peer, sizeof(m.peer), "%s", peer);
		snprintf(m.reason, sizeof(m.reason), "%s", reason);
		log_warn("channel %d: transfer %llx failed: %s", c, (unsigned long long)id, reason);
		enqueue(&m, -1);
	}
}

static void rx_aborted(int peer, uint64_t id, const char *reason)
{
	fail_awaited(id, -ECONNABORTED, dp.cluster.hosts[peer].name, reason);
}

void appif_check_order(uint64_t hold_ns)
{
	deliver(); /* arrivals whose wait for their order (DELIVERY_UNKNOWN_HOLD_NS) ended */
	for (int c = 0; c < MAX_CHANS; c++) {
		struct delivery_list *o = &ai.order[c];
		char reason[APPMSG_REASON_MAX];
		uint64_t id;
		int held = 0;
		for (int i = 0; i < ai.npend && !held; i++)
			held = ai.pend[i].msg.chan == c;
		if (!held || o->n == 0)
			continue;
		if (!delivery_stalled(o, dp.clk.mono_ns, hold_ns, transport_rx_busy(o->ids[0]), &id))
			continue;
		snprintf(reason, sizeof(reason), "transfer %llx (next in the commit order of channel %d) "
			 "did not arrive within %.1f s; later transfers were held for it",
			 (unsigned long long)id, c, (double)hold_ns / 1e9);
		fail_awaited(id, -ETIMEDOUT, "", reason);
	}
}

static void tx_done(const struct xfer_tx *x, int status)
{
	int c = owner_client(x->owner);
	struct appmsg m = { .type = APPMSG_TX_DONE, .status = status, .id = x->id, .bytes = x->bytes,
			    .chan = x->chan, .first_tx_ns = x->first_tx_ns, .end_ns = x->end_ns,
			    .retransmits = x->sack.retransmits, .frames = x->frames };

	if (c < 0)
		return;
	m.start_error_ns = x->first_tx_ns ? (int64_t)(x->first_tx_ns - x->start_ns) : 0;
	snprintf(m.peer, sizeof(m.peer), "%s", dp.cluster.hosts[x->peer].name);
	snprintf(m.reason, sizeof(m.reason), "%s", x->reason);
	reply(c, &m);
}

const struct transport_ops appif_transport_ops = {
	.tx_done = tx_done,
	.rx_done = rx_done,
	.rx_room = rx_room,
	.rx_aborted = rx_aborted,
};

static void drop_client(int c)
{
	uint64_t owner = owner_of(c);

	close(ai.cl[c].fd);
	ai.cl[c].fd = -1;
	ai.cl[c].gen++;
	for (int i = 0; i < ai.cl[c].nbacklog; i++)
		free(ai.cl[c].backlog[i]);
	free(ai.cl[c].backlog);
	ai.cl[c].backlog = NULL;
	ai.cl[c].nbacklog = ai.cl[c].capbacklog = 0;
	ai.cl[c].backlog_bytes = 0;
	ai.cl[c].overflow = 0;
	ai.cl[c].warns = (struct warn_rate){ 0 };
	for (int i = 0; i < MAX_CHANS; i++)
		if (ai.listener[i] == c) {
			ai.listener[i] = -1;
			transport_require_announce((unsigned)i, 0);
		}
	transport_cancel(owner); /* its events are dropped: the generation changed */
	ai.ops->client_gone(c);
}

void appif_ctl_to(int c, const char *text)
{
	struct appmsg m;

	if (appmsg_ctl(&m, text) < 0) {
		log_warn("app connection %d: control message of %zu bytes too long, not sent", c, strlen(text));
		return;
	}
	reply(c, &m);
}

/*
 * A SEND whose destination is this host (a worker co-hosted with its server or aggregator):
 * no link is involved, so the buffer is handed to the local listener at once (the same memfd:
 * the sender never writes it again) and the sender gets ACCEPTED and TX_DONE. Takes @fd.
 */
static void send_local(int c, const struct appmsg *m, int fd)
{
	static uint64_t next_local = 1;
	struct appmsg r = { .type = APPMSG_ACCEPTED }, rx, tx;
	struct stat st;

	if (m->offset != 0 || m->chan >= MAX_CHANS || fstat(fd, &st) < 0 || (uint64_t)st.st_size < m->bytes ||
	    m->bytes == 0) {
		r.status = -EINVAL;
		snprintf(r.reason, sizeof(r.reason), "bad local transfer: %llu bytes at offset %llu on channel %u "
			 "(a transfer to this host must start at offset 0)", (unsigned long long)m->bytes,
			 (unsigned long long)m->offset, m->chan);
		client_warn(c, "%s", r.reason);
		close(fd);
		reply(c, &r);
		return;
	}
	r.id = m->id ? m->id : ((uint64_t)(dp.me + 1) << 48) | (1ULL << 47) | next_local++;
	reply(c, &r);
	rx = (struct appmsg){ .type = APPMSG_RX_DONE, .id = r.id, .bytes = m->bytes, .chan = m->chan,
			      .end_ns = dp.clk.real_ns };
	snprintf(rx.peer, sizeof(rx.peer), "%s", dp.cluster.hosts[dp.me].name);
	tx = rx;
	tx.type = APPMSG_TX_DONE;
	tx.first_tx_ns = dp.clk.real_ns;
	dp_xfer_info("xfer %llx: to this host (channel %u), %llu bytes handed over locally",
		 (unsigned long long)r.id, m->chan, (unsigned long long)m->bytes);
	enqueue(&rx, fd);
	reply(c, &tx);
}

/*
 * Whether the buffer @fd of SEND @m may be mapped by the dataplane: a memfd sealed against
 * shrinking and growing (F_SEAL_SHRINK | F_SEAL_GROW: the app cannot truncate it under the
 * sender's mapping, which would kill the dataplane with SIGBUS) holding at least offset + bytes.
 * Returns 0, or -EINVAL with @why (at most APPMSG_REASON_MAX bytes) naming what is wrong.
 */
static int check_buffer(const struct appmsg *m, int fd, char *why, size_t len)
{
	int seals = fcntl(fd, F_GET_SEALS);
	struct stat st;

	if (seals < 0) {
		snprintf(why, len, "SEND buffer refused: not a sealable memfd (F_GET_SEALS: %s)", strerror(errno));
		return -EINVAL;
	}
	if ((seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW)) {
		snprintf(why, len, "SEND buffer refused: memfd not sealed (needs F_SEAL_SHRINK and "
			 "F_SEAL_GROW; has seals 0x%x)", (unsigned)seals);
		return -EINVAL;
	}
	if (fstat(fd, &st) < 0 || m->offset > (uint64_t)st.st_size ||
	    m->bytes > (uint64_t)st.st_size - m->offset) {
		snprintf(why, len, "SEND buffer refused: memfd of %lld bytes, the request needs %llu at "
			 "offset %llu", (long long)st.st_size, (unsigned long long)m->bytes,
			 (unsigned long long)m->offset);
		return -EINVAL;
	}
	return 0;
}

static void serve(int c)
{
	struct appmsg m;
	int fd, rc;
	char err[APPMSG_REASON_MAX];

	while (!ai.cl[c].overflow && (rc = appmsg_recv(ai.cl[c].fd, &m, &fd)) != -EAGAIN) {
		if (rc <= 0) {
			if (rc < 0)
				client_warn(c, "%s, closing it", strerror(-rc));
			drop_client(c);
			return;
		}
		switch (m.type) {
		case APPMSG_SEND: {
			struct appmsg r = { .type = APPMSG_ACCEPTED };
			char dst[APPMSG_NAME_MAX + 1];
			memcpy(dst, m.peer, APPMSG_NAME_MAX);
			dst[APPMSG_NAME_MAX] = '\0';
			if (fd >= 0 && check_buffer(&m, fd, r.reason, sizeof(r.reason)) < 0) {
				r.status = -EINVAL;
				client_warn(c, "%s", r.reason);
				reply(c, &r);
				break; /* fd closed below */
			}
			if (fd >= 0 && cluster_find(&dp.cluster, dst) == dp.me) {
				send_local(c, &m, fd);
				fd = -1;
				break;
			}
			err[0] = '\0';
			if (fd >= 0)
				placement_bind_fd(fd, m.offset + m.bytes); /* the port's node (NUMA) */
			r.id = transport_submit(&m, fd, owner_of(c), err, sizeof(err));
			if (!r.id) {
				r.status = -EINVAL;
				snprintf(r.reason, sizeof(r.reason), "%s", err);
				client_warn(c, "transfer refused: %s", err);
			}
			reply(c, &r);
			fd = -1; /* consumed by transport_submit */
			break;
		}
		case APPMSG_LISTEN: {
			int owner = m.chan < MAX_CHANS ? ai.listener[m.chan] : -1;
			if (m.chan >= MAX_CHANS) {
				error_to(c, m.chan, "LISTEN: channel %u out of range (max %d)", m.chan, MAX_CHANS - 1);
				break;
			}
			if (owner >= 0 && owner != c && ai.cl[owner].fd >= 0) {
				/* the first listener keeps its channel until its connection closes */
				error_to(c, m.chan, "LISTEN: channel %u already has a listener (app connection %d, "
					 "pid %d) until it closes", m.chan, owner, (int)ai.cl[owner].pid);
				break;
			}
			ai.listener[m.chan] = c;
			transport_require_announce(m.chan, !!(m.flags & APPMSG_LISTEN_ANNOUNCED));
			deliver();
			break;
		}
		case APPMSG_ORDER:
			if (m.chan >= MAX_CHANS || m.n > APPMSG_MAX_IDS) {
				error_to(c, m.chan, "ORDER: %s", m.chan >= MAX_CHANS ? "channel out of range" : "too many ids");
				break;
			}
			if (m.flags & APPMSG_ORDER_SKIP) {
				for (int i = 0; i < m.n; i++)
					delivery_mark_done(&ai.order[m.chan], m.u.ids[i]);
			} else if (delivery_add(&ai.order[m.chan], m.u.ids, m.n, m.flags & APPMSG_ORDER_REPLACE) < 0) {
				error_to(c, m.chan, "ORDER: out of memory");
			}
			deliver();
			break;
		case APPMSG_CTL:
			ai.ops->ctl_from_app(c, m.u.text);
			break;
		default:
			error_to(c, 0, "unknown request type %u", m.type);
			break;
		}
		if (fd >= 0)
			close(fd);
		if (ai.cl[c].fd < 0)
			return;
	}
}

int appif_wait_fds(struct pollfd *p, int max)
{
	int n = 0;

	if (ai.lfd >= 0 && n < max)
		p[n++] = (struct pollfd){ .fd = ai.lfd, .events = POLLIN };
	for (int i = 0; i < MAX_CLIENTS && n < max; i++)
		if (ai.cl[i].fd >= 0)
			p[n++] = (struct pollfd){ .fd = ai.cl[i].fd,
						  .events = POLLIN | (ai.cl[i].nbacklog ? POLLOUT : 0) };
	return n;
}

/*
 * Whether the peer of the accepted connection @fd may use the dataplane: uid 0, the dataplane's
 * own uid, or a process whose primary or supplementary groups (SO_PEERCRED, SO_PEERGROUPS, as
 * at connect time) include the app group. Fills @cr. A refusal is logged (rate-limited).
 */
static int peer_allowed(int fd, struct ucred *cr)
{
	static struct warn_rate refusals;
	socklen_t len = sizeof(*cr);
	gid_t groups[256];
	unsigned quiet;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cr, &len) < 0) {
		if (warn_allowed(&refusals, &quiet))
			log_warn("refusing app connection: no peer credentials (SO_PEERCRED: %s)", strerror(errno));
		return 0;
	}
	if (cr->uid == 0 || cr->uid == geteuid() || cr->gid == ai.gid)
		return 1;
	len = sizeof(groups);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) == 0)
		for (size_t i = 0; i < len / sizeof(groups[0]); i++)
			if (groups[i] == ai.gid)
				return 1;
	if (warn_allowed(&refusals, &quiet))
		log_warn("refusing app connection of pid %d (uid %u, gid %u): not root, not the dataplane's "
			 "uid %u, not in its app group %u (--app-group)%s", (int)cr->pid, (unsigned)cr->uid,
			 (unsigned)cr->gid, (unsigned)geteuid(), (unsigned)ai.gid,
			 quiet ? " (more refusals were not logged)" : "");
	return 0;
}

int appif_poll(void)
{
	struct pollfd p[MAX_CLIENTS + 1];
	int idx[MAX_CLIENTS + 1], n = 0, rc, work = 0;

	p[n].fd = ai.lfd;
	p[n].events = POLLIN;
	idx[n++] = -1;
	for (int i = 0; i < MAX_CLIENTS; i++) {
		if (ai.cl[i].fd < 0)
			continue;
		p[n].fd = ai.cl[i].fd;
		p[n].events = POLLIN;
		idx[n++] = i;
	}
	for (int i = 0; i < MAX_CLIENTS; i++)
		if (ai.cl[i].fd >= 0 && ai.cl[i].nbacklog)
			flush_backlog(i);
	rc = poll(p, (nfds_t)n, 0);
	if (rc <= 0) {
		if (ai.npend)
			deliver();
		return 0;
	}
	if (p[0].revents & POLLIN) {
		int fd = accept4(ai.lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), slot = -1;
		struct ucred cr = { .pid = 0 };
		for (int i = 0; fd >= 0 && i < MAX_CLIENTS && slot < 0; i++)
			if (ai.cl[i].fd < 0)
				slot = i;
		if (fd >= 0 && !peer_allowed(fd, &cr)) {
			close(fd);
		} else if (fd >= 0 && slot < 0) {
			log_warn("refusing app connection of pid %d: %d apps already connected", (int)cr.pid,
				 MAX_CLIENTS);
			close(fd);
		} else if (fd >= 0) {
			ai.cl[slot].fd = fd;
			ai.cl[slot].pid = cr.pid;
			ai.cl[slot].uid = cr.uid;
			log_debug("app connection %d opened (pid %d, uid %u)", slot, (int)cr.pid, (unsigned)cr.uid);
		}
		work = 1;
	}
	for (int k = 1; k < n; k++) {
		if (p[k].revents & (POLLIN | POLLHUP | POLLERR)) {
			serve(idx[k]);
			work = 1;
		}
	}
	if (ai.npend)
		deliver();
	for (int i = 0; i < MAX_CLIENTS; i++)
		if (ai.cl[i].fd >= 0 && ai.cl[i].overflow)
			drop_client(i); /* over its reply cap (reply): never while the transport calls us */
	return work;
}

void appif_close(void)
{
	for (int i = 0; i < MAX_CLIENTS; i++) {
		if (ai.cl[i].fd >= 0) {
			/* last chance for the shutdown events: a blocking flush of at most 200 ms */
			struct timeval tv = { .tv_sec = 0, .tv_usec = 200000 };
			int fl = fcntl(ai.cl[i].fd, F_GETFL);
			setsockopt(ai.cl[i].fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
			fcntl(ai.cl[i].fd, F_SETFL, fl & ~O_NONBLOCK);
			flush_backlog(i);
			close(ai.cl[i].fd);
		}
		for (int k = 0; k < ai.cl[i].nbacklog; k++)
			free(ai.cl[i].backlog[k]);
		free(ai.cl[i].backlog);
		/* the slot as appif_init expects it: a later appif_init (a restart in the same process)
		 * must not flush or free this backlog again (found by fuzz_appif) */
		ai.cl[i] = (struct client){ .fd = -1, .gen = ai.cl[i].gen + 1 };
	}
	for (int i = 0; i < ai.npend; i++)
		if (ai.pend[i].fd >= 0)
			close(ai.pend[i].fd);
	for (int i = 0; i < MAX_CHANS; i++)
		delivery_free(&ai.order[i]);
	ai.npend = 0;
	if (ai.lfd >= 0) {
		close(ai.lfd);
		unlink(ai.path);
	}
	ai.lfd = -1;
}
