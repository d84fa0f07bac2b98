/* fabric_server.c - a parameter server endpoint (paper Table 1, §4): applying updates, commits, model and state payloads, verification snapshots. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "fabric_int.h"
#include "mlfabric_verify.h"
#include "log.h"

/* A model snapshot from the server's request callback, in a fresh buffer. */
static int model_payload(struct mlf *f, struct mlfabric_buf *b)
{
	struct mlf_payload_hdr *h;
	int rc = mlfabric_buf_alloc(mlf_payload_bytes(f->s.n_floats), b);

	if (rc < 0)
		return rc;
	h = b->data;
	h->magic = MLF_PAYLOAD_MAGIC_MODEL;
	h->n_floats = f->s.n_floats;
	h->version = f->s.on_request(f->s.arg, (float *)((char *)b->data + MLF_PAYLOAD_HDR), f->s.n_floats);
	return 0;
}

/* A state snapshot (w then h, MLF_PAYLOAD_MAGIC_STATE) from the state callback, in a fresh buffer. */
static int state_payload(struct mlf *f, struct mlfabric_buf *b)
{
	struct mlf_server_state *s = &f->s;
	struct mlf_payload_hdr *h;
	float *w;
	int rc;

	if (!s->get_state || !s->n_floats)
		return -EINVAL;
	if ((rc = mlfabric_buf_alloc(mlf_payload_bytes(2 * s->n_floats), b)) < 0)
		return rc;
	h = b->data;
	w = (float *)((char *)b->data + MLF_PAYLOAD_HDR);
	h->magic = MLF_PAYLOAD_MAGIC_STATE;
	h->n_floats = 2 * s->n_floats;
	h->version = s->get_state(s->state_arg, w, w + s->n_floats, s->n_floats);
	return 0;
}

static int server_payload(struct mlf *f, int state, struct mlfabric_buf *b)
{
	return state ? state_payload(f, b) : model_payload(f, b);
}

json_t *fabric_server_commit_msg(uint64_t xfer, int64_t v, const struct mlf_payload_hdr *h)
{
	json_t *parts = json_array();

	for (uint32_t k = 0; h && k < h->n_parts; k++)
		json_array_append_new(parts, json_integer((json_int_t)h->parts[k].id));
	return json_pack("{s:s, s:I, s:I, s:f, s:o}", "type", "commit", "xfer", (json_int_t)xfer,
			 "version", (json_int_t)v, "t", clock_real_s(), "parts", parts);
}

void fabric_server_apply(struct mlf *f, struct mlfabric_event *ev)
{
	const struct mlf_payload_hdr *h = ev->buf.data;
	struct mlf_server_state *s = &f->s;
	struct mlf_update u;
	char err[160];
	int64_t v;
	json_t *commit;

	if (fabric_cmd_payload_check(ev->buf.data, ev->bytes, MLF_PAYLOAD_MAGIC_UPDATE, err, sizeof(err)) < 0 ||
	    (h->n_floats != s->n_floats && snprintf(err, sizeof(err), "%llu floats, the model has %zu",
						      (unsigned long long)h->n_floats, s->n_floats))) {
		log_err("bad update payload from host %s (transfer %llx): %s; skipped, not applied", ev->peer,
			(unsigned long long)ev->id, err);
		return;
	}
	if (fabric_core_was_skipped(f, ev->id)) {
		log_warn("transfer %llx from host %s arrived after the scheduler reported it lost; not applied",
			 (unsigned long long)ev->id, ev->peer);
		return;
	}
	u = (struct mlf_update){ .hdr = h, .u = (const float *)((const char *)h + MLF_PAYLOAD_HDR),
				 .n = h->n_floats, .xfer = ev->id, .src = ev->peer };
	v = s->on_update(s->arg, &u);
	pthread_mutex_lock(&f->lock);
	s->version = v;
	pthread_mutex_unlock(&f->lock);
	if (f->mode == MLF_MODE_DIRECT)
		return;
	commit = fabric_server_commit_msg(ev->id, v, h);
	if (f->role == FABRIC_ROLE_SERVER && ev->chan == 1 && f->chain.host[0])
		fabric_chain_forward(f, ev, commit);
	else
		fabric_core_ctl(f, commit);
}

/* Applies the arrivals the chain held back while its forward was in flight, until one waits again. */
static void chain_drain(struct mlf *f)
{
	struct fabric_queued_ev *q;

	while ((q = fabric_chain_next(f))) {
		fabric_server_apply(f, &q->ev);
		mlfabric_event_release(&q->ev);
		free(q);
	}
}

static int server_received(struct mlf *f, struct mlfabric_event *ev)
{
	struct mlfabric_buf b;
	uint64_t id;

	switch (ev->chan) {
	case 1:
		if (f->chain.active)
			fabric_chain_hold(f, ev);
		else
			fabric_server_apply(f, ev);
		return 1;
	case 5: /* a direct-mode pull: the model goes back on chan 3 */
		if (model_payload(f, &b) == 0)
			fabric_core_send_buf(f, &b, b.size, ev->peer, 3, 0, 0, NULL, 0, &id);
		return 1;
	default:
		return 0;
	}
}

