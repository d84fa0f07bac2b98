/* ctl.c - JSON-lines framing of the control protocol (docs/control.md). */
#include "ctl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

void ctl_init(struct ctl_conn *c, int fd)
{
	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->out_max = CTL_OUT_MAX;
	c->in_max = CTL_LINE_MAX;
}

/* The longest line @c takes, bytes with its '\n'. */
static size_t line_max(const struct ctl_conn *c)
{
	return c->in_max && c->in_max < CTL_LINE_MAX ? c->in_max : CTL_LINE_MAX;
}

void ctl_close(struct ctl_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->in);
	free(c->out);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

static int reserve(char **buf, size_t *cap, size_t need)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap : 4096;
	while (n < need)
		n *= 2;
	char *p = realloc(*buf, n);
	if (!p)
		return -ENOMEM;
	*buf = p;
	*cap = n;
	return 0;
}

int ctl_queue(struct ctl_conn *c, json_t *msg)
{
	char *s = json_dumps(msg, JSON_COMPACT);
	if (!s)
		return -ENOMEM;
	size_t len = strlen(s);
	if (len + 1 > CTL_LINE_MAX) {
		free(s);
		return -EMSGSIZE;
	}
	if (c->overflow || ctl_pending(c) + len + 1 > (c->out_max ? c->out_max : CTL_OUT_MAX)) {
		c->overflow = 1;
		free(s);
		return -ENOBUFS;
	}
	if (c->out_off > 0 && c->out_off == c->out_len)
		c->out_off = c->out_len = 0;
	if (reserve(&c->out, &c->out_cap, c->out_len + len + 1)) {
		free(s);
		return -ENOMEM;
	}
	memcpy(c->out + c->out_len, s, len);
	c->out[c->out_len + len] = '\n';
	c->out_len += len + 1;
	free(s);
	return 0;
}

int ctl_flush(struct ctl_conn *c)
{
	while (c->out_off < c->out_len) {
		ssize_t w = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			return -errno;
		}
		c->out_off += (size_t)w;
	}
	c->out_off = c->out_len = 0;
	return 1;
}

int ctl_send(struct ctl_conn *c, json_t *msg)
{
	int rc = ctl_queue(c, msg);
	if (rc < 0)
		return rc;
	rc = ctl_flush(c);
	return rc < 0 ? rc : 0;
}

size_t ctl_pending(const struct ctl_conn *c)
{
	return c->out_len - c->out_off;
}

long ctl_read(struct ctl_conn *c)
{
	size_t lmax = line_max(c), hold = lmax + (lmax < 65536 ? lmax : 65536);

	if (c->in_off > 0) { /* drop the parsed lines once per read, not once per line */
		memmove(c->in, c->in + c->in_off, c->in_len - c->in_off);
		c->in_len -= c->in_off;
		c->in_off = 0;
	}
	if (c->in_len >= lmax)
		return -EAGAIN; /* full: ctl_next takes a line or drops an over-long one first */
	size_t want = hold - c->in_len < 65536 ? hold - c->in_len : 65536;
	if (reserve(&c->in, &c->in_cap, c->in_len + want))
		return -ENOMEM;
	size_t room = c->in_cap - c->in_len;
	if (room > hold - c->in_len)
		room = hold - c->in_len; /* holds at most `hold` bytes */
	for (;;) {
		ssize_t r = read(c->fd, c->in + c->in_len, room);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return (errno == EWOULDBLOCK) ? -EAGAIN : -errno;
		c->in_len += (size_t)r;
		return (long)r;
	}
}

int ctl_next(struct ctl_conn *c, json_t **msg, char *err, size_t errlen)
{
	size_t lmax = line_max(c);

	*msg = NULL;
	for (;;) {
		char *p = c->in + c->in_off;
		size_t n = c->in_len - c->in_off;
		char *nl = n ? memchr(p, '\n', n) : NULL;

		if (c->in_skip) { /* the tail of a refused over-long line: discard up to its end */
			if (!nl) {
				c->in_off = c->in_len = 0;
				return 0;
			}
			c->in_skip = 0;
			c->in_off += (size_t)(nl - p) + 1;
			continue;
		}
		if (!nl) {
			if (n >= lmax) {
				c->in_off = c->in_len = 0; /* drop it, and what follows up to its '\n' */
				c->in_skip = 1;
				snprintf(err, errlen, "line longer than %zu bytes", lmax);
				return -EBADMSG;
			}
			return 0;
		}
		size_t len = (size_t)(nl - p);
		c->in_off += len + 1;
		if (c->in_off == c->in_len)
			c->in_off = c->in_len = 0;
		if (len + 1 > lmax) {
			snprintf(err, errlen, "line longer than %zu bytes", lmax);
			return -EBADMSG;
		}
		json_error_t je;
		json_t *j = json_loadb(p, len, JSON_REJECT_DUPLICATES, &je);
		if (!j) {
			snprintf(err, errlen, "not JSON: %s (column %d)", je.text, je.column);
			return -EBADMSG;
		}
		if (!json_is_object(j) || !json_is_string(json_object_get(j, "type"))) {
			json_decref(j);
			snprintf(err, errlen, "not a JSON object with a string \"type\"");
			return -EBADMSG;
		}
		*msg = j;
		return 1;
	}
}

static int parse_addr(const char *host_port, struct sockaddr_in *sa, char *err, size_t errlen)
{
	char host[64];
	int port = CTL_DEFAULT_PORT;
	const char *colon = strrchr(host_port, ':');
	size_t hl = colon ? (size_t)(colon - host_port) : strlen(host_port);
	if (hl == 0 || hl >= sizeof(host)) {
		snprintf(err, errlen, "%s: not an IPv4 address[:port]", host_port);
		return -EINVAL;
	}
	memcpy(host, host_port, hl);
	host[hl] = 0;
	if (colon) {
		char *end;
		long p = strtol(colon + 1, &end, 10);
		if (*end || p <= 0 || p > 65535) {
			snprintf(err, errlen, "%s: bad port", host_port);
			return -EINVAL;
		}
		port = (int)p;
	}
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, host, &sa->sin_addr) != 1) {
		snprintf(err, errlen, "%s: not an IPv4 address", host_port);
		return -EINVAL;
	}
	return 0;
}

int ctl_connect(const char *host_port, char *err, size_t errlen)
{
	struct sockaddr_in sa;
	int rc = parse_addr(host_port, &sa, err, errlen);
	if (rc)
		return rc;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return rc;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		rc = -errno;
		snprintf(err, errlen, "connect to scheduler %s: %s", host_port, strerror(errno));
		close(fd);
		return rc;
	}
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	return fd;
}

int ctl_listen(const char *host_port, char *err, size_t errlen)
{
	struct sockaddr_in sa;
	int rc = parse_addr(host_port, &sa, err, errlen);
	if (rc)
		return rc;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return rc;
	}
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, CTL_LISTEN_BACKLOG) < 0) {
		rc = -errno;
		snprintf(err, errlen, "listen on %s: %s", host_port, strerror(errno));
		close(fd);
		return rc;
	}
	return fd;
}

const char *ctl_type(const json_t *msg)
{
	const char *t = json_string_value(json_object_get(msg, "type"));
	return t ? t : "";
}
