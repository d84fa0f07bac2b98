/* sched_state.c - lookups and bookkeeping over the scheduler daemon's state tables. */
#include "sched_state.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>
#include <string.h>

#include "log.h"
#include "sched_clock.h"

int sched_find_update(const struct sched *s, uint64_t id)
{
	if (sched_index_usable(&s->upd_ix))
		return sched_index_get(&s->upd_ix, id);
	for (int i = s->n_upd - 1; i >= 0; i--)
		if (s->upd[i].id == id)
			return i;
	return -1;
}

const char *sched_role_name(unsigned role)
{
	switch (role) {
	case SCHED_ROLE_WORKER: return "worker";
	case SCHED_ROLE_SERVER: return "server";
	case SCHED_ROLE_AGGREGATOR: return "aggregator";
	default: return "replica";
	}
}

void sched_conn_queue(struct sched *s, int ci, json_t *msg)
{
	int rc = ctl_queue(&s->conns[ci].c, msg);

	if (rc < 0 && rc != -ENOBUFS) { /* -ENOBUFS: the poll loop disconnects the peer */
		int h = s->conns[ci].host;
		log_err("%s: %s message not queued: %s", h >= 0 ? s->cl.hosts[h].name :
			"connection", msg ? ctl_type(msg) : "(unbuilt)", strerror(-rc));
	}
	json_decref(msg);
}

void sched_flush_host(struct sched *s, int host)
{
	int ci = s->hosts[host].conn;

	if (ci >= 0 && ctl_flush(&s->conns[ci].c) < 0)
		log_debug("%s: flush failed: the poll loop disconnects it", s->cl.hosts[host].name);
}

void sched_announce(struct sched *s, int src, int dst, int chan, uint64_t xfer, int standing)
{
	json_t *m;

	if (src < 0 || dst < 0 || src == dst || !s->hosts[dst].alive || s->hosts[dst].conn < 0)
		return;
	m = xfer ? json_pack("{s:s, s:s, s:i, s:[I]}", "type", "expect", "src", s->cl.hosts[src].name,
			     "chan", chan, "xfers", (json_int_t)xfer)
		 : json_pack("{s:s, s:s, s:i, s:b}", "type", "expect", "src", s->cl.hosts[src].name,
			     "chan", chan, "standing", standing);
	sched_conn_queue(s, s->hosts[dst].conn, m);
	sched_flush_host(s, dst); /* before the command that starts it reaches the sender */
}

/* A command that makes @host send a transfer (`send`, `forward`, `aggregate`) is announced to
 * its destination first (docs/security.md "Announced transfers"). */
static void announce_command(struct sched *s, int host, json_t *msg)
{
	const char *type = json_string_value(json_object_get(msg, "type"));
	const char *dst = json_string_value(json_object_get(msg, "dst"));
	json_t *x, *chan = json_object_get(msg, "chan");

	if (!type || !dst || !json_is_integer(chan))
		return;
	if (!strcmp(type, "send") || !strcmp(type, "forward"))
		x = json_object_get(msg, "xfer");
	else if (!strcmp(type, "aggregate"))
		x = json_object_get(msg, "agg");
	else
		return;
	if (json_is_integer(x) && json_integer_value(x) > 0)
		sched_announce(s, host, cluster_find(&s->cl, dst), (int)json_integer_value(chan),
			       (uint64_t)json_integer_value(x), 1);
}

void sched_to_app(struct sched *s, const char *role, int host, json_t *msg)
{
	char app[96];

	if (host < 0 || !s->hosts[host].alive || s->hosts[host].conn < 0) {
		json_decref(msg);
		return;
	}
	announce_command(s, host, msg);
	sched_clock_command(s, host, msg);
	if (!strcmp(role, "server") && host == s->server.host && s->server.role[0])
		role = s->server.role;
	snprintf(app, sizeof(app), "%s@%s", role, s->cl.hosts[host].name);
	json_object_set_new(msg, "app", json_string(app));
	sched_conn_queue(s, s->hosts[host].conn, msg);
}

void sched_compact(struct sched *s)
{
	int k = 0;

	for (int i = 0; i < s->n_upd; i++)
		if (s->upd[i].state == SCHED_UPD_PENDING || s->upd[i].state == SCHED_UPD_PLANNED ||
		    s->upd[i].rstate == SCHED_REP_PLANNED || s->upd[i].rstate == SCHED_REP_PUNTED)
			s->upd[k++] = s->upd[i];
	if (k != s->n_upd || !sched_index_usable(&s->upd_ix)) {
		sched_index_clear(&s->upd_ix);
		for (int i = 0; i < k; i++)
			sched_index_put(&s->upd_ix, s->upd[i].id, i); /* a failure leaves it stale */
	}
	s->n_upd = k;
	for (int h = 0; h < s->cl.n_hosts; h++)
		s->hosts[h].held_upd = s->hosts[h].held_pulls = 0;
	for (int i = 0; i < s->n_upd; i++)
		s->hosts[s->upd[i].worker].held_upd++;
	for (int i = 0; i < s->n_pulls; i++)
		s->hosts[s->pulls[i].worker].held_pulls++;
}

void sched_conn_peer(const struct sched *s, int ci, char *buf, size_t len)
{
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);

	snprintf(buf, len, "unknown address");
	if (!getpeername(s->conns[ci].c.fd, (struct sockaddr *)&sa, &sl) && sa.sin_family == AF_INET)
		snprintf(buf, len, "%s:%u", inet_ntoa(sa.sin_addr), ntohs(sa.sin_port));
}

void sched_conn_trust(struct sched *s, int ci)
{
	s->conns[ci].c.in_max = CTL_LINE_MAX;
	s->conns[ci].c.out_max = CTL_OUT_MAX;
}

void sched_conn_close(struct sched *s, int ci)
{
	struct sched_conn *c = &s->conns[ci];
	if (c->host >= 0 && s->hosts[c->host].conn == ci)
		s->hosts[c->host].conn = -1;
	ctl_close(&c->c);
	c->host = -1;
	c->auth_host = -1;
	c->auth_viewer = 0;
	c->closing = 0;
}
