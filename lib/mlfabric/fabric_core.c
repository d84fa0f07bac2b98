/* fabric_core.c - an endpoint's core: open/close, the event thread and its dispatch (commands to
 * fabric_core_cmd.c, dataplane events to the role ops), registration. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "fabric_int.h"
#include "log.h"

#define REGISTER_RETRY_S 0.5    /* register again while the dataplane has no scheduler yet */

static const char *const role_names[] = { "", "worker", "server", "replica", "aggregator" };

const char *fabric_core_role_name(enum fabric_role role)
{
	return role_names[role];
}

uint64_t fabric_core_next_id(struct mlf *f)
{
	return ((uint64_t)(f->me + 1) << 40) | (++f->seq & FABRIC_SEQ_MASK);
}

/* ---- event thread -------------------------------------------------------------------------- */

static void on_sent(struct mlf *f, const struct mlfabric_event *ev)
{
	const struct fabric_role_ops *ops = fabric_core_ops(f);
	struct fabric_out *o = NULL;

	/* the dataplane unmapped its buffer: reusable, unless it went to an app on this host (the
	 * same memfd handed over: an aggregator here may read it long after) */
	fabric_pool_done(f, ev->id, strcmp(ev->peer, f->cl.hosts[f->me].name) == 0);
	if (ops && ops->sent && ops->sent(f, ev))
		return;
	pthread_mutex_lock(&f->lock);
	for (struct fabric_out **p = &f->out; *p; p = &(*p)->next)
		if ((*p)->xfer == ev->id) {
			o = *p;
			*p = o->next;
			break;
		}
	if (o && o->is_update && ev->status == 0 && !o->to_agg)
		f->ws.sent++;
	if (o)
		pthread_cond_broadcast(&f->cond); /* mlf_close's drain */
	pthread_mutex_unlock(&f->lock);
	if (ev->status)
		log_warn("transfer %llx to %s failed: %s", (unsigned long long)ev->id, ev->peer, ev->reason);
	if (o)
		fabric_core_report_done(f, ev->id, ev->status, ev->bytes, (double)ev->first_tx_ns / 1e9,
					(double)ev->end_ns / 1e9, ev->reason);
	free(o);
}

static void on_received(struct mlf *f, struct mlfabric_event *ev)
{
	const struct fabric_role_ops *ops = fabric_core_ops(f);

	if ((ev->chan == 1 || ev->chan == 4) && f->mode != MLF_MODE_DIRECT) {
		/* handed over: if its `order` reached the dataplane only after it was delivered (the
		 * data overtook it), the dataplane must not wait for it again (see order_append,
		 * fabric_core_cmd.c) */
		f->received[f->n_received % FABRIC_RECEIVED_MAX].id = ev->id;
		f->received[f->n_received++ % FABRIC_RECEIVED_MAX].chan = ev->chan;
		mlfabric_order_skip(f->dp, ev->chan, &ev->id, 1);
	}
	if (ev->status) {
		log_warn("incoming transfer %llx from %s on channel %u failed: %s", (unsigned long long)ev->id,
			 ev->peer[0] ? ev->peer : "?", ev->chan, ev->reason);
		return;
	}
	if (ops && ops->received && ops->received(f, ev))
		return;
	if (ev->chan == 4)
		log_warn("transfer %llx from %s on the replica channel: %s is no replica; ignored",
			 (unsigned long long)ev->id, ev->peer, f->app);
	else if (ev->chan == 0 || ev->chan > 5)
		log_warn("transfer %llx from %s on unused channel %u ignored", (unsigned long long)ev->id,
			 ev->peer, ev->chan);
}

static void run_direct(struct mlf *f)
{
	struct fabric_direct *d;
	uint64_t id;

	for (;;) {
		pthread_mutex_lock(&f->lock);
		d = f->direct;
		if (d)
			f->direct = d->next;
		pthread_mutex_unlock(&f->lock);
		if (!d)
			return;
		int rc = d->pooled ? fabric_core_send_shared(f, &d->buf, d->bytes, d->dst, d->chan, d->id, 0, NULL, 0, &id)
				   : fabric_core_send_buf(f, &d->buf, d->bytes, d->dst, d->chan, d->id, 0, NULL, 0, &id);
		if (d->pooled) /* back to the pool when its SENT comes (on_sent) */
			fabric_pool_sent(f, &d->buf, rc == 0 ? id : 0);
		if (rc == 0 && d->chan == 1) {
			pthread_mutex_lock(&f->lock);
			fabric_core_track_out(f, id, 1, 0);
			pthread_mutex_unlock(&f->lock);
		}
		free(d);
	}
}

