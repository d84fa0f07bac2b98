/* fabric_peer.c - a peer endpoint (decentralized training, hop-asplos2019): a worker's
 * parameters and tokens sent straight to neighbours on chan 7 (MLF_CHAN_PEER), never scheduled,
 * and queued on arrival for mlf_peer_recv. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "fabric_int.h"
#include "log.h"

/* An arrival on chan 7: validated, copied out of the dataplane's buffer, queued. */
static int peer_received(struct mlf *f, struct mlfabric_event *ev)
{
	const struct mlf_payload_hdr *h = ev->buf.data;
	char err[160];
	int from;

	if (ev->chan != MLF_CHAN_PEER)
		return 0;
	from = cluster_find(&f->cl, ev->peer);
	int token = ev->bytes >= MLF_PAYLOAD_HDR && h && h->magic == MLF_PAYLOAD_MAGIC_TOKEN;
	if (from < 0 || fabric_cmd_payload_check(ev->buf.data, ev->bytes, token ? MLF_PAYLOAD_MAGIC_TOKEN :
						 MLF_PAYLOAD_MAGIC_PEER, err, sizeof(err)) < 0) {
		log_err("bad neighbour message from host %s (transfer %llx): %s; dropped", ev->peer,
			(unsigned long long)ev->id, from < 0 ? "not a host of the cluster" : err);
		pthread_mutex_lock(&f->lock);
		f->peer_dropped++;
		pthread_mutex_unlock(&f->lock);
		return 1;
	}
	struct fabric_peer_msg *m = calloc(1, sizeof(*m));
	if (m && !token && !(m->w = malloc(h->n_floats * sizeof(float)))) {
		free(m);
		m = NULL;
	}
	pthread_mutex_lock(&f->lock);
	if (!m || f->n_peer >= FABRIC_PEER_MAX) {
		f->peer_dropped++;
		pthread_mutex_unlock(&f->lock);
		log_warn("neighbour message from %s dropped: %s", ev->peer, m ? "queue full (the app "
			 "does not receive)" : "out of memory");
		if (m)
			free(m->w);
		free(m);
		return 1;
	}
	pthread_mutex_unlock(&f->lock);
	m->from = from;
	m->iter = h->version;
	m->token = token;
	m->n = token ? 0 : h->n_floats;
	if (!token)
		memcpy(m->w, (const char *)h + MLF_PAYLOAD_HDR, m->n * sizeof(float));
	pthread_mutex_lock(&f->lock);
	if (f->peer_tail)
		f->peer_tail->next = m;
	else
		f->peer_head = m;
	f->peer_tail = m;
	f->n_peer++;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
	return 1;
}

static void peer_release(struct mlf *f)
{
	while (f->peer_head) {
		struct fabric_peer_msg *m = f->peer_head;
		f->peer_head = m->next;
		free(m->w);
		free(m);
	}
	f->peer_tail = NULL;
	f->n_peer = 0;
}

static const struct fabric_role_ops peer_ops = {
	.received = peer_received,
	.release = peer_release,
};

int mlf_register_as_peer(mlf_t *f)
{
	static const uint16_t chans[] = { MLF_CHAN_PEER };

	if (f->mode != MLF_MODE_DIRECT) {
		fabric_core_set_err(f, "register as peer: decentralized training has no scheduler "
				    "(open the endpoint with MLF_MODE_DIRECT)");
		return -EINVAL;
	}
	return fabric_core_register(f, FABRIC_ROLE_WORKER, &peer_ops, chans, 1, json_object());
}

/* Queue a chan-7 transfer of @magic with @n floats of @w (may be NULL when n is 0) to @host. */
static int peer_send(mlf_t *f, const char *host, uint32_t magic, const float *w, size_t n, int64_t v)
{
	struct fabric_direct *d;

	if (!host || cluster_find(&f->cl, host) < 0 || v < 0) {
		fabric_core_set_err(f, "peer send: %s", v < 0 ? "negative iteration or count" :
				    "unknown host");
		return -EINVAL;
	}
	if (f->dead) {
		fabric_core_set_err(f, "peer send: dataplane gone");
		return -ENOTCONN;
	}
	if (!(d = calloc(1, sizeof(*d))) || mlfabric_buf_alloc(mlf_payload_bytes(n), &d->buf) < 0) {
		free(d);
		fabric_core_set_err(f, "peer send: no memory for %zu floats", n);
		return -ENOMEM;
	}
	struct mlf_payload_hdr *h = d->buf.data;
	h->magic = magic;
	h->version = v;
	h->n_floats = n;
	if (n)
		memcpy((char *)d->buf.data + MLF_PAYLOAD_HDR, w, n * sizeof(float));
	pthread_mutex_lock(&f->lock);
	d->id = fabric_core_next_id(f);
	pthread_mutex_unlock(&f->lock);
	d->bytes = d->buf.size;
	d->chan = MLF_CHAN_PEER;
	snprintf(d->dst, sizeof(d->dst), "%s", host);
	fabric_core_queue_direct(f, d, 0);
	return 0;
}

int mlf_peer_send(mlf_t *f, const char *host, const float *w, size_t n, int64_t iter)
{
	if (!w || n == 0) {
		fabric_core_set_err(f, "peer send: empty parameters");
		return -EINVAL;
	}
	return peer_send(f, host, MLF_PAYLOAD_MAGIC_PEER, w, n, iter);
}

int mlf_peer_tokens(mlf_t *f, const char *host, int64_t count)
{
	if (count < 1) {
		fabric_core_set_err(f, "peer tokens: count %lld < 1", (long long)count);
		return -EINVAL;
	}
	return peer_send(f, host, MLF_PAYLOAD_MAGIC_TOKEN, NULL, 0, count);
}

int mlf_peer_recv(mlf_t *f, struct mlf_peer_msg *out, double timeout_s)
{
	double until = clock_real_s() + (timeout_s > 0 ? timeout_s : 0);
	struct fabric_peer_msg *m;
	int rc = 0;

	pthread_mutex_lock(&f->lock);
	while (!f->peer_head && !f->dead && rc != ETIMEDOUT && timeout_s > 0)
		rc = fabric_core_wait_until(f, until);
	m = f->peer_head;
	if (m) {
		f->peer_head = m->next;
		if (!f->peer_head)
			f->peer_tail = NULL;
		f->n_peer--;
	}
	int dead = f->dead;
	pthread_mutex_unlock(&f->lock);
	if (!m) {
		fabric_core_set_err(f, "peer recv: %s", dead ? "dataplane gone" :
				    "no message from a neighbour in time");
		return dead ? -ENOTCONN : -ETIMEDOUT;
	}
	*out = (struct mlf_peer_msg){ .iter = m->iter, .token = m->token, .w = m->w, .n = m->n };
	snprintf(out->from, sizeof(out->from), "%s", f->cl.hosts[m->from].name);
	free(m);
	return 0;
}
