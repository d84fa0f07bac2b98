/* sched_daemon.c - the scheduler daemon: life cycle, and the poll loop over its connections. */
#define _GNU_SOURCE
#include "sched_daemon.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "arr.h"
#include "clock.h"
#include "log.h"
#include "mlf_payload.h"
#include "sched_arrival.h"
#include "sched_batch.h"
#include "sched_fail.h"
#include "sched_lead.h"
#include "sched_msg.h"
#include "sched_policy.h"
#include "sched_rec.h"
#include "sched_repl.h"
#include "sched_status.h"
#include "sched_xfer.h"

void sched_daemon_defaults(struct sched_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->batch_s = 0.1;
	cfg->replan_s = 0.002;
	cfg->t_lag_s = 0.2;
	cfg->peer_timeout_s = 2.0;
	cfg->headroom = 0.95;
	cfg->copy_wait = SCHED_COPY_WAIT_LEARNED;
	cfg->lead_s = 0.01;
	cfg->clock_warn_s = 0.005;
	cfg->clock_max_s = 0.1;
	cfg->clock_correct = 1;
	cfg->sync_timeout_s = 30.0;
	cfg->xfer_timeout_s = 10.0;
	cfg->max_batch = MLF_PAYLOAD_MAX_PARTS; /* an aggregate can name every update */
	cfg->catchup_timeout_s = 10.0;
	cfg->distributors = -1;
	cfg->max_upd_per_host = SCHED_MAX_UPD_PER_HOST;
	cfg->max_pulls_per_host = SCHED_MAX_PULLS_PER_HOST;
	sched_policy_defaults(cfg);
}

/* ---- the loop -------------------------------------------------------------------------- */

/*
 * Out of file descriptors (EMFILE, ENFILE) or kernel memory: the pending connection stays in
 * the backlog and the listening socket stays readable, so polling it again at once would spin.
 * Logged once per episode; the listening socket is left out of poll for a back-off (0.1 s,
 * doubling up to 1 s) and accept is retried after it.
 */
static void accept_failed(struct sched *s, int err, double now)
{
	if (s->accept_backoff == 0) {
		log_warn("accept: %s (%d connections open): not accepting for %.1f s, then retrying "
			 "with back-off up to %.1f s", strerror(err), s->n_conns,
			 SCHED_ACCEPT_BACKOFF_MIN_S, SCHED_ACCEPT_BACKOFF_MAX_S);
		s->accept_backoff = SCHED_ACCEPT_BACKOFF_MIN_S;
	} else if ((s->accept_backoff *= 2) > SCHED_ACCEPT_BACKOFF_MAX_S) {
		s->accept_backoff = SCHED_ACCEPT_BACKOFF_MAX_S;
	}
	s->accept_resume = now + s->accept_backoff;
}

/* Connection @ci has not authenticated: no host, not a welcomed status viewer. */
static int unauthenticated(const struct sched *s, int ci)
{
	return s->conns[ci].c.fd >= 0 && s->conns[ci].host < 0 && !s->conns[ci].viewer;
}

static void disconnect(struct sched *s, int ci)
{
	int h = s->conns[ci].host;
	if (h >= 0 && s->hosts[h].conn == ci) {
		log_warn("peer %s disconnected", s->cl.hosts[h].name);
		sched_fail_host(s, h);
	}
	if (s->conns[ci].c.fd >= 0)
		sched_conn_close(s, ci);
}

static void read_conn(struct sched *s, int ci)
{
	long r = ctl_read(&s->conns[ci].c);
	char err[256];
	json_t *m;

	if (r == 0 || (r < 0 && r != -EAGAIN)) {
		disconnect(s, ci);
		return;
	}
	while (s->conns[ci].c.fd >= 0 && !s->conns[ci].closing && !s->conns[ci].c.overflow) {
		int rc = ctl_next(&s->conns[ci].c, &m, err, sizeof(err));
		if (rc == 0)
			break;
		if (rc < 0) {
			int outsider = unauthenticated(s, ci);

			sched_msg_frame_error(s, ci, err);
			if (outsider) /* speaks for nobody: one answer, then closed */
				s->conns[ci].closing = 1;
			continue;
		}
		sched_msg_handle(s, ci, m);
		json_decref(m);
	}
}