static void *event_thread(void *arg)
{
	struct mlf *f = arg;
	const struct fabric_role_ops *ops;
	struct mlfabric_event ev;
	char drain[64];
	int rc;

	while (!f->stop) {
		struct pollfd p[2] = { { .fd = mlfabric_fd(f->dp), .events = POLLIN },
				       { .fd = f->wake[0], .events = POLLIN } };
		poll(p, 2, 20);
		if (p[1].revents & POLLIN)
			while (read(f->wake[0], drain, sizeof(drain)) > 0)
				;
		run_direct(f);
		while ((rc = mlfabric_poll(f->dp, &ev, 0)) == 1) {
			if (ev.kind == MLFABRIC_EV_CTL)
				fabric_core_on_ctl(f, ev.ctl);
			else if (ev.kind == MLFABRIC_EV_SENT)
				on_sent(f, &ev);
			else if (ev.kind == MLFABRIC_EV_RECEIVED)
				on_received(f, &ev);
			else
				log_warn("dataplane refused a request: %s", ev.reason);
			mlfabric_event_release(&ev);
		}
		if (rc < 0) {
			log_err("dataplane connection lost: %s", rc == -ETIMEDOUT ? mlfabric_error(f->dp) : strerror(-rc));
			pthread_mutex_lock(&f->lock);
			f->dead = 1;
			f->dead_rc = rc == -ETIMEDOUT ? rc : -ENOTCONN;
			if (rc == -ETIMEDOUT)
				fabric_core_set_err(f, "host %s: %s", f->cl.hosts[f->me].name, mlfabric_error(f->dp));
			else
				fabric_core_set_err(f, "dataplane of host %s went away", f->cl.hosts[f->me].name);
			pthread_cond_broadcast(&f->cond);
			pthread_mutex_unlock(&f->lock);
			break;
		}
		if ((ops = fabric_core_ops(f)) && ops->progress)
			ops->progress(f);
		fabric_core_rereg_retry(f);
		json_t *waits = fabric_wait_check(f);
		if (waits && fabric_core_ctl(f, waits) < 0)
			log_debug("%s: waits not sent to the scheduler", f->app);
	}
	return NULL;
}

/* ---- endpoints ----------------------------------------------------------------------------- */

