/* appmsg.c - messages (fixed header, used part of the step/id array) with an optional descriptor over SOCK_SEQPACKET. */
#include "appmsg.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

size_t appmsg_len(const struct appmsg *m)
{
	size_t head = offsetof(struct appmsg, u);

	if (m->type == APPMSG_SEND && m->n <= APPMSG_MAX_STEPS)
		return head + m->n * sizeof(m->u.steps[0]);
	if (m->type == APPMSG_ORDER && m->n <= APPMSG_MAX_IDS)
		return head + m->n * sizeof(m->u.ids[0]);
	if (m->type == APPMSG_CTL && m->n <= APPMSG_CTL_MAX)
		return head + m->n;
	return head;
}

int appmsg_ctl(struct appmsg *m, const char *text)
{
	size_t n = strlen(text);

	memset(m, 0, offsetof(struct appmsg, u));
	m->type = APPMSG_CTL;
	if (n == 0 || n > APPMSG_CTL_MAX)
		return -EMSGSIZE;
	m->n = (uint16_t)n;
	memcpy(m->u.text, text, n);
	return 0;
}

int appmsg_send(int sock, const struct appmsg *m, int fd)
{
	size_t len = appmsg_len(m);
	struct iovec iov = { .iov_base = (void *)m, .iov_len = len };
	union { char buf[CMSG_SPACE(sizeof(int))]; struct cmsghdr align; } ctl;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (fd >= 0) {
		struct cmsghdr *c;
		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.buf;
		mh.msg_controllen = sizeof(ctl.buf);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	for (;;) {
		ssize_t n = sendmsg(sock, &mh, MSG_NOSIGNAL);
		if (n == (ssize_t)len)
			return 0;
		if (n >= 0)
			return -EPROTO;
		if (errno != EINTR)
			return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	}
}

int appmsg_recv(int sock, struct appmsg *m, int *fd)
{
	struct iovec iov = { .iov_base = m, .iov_len = sizeof(*m) };
	union { char buf[CMSG_SPACE(sizeof(int))]; struct cmsghdr align; } ctl;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
			     .msg_controllen = sizeof(ctl.buf) };
	ssize_t n;

	*fd = -1;
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
			memcpy(fd, CMSG_DATA(c), sizeof(int));
	if (n == 0)
		return 0;
	if (n < (ssize_t)offsetof(struct appmsg, u) || n != (ssize_t)appmsg_len(m) ||
	    (mh.msg_flags & MSG_TRUNC) ||
	    (m->type == APPMSG_CTL && (m->n == 0 || m->n > APPMSG_CTL_MAX))) {
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		return -EPROTO;
	}
	memset((char *)m + n, 0, sizeof(*m) - (size_t)n); /* the unused part of the array */
	return 1;
}