/*
 * How readily unauthenticated connection @ci is closed when too many wait (higher first):
 * one already refused (closing), one that said nothing yet, one whose hello was challenged.
 */
static int evict_rank(const struct sched *s, int ci)
{
	const struct sched_conn *c = &s->conns[ci];

	return c->closing ? 2 : c->auth_host < 0 && !c->auth_viewer ? 1 : 0;
}

/*
 * At most SCHED_MAX_UNAUTH connections wait to authenticate: over that, one is closed, the
 * first of: a refused one, the oldest that said nothing, the oldest challenged one. So an
 * outsider opening connections in a loop pushes out its own, and a host's login, which is
 * challenged within a round trip, keeps its place. One WARN at most every 5 s, with the
 * count closed since the last.
 */
static void evict_unauthenticated(struct sched *s, double now)
{
	int n = 0, victim = -1;
	char who[64];

	for (int ci = 0; ci < s->n_conns; ci++) {
		if (!unauthenticated(s, ci))
			continue;
		n++;
		if (victim < 0 || evict_rank(s, ci) > evict_rank(s, victim) ||
		    (evict_rank(s, ci) == evict_rank(s, victim) &&
		     s->conns[ci].t_open < s->conns[victim].t_open))
			victim = ci;
	}
	if (n <= SCHED_MAX_UNAUTH)
		return;
	s->n_evicted++;
	if (now - s->evict_logged >= 5.0) {
		sched_conn_peer(s, victim, who, sizeof(who));
		log_warn("%d connections not authenticated (limit %d): closed one from %s (%lu closed "
			 "since the last such message; docs/security.md)", n, SCHED_MAX_UNAUTH, who,
			 s->n_evicted);
		s->evict_logged = now;
		s->n_evicted = 0;
	}
	sched_conn_close(s, victim);
}

static void accept_all(struct sched *s, double now)
{
	for (;;) {
		int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
				accept_failed(s, errno, now);
			return;
		}
		if (s->accept_backoff > 0) {
			log_info("accepting connections again");
			s->accept_backoff = 0;
		}
		int one = 1, ci = -1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		for (int i = 0; i < s->n_conns; i++)
			if (s->conns[i].c.fd < 0)
				ci = i;
		if (ci < 0) {
			if (arr_grow((void **)&s->conns, &s->cap_conns, s->n_conns + 1,
				     sizeof(*s->conns))) {
				log_err("out of memory: connection refused");
				close(fd);
				continue;
			}
			ci = s->n_conns++;
		}
		ctl_init(&s->conns[ci].c, fd);
		s->conns[ci].host = -1;
		s->conns[ci].closing = 0;
		s->conns[ci].viewer = 0;
		s->conns[ci].auth_host = -1;
		s->conns[ci].auth_viewer = 0;
		s->conns[ci].t_open = clock_real_s();
		/* small caps until it authenticates (sched_conn_trust lifts them) */
		s->conns[ci].c.in_max = SCHED_UNAUTH_IN_MAX;
		s->conns[ci].c.out_max = SCHED_UNAUTH_OUT_MAX;
		/* its first lines are often there already: a hello is challenged, a bad line
		 * refused, before the cap below picks a connection to close */
		read_conn(s, ci);
		evict_unauthenticated(s, now);
	}
}

/*
 * Connection @ci went over its output cap (ctl_queue -ENOBUFS, CTL_OUT_MAX): the peer does not
 * read. One WARN naming it; a host's connection fails the host (as a disconnect does).
 * Returns 1 when it was closed.
 */
