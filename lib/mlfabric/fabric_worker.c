/* fabric_worker.c - a worker endpoint (paper Table 1): push, get, push_get, model arrivals, `server_moved`. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "fabric_int.h"
#include "log.h"

#define FABRIC_GETS_MAX_S "8" /* FABRIC_GETS_MAX, for error texts */
_Static_assert(FABRIC_GETS_MAX == 8, "FABRIC_GETS_MAX_S must spell FABRIC_GETS_MAX");

/* Appends @name to the names mapped to the current server unless it is there or is @now. */
static void moved_add(struct mlf *f, const char *name, const char *now)
{
	struct mlf_worker_state *w = &f->w;

	if (!name[0] || !strcmp(name, now))
		return;
	for (int i = 0; i < w->n_moved; i++)
		if (!strcmp(w->moved_from[i], name))
			return;
	if (w->n_moved == FABRIC_MOVED_MAX) {
		log_warn("worker: more than %d server moves; the oldest name is no longer mapped", FABRIC_MOVED_MAX);
		memmove(w->moved_from[0], w->moved_from[1], sizeof(w->moved_from[0]) * (FABRIC_MOVED_MAX - 1));
		w->n_moved--;
	}
	snprintf(w->moved_from[w->n_moved++], sizeof(w->moved_from[0]), "%s", name);
}

/* `server_moved`: pushes and gets naming an earlier server host go to host @c->dst from now on. */
static void cmd_server_moved(struct mlf *f, const struct fabric_cmd *c)
{
	struct mlf_worker_state *w = &f->w;

	if (cluster_find(&f->cl, c->dst) < 0) {
		log_err("server_moved: unknown host '%s'; ignored", c->dst);
		return;
	}
	pthread_mutex_lock(&f->lock);
	moved_add(f, w->server, c->dst);
	moved_add(f, w->server_now, c->dst);
	for (int i = 0; i < w->n_moved; i++)
		if (!strcmp(w->moved_from[i], c->dst)) {
			memmove(w->moved_from[i], w->moved_from[i + 1], sizeof(w->moved_from[0]) * (size_t)(w->n_moved - i - 1));
			w->n_moved--;
			break;
		}
	snprintf(w->server_now, sizeof(w->server_now), "%s", c->dst);
	pthread_mutex_unlock(&f->lock);
	log_info("%s: the server now runs on %s", f->app, c->dst);
}

/* The host serving @server now (@out), after the `server_moved`s seen so far; caller holds the lock. */
static const char *server_map(struct mlf *f, const char *server, char *out, size_t cap)
{
	snprintf(out, cap, "%s", server);
	for (int i = 0; i < f->w.n_moved; i++)
		if (!strcmp(f->w.moved_from[i], server)) {
			snprintf(out, cap, "%s", f->w.server_now);
			break;
		}
	return out;
}

/* Remember @id as the update pushed last to @server (caller holds the lock). */
static void note_push(struct mlf_worker_state *w, const char *server, uint64_t id)
{
	int k = 0;

	for (int i = 0; i < FABRIC_MAX_PUSHED_TO; i++) {
		if (!strcmp(w->pushed_to[i].server, server)) {
			k = i;
			break;
		}
		if (w->pushed_to[i].seq < w->pushed_to[k].seq)
			k = i; /* the oldest (or an unused) slot so far */
	}
	snprintf(w->pushed_to[k].server, sizeof(w->pushed_to[k].server), "%s", server);
	w->pushed_to[k].id = id;
	w->pushed_to[k].seq = ++w->push_seq;
}

/* The update pushed last to @server, 0 if none remembered (caller holds the lock). */
static uint64_t last_push_to(const struct mlf_worker_state *w, const char *server)
{
	for (int i = 0; i < FABRIC_MAX_PUSHED_TO; i++)
		if (w->pushed_to[i].seq && !strcmp(w->pushed_to[i].server, server))
			return w->pushed_to[i].id;
	return 0;
}

/*
 * One shard of a model (sharded servers, §10.2; caller holds the lock): copied into the get's
 * buffer at its offset. Every shard answering one pull carries the same version; the get is
 * complete once the shards of one version cover the model. A shard of a newer version starts
 * over (an earlier answer was partly lost and the pull answered again), an older one or a
 * repeated one is ignored.
 */
