/* fabric_server.c - a parameter server endpoint (paper Table 1, §4): applying updates, commits, model and state payloads, verification snapshots. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arr.h"
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
	h->offset = f->s.offset; /* a shard's slice of the model (§10.2), else 0 */
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

/* Fails model wait @w (a failed `done` naming @why) and frees it. */
static void model_wait_fail(struct mlf *f, struct fabric_model_wait *w, const char *why)
{
	char reason[APPMSG_REASON_MAX];

	snprintf(reason, sizeof(reason), "%s: model copy for pull %llu at version %lld: %s", f->app,
		 (unsigned long long)w->c.id, (long long)w->c.at_version, why);
	log_warn("%s", reason);
	fabric_core_report_done(f, w->c.xfer, -ESTALE, 0, 0, clock_real_s(), reason);
	fabric_cmd_free(&w->c);
	free(w);
}

/*
 * Where the server stands against model copy @c's at_version: 0 = at it (send now), 1 = short
 * of it (wait), -1 = past it (fail). A shard's copy (its `version` label set, §10.2) needs the
 * exact version, every shard of a pull at one point; an unsharded server's copy answering a
 * fresh pull (docs/scheduler.md "Fresh pulls") needs at least that version: a later one still
 * holds the updates the pull waits for.
 */
static int model_wait_state(const struct mlf *f, const struct fabric_cmd *c)
{
	if (c->at_version == f->s.version || (c->label < 0 && f->s.version > c->at_version))
		return 0;
	return c->at_version > f->s.version ? 1 : -1;
}

/*
 * The waiting model copies (§10.2, docs/scheduler.md "Fresh pulls") after the version changed
 * or time passed: those at their version are sent now (in command order: a batch's first one
 * takes the snapshot), those past it or past their deadline fail (the scheduler answers the
 * pull again).
 */
static void model_waits_check(struct mlf *f)
{
	struct fabric_model_wait **p = &f->s.mwait, *w;
	double now = clock_real_s();

	while ((w = *p)) {
		int st = model_wait_state(f, &w->c);
		if (st == 0) {
			*p = w->next;
			fabric_core_send(f, &w->c);
			fabric_cmd_free(&w->c);
			free(w);
		} else if (st < 0 || now > w->deadline) {
			char why[96];
			*p = w->next;
			snprintf(why, sizeof(why), st < 0 ? "the shard is already at version %lld" :
				 "the server is still at version %lld", (long long)f->s.version);
			model_wait_fail(f, w, why);
		} else {
			p = &w->next;
		}
	}
}

/*
 * A model `send` with at_version (sharded servers, §10.2; fresh pulls, docs/scheduler.md "Fresh
 * pulls"): 0 when the server is at that version (the core sends now); else 1: kept until it is
 * (or failed when a shard is past it).
 */
static int model_wait_add(struct mlf *f, struct fabric_cmd *c)
{
	struct fabric_model_wait *w, **p;
	int st = model_wait_state(f, c);

	if (st == 0)
		return 0;
	if (!(w = calloc(1, sizeof(*w)))) {
		fabric_core_report_done(f, c->xfer, -ENOMEM, 0, 0, clock_real_s(), "no memory to wait for a version");
		return 1;
	}
	w->c = *c;
	memset(c, 0, sizeof(*c)); /* arrays now w's */
	w->deadline = (w->c.start > clock_real_s() ? w->c.start : clock_real_s()) + f->timeout_s;
	if (st < 0) {
		model_wait_fail(f, w, "the shard is already past it");
		return 1;
	}
	for (p = &f->s.mwait; *p; p = &(*p)->next)
		;
	*p = w;
	return 1;
}

_Static_assert(MLF_UPDATE_MAX_PARTS == MLF_PAYLOAD_MAX_PARTS, "the public part limit is the wire's");

/*
 * Applies the update or aggregate with payload header @h (transfer @xfer from host @src) with
 * on_update, which sees the public copy of the header (struct mlf_update_hdr, include/mlfabric/mlfabric.h),
 * and records the version it returns.
 */