/* The dataplane's completion of the chain forward in flight: its commit is reported; go on. */
static int server_sent(struct mlf *f, const struct mlfabric_event *ev)
{
	if (!fabric_chain_sent(f, ev))
		return 0;
	chain_drain(f);
	return 1;
}

static int server_command(struct mlf *f, struct fabric_cmd *c)
{
	if (c->kind == FABRIC_CMD_REPLICA)
		fabric_chain_set(f, c);
	else if (c->kind == FABRIC_CMD_SNAPSHOT)
		fabric_server_snapshot(f, c->id);
	else
		return 0;
	return 1;
}

const struct fabric_role_ops fabric_server_ops = {
	.received = server_received,
	.sent = server_sent,
	.command = server_command,
	.payload = server_payload,
	.release = fabric_chain_release,
};

void fabric_server_snapshot(struct mlf *f, uint64_t tag)
{
	int r = f->role == FABRIC_ROLE_SERVER ? 0 : f->role == FABRIC_ROLE_REPLICA ? 1 : -1;
	const char *role = fabric_core_role_name(f->role);
	struct mlf_server_state *s = &f->s;
	char path[300], old[300];
	float *w;
	int64_t v;
	FILE *o;
	int rc;

	if (!f->verify_dir[0] || r < 0)
		return;
	if (!s->get_state && !s->on_request) {
		log_warn("%s: snapshot %llu: no state or request callback; skipped", f->app, (unsigned long long)tag);
		return;
	}
	if (!(w = malloc(2 * s->n_floats * sizeof(float)))) {
		log_err("%s: snapshot %llu: no memory for %zu floats", f->app, (unsigned long long)tag, 2 * s->n_floats);
		return;
	}
	v = s->get_state ? s->get_state(s->state_arg, w, w + s->n_floats, s->n_floats)
			 : s->on_request(s->arg, w, s->n_floats);
	snprintf(path, sizeof(path), "%s/%s-%llu.f32", f->verify_dir, role, (unsigned long long)tag);
	rc = mlf_verify_write(path, w, s->n_floats, v);
	free(w);
	if (rc < 0) {
		log_err("%s: snapshot %llu: cannot write %s: %s", f->app, (unsigned long long)tag, path, strerror(-rc));
		return;
	}
	if (!s->n_snaps[r] || s->snap_tags[r][(s->n_snaps[r] - 1) % FABRIC_SNAP_KEEP] != tag) {
		if (s->n_snaps[r] >= FABRIC_SNAP_KEEP) {
			snprintf(old, sizeof(old), "%s/%s-%llu.f32", f->verify_dir, role,
				 (unsigned long long)s->snap_tags[r][s->n_snaps[r] % FABRIC_SNAP_KEEP]);
			unlink(old);
		}
		s->snap_tags[r][s->n_snaps[r]++ % FABRIC_SNAP_KEEP] = tag;
	}
	snprintf(old, sizeof(old), "%s/snapshots.jsonl", f->verify_dir);
	if (!(o = fopen(old, "a"))) {
		log_err("%s: snapshot %llu: cannot append to %s: %s", f->app, (unsigned long long)tag, old, strerror(errno));
		return;
	}
	json_t *line = json_pack("{s:s, s:s, s:I, s:I, s:f, s:s}", "role", role, "host", f->cl.hosts[f->me].name,
				 "tag", (json_int_t)tag, "version", (json_int_t)v, "t", clock_real_s(), "file", path);
	char *text = line ? json_dumps(line, JSON_COMPACT) : NULL;
	if (text)
		fprintf(o, "%s\n", text);
	free(text);
	json_decref(line);
	fclose(o);
}

void mlf_set_state_callbacks(mlf_t *f, mlf_get_state_cb get_state, mlf_set_state_cb set_state, void *arg)
{
	f->s.get_state = get_state;
	f->s.set_state = set_state;
	f->s.state_arg = arg;
}

int mlf_register_as_server(mlf_t *f, const struct mlf_params *p, size_t n, int64_t version0,
			   mlf_update_cb on_update, mlf_request_cb on_request, void *arg)
{
	static const uint16_t chans[] = { 1, 5 };

	if (!p || !on_update || !on_request || n == 0 || p->tau_max < 0 || p->momentum < 0 ||
	    p->momentum >= 1 || p->n_workers < 0) {
		fabric_core_set_err(f, "register as server: bad parameters (need callbacks, n > 0, tau_max >= 0, "
				       "momentum in [0, 1), n_workers >= 0)");
		return -EINVAL;
	}
	f->s.on_update = on_update;
	f->s.on_request = on_request;
	f->s.arg = arg;
	f->s.n_floats = n;
	f->s.version = version0;
	f->s.params = *p;
	return fabric_core_register(f, FABRIC_ROLE_SERVER, &fabric_server_ops, chans,
				    f->mode == MLF_MODE_DIRECT ? 2 : 1,
				    json_pack("{s:s, s:I, s:I, s:I, s:I, s:f, s:i}", "mode",
					      f->mode == MLF_MODE_SYNC ? "sync" : "async", "n_floats", (json_int_t)n,
					      "bytes", (json_int_t)mlf_payload_bytes(n), "version", (json_int_t)version0,
					      "tau_max", (json_int_t)p->tau_max, "momentum", p->momentum,
					      "n_workers", p->n_workers));
}