static void shard_piece(struct mlf *f, struct fabric_get *g, const struct mlfabric_event *ev)
{
	const struct mlf_payload_hdr *h = ev->buf.data;

	if (h->offset > g->n || h->n_floats > g->n - h->offset) {
		g->status = -EINVAL;
		fabric_core_set_err(f, "model shard from %s covers floats [%llu, +%llu), get asked for %zu", ev->peer,
				    (unsigned long long)h->offset, (unsigned long long)h->n_floats, g->n);
		g->done = 1;
		pthread_cond_broadcast(&f->cond);
		return;
	}
	if (g->n_shards == 0 || h->version > g->shard_version) {
		g->shard_version = h->version;
		g->n_shards = 0;
		g->covered = 0;
	} else if (h->version < g->shard_version) {
		return;
	}
	for (int i = 0; i < g->n_shards; i++)
		if (g->shard_off[i] == h->offset)
			return;
	if (g->n_shards == FABRIC_MAX_SHARDS)
		return;
	g->shard_off[g->n_shards++] = h->offset;
	memcpy(g->dst + h->offset, (const char *)h + MLF_PAYLOAD_HDR, h->n_floats * sizeof(float));
	g->covered += h->n_floats;
	if (g->covered > g->best_covered) {
		g->best_covered = g->covered;
		g->progress_s = clock_real_s();
	}
	if (g->covered < g->n)
		return;
	g->version = h->version;
	g->status = 0;
	g->model_n = g->n;
	g->done = 1;
	pthread_cond_broadcast(&f->cond);
}

/*
 * The get a model from host @peer at @version answers (caller holds the lock): an active,
 * unanswered get of @peer that takes that version; else, when it is the only get waiting, that
 * one (a distributor's copy, §10.3, or a shard server's slice, §10.2, comes from another host:
 * with a scheduler gets are one at a time). In direct mode (@direct) a model only answers its
 * own server's get, however many wait, so a late answer to a get that timed out fills no other.
 * NULL when none waits for it.
 */
static struct fabric_get *get_for(struct mlf_worker_state *w, const char *peer, int64_t version,
				  int direct)
{
	struct fabric_get *other = NULL;
	int waiting = 0;

	for (int i = 0; i < FABRIC_GETS_MAX; i++) {
		struct fabric_get *g = &w->get[i];

		if (!g->active || g->done)
			continue;
		waiting++;
		if (version < g->min_version)
			continue;
		if (!strcmp(g->server, peer))
			return g;
		other = g;
	}
	return waiting == 1 && !direct ? other : NULL;
}

/* A model on chan 3: completes the get waiting for it. 0, or -EBADMSG for a bad payload. */
static int worker_model(struct mlf *f, struct mlfabric_event *ev)
{
	const struct mlf_payload_hdr *h = ev->buf.data;
	struct fabric_get *g;
	char err[160];

	if (fabric_cmd_payload_check(ev->buf.data, ev->bytes, MLF_PAYLOAD_MAGIC_MODEL, err, sizeof(err)) < 0) {
		log_err("bad model payload from host %s (transfer %llx): %s; skipped", ev->peer,
			(unsigned long long)ev->id, err);
		return -EBADMSG;
	}
	pthread_mutex_lock(&f->lock);
	f->ws.models++;
	g = get_for(&f->w, ev->peer, h->version, f->mode == MLF_MODE_DIRECT);
	if (g && (h->offset > 0 || h->n_floats < g->n)) {
		shard_piece(f, g, ev);
	} else if (g) {
		g->model_n = h->n_floats;
		if (h->n_floats != g->n) {
			g->status = -EINVAL;
			fabric_core_set_err(f, "model from %s has %llu floats, get asked for %zu", ev->peer,
					    (unsigned long long)h->n_floats, g->n);
		} else {
			memcpy(g->dst, (const char *)h + MLF_PAYLOAD_HDR, g->n * sizeof(float));
			g->version = h->version;
			g->status = 0;
		}
		g->done = 1;
		pthread_cond_broadcast(&f->cond);
	}
	pthread_mutex_unlock(&f->lock);
	return 0;
}

/* A model on chan 3, from the server or a distributor (§10.3): the get's, and kept to forward. */
static int worker_received(struct mlf *f, struct mlfabric_event *ev)
{
	if (ev->chan != 3)
		return 0;
	if (worker_model(f, ev) == 0)
		fabric_dist_received(f, ev);
	return 1;
}