static int check_overflow(struct sched *s, int ci)
{
	struct sched_conn *c = &s->conns[ci];
	int h = c->host;

	if (c->c.fd < 0 || !c->c.overflow)
		return 0;
	if (h >= 0 && s->hosts[h].conn == ci) {
		log_warn("peer %s does not read its control connection (%zu bytes queued, limit %zu): "
			 "disconnected", s->cl.hosts[h].name, ctl_pending(&c->c), c->c.out_max);
		sched_fail_host(s, h);
	} else {
		char who[64];

		sched_conn_peer(s, ci, who, sizeof(who));
		log_warn("connection from %s%s does not read (%zu bytes queued, limit %zu): closed",
			 who, c->viewer ? " (status viewer)" : "", ctl_pending(&c->c), c->c.out_max);
	}
	if (c->c.fd >= 0)
		sched_conn_close(s, ci);
	return 1;
}

static void check_peers(struct sched *s, double now)
{
	for (int h = 0; h < s->cl.n_hosts; h++)
		if (s->hosts[h].alive && now - s->hosts[h].last_heard > s->cfg.peer_timeout_s) {
			log_warn("peer %s silent for %.1f s", s->cl.hosts[h].name,
				 now - s->hosts[h].last_heard);
			sched_fail_host(s, h);
		}
	/* the time to authenticate counts from accept, whatever the peer sends or leaves unread */
	for (int ci = 0; ci < s->n_conns; ci++)
		if (unauthenticated(s, ci) && now - s->conns[ci].t_open > s->cfg.peer_timeout_s) {
			char who[64];

			sched_conn_peer(s, ci, who, sizeof(who));
			log_warn("connection from %s without hello%s for %.1f s after accept: closed", who,
				 s->conns[ci].auth_host >= 0 || s->conns[ci].auth_viewer ?
				 " and auth" : "", now - s->conns[ci].t_open);
			sched_conn_close(s, ci);
		}
}

/* Transfers with no `done` --xfer-timeout after their planned end are lost (nothing waits). */
static void check_xfers(struct sched *s, double now)
{
	char reason[128];

	for (int i = 0; i < s->n_xfers; i++) {
		struct sched_xfer *x = &s->xfers[i];
		double late = now - s->t0 - x->end;
		if (x->done || late <= s->cfg.xfer_timeout_s)
			continue;
		snprintf(reason, sizeof(reason), "no done report %.1f s after its planned end", late);
		sched_fail_xfer(s, i, reason);
	}
}

static void flush_all(struct sched *s)
{
	for (int ci = 0; ci < s->n_conns; ci++) {
		struct sched_conn *c = &s->conns[ci];
		if (c->c.fd < 0 || check_overflow(s, ci))
			continue;
		if (ctl_pending(&c->c) && ctl_flush(&c->c) < 0) {
			disconnect(s, ci);
			continue;
		}
		if (c->closing && !ctl_pending(&c->c))
			sched_conn_close(s, ci);
	}
}

/* The next wake-up of the loop: the fallback tick, the arrivals' plan, a future arrival. */
static double next_wake(const struct sched *s)
{
	double t = s->next_batch, plan = sched_arrival_plan_at(s);

	if (plan > 0 && plan < t)
		t = plan;
	if (s->arrival_later > 0 && s->arrival_later < t)
		t = s->arrival_later;
	return t;
}

/* Plan now (errors are logged by the batch; the updates stay pending for the next). */
static void plan_now(struct sched *s, double now)
{
	s->arrival_at = 0;
	s->last_plan = now;
	(void)sched_batch_tick(s, now);
	sched_compact(s);
	sched_xfer_compact(s, now - s->t0);
	s->next_batch = now + s->cfg.batch_s;
}