static int64_t apply_update(struct mlf *f, const struct mlf_payload_hdr *h, uint64_t xfer, const char *src)
{
	struct mlf_update_hdr pub = { .n_parts = h->n_parts, .version = h->version };
	struct mlf_update u = { .hdr = &pub, .u = (const float *)((const char *)h + MLF_PAYLOAD_HDR),
				.n = h->n_floats, .xfer = xfer, .src = src };
	int64_t v;

	for (uint32_t i = 0; i < h->n_parts && i < MLF_UPDATE_MAX_PARTS; i++)
		pub.parts[i] = (struct mlf_update_part){ .id = h->parts[i].id, .version = h->parts[i].version };
	v = f->s.on_update(f->s.arg, &u);

	pthread_mutex_lock(&f->lock);
	f->s.version = v;
	pthread_mutex_unlock(&f->lock);
	if (f->s.mwait)
		model_waits_check(f);
	return v;
}

/* Reports @commit (stolen) for arrival @ev: after the chain forward of a chain server, else now. */
static void report_commit(struct mlf *f, const struct mlfabric_event *ev, json_t *commit)
{
	if (f->role == FABRIC_ROLE_SERVER && ev->chan == 1 && f->chain.host[0])
		fabric_chain_forward(f, ev, commit);
	else
		fabric_core_ctl(f, commit);
}

void fabric_server_sync_reset(struct mlf *f)
{
	struct mlf_sync_acc *a = &f->s.sync;

	free(a->data);
	a->data = NULL;
	a->bytes = 0;
	for (int i = 0; i < a->n_commits; i++)
		json_decref(a->commits[i]);
	a->n_commits = 0;
}

/* Contributions (parts) the iteration starting at the current version needs (§6). */
static uint32_t sync_needed(const struct mlf_server_state *s)
{
	const struct mlf_sync_acc *a = &s->sync;

	for (int n = a->n_short - 1; n >= 0 && n >= a->n_short - FABRIC_SYNC_SHORT; n--)
		if (a->short_it[n % FABRIC_SYNC_SHORT].version == s->version) /* newest first */
			return a->short_it[n % FABRIC_SYNC_SHORT].parts;
	return s->params.n_workers > 0 ? (uint32_t)s->params.n_workers : 1;
}

/*
 * The step of the accumulated iteration when it holds the parts it needs (@force: now, e.g.
 * before the parts would overflow the header): one on_update with the sum, version += parts;
 * then the held commits at the new version (a chain server: one commit naming every part,
 * after the forward of the summed payload to its replica).
 */
static void sync_try_step(struct mlf *f, int force)
{
	struct mlf_sync_acc *a = &f->s.sync;
	struct mlf_payload_hdr *h = a->data;
	int64_t v;

	if (!h || (!force && h->n_parts < sync_needed(&f->s)))
		return;
	v = apply_update(f, h, a->xfer, a->src);
	log_debug("%s: iteration step: %u parts in %d transfers, version %lld", f->app, h->n_parts,
		  a->n_commits, (long long)v);
	if (f->role == FABRIC_ROLE_SERVER && f->chain.host[0]) {
		struct mlfabric_event ev = { .id = a->xfer, .chan = 1, .bytes = a->bytes };
		ev.buf.data = a->data;
		report_commit(f, &ev, fabric_server_commit_msg(a->xfer, v, h));
	} else {
		for (int i = 0; i < a->n_commits; i++) {
			json_object_set_new(a->commits[i], "version", json_integer((json_int_t)v));
			json_object_set_new(a->commits[i], "t", json_real(clock_real_s()));
			fabric_core_ctl(f, a->commits[i]);
		}
		a->n_commits = 0;
	}
	fabric_server_sync_reset(f);
}

/*
 * MLfabric-S: adds arrival @ev (checked) to the iteration's sum and steps when it is complete.
 * Returns 0, or -ENOMEM (nothing kept: the caller applies @ev alone).
 */