static int worker_command(struct mlf *f, struct fabric_cmd *c)
{
	if (c->kind == FABRIC_CMD_STATE) {
		pthread_mutex_lock(&f->lock);
		if (c->id > f->w.state.seq) {
			f->w.state.seq = c->id;
			f->w.state.ready = c->keep;
			if (c->keep)
				f->w.state.ready_seq = c->id;
			if (c->id == f->w.state.next) {
				double rtt = clock_real_s() - f->w.state.sent_s;
				f->w.state.rtt_s = rtt > 0 ? rtt : 0; /* a clock step back */
				f->w.state.pending_s = 0;
			} else
				f->w.state.pending_s = clock_real_s(); /* progress: later ones wait */
		}
		pthread_cond_broadcast(&f->cond);
		pthread_mutex_unlock(&f->lock);
	} else if (c->kind == FABRIC_CMD_COMMIT_RATE) {
		pthread_mutex_lock(&f->lock);
		/* in order on one connection; a restarted scheduler counts checkpoints from 0 again */
		f->w.rate.check = c->version;
		f->w.rate.delta = (int64_t)c->id;
		f->w.rate.period_s = c->start;
		f->w.rate.t = clock_real_s();
		pthread_mutex_unlock(&f->lock);
	} else if (c->kind == FABRIC_CMD_FORWARD)
		fabric_dist_command(f, c);
	else if (c->kind == FABRIC_CMD_SERVER_MOVED)
		cmd_server_moved(f, c);
	else
		return 0;
	return 1;
}

static const struct fabric_role_ops worker_ops = {
	.received = worker_received,
	.command = worker_command,
	.progress = fabric_dist_progress,
	.release = fabric_dist_release,
};

int mlf_register_as_worker(mlf_t *f, const char *server)
{
	static const uint16_t chans[] = { 3 };

	if (!server || cluster_find(&f->cl, server) < 0) {
		fabric_core_set_err(f, "register as worker: unknown server host '%s'", server ? server : "(null)");
		return -EINVAL;
	}
	snprintf(f->w.server, sizeof(f->w.server), "%s", server);
	pthread_mutex_lock(&f->lock);
	f->w.rate.check = -1; /* no commit rate yet (ADSP) */
	pthread_mutex_unlock(&f->lock);
	return fabric_core_register(f, FABRIC_ROLE_WORKER, &worker_ops, chans, 1, json_pack("{s:s}", "server", server));
}

void fabric_worker_model_size(struct mlf *f, const char *server, size_t n)
{
	pthread_mutex_lock(&f->lock);
	f->w.model_n = n;
	snprintf(f->w.model_server, sizeof(f->w.model_server), "%s", server);
	pthread_mutex_unlock(&f->lock);
}

int64_t mlf_push(mlf_t *f, const char *server, const float *u, size_t n, double norm, int64_t version)
{
	struct fabric_held *h;
	struct mlf_payload_hdr *hdr;
	char mapped[APPMSG_NAME_MAX];
	size_t model_n;
	uint64_t id;
	int rc;

	if (!server || cluster_find(&f->cl, server) < 0 || n == 0) {
		fabric_core_set_err(f, "push: %s", n == 0 ? "empty update" : "unknown server host");
		return -EINVAL;
	}
	if (f->dead)
		return fabric_core_dp_gone(f, "push", -ENOTCONN);
	pthread_mutex_lock(&f->lock);
	model_n = strcmp(f->w.model_server, server) ? 0 : f->w.model_n;
	pthread_mutex_unlock(&f->lock);
	if (model_n && n != model_n) {
		fabric_core_set_err(f, "push: an update of %zu floats, but the model of server %s has %zu", n,
				    server, model_n);
		return -EINVAL;
	}
	pthread_mutex_lock(&f->lock);
	server = server_map(f, server, mapped, sizeof(mapped));
	pthread_mutex_unlock(&f->lock);
	h = calloc(1, sizeof(*h));
	if (!h || (rc = fabric_pool_take(f, mlf_payload_bytes(n), &h->buf)) < 0) {
		free(h);
		fabric_core_set_err(f, "push: no memory for an update of %zu floats", n);
		return -ENOMEM;
	}
	pthread_mutex_lock(&f->lock);
	id = fabric_core_next_id(f);
	f->ws.pushed++;
	note_push(&f->w, server, id);
	pthread_mutex_unlock(&f->lock);
	hdr = h->buf.data;
	hdr->magic = MLF_PAYLOAD_MAGIC_UPDATE;
	hdr->n_parts = 1;
	hdr->version = version;
	hdr->n_floats = n;
	hdr->parts[0] = (struct mlf_part){ .id = id, .version = version };
	memcpy((char *)h->buf.data + MLF_PAYLOAD_HDR, u, n * sizeof(float));
	h->id = id;
	h->bytes = h->buf.size;
	h->version = version;
	h->norm = norm;
	snprintf(h->server, sizeof(h->server), "%s", server);
	if (f->mode == MLF_MODE_DIRECT) {
		struct fabric_direct *d = calloc(1, sizeof(*d));
		if (!d) {
			fabric_pool_give_back(f, &h->buf);
			free(h);
			fabric_core_set_err(f, "push: no memory for an update of %zu floats", n);
			return -ENOMEM;
		}
		d->buf = h->buf;
		d->id = id;
		d->bytes = h->bytes;
		d->chan = 1;
		d->pooled = 1;
		snprintf(d->dst, sizeof(d->dst), "%s", server);
		free(h);
		fabric_core_queue_direct(f, d, 0);
		return (int64_t)id;
	}
	/* held; announced now, or by scheduler_back when the scheduler is lost (decided under the
	 * lock, so exactly once) */
	pthread_mutex_lock(&f->lock);
	h->next = f->held;
	f->held = h;
	int lost = f->sched_lost;
	pthread_mutex_unlock(&f->lock);
	if (lost)
		return (int64_t)id;
	rc = fabric_core_ctl(f, json_pack("{s:s, s:I, s:s, s:I, s:I, s:f}", "type", "update", "id", (json_int_t)id,
					  "server", server, "bytes", (json_int_t)h->bytes,
					  "version", (json_int_t)version, "norm", norm));
	if (rc < 0)
		return fabric_core_dp_gone(f, "push", rc);
	return (int64_t)id;
}