int sched_daemon_run(struct sched *s, const volatile sig_atomic_t *stop)
{
	struct pollfd *pf = NULL;
	int cap_pf = 0, rc = 0;

	s->next_batch = clock_real_s() + s->cfg.batch_s;
	while (!*stop) {
		if (cap_pf < s->n_conns + 1) {
			cap_pf = s->n_conns + 16;
			struct pollfd *np = realloc(pf, sizeof(*pf) * (size_t)cap_pf);
			if (!np) {
				rc = -ENOMEM;
				break;
			}
			pf = np;
		}
		/* out of file descriptors: the listening socket rests until accept_resume */
		pf[0] = (struct pollfd){ .fd = s->accept_backoff > 0 && clock_real_s() <
			s->accept_resume ? -1 : s->listen_fd, .events = POLLIN };
		/* a closing connection is not read: its answer is written, then it is closed */
		for (int ci = 0; ci < s->n_conns; ci++)
			pf[ci + 1] = (struct pollfd){ .fd = s->conns[ci].c.fd,
				.events = (s->conns[ci].closing ? 0 : POLLIN) |
				(ctl_pending(&s->conns[ci].c) ? POLLOUT : 0) };
		double wait = next_wake(s) - clock_real_s();
		int ms = wait <= 0 ? 0 : wait > 0.05 ? 50 : (int)(wait * 1e3) + 1;
		int n_pf = s->n_conns + 1;
		if (poll(pf, (nfds_t)n_pf, ms) < 0 && errno != EINTR) {
			rc = -errno;
			log_err("poll: %s", strerror(errno));
			break;
		}
		if (pf[0].revents & (POLLERR | POLLNVAL)) {
			rc = -EIO;
			log_err("listening socket failed");
			break;
		}
		if (pf[0].revents & POLLIN)
			accept_all(s, clock_real_s());
		for (int ci = 0; ci < n_pf - 1; ci++)
			if (s->conns[ci].c.fd >= 0 && (pf[ci + 1].revents & (POLLIN | POLLHUP | POLLERR)))
				read_conn(s, ci);
		double now = clock_real_s();
		check_peers(s, now);
		check_xfers(s, now);
		sched_policy_tick(s, now);
		sched_arrival_due(s, now);
		double plan = sched_arrival_plan_at(s);
		if (now >= s->next_batch || (plan > 0 && now >= plan))
			plan_now(s, now);
		flush_all(s);
	}
	free(pf);
	return rc;
}

/* ---- life cycle ------------------------------------------------------------------------ */

/* Host flags *@out from the comma-separated host list @spec of option @opt ("" = none). */
static int parse_hosts(struct sched *s, const char *opt, const char *spec, int **out, char *err,
		       size_t errlen)
{
	char list[512], *save = NULL;

	if (!spec[0])
		return 0;
	*out = calloc((size_t)s->cl.n_hosts, sizeof(int));
	if (!*out)
		return -ENOMEM;
	snprintf(list, sizeof(list), "%s", spec);
	for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int h = cluster_find(&s->cl, t);
		if (h < 0) {
			snprintf(err, errlen, "%s: unknown host '%s'", opt, t);
			return -EINVAL;
		}
		(*out)[h] = 1;
	}
	return 0;
}