static int sync_add(struct mlf *f, const struct mlfabric_event *ev)
{
	struct mlf_sync_acc *a = &f->s.sync;
	const struct mlf_payload_hdr *h = ev->buf.data;
	struct mlf_payload_hdr *ah = a->data;
	json_t *commit;

	if (ah && ah->n_parts + h->n_parts > MLF_PAYLOAD_MAX_PARTS) {
		log_warn("%s: iteration at version %lld: more than %d parts; applied as its own step",
			 f->app, (long long)f->s.version, MLF_PAYLOAD_MAX_PARTS);
		sync_try_step(f, 1);
		ah = NULL;
	}
	commit = fabric_server_commit_msg(ev->id, f->s.version, h);
	if (!commit || arr_grow((void **)&a->commits, &a->cap_commits, a->n_commits + 1,
				sizeof(*a->commits))) {
		json_decref(commit);
		return -ENOMEM;
	}
	if (!ah) {
		if (!(a->data = malloc(ev->bytes))) {
			json_decref(commit);
			return -ENOMEM;
		}
		memcpy(a->data, ev->buf.data, ev->bytes);
		a->bytes = ev->bytes;
	} else {
		float *sum = (float *)((char *)a->data + MLF_PAYLOAD_HDR);
		const float *x = (const float *)((const char *)h + MLF_PAYLOAD_HDR);
		for (uint64_t i = 0; i < h->n_floats; i++)
			sum[i] += x[i];
		for (uint32_t k = 0; k < h->n_parts; k++)
			ah->parts[ah->n_parts++] = h->parts[k];
	}
	a->xfer = ev->id;
	snprintf(a->src, sizeof(a->src), "%s", ev->peer);
	a->commits[a->n_commits++] = commit;
	sync_try_step(f, 0);
	return 0;
}

void fabric_server_sync_step(struct mlf *f, const struct fabric_cmd *c)
{
	struct mlf_sync_acc *a = &f->s.sync;

	if (f->mode != MLF_MODE_MLFABRIC_S) {
		log_warn("%s: sync_step outside MLfabric-S; ignored", f->app);
		return;
	}
	a->short_it[a->n_short % FABRIC_SYNC_SHORT].version = c->version;
	a->short_it[a->n_short % FABRIC_SYNC_SHORT].parts = (uint32_t)c->id;
	a->n_short++;
	log_info("%s: the iteration from version %lld has %llu contributions (sync timeout or parts lost)", f->app,
		 (long long)c->version, (unsigned long long)c->id);
	if (c->version < f->s.version)
		log_warn("%s: sync_step for version %lld, already at version %lld; ignored", f->app,
			 (long long)c->version, (long long)f->s.version);
	sync_try_step(f, 0);
}

void fabric_server_apply(struct mlf *f, struct mlfabric_event *ev)
{
	const struct mlf_payload_hdr *h = ev->buf.data;
	struct mlf_server_state *s = &f->s;
	char err[160];
	int64_t v;

	if (fabric_cmd_payload_check(ev->buf.data, ev->bytes, MLF_PAYLOAD_MAGIC_UPDATE, err, sizeof(err)) < 0 ||
	    (h->n_floats != s->n_floats && snprintf(err, sizeof(err), "%llu floats, the model has %zu",
						      (unsigned long long)h->n_floats, s->n_floats)) ||
	    (h->offset != s->offset && snprintf(err, sizeof(err), "a shard from float %llu, this shard "
						  "starts at %zu", (unsigned long long)h->offset, s->offset))) {
		log_err("bad update payload from host %s (transfer %llx): %s; skipped, not applied", ev->peer,
			(unsigned long long)ev->id, err);
		return;
	}
	if (fabric_core_was_skipped(f, ev->id)) {
		log_warn("transfer %llx from host %s arrived after the scheduler reported it lost; not applied",
			 (unsigned long long)ev->id, ev->peer);
		return;
	}
	if (f->mode == MLF_MODE_MLFABRIC_S) {
		if (sync_add(f, ev) == 0)
			return;
		log_err("transfer %llx from host %s: no memory to hold it for its iteration; applied alone",
			(unsigned long long)ev->id, ev->peer);
	}
	v = apply_update(f, h, ev->id, ev->peer);
	if (f->mode == MLF_MODE_DIRECT)
		return;
	report_commit(f, ev, fabric_server_commit_msg(ev->id, v, h));
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
	else if (c->kind == FABRIC_CMD_SYNC_STEP)
		fabric_server_sync_step(f, c);
	else if (c->kind == FABRIC_CMD_SEND)
		return model_wait_add(f, c);
	else
		return 0;
	return 1;
}

static void server_progress(struct mlf *f)
{
	if (f->s.mwait)
		model_waits_check(f);
}

void fabric_server_sync_release(struct mlf *f)
{
	fabric_server_sync_reset(f);
	free(f->s.sync.commits);
	f->s.sync.commits = NULL;
	f->s.sync.cap_commits = 0;
}