/*
 * A free get slot, taken (caller holds the lock; it is released while waiting). Direct mode:
 * any free one of FABRIC_GETS_MAX; with a scheduler, whose pulls are one per worker at a time
 * (docs/scheduler.md), the slot once no other get is in flight. When none is free yet the call
 * waits for one as long as the gets ahead of it make progress: up to @wait_s (seconds) from the
 * latest of the call's start and the gets' own progress (progress_s: a get's start or its latest
 * shard), so a get queued behind a slow but progressing one is not timed out by it. A get ahead
 * whose own timeout ends before that frees its slot then (its thread may take the lock after
 * this one): the wait runs on to @wait_s past the earliest such end. NULL: the gets ahead made
 * no progress within @wait_s and none ended, or the endpoint died.
 */
static struct fabric_get *get_slot(struct mlf *f, double wait_s)
{
	double start = clock_real_s();

	for (;;) {
		struct fabric_get *free_g = NULL;
		double last = start, first_end = 0, give_up;
		int busy = 0;

		for (int i = 0; i < FABRIC_GETS_MAX; i++) {
			const struct fabric_get *g = &f->w.get[i];
			if (g->active) {
				double end = g->progress_s + g->wait_s;
				busy++;
				if (g->progress_s > last)
					last = g->progress_s;
				if (busy == 1 || end < first_end)
					first_end = end;
			} else if (!free_g) {
				free_g = &f->w.get[i];
			}
		}
		if (free_g && (f->mode == MLF_MODE_DIRECT || !busy)) {
			memset(free_g, 0, sizeof(*free_g));
			return free_g;
		}
		give_up = last + wait_s;
		if (busy && first_end <= give_up && first_end + wait_s > give_up)
			give_up = first_end + wait_s; /* a get ahead times out first: its slot frees */
		if (f->dead || clock_real_s() >= give_up)
			return NULL;
		fabric_core_wait_until(f, give_up);
	}
}

