/* fabric_model.c - the initial model (docs/api.md "Initial model"): mlf_send_model and mlf_recv_model on channel MLF_CHAN_INIT. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "fabric_int.h"
#include "log.h"

/*
 * Both calls run on the application thread over a private connection to this host's dataplane
 * (the endpoint's socket, mlf_opts.sock), so the event thread and the roles are not involved:
 * the transfer is the application's own, never announced to the scheduler, in every mode (the
 * dataplane carries any app-initiated SEND, scheduler or not, as it carries a server's chain
 * forward). The destination dataplane holds a finished transfer until an application listens on
 * its channel, so a model sent before mlf-ps called mlf_recv_model waits there for it; the sender
 * retries only when a transfer fails (the server's dataplane not up yet, a peer abort).
 */

#define SEND_RETRY_S 0.25 /* pause before sending again after a failed transfer */

static void model_err(struct mlf *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Records the error text of @f under its lock (the event thread may set one meanwhile). */
static void model_err(struct mlf *f, const char *fmt, ...)
{
	char text[sizeof(f->err)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&f->lock);
	fabric_core_set_err(f, "%s", text);
	pthread_mutex_unlock(&f->lock);
}

/* Sleeps @s seconds (> 0). */
static void pause_s(double s)
{
	struct timespec ts = { .tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* A private dataplane connection of @f (NULL with mlf_error set, naming @what). */
static mlfabric_t *model_connect(struct mlf *f, const char *what)
{
	char err[256];
	mlfabric_t *m = mlfabric_connect_within(f->sock, mlfabric_timeout(f->dp), err, sizeof(err));

	if (!m)
		model_err(f, "%s: dataplane of host %s: %s", what, f->cl.hosts[f->me].name, err);
	return m;
}

/* Milliseconds until @deadline (CLOCK_REALTIME s), at least 1, at most 200 (poll steps). */
static int ms_until(double deadline)
{
	double ms = (deadline - clock_real_s()) * 1e3;

	return ms < 1 ? 1 : ms > 200 ? 200 : (int)ms;
}

/*
 * One attempt: hand @b (@bytes) to the dataplane for @server on MLF_CHAN_INIT and wait for its
 * completion until @deadline. 0 (the server host's dataplane has it byte-exact), 1 (the transfer
 * failed: retry; @why says why), or -errno with mlf_error set (-EINVAL refused, -ENOTCONN).
 */
static int send_once(struct mlf *f, mlfabric_t *m, const struct mlfabric_buf *b, uint64_t bytes,
		     const char *server, double deadline, char *why, size_t whylen)
{
	struct mlfabric_send req = { .dst = server, .buf = b, .bytes = bytes, .chan = MLF_CHAN_INIT,
				     .timeout_s = deadline - clock_real_s() };
	struct mlfabric_event ev;
	char err[256];
	uint64_t id;
	int rc;

	if (req.timeout_s < 0.05)
		req.timeout_s = 0.05;
	if ((rc = mlfabric_send(m, &req, &id, err, sizeof(err))) < 0) {
		model_err(f, "send model to %s: %s", server, err);
		return rc == -EINVAL ? -EINVAL : -ENOTCONN;
	}
	while (clock_real_s() < deadline + 0.5) { /* the dataplane fails it at its own timeout */
		rc = mlfabric_poll(m, &ev, ms_until(deadline + 0.5));
		if (rc < 0) {
			model_err(f, "send model to %s: dataplane of host %s went away", server, f->cl.hosts[f->me].name);
			return -ENOTCONN;
		}
		if (rc == 0)
			continue;
		if (ev.kind == MLFABRIC_EV_SENT && ev.id == id) {
			snprintf(why, whylen, "%s", ev.status ? ev.reason : "");
			rc = ev.status ? 1 : 0;
			mlfabric_event_release(&ev);
			return rc;
		}
		mlfabric_event_release(&ev);
	}
	snprintf(why, whylen, "transfer %llx not finished", (unsigned long long)id);
	return 1;
}

int mlf_send_model(mlf_t *f, const char *server, const float *w, size_t n, int64_t version, double timeout_s)
{
	double wait_s, deadline;
	struct mlf_payload_hdr *h;
	struct mlfabric_buf b;
	char why[APPMSG_REASON_MAX] = "";
	int attempts = 0, rc;
	mlfabric_t *m;

	if (!f)
		return -EINVAL;
	if (!server || cluster_find(&f->cl, server) < 0 || !w || n == 0) {
		if (!w || n == 0)
			model_err(f, "send model: empty model");
		else
			model_err(f, "send model: unknown server host '%s'", server ? server : "(null)");
		return -EINVAL;
	}
	wait_s = timeout_s > 0 ? timeout_s : f->timeout_s;
	deadline = clock_real_s() + wait_s;
	if (mlfabric_buf_alloc(mlf_payload_bytes(n), &b) < 0) {
		model_err(f, "send model: no memory for a model of %zu floats", n);
		return -ENOMEM;
	}
	h = b.data;
	h->magic = MLF_PAYLOAD_MAGIC_MODEL;
	h->version = version;
	h->n_floats = n;
	memcpy((char *)b.data + MLF_PAYLOAD_HDR, w, n * sizeof(float));
	if (!(m = model_connect(f, "send model"))) {
		mlfabric_buf_free(&b);
		return -ENOTCONN;
	}
	do {
		attempts++;
		rc = send_once(f, m, &b, b.size, server, deadline, why, sizeof(why));
		if (rc == 1 && clock_real_s() + SEND_RETRY_S < deadline) {
			log_debug("send model to %s: %s; sending again", server, why);
			pause_s(SEND_RETRY_S);
		}
	} while (rc == 1 && clock_real_s() < deadline);
	mlfabric_close(m);
	mlfabric_buf_free(&b);
	if (rc == 1) {
		model_err(f, "send model: server %s did not take the model (%zu floats) within %.1f s "
			  "(%d attempt%s; last: %s)", server, n, wait_s, attempts, attempts == 1 ? "" : "s", why);
		return -ETIMEDOUT;
	}
	if (rc == 0) {
		log_info("model of %zu floats at version %lld sent to %s", n, (long long)version, server);
		fabric_worker_model_size(f, server, n);
	}
	return rc;
}

/* Takes the model in arrival @ev (a good one from the right host): 0, 1 when refused (logged), -ENOMEM. */
static int take_model(struct mlf *f, const struct mlfabric_event *ev, const char *from, float **w, size_t *n,
		      int64_t *version)
{
	const struct mlf_payload_hdr *h = ev->buf.data;
	char err[160];

	if (ev->status) {
		log_warn("recv model: incoming transfer %llx from %s failed: %s", (unsigned long long)ev->id,
			 ev->peer[0] ? ev->peer : "?", ev->reason);
		return 1;
	}
	if (from && strcmp(ev->peer, from)) {
		log_warn("recv model: model from host %s refused: waiting for the model of %s", ev->peer, from);
		return 1;
	}
	if (fabric_cmd_payload_check(ev->buf.data, ev->bytes, MLF_PAYLOAD_MAGIC_MODEL, err, sizeof(err)) < 0 ||
	    (h->n_floats == 0 && snprintf(err, sizeof(err), "an empty model"))) {
		log_err("recv model: bad model payload from host %s (transfer %llx): %s; refused", ev->peer,
			(unsigned long long)ev->id, err);
		return 1;
	}
	if (!(*w = malloc(h->n_floats * sizeof(float)))) {
		model_err(f, "recv model: no memory for a model of %llu floats from %s",
			  (unsigned long long)h->n_floats, ev->peer);
		return -ENOMEM;
	}
	memcpy(*w, (const char *)h + MLF_PAYLOAD_HDR, h->n_floats * sizeof(float));
	*n = h->n_floats;
	*version = h->version;
	log_info("model of %zu floats at version %lld received from %s", *n, (long long)*version, ev->peer);
	return 0;
}

int mlf_recv_model(mlf_t *f, const char *from, float **w, size_t *n, int64_t *version, double timeout_s)
{
	double wait_s, deadline;
	struct mlfabric_event ev;
	mlfabric_t *m;
	int rc = 1;

	if (!f)
		return -EINVAL;
	if ((from && cluster_find(&f->cl, from) < 0) || !w || !n || !version) {
		if (!w || !n || !version)
			model_err(f, "recv model: no place for the model");
		else
			model_err(f, "recv model: unknown host '%s'", from);
		return -EINVAL;
	}
	wait_s = timeout_s > 0 ? timeout_s : f->timeout_s;
	deadline = clock_real_s() + wait_s;
	if (!(m = model_connect(f, "recv model")))
		return -ENOTCONN;
	if (mlfabric_listen(m, MLF_CHAN_INIT) < 0) {
		model_err(f, "recv model: dataplane of host %s went away", f->cl.hosts[f->me].name);
		mlfabric_close(m);
		return -ENOTCONN;
	}
	while (rc == 1 && clock_real_s() < deadline) {
		int p = mlfabric_poll(m, &ev, ms_until(deadline));
		if (p < 0) {
			model_err(f, "recv model: dataplane of host %s went away", f->cl.hosts[f->me].name);
			rc = -ENOTCONN;
		} else if (p == 1) {
			if (ev.kind == MLFABRIC_EV_RECEIVED && ev.chan == MLF_CHAN_INIT)
				rc = take_model(f, &ev, from, w, n, version);
			else if (ev.kind == MLFABRIC_EV_ERROR)
				log_warn("recv model: the dataplane refused a request: %s", ev.reason);
			mlfabric_event_release(&ev);
		}
	}
	mlfabric_close(m);
	if (rc == 1) {
		model_err(f, "recv model: no model from %s%s within %.1f s", from ? "host " : "any host",
			  from ? from : "", wait_s);
		return -ETIMEDOUT;
	}
	return rc;
}