mlf_t *mlf_open(const struct mlf_opts *o, char *err, size_t errlen)
{
	struct mlf *f;
	char sock[256], dperr[256];
	int e = EINVAL;

	if (!o || !o->cluster || !o->host) {
		snprintf(err, errlen, "mlf_open: cluster and host are required");
		errno = EINVAL;
		return NULL;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		snprintf(err, errlen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	f->wake[0] = f->wake[1] = -1;
	if ((e = cluster_load(o->cluster, &f->cl, err, errlen)) < 0) {
		e = -e;
		goto fail;
	}
	e = EINVAL;
	if ((f->me = cluster_find(&f->cl, o->host)) < 0) {
		snprintf(err, errlen, "%s: no host named '%s'", o->cluster, o->host);
		goto fail;
	}
	/* Update and pull ids continue where an earlier process on this host left off: the
	 * sequence starts at the microseconds of the clock (mod 2^39), so a worker restarted on
	 * the same host does not reuse its predecessor's ids, which the server's dataplane still
	 * remembers as delivered and would drop as duplicates. */
	f->seq = (uint64_t)(clock_real_ns() / 1000) & (FABRIC_SEQ_MASK >> 1);
	f->mode = o->mode;
	f->timeout_s = o->timeout_s > 0 ? o->timeout_s : 10;
	f->agg_timeout_s = o->agg_input_timeout_s > 0 ? o->agg_input_timeout_s : 5;
	f->waits.threshold_s = o->wait_log_s;
	if (o->verify_dir && o->verify_dir[0]) {
		if (strlen(o->verify_dir) >= sizeof(f->verify_dir) - 40) {
			snprintf(err, errlen, "verify directory path too long: %s", o->verify_dir);
			goto fail;
		}
		if (mkdir(o->verify_dir, 0755) < 0 && errno != EEXIST) {
			e = errno;
			snprintf(err, errlen, "verify directory %s: %s", o->verify_dir, strerror(errno));
			goto fail;
		}
		snprintf(f->verify_dir, sizeof(f->verify_dir), "%s", o->verify_dir);
	}
	if (o->sock)
		snprintf(sock, sizeof(sock), "%s", o->sock);
	else
		snprintf(sock, sizeof(sock), "%s/%s-%s.sock", MLFABRIC_SOCK_DIR, f->cl.name, o->host);
	/* the connect and every request to the dataplane wait at most MLF_DP_TIMEOUT_S, else the
	 * larger of the endpoint timeout and MLFABRIC_TIMEOUT_S: a short timeout for peers (1 s in
	 * tests) must not give up a local dataplane that a busy machine delays for a moment */
	if (!(f->dp = mlfabric_connect_within(sock, mlfabric_env_timeout_s() > 0 ? mlfabric_env_timeout_s() :
					      f->timeout_s > MLFABRIC_TIMEOUT_S ? f->timeout_s :
					      MLFABRIC_TIMEOUT_S, dperr, sizeof(dperr)))) {
		e = errno;
		snprintf(err, errlen, "host %s: %s", o->host, dperr);
		goto fail;
	}
	snprintf(f->sock, sizeof(f->sock), "%s", sock);
	if (pipe2(f->wake, O_NONBLOCK | O_CLOEXEC) < 0) {
		e = errno;
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		goto fail;
	}
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->cond, NULL);
	if (pthread_create(&f->thread, NULL, event_thread, f) != 0) {
		e = EAGAIN;
		snprintf(err, errlen, "cannot start the event thread");
		goto fail;
	}
	return f;
fail:
	if (f->dp)
		mlfabric_close(f->dp);
	if (f->wake[0] >= 0) {
		close(f->wake[0]);
		close(f->wake[1]);
	}
	cluster_free(&f->cl);
	json_decref(f->reg_msg);
	free(f);
	errno = e;
	return NULL;
}

/*
 * A worker's close first waits, at most the endpoint timeout, until every pushed update has
 * been commanded by the scheduler and its transfers have finished (or it was dropped or
 * released): closing at once loses what was planned but not yet sent, i.e. the update at the
 * server and its copy to the replica (which then has to catch up from the server, §3.3).
 * Stops waiting when the scheduler or the dataplane is lost (nothing will be commanded).
 */
static void drain_pushes(struct mlf *f)
{
	double deadline = clock_real_s() + f->timeout_s;
	int held = 0, out = 0;

	pthread_mutex_lock(&f->lock);
	while ((f->held || f->out || f->sending) && !f->dead && !f->sched_lost && clock_real_s() < deadline)
		fabric_core_wait_until(f, deadline);
	for (struct fabric_held *u = f->held; u; u = u->next)
		held++;
	for (struct fabric_out *o = f->out; o; o = o->next)
		out++;
	pthread_mutex_unlock(&f->lock);
	if (held || out)
		log_warn("%s: closing with %d pushed update(s) never commanded and %d transfer(s) "
			 "unfinished after %.1f s%s", f->app, held, out, f->timeout_s,
			 f->sched_lost ? " (scheduler lost)" : "");
}

void mlf_close(mlf_t *f)
{
	if (!f)
		return;
	if (f->role == FABRIC_ROLE_WORKER && !f->stop)
		drain_pushes(f);
	f->stop = 1;
	fabric_core_wake(f);
	pthread_join(f->thread, NULL);
	pthread_mutex_lock(&f->lock);
	f->dead = 1;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
	while (f->held) {
		struct fabric_held *u = f->held;
		f->held = u->next;
		mlfabric_buf_free(&u->buf);
		free(u);
	}
	while (f->out) {
		struct fabric_out *o = f->out;
		f->out = o->next;
		free(o);
	}
	while (f->direct) {
		struct fabric_direct *d = f->direct;
		f->direct = d->next;
		mlfabric_buf_free(&d->buf);
		free(d);
	}
	if (f->msnap.buf.data)
		mlfabric_buf_free(&f->msnap.buf);
	fabric_pool_release(f);
	if (f->ops && f->ops->release) /* also after a failed registration: what arrived meanwhile */
		f->ops->release(f);
	mlfabric_close(f->dp);
	close(f->wake[0]);
	close(f->wake[1]);
	cluster_free(&f->cl);
	json_decref(f->reg_msg); /* the registration kept for re-registering (make sanitize found it) */
	pthread_mutex_destroy(&f->lock);
	pthread_cond_destroy(&f->cond);
	free(f);
}

int fabric_core_dp_gone(struct mlf *f, const char *what, int rc)
{
	pthread_mutex_lock(&f->lock);
	if (rc == -ETIMEDOUT || f->dead_rc == -ETIMEDOUT) {
		rc = -ETIMEDOUT;
		fabric_core_set_err(f, "%s: host %s: %s", what, f->cl.hosts[f->me].name, mlfabric_error(f->dp));
	} else {
		fabric_core_set_err(f, "%s: %s", what, rc < 0 && rc != -ENOTCONN && rc != -EPIPE ?
				    strerror(-rc) : "dataplane gone");
		rc = -ENOTCONN;
	}
	pthread_mutex_unlock(&f->lock);
	return rc;
}

const char *mlf_error(const mlf_t *f)
{
	return f ? f->err : "";
}

const char *mlf_role(mlf_t *f)
{
	const char *r;

	if (!f)
		return "";
	pthread_mutex_lock(&f->lock);
	r = role_names[f->role];
	pthread_mutex_unlock(&f->lock);
	return r;
}

int fabric_core_wait_until(struct mlf *f, double deadline)
{
	struct timespec ts = { .tv_sec = (time_t)deadline,
			       .tv_nsec = (long)((deadline - (double)(time_t)deadline) * 1e9) };
	return pthread_cond_timedwait(&f->cond, &f->lock, &ts);
}

void fabric_core_set_role(struct mlf *f, enum fabric_role role, const struct fabric_role_ops *ops)
{
	pthread_mutex_lock(&f->lock);
	f->role = role;
	f->ops = ops;
	snprintf(f->app, sizeof(f->app), "%s@%s", role_names[role], f->cl.hosts[f->me].name);
	pthread_mutex_unlock(&f->lock);
}

int fabric_core_listen(struct mlf *f, uint16_t chan)
{
	if (f->mode != MLF_MODE_DIRECT && chan >= 1 && chan <= FABRIC_CHAN_SCHEDULED_MAX)
		return mlfabric_listen_announced(f->dp, chan);
	return mlfabric_listen(f->dp, chan);
}

int fabric_core_register(struct mlf *f, enum fabric_role role, const struct fabric_role_ops *ops,
			 const uint16_t *chans, int n_chans, json_t *reg)
{
	double deadline = clock_real_s() + f->timeout_s, next = 0;
	int rc = 0;

	if (f->role != FABRIC_ROLE_NONE) {
		fabric_core_set_err(f, "endpoint already registered as %s", f->app);
		json_decref(reg);
		return -EINVAL;
	}
	f->ops = ops;
	f->role = role;
	snprintf(f->app, sizeof(f->app), "%s@%s", role_names[role], f->cl.hosts[f->me].name);
	for (int i = 0; i < n_chans; i++)
		if ((rc = fabric_core_listen(f, chans[i])) < 0) {
			fabric_core_set_err(f, "dataplane of host %s: %s", f->cl.hosts[f->me].name, strerror(-rc));
			json_decref(reg);
			return -ENOTCONN;
		}
	if (f->mode == MLF_MODE_DIRECT) {
		json_decref(reg);
		return 0;
	}
	json_object_set_new(reg, "type", json_string("register"));
	json_object_set_new(reg, "role", json_string(role_names[role]));
	pthread_mutex_lock(&f->lock);
	while (f->reg_state != 1 && !f->dead) {
		double now = clock_real_s();
		if (f->reg_state < 0 && !f->reg_no_sched)
			break;
		if (now >= deadline)
			break;
		if (now >= next) {
			f->reg_state = 0;
			json_incref(reg);
			if ((rc = fabric_core_ctl(f, reg)) < 0)
				break;
			next = now + REGISTER_RETRY_S;
		}
		fabric_core_wait_until(f, next < deadline ? next : deadline);
	}
	if (f->reg_state == 1) {
		rc = 0;
		json_decref(f->reg_msg);
		f->reg_msg = json_incref(reg);
	}
	else if ((f->dead && f->dead_rc == -ETIMEDOUT) || rc == -ETIMEDOUT)
		rc = -ETIMEDOUT;
	else if (f->dead || rc < 0 || f->reg_no_sched || f->reg_state == 0)
		rc = -ENOTCONN;
	else
		rc = -EINVAL;
	if (rc == -ETIMEDOUT)
		fabric_core_set_err(f, "%s: not registered: host %s: %s", f->app, f->cl.hosts[f->me].name,
				    mlfabric_error(f->dp));
	else if (rc == -ENOTCONN)
		fabric_core_set_err(f, "%s: not registered within %.1f s: %s%s", f->app, f->timeout_s,
				    f->reg_reason[0] ? f->reg_reason : "no answer from the scheduler through "
				    "the dataplane at socket ", f->reg_reason[0] ? "" : f->sock);
	else if (rc < 0)
		fabric_core_set_err(f, "%s: registration refused: %s", f->app, f->reg_reason);
	if (rc < 0) {
		f->role = FABRIC_ROLE_NONE; /* the caller may register again (e.g. a replica before its server) */
		f->reg_state = 0;
		f->reg_no_sched = 0;
		f->reg_reason[0] = '\0';
	}
	pthread_mutex_unlock(&f->lock);
	json_decref(reg);
	return rc;
}

int mlf_mode_parse(const char *name, enum mlf_mode *mode)
{
	if (!strcasecmp(name, "mlfabric-a"))
		*mode = MLF_MODE_MLFABRIC_A;
	else if (!strcasecmp(name, "mlfabric-s"))
		*mode = MLF_MODE_MLFABRIC_S;
	else if (!strcasecmp(name, "async"))
		*mode = MLF_MODE_DIRECT;
	else
		return -EINVAL;
	return 0;
}