/* Get with a minimum version (MLfabric-S) or any (min_version < 0). */
static int get_model(mlf_t *f, const char *server, float *model, size_t n, int64_t min_version,
		     int64_t *version, double timeout_s)
{
	double wait_s = timeout_s > 0 ? timeout_s : f->timeout_s, deadline;
	struct mlf_worker_state *w = &f->w;
	struct fabric_get *g;
	char mapped[APPMSG_NAME_MAX];
	const char *asked = server;
	uint64_t pull;
	int rc = 0;

	if (!server || cluster_find(&f->cl, server) < 0 || n == 0) {
		fabric_core_set_err(f, "get: %s", n == 0 ? "empty model" : "unknown server host");
		return -EINVAL;
	}
	pthread_mutex_lock(&f->lock);
	g = get_slot(f, wait_s);
	if (!g) {
		pthread_mutex_unlock(&f->lock);
		if (f->dead)
			return fabric_core_dp_gone(f, "get", -ENOTCONN);
		fabric_core_set_err(f, "get: waited %.3g s for %s on this endpoint, which made no progress "
				    "in that time", wait_s, f->mode == MLF_MODE_DIRECT ?
				    "one of the " FABRIC_GETS_MAX_S " gets in flight to end" : "the get before it to end");
		return -ETIMEDOUT;
	}
	server = server_map(f, server, mapped, sizeof(mapped));
	pull = fabric_core_next_id(f);
	g->active = 1; /* the rest of the slot is zero (get_slot) */
	g->dst = model;
	g->n = n;
	g->min_version = min_version;
	g->since = g->progress_s = clock_real_s();
	g->wait_s = wait_s;
	g->pull = pull;
	g->after = last_push_to(w, server);
	snprintf(g->server, sizeof(g->server), "%s", server);
	int lost = f->sched_lost; /* then scheduler_back announces the pull */
	pthread_mutex_unlock(&f->lock);
	if (f->mode == MLF_MODE_DIRECT) {
		struct fabric_direct *d = calloc(1, sizeof(*d));
		struct mlf_payload_hdr *h;
		if (!d || mlfabric_buf_alloc(MLF_PAYLOAD_HDR, &d->buf) < 0) {
			free(d);
			rc = -ENOMEM;
		} else {
			h = d->buf.data;
			h->magic = MLF_PAYLOAD_MAGIC_MODEL;
			h->version = min_version;
			d->bytes = MLF_PAYLOAD_HDR;
			d->chan = 5;
			snprintf(d->dst, sizeof(d->dst), "%s", server);
			fabric_core_queue_direct(f, d, 1);
		}
	} else if (!lost) {
		rc = fabric_core_ctl(f, fabric_core_pull_msg(g));
	}
	pthread_mutex_lock(&f->lock);
	/* a lost scheduler may come back (restarted) within the timeout: keep waiting. The timeout
	 * counts from the latest shard of the model that arrived: in Table 2's N3 the last of four
	 * shard copies could start 5 s after its plan (its server applying the updates its version
	 * needs over a 1 Mbit/s link) and end after a 10 s get timeout counted from the pull, while
	 * the other three had arrived (docs/results/dataplane-reliability.md
	 * "Workers that left N3 runs") */
	while (rc == 0 && !g->done && !f->dead && clock_real_s() < (deadline = g->progress_s + wait_s))
		fabric_core_wait_until(f, deadline);
	if (rc < 0) {
		fabric_core_set_err(f, "get: cannot ask %s for its model: %s", server, strerror(-rc));
		rc = rc == -ENOMEM ? rc : -ENOTCONN; /* the dataplane socket failed */
	} else if (g->done)
		rc = g->status;
	else if (f->dead)
		rc = f->dead_rc == -ETIMEDOUT ? -ETIMEDOUT : -ENOTCONN,
		fabric_core_set_err(f, "get: %s while waiting for the model of %s",
				    f->dead_rc == -ETIMEDOUT ? mlfabric_error(f->dp) : "dataplane gone", server);
	else if (f->sched_lost)
		rc = -ETIMEDOUT, fabric_core_set_err(f, "get: scheduler connection lost and not back within "
						     "%.1f s while waiting for the model of %s", wait_s, server);
	else
		rc = -ETIMEDOUT, fabric_core_set_err(f, "get: %s server %s within %.1f s (pull %llu)",
						     g->n_shards ? "no further shard of the model of" :
						     "no model from", server, wait_s, (unsigned long long)pull);
	if (rc == 0 && version)
		*version = g->version;
	if (g->model_n) {
		w->model_n = g->model_n;
		snprintf(w->model_server, sizeof(w->model_server), "%s", asked);
	}
	g->active = 0;
	pthread_cond_broadcast(&f->cond); /* a get waiting for the slot (scheduler modes) */
	pthread_mutex_unlock(&f->lock);
	return rc;
}

int mlf_get(mlf_t *f, const char *server, float *model, size_t n, int64_t *version, double timeout_s)
{
	return get_model(f, server, model, n, -1, version, timeout_s);
}