static void server_release(struct mlf *f)
{
	struct fabric_model_wait *w;

	while ((w = f->s.mwait)) {
		f->s.mwait = w->next;
		fabric_cmd_free(&w->c);
		free(w);
	}
	fabric_chain_release(f);
	fabric_server_sync_release(f);
}

const struct fabric_role_ops fabric_server_ops = {
	.received = server_received,
	.sent = server_sent,
	.command = server_command,
	.payload = server_payload,
	.progress = server_progress,
	.release = server_release,
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

int mlf_set_server_shard(mlf_t *f, int shard, int n_shards, size_t offset, size_t n_total)
{
	if (n_shards < 2 || n_shards > 32 || shard < 0 || shard >= n_shards || offset >= n_total) {
		fabric_core_set_err(f, "server shard %d of %d from float %zu of %zu: need 2 <= shards <= 32, "
				       "0 <= shard < shards, offset < the model's size", shard, n_shards, offset,
				    n_total);
		return -EINVAL;
	}
	f->s.shard = shard;
	f->s.n_shards = n_shards;
	f->s.offset = offset;
	f->s.n_total = n_total;
	return 0;
}

int mlf_register_as_server(mlf_t *f, const struct mlf_params *p, size_t n, int64_t version0,
			   mlf_update_cb on_update, mlf_request_cb on_request, void *arg)
{
	static const uint16_t chans[] = { 1, 5 };
	json_t *reg;

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
	if (f->s.n_shards && (f->s.offset + n > f->s.n_total || f->mode == MLF_MODE_DIRECT)) {
		fabric_core_set_err(f, "register as server: shard of %zu floats from float %zu exceeds the model's "
				       "%zu floats, or direct mode (no scheduler to plan shards)", n, f->s.offset,
				    f->s.n_total);
		return -EINVAL;
	}
	reg = fabric_server_reg_fields(f);
	return fabric_core_register(f, FABRIC_ROLE_SERVER, &fabric_server_ops, chans,
				    f->mode == MLF_MODE_DIRECT ? 2 : 1, reg);
}

json_t *fabric_server_reg_fields(struct mlf *f)
{
	const struct mlf_server_state *s = &f->s;
	json_t *reg = json_pack("{s:s, s:I, s:I, s:I, s:I, s:f, s:i}", "mode",
				f->mode == MLF_MODE_MLFABRIC_S ? "mlfabric-s" : "mlfabric-a", "n_floats", (json_int_t)s->n_floats,
				"bytes", (json_int_t)mlf_payload_bytes(s->n_floats), "version", (json_int_t)s->version,
				"tau_max", (json_int_t)s->params.tau_max, "momentum", s->params.momentum,
				"n_workers", s->params.n_workers);
	if (reg && s->n_shards)
		json_object_update_new(reg, json_pack("{s:i, s:i, s:I, s:I}", "shard", s->shard, "n_shards",
						      s->n_shards, "offset", (json_int_t)s->offset, "n_total",
						      (json_int_t)s->n_total));
	return reg;
}

int mlf_report_loss(mlf_t *f, double t, double loss, int64_t version)
{
	int role;

	if (!isfinite(t) || t < 0 || !isfinite(loss) || !(loss > 0) || version < 0) {
		fabric_core_set_err(f, "report loss: bad t %g, loss %g or version %lld", t, loss,
				    (long long)version);
		return -EINVAL;
	}
	pthread_mutex_lock(&f->lock);
	role = f->role;
	pthread_mutex_unlock(&f->lock);
	if (role != FABRIC_ROLE_SERVER && role != FABRIC_ROLE_REPLICA) {
		fabric_core_set_err(f, "report loss: only a server (or replica) reports its loss");
		return -EINVAL;
	}
	if (f->mode == MLF_MODE_DIRECT)
		return 0; /* no scheduler to tell */
	int rc = fabric_core_ctl(f, json_pack("{s:s, s:f, s:f, s:I}", "type", "loss", "t", t, "loss",
					      loss, "version", (json_int_t)version));
	if (rc < 0) {
		fabric_core_set_err(f, "report loss: dataplane socket: %s", strerror(-rc));
		return rc == -ENOMEM ? rc : -ENOTCONN;
	}
	return 0;
}