struct sched *sched_daemon_create(const struct sched_config *cfg, const char *cluster_path,
				  char *err, size_t errlen)
{
	struct sched *s = calloc(1, sizeof(*s));
	char addr[64];

	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->cfg = *cfg;
	s->listen_fd = -1;
	s->server.host = -1;
	s->repl.host = -1;
	if (cluster_load(cluster_path, &s->cl, err, errlen))
		goto fail;
	if (s->cl.key_file[0]) {
		if (auth_key_load(s->cl.key_file, s->key, err, errlen))
			goto fail;
		s->auth_on = 1;
	} else {
		log_warn("cluster %s has no key_file%s: control connections are not authenticated, any "
			 "process that reaches the control port can say hello as any host (docs/security.md)",
			 s->cl.name, s->cl.insecure ? " (\"insecure\": true)" :
			 " and does not say \"insecure\": true");
	}
	s->hosts = calloc((size_t)s->cl.n_hosts, sizeof(*s->hosts));
	s->server_alias = calloc((size_t)s->cl.n_hosts, sizeof(int));
	if (!s->hosts || !s->server_alias) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	for (int h = 0; h < s->cl.n_hosts; h++)
		s->hosts[h].conn = -1;
	if (parse_hosts(s, "--aggregators", cfg->aggregators, &s->agg_allowed, err, errlen) ||
	    parse_hosts(s, "--replica-aggregators", cfg->replica_aggregators, &s->ragg_allowed, err,
			errlen))
		goto fail;
	if (cfg->listen[0]) {
		snprintf(addr, sizeof(addr), "%s", cfg->listen);
	} else {
		int h = cluster_find_role(&s->cl, CLUSTER_ROLE_SCHEDULER);
		if (h < 0) {
			snprintf(err, errlen, "%s: no host with role scheduler (use --listen IP:PORT)",
				 cluster_path);
			goto fail;
		}
		struct in_addr ia = { .s_addr = cluster_control_ip(&s->cl, h) };
		snprintf(addr, sizeof(addr), "%s:%u", inet_ntoa(ia), s->cl.control_port);
	}
	if (cfg->records[0] && sched_rec_open(s, cfg->records, err, errlen))
		goto fail;
	s->listen_fd = ctl_listen(addr, err, errlen);
	if (s->listen_fd < 0)
		goto fail;
	s->t0 = clock_real_s();
	sched_lead_init(&s->lead, cfg->lead_s);
	if (sched_policy_choose(s, err, errlen))
		goto fail;
	/* fresh transfer ids start at this start's milliseconds << 20: a scheduler restarted after a
	 * crash (docs/scheduler.md "Restart") never reuses an id of transfers still in flight */
	s->xfer_counter = ((uint64_t)(s->t0 * 1e3) & ((1ull << 41) - 1)) << 20;
	log_info("listening on %s for %d hosts of cluster %s; batch %.0f ms, replan %.1f ms, "
		 "lead <= %.1f ms, t_lag %.2f s, peer timeout %.1f s, headroom %.2f, capacities %s", addr,
		 s->cl.n_hosts, s->cl.name, cfg->batch_s * 1e3, cfg->replan_s * 1e3,
		 cfg->lead_s * 1e3, cfg->t_lag_s, cfg->peer_timeout_s, cfg->headroom,
		 cfg->capacity_measured ? "measured" : "declared");
	return s;
fail:
	sched_daemon_free(s);
	return NULL;
}

void sched_daemon_set_hook(struct sched *s, sched_batch_hook hook, void *arg)
{
	s->hook = hook;
	s->hook_arg = arg;
}

void sched_daemon_free(struct sched *s)
{
	if (!s)
		return;
	if (s->t0 > 0)
		log_info("lead at exit %.2f ms (cap %.2f ms): %lu late and %lu on-time transfers measured",
			 s->lead.lead_s * 1e3, s->lead.cap_s * 1e3, s->lead.n_late,
			 s->lead.n_on_time);
	for (int ci = 0; ci < s->n_conns; ci++)
		if (s->conns[ci].c.fd >= 0)
			ctl_close(&s->conns[ci].c);
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	if (s->hosts)
		sched_repl_finish(s);
	sched_policy_free(s);
	sched_rec_close(s);
	sched_status_free(s);
	free(s->repl.carried);
	free(s->repl.carried_s);
	free(s->ragg_allowed);
	free(s->server_alias);
	free(s->conns);
	free(s->upd);
	sched_index_free(&s->upd_ix);
	free(s->pulls);
	sched_xfer_free(s);
	free(s->hosts);
	free(s->agg_allowed);
	free(s->sync.in);
	cluster_free(&s->cl);
	free(s);
}