int mlf_push_get(mlf_t *f, const char *server, const float *u, size_t n, double norm,
		  int64_t version, float *model, int64_t *new_version, double timeout_s)
{
	int64_t id = mlf_push(f, server, u, n, norm, version);

	if (id < 0)
		return (int)id;
	/* any version above the one the update came from: the server applies an iteration as one
	 * step, however many parts it got. version + the workers (the full iteration's end) was
	 * asked before: an iteration that ended short (sync timeout, a lost part) never reached
	 * it, and every worker waited in this get until its timeout */
	return get_model(f, server, model, n, version + 1, new_version, timeout_s);
}

int64_t mlf_query_state_send(mlf_t *f, int64_t round, int k, double c_s)
{
	uint64_t seq;

	if (round < 0 || k < 0 || !(c_s >= 0 && c_s < 3600)) {
		fabric_core_set_err(f, "state query: bad round %lld, k %d or c %g s", (long long)round,
				    k, c_s);
		return -EINVAL;
	}
	pthread_mutex_lock(&f->lock);
	if (f->role != FABRIC_ROLE_WORKER) {
		pthread_mutex_unlock(&f->lock);
		fabric_core_set_err(f, "state query: only a registered worker asks the State Server");
		return -EINVAL;
	}
	seq = ++f->w.state.next;
	f->w.state.sent_s = clock_real_s();
	if (!f->w.state.pending_s)
		f->w.state.pending_s = f->w.state.sent_s;
	pthread_mutex_unlock(&f->lock);
	fabric_core_ctl(f, json_pack("{s:s, s:I, s:I, s:i, s:f}", "type", "state_query", "seq",
				     (json_int_t)seq, "round", (json_int_t)round, "k", k, "c", c_s));
	return (int64_t)seq;
}

int mlf_state_wait(mlf_t *f, int64_t since, double until_s, double *rtt_s)
{
	int rc = 0, ready;

	if (since < 1) {
		fabric_core_set_err(f, "state wait: bad query number %lld", (long long)since);
		return -EINVAL;
	}
	pthread_mutex_lock(&f->lock);
	while (f->w.state.ready_seq < (uint64_t)since && rc != ETIMEDOUT && clock_real_s() < until_s)
		rc = fabric_core_wait_until(f, until_s);
	ready = f->w.state.ready_seq >= (uint64_t)since;
	if (rtt_s)
		*rtt_s = f->w.state.rtt_s;
	double pending = f->w.state.pending_s, limit = f->timeout_s;
	pthread_mutex_unlock(&f->lock);
	if (!ready && pending > 0 && clock_real_s() - pending > limit) {
		fabric_core_set_err(f, "state query: no answer from the scheduler within %.1f s", limit);
		return -ETIMEDOUT;
	}
	return ready;
}

int mlf_query_state(mlf_t *f, int64_t round, int k, double c_s, double timeout_s)
{
	double until = clock_real_s() + timeout_s;
	int rc = 0;

	if (!(timeout_s > 0)) {
		fabric_core_set_err(f, "state query: bad timeout %g s", timeout_s);
		return -EINVAL;
	}
	int64_t seq = mlf_query_state_send(f, round, k, c_s);
	if (seq < 0)
		return (int)seq;
	pthread_mutex_lock(&f->lock);
	while (f->w.state.seq < (uint64_t)seq && rc != ETIMEDOUT)
		rc = fabric_core_wait_until(f, until);
	int ready = f->w.state.seq >= (uint64_t)seq ? f->w.state.ready : -1;
	pthread_mutex_unlock(&f->lock);
	if (ready < 0) {
		fabric_core_set_err(f, "state query: no answer from the scheduler within %.1f s",
				    timeout_s);
		return -ETIMEDOUT;
	}
	return ready;
}

int mlf_commit_rate(mlf_t *f, struct mlf_commit_rate *r)
{
	int rc = 0;

	pthread_mutex_lock(&f->lock);
	if (f->role != FABRIC_ROLE_WORKER)
		rc = -EINVAL;
	else if (f->w.rate.check < 0)
		rc = -EAGAIN;
	else
		*r = (struct mlf_commit_rate){ .check = f->w.rate.check, .delta = f->w.rate.delta,
					       .period_s = f->w.rate.period_s, .t = f->w.rate.t };
	pthread_mutex_unlock(&f->lock);
	if (rc == -EINVAL)
		fabric_core_set_err(f, "commit rate: only a registered worker has one");
	return rc;
}

void mlf_get_worker_stats(mlf_t *f, struct mlf_worker_stats *s)
{
	pthread_mutex_lock(&f->lock);
	*s = f->ws;
	pthread_mutex_unlock(&f->lock);
}
