/* dpclient.c - libmlfabric's dataplane client: memfd buffers, Unix-socket requests with a reply timeout, queued dataplane events. */
#define _GNU_SOURCE
#include "dpclient.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "arr.h"
#include "clock.h"

struct queued {
	struct appmsg msg;
	int fd;
};

struct mlfabric {
	int sock;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)]; /* the dataplane's socket */
	double timeout_s; /* a request's send or reply waits at most this long */
	int broken;       /* 0, or -ETIMEDOUT once the dataplane missed a timeout: every call fails */
	char err[256];    /* why it broke, naming the socket */
	struct queued *q; /* events that arrived while waiting for an ACCEPTED reply */
	int nq, cap;
};

int mlfabric_buf_alloc(size_t size, struct mlfabric_buf *b)
{
	memset(b, 0, sizeof(*b));
	b->fd = -1;
	if (size == 0)
		return -EINVAL;
	b->fd = memfd_create("mlfabric-buf", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (b->fd < 0)
		return -errno;
	/* sealed at its size: the dataplane maps it and refuses buffers that could shrink */
	if (ftruncate(b->fd, (off_t)size) < 0 || fcntl(b->fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0) {
		int e = errno;
		close(b->fd);
		b->fd = -1;
		return -e;
	}
	b->data = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, b->fd, 0);
	if (b->data == MAP_FAILED) {
		int e = errno;
		close(b->fd);
		b->fd = -1;
		b->data = NULL;
		return -e;
	}
	b->size = size;
	return 0;
}

void mlfabric_buf_free(struct mlfabric_buf *b)
{
	if (b->data)
		munmap(b->data, b->size);
	if (b->fd >= 0)
		close(b->fd);
	b->data = NULL;
	b->fd = -1;
}

double mlfabric_env_timeout_s(void)
{
	const char *v = getenv("MLF_DP_TIMEOUT_S");
	char *end;
	double s;

	if (!v || !*v)
		return 0;
	s = strtod(v, &end);
	return *end == '\0' && s > 0 && s <= 86400 ? s : 0;
}

void mlfabric_set_timeout(mlfabric_t *m, double timeout_s)
{
	struct timeval tv;

	if (!(timeout_s > 0))
		return;
	m->timeout_s = timeout_s;
	tv.tv_sec = (time_t)timeout_s;
	tv.tv_usec = (suseconds_t)((timeout_s - (double)tv.tv_sec) * 1e6);
	if (tv.tv_sec == 0 && tv.tv_usec == 0)
		tv.tv_usec = 1;
	/* a send to a dataplane that stopped reading (its socket buffer full) fails with EAGAIN
	 * after this long instead of blocking for ever */
	setsockopt(m->sock, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

double mlfabric_timeout(const mlfabric_t *m)
{
	return m->timeout_s;
}

const char *mlfabric_error(const mlfabric_t *m)
{
	return m->err;
}

/* The dataplane missed the timeout in @what: the connection is given up (a late reply would be
 * taken for the answer to a later request); every later call fails with -ETIMEDOUT. */
static int timed_out(mlfabric_t *m, const char *what)
{
	if (!m->broken) {
		m->broken = -ETIMEDOUT;
		snprintf(m->err, sizeof(m->err), "dataplane at socket %s: %s within %.1f s (MLF_DP_TIMEOUT_S)",
			 m->path, what, m->timeout_s);
	}
	return m->broken;
}

/* appmsg_send bounded by the timeout (SO_SNDTIMEO): -ETIMEDOUT when the dataplane does not read. */
static int send_msg(mlfabric_t *m, const struct appmsg *msg, int fd)
{
	int rc;

	if (m->broken)
		return m->broken;
	rc = appmsg_send(m->sock, msg, fd);
	return rc == -EAGAIN ? timed_out(m, "does not read requests (socket full)") : rc;
}

mlfabric_t *mlfabric_connect_within(const char *path, double timeout_s, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	mlfabric_t *m;
	int e;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "socket path '%s' too long", path);
		errno = ENAMETOOLONG;
		return NULL;
	}
	strcpy(sa.sun_path, path);
	m = calloc(1, sizeof(*m));
	if (!m) {
		snprintf(err, errlen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	snprintf(m->path, sizeof(m->path), "%s", path);
	m->sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (m->sock < 0) {
		e = errno;
		snprintf(err, errlen, "dataplane socket %s: socket: %s", path, strerror(e));
		free(m);
		errno = e;
		return NULL;
	}
	/* SO_SNDTIMEO set before connect() bounds the connect too: a dataplane whose listen
	 * backlog is full (hung, or not accepting) fails it with EAGAIN after the timeout instead
	 * of blocking for ever */
	mlfabric_set_timeout(m, timeout_s > 0 ? timeout_s : mlfabric_env_timeout_s() > 0 ?
			     mlfabric_env_timeout_s() : MLFABRIC_TIMEOUT_S);
	while (connect(m->sock, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		e = errno;
		if (e == EINTR)
			continue;
		if (e == EAGAIN || e == EWOULDBLOCK) {
			snprintf(err, errlen, "dataplane at socket %s: did not accept the connection within "
				 "%.1f s (MLF_DP_TIMEOUT_S; is mlf-dataplane hung?)", path, m->timeout_s);
			e = ETIMEDOUT;
		} else {
			snprintf(err, errlen, "cannot connect to dataplane socket %s: %s (is mlf-dataplane "
				 "running?)", path, strerror(e));
		}
		close(m->sock);
		free(m);
		errno = e;
		return NULL;
	}
	return m;
}

mlfabric_t *mlfabric_connect(const char *path, char *err, size_t errlen)
{
	return mlfabric_connect_within(path, 0, err, errlen);
}

void mlfabric_close(mlfabric_t *m)
{
	if (!m)
		return;
	for (int i = 0; i < m->nq; i++)
		if (m->q[i].fd >= 0)
			close(m->q[i].fd);
	free(m->q);
	close(m->sock);
	free(m);
}

int mlfabric_fd(const mlfabric_t *m)
{
	return m->sock;
}

static int enqueue(mlfabric_t *m, const struct appmsg *msg, int fd)
{
	if (arr_grow((void **)&m->q, &m->cap, m->nq + 1, sizeof(*m->q)) < 0)
		return -ENOMEM;
	m->q[m->nq].msg = *msg;
	m->q[m->nq++].fd = fd;
	return 0;
}

/* Blocking receive of one message; 1, or -EPIPE when the dataplane closed, -errno. */
static int recv_one(mlfabric_t *m, struct appmsg *msg, int *fd, int timeout_ms)
{
	struct pollfd p = { .fd = m->sock, .events = POLLIN };
	int rc;

	do
		rc = poll(&p, 1, timeout_ms);
	while (rc < 0 && errno == EINTR);
	if (rc < 0)
		return -errno;
	if (rc == 0)
		return 0;
	rc = appmsg_recv(m->sock, msg, fd);
	return rc == 0 ? -EPIPE : rc;
}

int mlfabric_send(mlfabric_t *m, const struct mlfabric_send *req, uint64_t *id, char *err, size_t errlen)
{
	struct appmsg msg = { .type = APPMSG_SEND };
	int rc, fd;

	if (!req->buf || !req->dst || req->bytes == 0 || req->offset > req->buf->size ||
	    req->bytes > req->buf->size - req->offset || req->n_steps < 0 ||
	    req->n_steps > APPMSG_MAX_STEPS || strlen(req->dst) >= APPMSG_NAME_MAX) {
		snprintf(err, errlen, "bad transfer request: %s",
			 !req->buf || !req->dst ? "no buffer or destination" :
			 req->bytes == 0 ? "zero bytes" :
			 req->n_steps < 0 || req->n_steps > APPMSG_MAX_STEPS ? "too many rate steps" :
			 req->offset > req->buf->size || req->bytes > req->buf->size - req->offset ?
				 "range beyond the buffer" : "destination name too long");
		return -EINVAL;
	}
	msg.id = req->id;
	msg.bytes = req->bytes;
	msg.offset = req->offset;
	msg.start_ns = req->start_ns;
	msg.timeout_ns = (uint64_t)(req->timeout_s * 1e9);
	msg.chan = req->chan;
	msg.n = (uint16_t)req->n_steps;
	strcpy(msg.peer, req->dst);
	for (int i = 0; i < req->n_steps; i++)
		msg.u.steps[i] = req->steps[i];
	rc = send_msg(m, &msg, req->buf->fd);
	if (rc < 0) {
		snprintf(err, errlen, "%s", m->broken ? m->err : strerror(-rc));
		if (!m->broken)
			snprintf(err, errlen, "dataplane at socket %s: %s", m->path, strerror(-rc));
		return rc;
	}
	double deadline = clock_mono_s() + m->timeout_s;
	for (;;) {
		double left_ms = (deadline - clock_mono_s()) * 1e3;
		rc = left_ms > 0 ? recv_one(m, &msg, &fd, left_ms < 1 ? 1 : (int)left_ms) : 0;
		if (rc == 0)
			rc = timed_out(m, "no reply to a transfer request");
		if (rc < 0) {
			if (m->broken)
				snprintf(err, errlen, "%s", m->err);
			else
				snprintf(err, errlen, "dataplane at socket %s: %s", m->path,
					 rc == -EPIPE ? "dataplane went away" : strerror(-rc));
			return rc;
		}
		if (msg.type == APPMSG_ACCEPTED)
			break;
		if ((rc = enqueue(m, &msg, fd)) < 0) {
			if (fd >= 0)
				close(fd);
			snprintf(err, errlen, "out of memory queueing events");
			return rc;
		}
	}
	if (msg.status < 0) {
		snprintf(err, errlen, "%s", msg.reason);
		return msg.status;
	}
	*id = msg.id;
	return 0;
}

int mlfabric_listen(mlfabric_t *m, uint16_t chan)
{
	struct appmsg msg = { .type = APPMSG_LISTEN, .chan = chan };
	return send_msg(m, &msg, -1);
}

int mlfabric_listen_announced(mlfabric_t *m, uint16_t chan)
{
	struct appmsg msg = { .type = APPMSG_LISTEN, .chan = chan, .flags = APPMSG_LISTEN_ANNOUNCED };
	return send_msg(m, &msg, -1);
}

/* ORDER messages of at most APPMSG_MAX_IDS ids each; @first_flags on the first, @flags after. */
static int send_order(mlfabric_t *m, uint16_t chan, const uint64_t *ids, int n, uint32_t first_flags,
		      uint32_t flags)
{
	int done = 0;

	do {
		struct appmsg msg = { .type = APPMSG_ORDER, .chan = chan, .flags = done == 0 ? first_flags : flags };
		int k = n - done > APPMSG_MAX_IDS ? APPMSG_MAX_IDS : n - done, rc;
		msg.n = (uint16_t)k;
		memcpy(msg.u.ids, ids + done, (size_t)k * sizeof(uint64_t));
		if ((rc = send_msg(m, &msg, -1)) < 0)
			return rc;
		done += k;
	} while (done < n);
	return 0;
}

int mlfabric_commit_order(mlfabric_t *m, uint16_t chan, const uint64_t *ids, int n, int replace)
{
	return send_order(m, chan, ids, n, replace ? APPMSG_ORDER_REPLACE : 0, 0);
}

int mlfabric_order_skip(mlfabric_t *m, uint16_t chan, const uint64_t *ids, int n)
{
	return n > 0 ? send_order(m, chan, ids, n, APPMSG_ORDER_SKIP, APPMSG_ORDER_SKIP) : 0;
}

int mlfabric_ctl_send(mlfabric_t *m, const char *text)
{
	struct appmsg msg;
	int rc = appmsg_ctl(&msg, text);

	return rc < 0 ? rc : send_msg(m, &msg, -1);
}

static void to_event(const struct appmsg *msg, int fd, struct mlfabric_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	ev->buf.fd = -1;
	ev->kind = msg->type == APPMSG_TX_DONE ? MLFABRIC_EV_SENT :
		   msg->type == APPMSG_RX_DONE ? MLFABRIC_EV_RECEIVED :
		   msg->type == APPMSG_CTL ? MLFABRIC_EV_CTL : MLFABRIC_EV_ERROR;
	ev->status = msg->status;
	ev->id = msg->id;
	ev->bytes = msg->bytes;
	ev->chan = msg->chan;
	memcpy(ev->peer, msg->peer, sizeof(ev->peer));
	ev->peer[sizeof(ev->peer) - 1] = '\0';
	memcpy(ev->reason, msg->reason, sizeof(ev->reason));
	ev->reason[sizeof(ev->reason) - 1] = '\0';
	ev->first_tx_ns = msg->first_tx_ns;
	ev->end_ns = msg->end_ns;
	ev->start_error_ns = msg->start_error_ns;
	ev->retransmits = msg->retransmits;
	ev->frames = msg->frames;
	if (msg->type == APPMSG_CTL) {
		ev->ctl = strndup(msg->u.text, msg->n);
		if (!ev->ctl) {
			ev->kind = MLFABRIC_EV_ERROR;
			ev->status = -ENOMEM;
			snprintf(ev->reason, sizeof(ev->reason), "out of memory for a control message");
		}
	}
	if (fd >= 0 && ev->kind == MLFABRIC_EV_RECEIVED && ev->status == 0 && msg->bytes > 0) {
		void *p = mmap(NULL, msg->bytes, PROT_READ, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED) {
			ev->status = -errno;
			snprintf(ev->reason, sizeof(ev->reason), "cannot map received buffer: %s",
				 strerror(errno));
			close(fd);
			return;
		}
		ev->buf.data = p;
		ev->buf.size = msg->bytes;
		ev->buf.fd = fd;
	} else if (fd >= 0) {
		close(fd);
	}
}

int mlfabric_poll(mlfabric_t *m, struct mlfabric_event *ev, int timeout_ms)
{
	struct appmsg msg;
	int fd, rc;

	if (m->broken)
		return m->broken;
	if (m->nq > 0) {
		to_event(&m->q[0].msg, m->q[0].fd, ev);
		memmove(m->q, m->q + 1, (size_t)(m->nq - 1) * sizeof(*m->q));
		m->nq--;
		return 1;
	}
	rc = recv_one(m, &msg, &fd, timeout_ms);
	if (rc <= 0)
		return rc;
	to_event(&msg, fd, ev);
	return 1;
}

void mlfabric_event_release(struct mlfabric_event *ev)
{
	mlfabric_buf_free(&ev->buf);
	free(ev->ctl);
	ev->ctl = NULL;
}
