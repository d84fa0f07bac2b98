/* fabric.c - include/mlfabric.h (paper Table 1) on top of lib/dpclient.h: one event thread per endpoint. */
#define _GNU_SOURCE
#include "mlfabric.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cluster.h"
#include "dpclient.h"
#include "fabric_agg.h"
#include "fabric_cmd.h"
#include "fabric_verify.h"
#include "log.h"

#define MAX_AGG_INPUTS 256      /* inputs held by an aggregator before a command names them */
#define REGISTER_RETRY_S 0.5    /* register again while the dataplane has no scheduler yet */
#define SKIPPED_MAX 1024        /* transfer ids the scheduler reported lost, remembered by a server */
#define MOVED_MAX 8             /* server names a worker maps to the current server (server_moved) */
#define SNAP_KEEP 16            /* verification snapshots kept per role (newest tags) */
#define RECEIVED_MAX 1024       /* chan 1/4 transfer ids handed over, remembered for late `order`s */

/* An arrival held back while the server waits for a chain forward's delivery. */
struct queued_ev {
	struct mlfabric_event ev;
	struct queued_ev *next;
};

/* An update announced to the scheduler, waiting for its send or drop command. */
struct held_update {
	uint64_t id;
	uint64_t bytes;
	struct mlfabric_buf buf;
	char server[APPMSG_NAME_MAX];
	struct held_update *next;
};

/* A transfer handed to the dataplane whose completion is reported to the scheduler. */
struct out_xfer {
	uint64_t xfer;
	int is_update, to_agg;
	struct out_xfer *next;
};

/* A transfer the app thread asked for that only the event thread may hand to the dataplane. */
struct direct_send {
	struct mlfabric_buf buf;
	uint64_t id, bytes;
	uint16_t chan;
	char dst[APPMSG_NAME_MAX];
	struct direct_send *next;
};

/* An input received on MLF_CHAN_AGG (kept mapped until an aggregate command uses it). */
struct agg_input {
	struct mlfabric_event ev;
	double t;
};

/* An aggregate command waiting for its inputs. */
struct agg_cmd {
	struct fabric_cmd c;
	double deadline;
	struct agg_cmd *next;
};

enum role { ROLE_NONE, ROLE_WORKER, ROLE_SERVER, ROLE_REPLICA, ROLE_AGGREGATOR };
static const char *const role_names[] = { "", "worker", "server", "replica", "aggregator" };

struct mlf {
	struct cluster cl;
	int me;
	enum mlf_mode mode;
	double timeout_s, agg_timeout_s;
	mlfabric_t *dp;
	pthread_t thread;
	int wake[2];
	int stop, dead, sched_lost;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	char err[256];
	enum role role;
	char app[64];
	int reg_state;              /* 0 none, 1 accepted, -errno refused */
	char reg_reason[APPMSG_REASON_MAX];
	int reg_no_sched;
	uint64_t seq;
	struct held_update *held;
	struct out_xfer *out;
	int sending;                /* `send` commands between held list and out list */
	struct direct_send *direct;
	/* worker: the one get waiting for a model */
	struct {
		int active, done, status;
		float *dst;
		size_t n;
		int64_t min_version, version;
		char server[APPMSG_NAME_MAX];
	} get;
	/* server / replica */
	mlf_update_cb on_update;
	mlf_request_cb on_request;
	void *arg;
	size_t n_floats;
	int64_t version;
	struct mlf_params params;
	uint64_t skipped[SKIPPED_MAX]; /* ring of ids passed to `skip`: a late arrival is not applied */
	unsigned n_skipped;
	struct {
		uint64_t id;
		uint16_t chan;
	} received[RECEIVED_MAX];      /* ring of transfers handed over on chan 1 and 4 */
	unsigned n_received;
	/* state access (catch-up, snapshots) */
	mlf_get_state_cb get_state;
	mlf_set_state_cb set_state;
	void *state_arg;
	/* replica */
	enum mlf_replication replication;
	/* server: chain replication (the `replica` message) */
	char chain_host[APPMSG_NAME_MAX];
	struct {
		int active;       /* a forward is in flight: commit and later arrivals wait */
		uint64_t fwd;     /* the forward's transfer id (dataplane-chosen) */
		uint64_t xfer;    /* the applied transfer it carries */
		json_t *commit;   /* the commit reported once the forward is delivered */
	} chain;
	struct queued_ev *chain_q, *chain_q_tail;
	/* worker: server names mapped to the current server after `server_moved` */
	char worker_server[APPMSG_NAME_MAX], server_now[APPMSG_NAME_MAX];
	char moved_from[MOVED_MAX][APPMSG_NAME_MAX];
	int n_moved;
	/* verification mode */
	char verify_dir[200];
	uint64_t snap_tags[2][SNAP_KEEP]; /* [0] server, [1] replica: ring of written tags */
	unsigned n_snaps[2];
	/* aggregator */
	struct agg_input inputs[MAX_AGG_INPUTS];
	int n_inputs;
	struct agg_cmd *cmds;
	struct mlf_worker_stats ws;
	struct mlf_aggregator_stats as;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Records the error text of @f (caller holds the lock or owns @f alone). */
static void set_err(struct mlf *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_err(struct mlf *f, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(f->err, sizeof(f->err), fmt, ap);
	va_end(ap);
}

static void wake(struct mlf *f)
{
	char c = 1;
	ssize_t rc = write(f->wake[1], &c, 1);
	(void)rc;
}

/* Sends control message @msg (stolen) with this endpoint's "app". 0 or -errno. */
static int ctl(struct mlf *f, json_t *msg)
{
	char *text;
	int rc;

	if (!msg)
		return -ENOMEM;
	json_object_set_new(msg, "app", json_string(f->app));
	text = json_dumps(msg, JSON_COMPACT);
	json_decref(msg);
	if (!text)
		return -ENOMEM;
	rc = mlfabric_ctl_send(f->dp, text);
	free(text);
	return rc;
}

static uint64_t next_id(struct mlf *f)
{
	return ((uint64_t)(f->me + 1) << 40) | ++f->seq;
}

/* ---- event thread ---------------------------------------------------------------------- */

static void track_out(struct mlf *f, uint64_t xfer, int is_update, int to_agg)
{
	struct out_xfer *o = calloc(1, sizeof(*o));

	if (!o) {
		log_err("out of memory: completion of transfer %llx will not be reported", (unsigned long long)xfer);
		return;
	}
	o->xfer = xfer;
	o->is_update = is_update;
	o->to_agg = to_agg;
	o->next = f->out;
	f->out = o;
}

static void report_done(struct mlf *f, uint64_t xfer, int status, uint64_t bytes, double t, const char *reason)
{
	if (f->mode == MLF_MODE_DIRECT)
		return;
	ctl(f, json_pack("{s:s, s:I, s:i, s:I, s:f, s:s}", "type", "done", "xfer", (json_int_t)xfer,
			 "status", status, "bytes", (json_int_t)bytes, "t", t, "reason", reason));
}

/* Hands a transfer to the dataplane; the buffer is released (the dataplane holds its own fd). */
static int send_buf(struct mlf *f, struct mlfabric_buf *b, uint64_t bytes, const char *dst, uint16_t chan,
		    uint64_t xfer, double start, const struct appmsg_step *steps, int n_steps, uint64_t *id)
{
	struct mlfabric_send req = { .dst = dst, .buf = b, .bytes = bytes, .id = xfer, .chan = chan,
				     .steps = n_steps ? steps : NULL, .n_steps = n_steps };
	char err[256];
	int rc;

	if (start > now_s())
		req.start_ns = (uint64_t)(start * 1e9);
	rc = mlfabric_send(f->dp, &req, id, err, sizeof(err));
	mlfabric_buf_free(b);
	if (rc < 0) {
		pthread_mutex_lock(&f->lock);
		set_err(f, "transfer %llx to %s refused: %s", (unsigned long long)xfer, dst, err);
		pthread_mutex_unlock(&f->lock);
		log_warn("transfer %llx to %s refused: %s", (unsigned long long)xfer, dst, err);
	}
	return rc;
}

/* A model snapshot from the server's request callback, in a fresh buffer. */
static int snapshot(struct mlf *f, struct mlfabric_buf *b)
{
	struct mlf_payload_hdr *h;
	int rc = mlfabric_buf_alloc(mlf_payload_bytes(f->n_floats), b);

	if (rc < 0)
		return rc;
	h = b->data;
	h->magic = MLF_PAYLOAD_MAGIC_MODEL;
	h->n_floats = f->n_floats;
	h->version = f->on_request(f->arg, (float *)((char *)b->data + MLF_PAYLOAD_HDR), f->n_floats);
	return 0;
}

/* ||x||_2 of @n floats, accumulated in double. */
static double norm2(const float *x, size_t n)
{
	double s = 0;

	for (size_t i = 0; i < n; i++)
		s += (double)x[i] * (double)x[i];
	return sqrt(s);
}

/* A state snapshot (w then h, MLF_PAYLOAD_MAGIC_STATE) from the state callback, in a fresh buffer. */
static int state_snapshot(struct mlf *f, struct mlfabric_buf *b)
{
	struct mlf_payload_hdr *h;
	float *w;
	int rc;

	if (!f->get_state || !f->n_floats)
		return -EINVAL;
	if ((rc = mlfabric_buf_alloc(mlf_payload_bytes(2 * f->n_floats), b)) < 0)
		return rc;
	h = b->data;
	w = (float *)((char *)b->data + MLF_PAYLOAD_HDR);
	h->magic = MLF_PAYLOAD_MAGIC_STATE;
	h->n_floats = 2 * f->n_floats;
	h->version = f->get_state(f->state_arg, w, w + f->n_floats, f->n_floats);
	return 0;
}

/* Takes held update @id off the list (@keep: leaves it there); NULL when not held. */
static struct held_update *held_take(struct mlf *f, uint64_t id, int keep)
{
	struct held_update **p, *u = NULL;

	pthread_mutex_lock(&f->lock);
	for (p = &f->held; *p; p = &(*p)->next)
		if ((*p)->id == id) {
			u = *p;
			if (!keep) {
				*p = u->next;
				pthread_cond_broadcast(&f->cond); /* mlf_close's drain */
			}
			break;
		}
	pthread_mutex_unlock(&f->lock);
	return u;
}

static void cmd_send_one(struct mlf *f, struct fabric_cmd *c)
{
	struct mlfabric_buf b;
	uint64_t bytes, id;
	char reason[APPMSG_REASON_MAX];

	if (c->what_model || c->what_state) {
		if (f->role != ROLE_SERVER || (c->what_model ? snapshot(f, &b) : state_snapshot(f, &b)) < 0) {
			snprintf(reason, sizeof(reason), "%s cannot send a %s (%s %llu)", f->app,
				 c->what_model ? "model" : "state", c->what_model ? "pull" : "id",
				 (unsigned long long)c->id);
			log_warn("send command: %s", reason);
			report_done(f, c->xfer, -EINVAL, 0, now_s(), reason);
			return;
		}
		bytes = b.size;
	} else {
		struct held_update *u = held_take(f, c->id, c->keep);
		if (!u) {
			snprintf(reason, sizeof(reason), "%s holds no update %llu", f->app, (unsigned long long)c->id);
			log_warn("send command: %s", reason);
			report_done(f, c->xfer, -ENOENT, 0, now_s(), reason);
			return;
		}
		bytes = u->bytes;
		if (c->keep) {
			/* the dataplane owns a buffer once sent: the copy goes, the update stays held */
			if (mlfabric_buf_alloc(bytes, &b) < 0) {
				snprintf(reason, sizeof(reason), "%s: no memory for a copy of update %llu", f->app,
					 (unsigned long long)c->id);
				log_err("send command: %s", reason);
				report_done(f, c->xfer, -ENOMEM, 0, now_s(), reason);
				return;
			}
			memcpy(b.data, u->buf.data, bytes);
		} else {
			b = u->buf;
			free(u);
		}
		if (c->chan == 2) {
			pthread_mutex_lock(&f->lock);
			f->ws.aggregated++;
			pthread_mutex_unlock(&f->lock);
		}
	}
	if (send_buf(f, &b, bytes, c->dst, c->chan, c->xfer, c->start, c->steps, c->n_steps, &id) < 0) {
		report_done(f, c->xfer, -EINVAL, bytes, now_s(), f->err);
		return;
	}
	pthread_mutex_lock(&f->lock);
	track_out(f, id, !c->what_model && !c->what_state, c->chan == 2);
	pthread_mutex_unlock(&f->lock);
}

/* `send`: cmd_send_one, counted in f->sending so that mlf_close's drain does not see the update
 * between leaving the held list and entering the list of outgoing transfers. */
static void cmd_send(struct mlf *f, struct fabric_cmd *c)
{
	pthread_mutex_lock(&f->lock);
	f->sending++;
	pthread_mutex_unlock(&f->lock);
	cmd_send_one(f, c);
	pthread_mutex_lock(&f->lock);
	f->sending--;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
}

/* `release`: the last copy of update @c->id is not needed any more (not counted as dropped). */
static void cmd_release(struct mlf *f, const struct fabric_cmd *c)
{
	struct held_update *u = held_take(f, c->id, 0);

	if (!u) {
		log_warn("release command: no update %llu held", (unsigned long long)c->id);
		return;
	}
	mlfabric_buf_free(&u->buf);
	free(u);
}

/* Appends @name to the names mapped to the current server unless it is there or is @now. */
static void moved_add(struct mlf *f, const char *name, const char *now)
{
	if (!name[0] || !strcmp(name, now))
		return;
	for (int i = 0; i < f->n_moved; i++)
		if (!strcmp(f->moved_from[i], name))
			return;
	if (f->n_moved == MOVED_MAX) {
		log_warn("worker: more than %d server moves; the oldest name is no longer mapped", MOVED_MAX);
		memmove(f->moved_from[0], f->moved_from[1], sizeof(f->moved_from[0]) * (MOVED_MAX - 1));
		f->n_moved--;
	}
	snprintf(f->moved_from[f->n_moved++], sizeof(f->moved_from[0]), "%s", name);
}

/* `server_moved`: pushes and gets naming an earlier server host go to host @c->dst from now on. */
static void cmd_server_moved(struct mlf *f, const struct fabric_cmd *c)
{
	if (cluster_find(&f->cl, c->dst) < 0) {
		log_err("server_moved: unknown host '%s'; ignored", c->dst);
		return;
	}
	pthread_mutex_lock(&f->lock);
	moved_add(f, f->worker_server, c->dst);
	moved_add(f, f->server_now, c->dst);
	for (int i = 0; i < f->n_moved; i++)
		if (!strcmp(f->moved_from[i], c->dst)) {
			memmove(f->moved_from[i], f->moved_from[i + 1], sizeof(f->moved_from[0]) * (size_t)(f->n_moved - i - 1));
			f->n_moved--;
			break;
		}
	snprintf(f->server_now, sizeof(f->server_now), "%s", c->dst);
	pthread_mutex_unlock(&f->lock);
	log_info("%s: the server now runs on %s", f->app, c->dst);
}

/* The host serving @server now (@out), after the `server_moved`s seen so far; caller holds the lock. */
static const char *server_map(struct mlf *f, const char *server, char *out, size_t cap)
{
	snprintf(out, cap, "%s", server);
	for (int i = 0; i < f->n_moved; i++)
		if (!strcmp(f->moved_from[i], server)) {
			snprintf(out, cap, "%s", f->server_now);
			break;
		}
	return out;
}

static void cmd_drop(struct mlf *f, const struct fabric_cmd *c)
{
	struct held_update **p, *u = NULL;

	pthread_mutex_lock(&f->lock);
	for (p = &f->held; *p; p = &(*p)->next)
		if ((*p)->id == c->id) {
			u = *p;
			*p = u->next;
			break;
		}
	if (u) {
		f->ws.dropped++;
		pthread_cond_broadcast(&f->cond); /* mlf_close's drain */
	}
	pthread_mutex_unlock(&f->lock);
	if (!u) {
		log_warn("drop command: no update %llu held", (unsigned long long)c->id);
		return;
	}
	log_debug("update %llu dropped: %s", (unsigned long long)c->id, c->reason);
	mlfabric_buf_free(&u->buf);
	free(u);
}

/* ---- aggregator -------------------------------------------------------------------------- */

static int input_has(const struct agg_input *in, uint64_t id)
{
	const struct mlf_payload_hdr *h = in->ev.buf.data;

	for (uint32_t k = 0; k < h->n_parts; k++)
		if (h->parts[k].id == id)
			return 1;
	return 0;
}

static int find_input(struct mlf *f, uint64_t id)
{
	for (int i = 0; i < f->n_inputs; i++)
		if (input_has(&f->inputs[i], id))
			return i;
	return -1;
}

static void drop_input(struct mlf *f, int i)
{
	mlfabric_event_release(&f->inputs[i].ev);
	f->inputs[i] = f->inputs[--f->n_inputs];
}

/* Sums what arrived of @a's inputs and sends the aggregate; reports `partial` when some are missing. */
static void aggregate(struct mlf *f, struct agg_cmd *a)
{
	const struct fabric_cmd *c = &a->c;
	const float **src = calloc((size_t)c->n_ids, sizeof(*src));
	double *w = calloc((size_t)c->n_ids, sizeof(*w));
	int *slot = calloc((size_t)c->n_ids, sizeof(*slot)), k = 0;
	json_t *missing = json_array();
	struct mlf_payload_hdr *h;
	struct mlfabric_buf b = { .fd = -1 };
	uint64_t n = 0, id;
	double t0;

	if (!src || !w || !slot || !missing) {
		log_err("aggregate %llu: out of memory", (unsigned long long)c->id);
		goto out;
	}
	for (int i = 0; i < c->n_ids; i++) {
		int j = find_input(f, c->ids[i]);
		const struct mlf_payload_hdr *ih = j >= 0 ? f->inputs[j].ev.buf.data : NULL;
		int dup = 0;
		for (int q = 0; q < k && j >= 0; q++)
			dup |= slot[q] == j;
		if (dup)
			continue; /* one input carrying several of the named ids */
		if (ih && k > 0 && ih->n_floats != n) {
			log_err("aggregate %llu: input %llu has %llu floats, others %llu: left out",
				(unsigned long long)c->id, (unsigned long long)c->ids[i],
				(unsigned long long)ih->n_floats, (unsigned long long)n);
			ih = NULL;
		}
		if (!ih) {
			json_array_append_new(missing, json_integer((json_int_t)c->ids[i]));
			continue;
		}
		n = ih->n_floats;
		slot[k] = j;
		w[k] = c->weights ? c->weights[i] : 1.0;
		src[k++] = (const float *)((const char *)ih + MLF_PAYLOAD_HDR);
	}
	f->as.inputs_missing += json_array_size(missing);
	if (json_array_size(missing))
		ctl(f, json_pack("{s:s, s:I, s:O}", "type", "partial", "agg", (json_int_t)c->id, "missing", missing));
	if (k == 0 || mlfabric_buf_alloc(mlf_payload_bytes(n), &b) < 0) {
		if (k)
			log_err("aggregate %llu: no memory for %llu floats", (unsigned long long)c->id, (unsigned long long)n);
		else
			log_warn("aggregate %llu: none of its %d inputs arrived; nothing sent", (unsigned long long)c->id, c->n_ids);
		/* a failed `done`: the scheduler skips the aggregate at its destination at once
		 * instead of waiting --xfer-timeout for it (docs/control.md) */
		report_done(f, c->id, k ? -ENOMEM : -ENODATA, 0, now_s(),
			    k ? "aggregator out of memory" : "no input of the aggregate arrived");
		goto out;
	}
	h = b.data;
	h->magic = MLF_PAYLOAD_MAGIC_UPDATE;
	h->n_floats = n;
	for (int q = 0; q < k; q++) {
		const struct mlf_payload_hdr *ih = f->inputs[slot[q]].ev.buf.data;
		for (uint32_t p = 0; p < ih->n_parts && h->n_parts < MLF_PAYLOAD_MAX_PARTS; p++)
			h->parts[h->n_parts++] = ih->parts[p];
	}
	h->version = h->parts[0].version;
	t0 = now_s();
	fabric_agg_sum((float *)((char *)b.data + MLF_PAYLOAD_HDR), src, c->weights ? w : NULL, k, n);
	f->as.sum_seconds += now_s() - t0;
	f->as.sum_bytes += (uint64_t)k * n * 4;
	f->as.inputs_summed += (uint64_t)k;
	for (int q = 0; q < k; q++)
		f->inputs[slot[q]].t = -1; /* used: released below */
	pthread_mutex_unlock(&f->lock);
	if (send_buf(f, &b, mlf_payload_bytes(n), c->dst, c->chan, c->id, c->start, c->steps, c->n_steps, &id) < 0)
		report_done(f, c->id, -EINVAL, mlf_payload_bytes(n), now_s(), f->err);
	pthread_mutex_lock(&f->lock);
	f->as.aggregates_sent++;
	track_out(f, c->id, 0, 0);
	for (int i = f->n_inputs - 1; i >= 0; i--)
		if (f->inputs[i].t < 0)
			drop_input(f, i);
out:
	json_decref(missing);
	free(src);
	free(w);
	free(slot);
}

/* Was @id passed to a `skip` (chan 1/4: a transfer id; chan 2: an aggregator input's update id)? */
static int was_skipped(const struct mlf *f, uint64_t id)
{
	for (unsigned i = 0; i < SKIPPED_MAX && i < f->n_skipped; i++)
		if (f->skipped[i] == id)
			return 1;
	return 0;
}

/*
 * Aggregates every command whose inputs are all here or reported lost by the scheduler (`skip`
 * with chan 2), or whose input timeout passed.
 */
static void agg_progress(struct mlf *f)
{
	double now = now_s();

	pthread_mutex_lock(&f->lock);
	for (struct agg_cmd **p = &f->cmds, *a; (a = *p);) {
		int all = 1, skipped = 0;
		for (int i = 0; i < a->c.n_ids && all; i++) {
			int here = find_input(f, a->c.ids[i]) >= 0, lost = !here && was_skipped(f, a->c.ids[i]);
			all = here || lost;
			skipped += lost;
		}
		if (!all && now < a->deadline) {
			p = &a->next;
			continue;
		}
		*p = a->next;
		if (!all)
			log_warn("aggregate %llu: inputs missing %.1f s after its start; sending what arrived",
				 (unsigned long long)a->c.id, f->agg_timeout_s);
		else if (skipped)
			log_info("aggregate %llu: %d input(s) reported lost by the scheduler; sending the rest",
				 (unsigned long long)a->c.id, skipped);
		aggregate(f, a);
		fabric_cmd_free(&a->c);
		free(a);
	}
	pthread_mutex_unlock(&f->lock);
}

static void agg_input(struct mlf *f, struct mlfabric_event *ev)
{
	char err[160];

	if (fabric_cmd_payload_check(ev->buf.data, ev->bytes, MLF_PAYLOAD_MAGIC_UPDATE, err, sizeof(err)) < 0) {
		log_err("bad aggregator input from host %s (transfer %llx): %s; skipped", ev->peer,
			(unsigned long long)ev->id, err);
		mlfabric_event_release(ev);
		return;
	}
	pthread_mutex_lock(&f->lock);
	if (f->n_inputs == MAX_AGG_INPUTS) {
		log_warn("aggregator holds %d inputs no command named: the oldest is discarded", MAX_AGG_INPUTS);
		int old = 0;
		for (int i = 1; i < f->n_inputs; i++)
			if (f->inputs[i].t < f->inputs[old].t)
				old = i;
		drop_input(f, old);
	}
	f->inputs[f->n_inputs].ev = *ev;
	f->inputs[f->n_inputs++].t = now_s();
	pthread_mutex_unlock(&f->lock);
	ev->buf.data = NULL; /* kept */
	ev->buf.fd = -1;
}

static void cmd_aggregate(struct mlf *f, struct fabric_cmd *c)
{
	struct agg_cmd *a = calloc(1, sizeof(*a));

	if (!a) {
		log_err("aggregate %llu: out of memory", (unsigned long long)c->id);
		fabric_cmd_free(c);
		return;
	}
	a->c = *c;
	a->deadline = c->start + f->agg_timeout_s;
	c->ids = NULL;
	c->weights = NULL;
	pthread_mutex_lock(&f->lock);
	f->as.commands++;
	a->next = f->cmds;
	f->cmds = a;
	pthread_mutex_unlock(&f->lock);
}

/* ---- arrivals ---------------------------------------------------------------------------- */

/* The commit of transfer @xfer (version @v after it, the parts of @h) as a control message. */
static json_t *commit_msg(uint64_t xfer, int64_t v, const struct mlf_payload_hdr *h)
{
	json_t *parts = json_array();

	for (uint32_t k = 0; h && k < h->n_parts; k++)
		json_array_append_new(parts, json_integer((json_int_t)h->parts[k].id));
	return json_pack("{s:s, s:I, s:I, s:f, s:o}", "type", "commit", "xfer", (json_int_t)xfer,
			 "version", (json_int_t)v, "t", now_s(), "parts", parts);
}

/* The chain forward of transfer @xfer failed (@why): logged, the chain is broken, the scheduler told. */
static void chain_broken(struct mlf *f, uint64_t xfer, int status, const char *why)
{
	char reason[APPMSG_REASON_MAX];

	snprintf(reason, sizeof(reason), "chain forward of transfer %llu to replica %s failed: %s",
		 (unsigned long long)xfer, f->chain_host, why);
	log_err("%s: %s; chain replication stopped", f->app, reason);
	f->chain_host[0] = '\0';
	report_done(f, xfer, status < 0 ? status : -EIO, 0, now_s(), reason);
}

/*
 * Chain replication: sends a copy of applied transfer @ev to the chain replica on chan 4; the
 * commit @commit (stolen) is reported once the dataplane says it was delivered (chain_sent), or
 * at once when the forward cannot be started (the chain is then broken).
 */
static void chain_forward(struct mlf *f, const struct mlfabric_event *ev, json_t *commit)
{
	struct mlfabric_buf b;
	uint64_t id;

	if (mlfabric_buf_alloc(ev->bytes, &b) < 0) {
		chain_broken(f, ev->id, -ENOMEM, "no memory for the copy");
		ctl(f, commit);
		return;
	}
	memcpy(b.data, ev->buf.data, ev->bytes);
	if (send_buf(f, &b, ev->bytes, f->chain_host, 4, 0, 0, NULL, 0, &id) < 0) {
		chain_broken(f, ev->id, -EINVAL, f->err);
		ctl(f, commit);
		return;
	}
	f->chain.active = 1;
	f->chain.fwd = id;
	f->chain.xfer = ev->id;
	f->chain.commit = commit;
}

/* A replica's catch-up: installs the state in @ev with set_state, commits it with state: true. */
static void replica_state(struct mlf *f, const struct mlfabric_event *ev)
{
	const struct mlf_payload_hdr *h = ev->buf.data;
	const float *w = (const float *)((const char *)h + MLF_PAYLOAD_HDR);
	json_t *m;
	char err[160];
	int rc;

	if (fabric_cmd_payload_check(ev->buf.data, ev->bytes, MLF_PAYLOAD_MAGIC_STATE, err, sizeof(err)) < 0 ||
	    (h->n_floats != 2 * f->n_floats && snprintf(err, sizeof(err), "%llu floats, 2 x the model is %zu",
							  (unsigned long long)h->n_floats, 2 * f->n_floats))) {
		log_err("bad state payload from host %s (transfer %llx): %s; not installed", ev->peer,
			(unsigned long long)ev->id, err);
		return;
	}
	if (!f->set_state) {
		log_err("state from host %s (transfer %llx): no state callbacks set (mlf_set_state_callbacks); "
			"not installed", ev->peer, (unsigned long long)ev->id);
		return;
	}
	if ((rc = f->set_state(f->state_arg, w, w + f->n_floats, f->n_floats, h->version)) < 0) {
		log_err("state from host %s (transfer %llx): set_state refused it (%d); not installed", ev->peer,
			(unsigned long long)ev->id, rc);
		return;
	}
	pthread_mutex_lock(&f->lock);
	f->version = h->version;
	pthread_mutex_unlock(&f->lock);
	log_info("%s: state of version %lld installed from %s", f->app, (long long)h->version, ev->peer);
	if (f->mode == MLF_MODE_DIRECT)
		return;
	m = commit_msg(ev->id, h->version, NULL);
	json_object_set_new(m, "state", json_true());
	json_object_set_new(m, "history_norm", json_real(norm2(w + f->n_floats, f->n_floats)));
	ctl(f, m);
}

static void server_update(struct mlf *f, struct mlfabric_event *ev)
{
	const struct mlf_payload_hdr *h = ev->buf.data;
	struct mlf_update u;
	char err[160];
	int64_t v;
	json_t *commit;

	if (ev->bytes >= MLF_PAYLOAD_HDR && h->magic == MLF_PAYLOAD_MAGIC_STATE && ev->chan == 4 &&
	    f->role == ROLE_REPLICA) {
		replica_state(f, ev);
		return;
	}
	if (fabric_cmd_payload_check(ev->buf.data, ev->bytes, MLF_PAYLOAD_MAGIC_UPDATE, err, sizeof(err)) < 0 ||
	    (h->n_floats != f->n_floats && snprintf(err, sizeof(err), "%llu floats, the model has %zu",
						      (unsigned long long)h->n_floats, f->n_floats))) {
		log_err("bad update payload from host %s (transfer %llx): %s; skipped, not applied", ev->peer,
			(unsigned long long)ev->id, err);
		return;
	}
	if (was_skipped(f, ev->id)) {
		log_warn("transfer %llx from host %s arrived after the scheduler reported it lost; not applied",
			 (unsigned long long)ev->id, ev->peer);
		return;
	}
	u = (struct mlf_update){ .hdr = h, .u = (const float *)((const char *)h + MLF_PAYLOAD_HDR),
				 .n = h->n_floats, .xfer = ev->id, .src = ev->peer };
	v = f->on_update(f->arg, &u);
	pthread_mutex_lock(&f->lock);
	f->version = v;
	pthread_mutex_unlock(&f->lock);
	if (f->mode == MLF_MODE_DIRECT)
		return;
	commit = commit_msg(ev->id, v, h);
	if (f->role == ROLE_SERVER && ev->chan == 1 && f->chain_host[0])
		chain_forward(f, ev, commit);
	else
		ctl(f, commit);
}

/* Applies the arrivals held back while a chain forward was in flight, until one waits again. */
static void chain_drain(struct mlf *f)
{
	while (!f->chain.active && f->chain_q) {
		struct queued_ev *q = f->chain_q;
		f->chain_q = q->next;
		if (!f->chain_q)
			f->chain_q_tail = NULL;
		server_update(f, &q->ev);
		mlfabric_event_release(&q->ev);
		free(q);
	}
}

/* The dataplane's completion of the chain forward in flight: report the commit, go on. */
static void chain_sent(struct mlf *f, const struct mlfabric_event *ev)
{
	json_t *commit = f->chain.commit;

	f->chain.active = 0;
	f->chain.commit = NULL;
	if (ev->status)
		chain_broken(f, f->chain.xfer, ev->status, ev->reason);
	json_object_set_new(commit, "t", json_real(now_s())); /* committed once replicated */
	ctl(f, commit);
	chain_drain(f);
}

/* Holds arrival @ev (kept mapped) until the chain forward in flight is delivered. */
static void chain_hold(struct mlf *f, struct mlfabric_event *ev)
{
	struct queued_ev *q = calloc(1, sizeof(*q));

	if (!q) {
		log_err("transfer %llx from %s: no memory to hold it behind a chain forward; not applied",
			(unsigned long long)ev->id, ev->peer);
		return;
	}
	q->ev = *ev;
	ev->buf.data = NULL; /* kept */
	ev->buf.fd = -1;
	ev->ctl = NULL;
	if (f->chain_q_tail)
		f->chain_q_tail->next = q;
	else
		f->chain_q = q;
	f->chain_q_tail = q;
}

static void worker_model(struct mlf *f, struct mlfabric_event *ev)
{
	const struct mlf_payload_hdr *h = ev->buf.data;
	char err[160];

	if (fabric_cmd_payload_check(ev->buf.data, ev->bytes, MLF_PAYLOAD_MAGIC_MODEL, err, sizeof(err)) < 0) {
		log_err("bad model payload from host %s (transfer %llx): %s; skipped", ev->peer,
			(unsigned long long)ev->id, err);
		return;
	}
	pthread_mutex_lock(&f->lock);
	f->ws.models++;
	if (f->get.active && !f->get.done && h->version >= f->get.min_version) {
		if (h->n_floats != f->get.n) {
			f->get.status = -EINVAL;
			set_err(f, "model from %s has %llu floats, get asked for %zu", ev->peer,
				(unsigned long long)h->n_floats, f->get.n);
		} else {
			memcpy(f->get.dst, (const char *)h + MLF_PAYLOAD_HDR, f->get.n * sizeof(float));
			f->get.version = h->version;
			f->get.status = 0;
		}
		f->get.done = 1;
		pthread_cond_broadcast(&f->cond);
	}
	pthread_mutex_unlock(&f->lock);
}

static void on_sent(struct mlf *f, const struct mlfabric_event *ev)
{
	struct out_xfer *o = NULL;

	if (f->chain.active && ev->id == f->chain.fwd) {
		chain_sent(f, ev);
		return;
	}
	pthread_mutex_lock(&f->lock);
	for (struct out_xfer **p = &f->out; *p; p = &(*p)->next)
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
		report_done(f, ev->id, ev->status, ev->bytes, (double)ev->end_ns / 1e9, ev->reason);
	free(o);
}

/*
 * `order`: appends to the dataplane's commit order of the channel. The `order` travels through
 * this endpoint while the data goes straight to the dataplane, so a transfer may be handed over
 * before its `order` is in the dataplane's list; ordered delivery would then wait for it again
 * and hold every later transfer. So every arrival on chan 1/4 is marked done (an ORDER skip) as
 * it is handed over (on_received), and an `order` naming an id already handed over marks it done
 * again right after appending it (for the skip that went out before the ORDER).
 */
static void order_append(struct mlf *f, const struct fabric_cmd *c)
{
	uint64_t late[64];
	int n = 0;

	mlfabric_commit_order(f->dp, c->chan, c->ids, c->n_ids, 0);
	for (int i = 0; i < c->n_ids; i++)
		for (unsigned k = 0; k < RECEIVED_MAX && k < f->n_received; k++)
			if (f->received[k].id == c->ids[i] && f->received[k].chan == c->chan) {
				if (n == 64) {
					mlfabric_order_skip(f->dp, c->chan, late, n);
					n = 0;
				}
				late[n++] = c->ids[i];
				log_debug("transfer %llx arrived before its order on channel %u",
					  (unsigned long long)c->ids[i], c->chan);
				break;
			}
	if (n)
		mlfabric_order_skip(f->dp, c->chan, late, n);
}

static void on_received(struct mlf *f, struct mlfabric_event *ev)
{
	struct mlfabric_buf b;
	uint64_t id;

	if ((ev->chan == 1 || ev->chan == 4) && f->mode != MLF_MODE_DIRECT) {
		/* handed over: if its `order` reached the dataplane only after it was delivered (the
		 * data overtook it), the dataplane must not wait for it again (see order_append) */
		f->received[f->n_received % RECEIVED_MAX].id = ev->id;
		f->received[f->n_received++ % RECEIVED_MAX].chan = ev->chan;
		mlfabric_order_skip(f->dp, ev->chan, &ev->id, 1);
	}
	if (ev->status) {
		log_warn("incoming transfer %llx from %s on channel %u failed: %s", (unsigned long long)ev->id,
			 ev->peer[0] ? ev->peer : "?", ev->chan, ev->reason);
		return;
	}
	switch (ev->chan) {
	case 1:
		if (f->on_update && f->chain.active)
			chain_hold(f, ev);
		else if (f->on_update)
			server_update(f, ev);
		break;
	case 4:
		if (f->on_update && f->role == ROLE_REPLICA)
			server_update(f, ev);
		else
			log_warn("transfer %llx from %s on the replica channel: %s is no replica; ignored",
				 (unsigned long long)ev->id, ev->peer, f->app);
		break;
	case 2:
		if (f->role == ROLE_AGGREGATOR)
			agg_input(f, ev);
		break;
	case 3:
		worker_model(f, ev);
		break;
	case 5:
		if (f->role == ROLE_SERVER && snapshot(f, &b) == 0)
			send_buf(f, &b, b.size, ev->peer, 3, 0, 0, NULL, 0, &id);
		break;
	default:
		log_warn("transfer %llx from %s on unused channel %u ignored", (unsigned long long)ev->id,
			 ev->peer, ev->chan);
	}
}

/* `replica`: chain replication to host @c->dst from the next applied transfer on ("" = none). */
static void cmd_replica(struct mlf *f, const struct fabric_cmd *c)
{
	if (f->role != ROLE_SERVER) {
		log_warn("%s: replica command for a non-server endpoint; ignored", f->app);
		return;
	}
	if (c->dst[0] && (!c->chain || cluster_find(&f->cl, c->dst) < 0)) {
		log_err("%s: replica command: %s; ignored", f->app,
			c->chain ? "unknown replica host" : "only chain replication is forwarded by the server");
		return;
	}
	snprintf(f->chain_host, sizeof(f->chain_host), "%s", c->dst);
	log_info("%s: %s%s", f->app, c->dst[0] ? "chain replication to " : "no chain replica", c->dst);
}

/* `promote`: the replica becomes the server (chan 1, pulls, commits as the server); answers `promoted`. */
static void cmd_promote(struct mlf *f, const struct fabric_cmd *c)
{
	double hn = 0;
	int64_t v;
	int rc;

	if (f->role != ROLE_REPLICA) {
		log_err("%s: promote command for a non-replica endpoint; ignored", f->app);
		ctl(f, json_pack("{s:s, s:s}", "type", "error", "reason", "promote: this endpoint is no replica"));
		return;
	}
	if ((rc = mlfabric_listen(f->dp, 1)) < 0) {
		log_err("%s: promote: cannot receive on channel 1: %s", f->app, strerror(-rc));
		ctl(f, json_pack("{s:s, s:s}", "type", "error", "reason", "promote: the dataplane refused channel 1"));
		return;
	}
	if (f->get_state) {
		float *w = malloc(2 * f->n_floats * sizeof(float));
		if (w) {
			f->get_state(f->state_arg, w, w + f->n_floats, f->n_floats);
			hn = norm2(w + f->n_floats, f->n_floats);
		}
		free(w);
	}
	pthread_mutex_lock(&f->lock);
	f->role = ROLE_SERVER;
	snprintf(f->app, sizeof(f->app), "%s@%s", role_names[ROLE_SERVER], f->cl.hosts[f->me].name);
	v = f->version;
	pthread_mutex_unlock(&f->lock);
	if (v != c->version)
		log_warn("%s: promoted at version %lld; the scheduler last saw version %lld", f->app,
			 (long long)v, (long long)c->version);
	log_info("%s: promoted from replica: serving version %lld (history norm %g)", f->app, (long long)v, hn);
	ctl(f, json_pack("{s:s, s:I, s:f}", "type", "promoted", "version", (json_int_t)v, "history_norm", hn));
}

/* `snapshot` (verification mode): <dir>/<role>-<tag>.f32 and a snapshots.jsonl line; newest SNAP_KEEP kept. */
static void cmd_snapshot(struct mlf *f, uint64_t tag)
{
	int r = f->role == ROLE_SERVER ? 0 : f->role == ROLE_REPLICA ? 1 : -1;
	const char *role = role_names[f->role];
	char path[300], old[300];
	float *w;
	int64_t v;
	FILE *o;
	int rc;

	if (!f->verify_dir[0] || r < 0)
		return;
	if (!f->get_state && !f->on_request) {
		log_warn("%s: snapshot %llu: no state or request callback; skipped", f->app, (unsigned long long)tag);
		return;
	}
	if (!(w = malloc(2 * f->n_floats * sizeof(float)))) {
		log_err("%s: snapshot %llu: no memory for %zu floats", f->app, (unsigned long long)tag, 2 * f->n_floats);
		return;
	}
	v = f->get_state ? f->get_state(f->state_arg, w, w + f->n_floats, f->n_floats)
			 : f->on_request(f->arg, w, f->n_floats);
	snprintf(path, sizeof(path), "%s/%s-%llu.f32", f->verify_dir, role, (unsigned long long)tag);
	rc = fabric_verify_write(path, w, f->n_floats, v);
	free(w);
	if (rc < 0) {
		log_err("%s: snapshot %llu: cannot write %s: %s", f->app, (unsigned long long)tag, path, strerror(-rc));
		return;
	}
	if (!f->n_snaps[r] || f->snap_tags[r][(f->n_snaps[r] - 1) % SNAP_KEEP] != tag) {
		if (f->n_snaps[r] >= SNAP_KEEP) {
			snprintf(old, sizeof(old), "%s/%s-%llu.f32", f->verify_dir, role,
				 (unsigned long long)f->snap_tags[r][f->n_snaps[r] % SNAP_KEEP]);
			unlink(old);
		}
		f->snap_tags[r][f->n_snaps[r]++ % SNAP_KEEP] = tag;
	}
	snprintf(old, sizeof(old), "%s/snapshots.jsonl", f->verify_dir);
	if (!(o = fopen(old, "a"))) {
		log_err("%s: snapshot %llu: cannot append to %s: %s", f->app, (unsigned long long)tag, old, strerror(errno));
		return;
	}
	json_t *line = json_pack("{s:s, s:s, s:I, s:I, s:f, s:s}", "role", role, "host", f->cl.hosts[f->me].name,
				 "tag", (json_int_t)tag, "version", (json_int_t)v, "t", now_s(), "file", path);
	char *text = line ? json_dumps(line, JSON_COMPACT) : NULL;
	if (text)
		fprintf(o, "%s\n", text);
	free(text);
	json_decref(line);
	fclose(o);
}

static void on_ctl(struct mlf *f, const char *text)
{
	struct fabric_cmd c;
	char err[256];

	if (fabric_cmd_parse(text, &c, err, sizeof(err)) < 0) {
		log_err("%s: %s", f->app, err);
		ctl(f, json_pack("{s:s, s:s}", "type", "error", "reason", err));
		return;
	}
	switch (c.kind) {
	case FABRIC_CMD_REGISTERED:
	case FABRIC_CMD_ERROR:
		pthread_mutex_lock(&f->lock);
		if (c.kind == FABRIC_CMD_REGISTERED) {
			f->reg_state = 1;
		} else if (f->reg_state <= 0) {
			f->reg_state = c.no_scheduler ? -ENOTCONN : -EINVAL;
			f->reg_no_sched = c.no_scheduler;
			snprintf(f->reg_reason, sizeof(f->reg_reason), "%s", c.reason);
		}
		pthread_cond_broadcast(&f->cond);
		pthread_mutex_unlock(&f->lock);
		if (c.kind == FABRIC_CMD_ERROR)
			log_warn("%s: refused: %s", f->app, c.reason);
		break;
	case FABRIC_CMD_SCHEDULER_LOST: {
		struct held_update *held;
		pthread_mutex_lock(&f->lock);
		f->sched_lost = 1;
		held = f->held; /* never commanded now: a new scheduler knows nothing of them */
		f->held = NULL;
		pthread_cond_broadcast(&f->cond);
		pthread_mutex_unlock(&f->lock);
		log_warn("%s: the dataplane lost the scheduler connection", f->app);
		while (held) {
			struct held_update *u = held;
			held = u->next;
			log_warn("%s: update %llu dropped: scheduler lost before it was commanded", f->app,
				 (unsigned long long)u->id);
			pthread_mutex_lock(&f->lock);
			f->ws.dropped++;
			pthread_mutex_unlock(&f->lock);
			mlfabric_buf_free(&u->buf);
			free(u);
		}
		break;
	}
	case FABRIC_CMD_SEND:
		cmd_send(f, &c);
		break;
	case FABRIC_CMD_DROP:
		cmd_drop(f, &c);
		break;
	case FABRIC_CMD_RELEASE:
		cmd_release(f, &c);
		break;
	case FABRIC_CMD_REPLICA:
		cmd_replica(f, &c);
		break;
	case FABRIC_CMD_PROMOTE:
		cmd_promote(f, &c);
		break;
	case FABRIC_CMD_SERVER_MOVED:
		cmd_server_moved(f, &c);
		break;
	case FABRIC_CMD_SNAPSHOT:
		cmd_snapshot(f, c.id);
		break;
	case FABRIC_CMD_AGGREGATE:
		cmd_aggregate(f, &c);
		break;
	case FABRIC_CMD_ORDER:
		order_append(f, &c);
		break;
	case FABRIC_CMD_SKIP:
		pthread_mutex_lock(&f->lock);
		for (int i = 0; i < c.n_ids; i++)
			f->skipped[f->n_skipped++ % SKIPPED_MAX] = c.ids[i];
		pthread_mutex_unlock(&f->lock);
		if (c.chan == 2)
			agg_progress(f); /* aggregator inputs that will never arrive: aggregate the rest now */
		else
			mlfabric_order_skip(f->dp, c.chan, c.ids, c.n_ids);
		break;
	}
	fabric_cmd_free(&c);
}

static void run_direct(struct mlf *f)
{
	struct direct_send *d;
	uint64_t id;

	for (;;) {
		pthread_mutex_lock(&f->lock);
		d = f->direct;
		if (d)
			f->direct = d->next;
		pthread_mutex_unlock(&f->lock);
		if (!d)
			return;
		if (send_buf(f, &d->buf, d->bytes, d->dst, d->chan, d->id, 0, NULL, 0, &id) == 0 && d->chan == 1) {
			pthread_mutex_lock(&f->lock);
			track_out(f, id, 1, 0);
			pthread_mutex_unlock(&f->lock);
		}
		free(d);
	}
}

static void *event_thread(void *arg)
{
	struct mlf *f = arg;
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
				on_ctl(f, ev.ctl);
			else if (ev.kind == MLFABRIC_EV_SENT)
				on_sent(f, &ev);
			else if (ev.kind == MLFABRIC_EV_RECEIVED)
				on_received(f, &ev);
			else
				log_warn("dataplane refused a request: %s", ev.reason);
			mlfabric_event_release(&ev);
		}
		if (rc < 0) {
			log_err("dataplane connection lost: %s", strerror(-rc));
			pthread_mutex_lock(&f->lock);
			f->dead = 1;
			set_err(f, "dataplane of host %s went away", f->cl.hosts[f->me].name);
			pthread_cond_broadcast(&f->cond);
			pthread_mutex_unlock(&f->lock);
			break;
		}
		if (f->role == ROLE_AGGREGATOR)
			agg_progress(f);
	}
	return NULL;
}

/* ---- endpoints --------------------------------------------------------------------------- */

mlf_t *mlf_open(const struct mlf_opts *o, char *err, size_t errlen)
{
	struct mlf *f;
	char sock[256];

	if (!o || !o->cluster || !o->host) {
		snprintf(err, errlen, "mlf_open: cluster and host are required");
		return NULL;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	f->wake[0] = f->wake[1] = -1;
	if (cluster_load(o->cluster, &f->cl, err, errlen) < 0)
		goto fail;
	if ((f->me = cluster_find(&f->cl, o->host)) < 0) {
		snprintf(err, errlen, "%s: no host named '%s'", o->cluster, o->host);
		goto fail;
	}
	f->mode = o->mode;
	f->timeout_s = o->timeout_s > 0 ? o->timeout_s : 10;
	f->agg_timeout_s = o->agg_input_timeout_s > 0 ? o->agg_input_timeout_s : 5;
	if (o->verify_dir && o->verify_dir[0]) {
		if (strlen(o->verify_dir) >= sizeof(f->verify_dir) - 40) {
			snprintf(err, errlen, "verify directory path too long: %s", o->verify_dir);
			goto fail;
		}
		if (mkdir(o->verify_dir, 0755) < 0 && errno != EEXIST) {
			snprintf(err, errlen, "verify directory %s: %s", o->verify_dir, strerror(errno));
			goto fail;
		}
		snprintf(f->verify_dir, sizeof(f->verify_dir), "%s", o->verify_dir);
	}
	if (o->sock)
		snprintf(sock, sizeof(sock), "%s", o->sock);
	else
		snprintf(sock, sizeof(sock), "%s/%s-%s.sock", MLFABRIC_SOCK_DIR, f->cl.name, o->host);
	if (!(f->dp = mlfabric_connect(sock, err, errlen)))
		goto fail;
	if (pipe2(f->wake, O_NONBLOCK | O_CLOEXEC) < 0) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		goto fail;
	}
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->cond, NULL);
	if (pthread_create(&f->thread, NULL, event_thread, f) != 0) {
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
	free(f);
	return NULL;
}

static int wait_until(struct mlf *f, double deadline);

/*
 * A worker's close first waits, at most the endpoint timeout, until every pushed update has
 * been commanded by the scheduler and its transfers have finished (or it was dropped or
 * released): closing at once loses what was planned but not yet sent, i.e. the update at the
 * server and its copy to the replica (which then has to catch up from the server, §3.3).
 * Stops waiting when the scheduler or the dataplane is lost (nothing will be commanded).
 */
static void drain_pushes(struct mlf *f)
{
	double deadline = now_s() + f->timeout_s;
	int held = 0, out = 0;

	pthread_mutex_lock(&f->lock);
	while ((f->held || f->out || f->sending) && !f->dead && !f->sched_lost && now_s() < deadline)
		wait_until(f, deadline);
	for (struct held_update *u = f->held; u; u = u->next)
		held++;
	for (struct out_xfer *o = f->out; o; o = o->next)
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
	if (f->role == ROLE_WORKER && !f->stop)
		drain_pushes(f);
	f->stop = 1;
	wake(f);
	pthread_join(f->thread, NULL);
	pthread_mutex_lock(&f->lock);
	f->dead = 1;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
	while (f->held) {
		struct held_update *u = f->held;
		f->held = u->next;
		mlfabric_buf_free(&u->buf);
		free(u);
	}
	while (f->out) {
		struct out_xfer *o = f->out;
		f->out = o->next;
		free(o);
	}
	while (f->direct) {
		struct direct_send *d = f->direct;
		f->direct = d->next;
		mlfabric_buf_free(&d->buf);
		free(d);
	}
	while (f->cmds) {
		struct agg_cmd *a = f->cmds;
		f->cmds = a->next;
		fabric_cmd_free(&a->c);
		free(a);
	}
	while (f->n_inputs)
		drop_input(f, 0);
	while (f->chain_q) {
		struct queued_ev *q = f->chain_q;
		f->chain_q = q->next;
		mlfabric_event_release(&q->ev);
		free(q);
	}
	json_decref(f->chain.commit);
	mlfabric_close(f->dp);
	close(f->wake[0]);
	close(f->wake[1]);
	cluster_free(&f->cl);
	pthread_mutex_destroy(&f->lock);
	pthread_cond_destroy(&f->cond);
	free(f);
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

void mlf_set_state_callbacks(mlf_t *f, mlf_get_state_cb get_state, mlf_set_state_cb set_state, void *arg)
{
	f->get_state = get_state;
	f->set_state = set_state;
	f->state_arg = arg;
}

/* Waits on the endpoint's condition until @deadline (CLOCK_REALTIME s); 0 or ETIMEDOUT. */
static int wait_until(struct mlf *f, double deadline)
{
	struct timespec ts = { .tv_sec = (time_t)deadline,
			       .tv_nsec = (long)((deadline - (double)(time_t)deadline) * 1e9) };
	return pthread_cond_timedwait(&f->cond, &f->lock, &ts);
}

/* Listens on @chans, names this endpoint @role@host and (scheduled modes) registers @reg. */
static int do_register(struct mlf *f, enum role role, const uint16_t *chans, int n_chans, json_t *reg)
{
	double deadline = now_s() + f->timeout_s, next = 0;
	int rc = 0;

	if (f->role != ROLE_NONE) {
		set_err(f, "endpoint already registered as %s", f->app);
		json_decref(reg);
		return -EINVAL;
	}
	f->role = role;
	snprintf(f->app, sizeof(f->app), "%s@%s", role_names[role], f->cl.hosts[f->me].name);
	for (int i = 0; i < n_chans; i++)
		if ((rc = mlfabric_listen(f->dp, chans[i])) < 0) {
			set_err(f, "dataplane of host %s: %s", f->cl.hosts[f->me].name, strerror(-rc));
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
		double now = now_s();
		if (f->reg_state < 0 && !f->reg_no_sched)
			break;
		if (now >= deadline)
			break;
		if (now >= next) {
			f->reg_state = 0;
			json_incref(reg);
			if ((rc = ctl(f, reg)) < 0)
				break;
			next = now + REGISTER_RETRY_S;
		}
		wait_until(f, next < deadline ? next : deadline);
	}
	if (f->reg_state == 1)
		rc = 0;
	else if (f->dead || rc < 0 || f->reg_no_sched || f->reg_state == 0)
		rc = -ENOTCONN;
	else
		rc = -EINVAL;
	if (rc == -ENOTCONN)
		set_err(f, "%s: not registered within %.1f s: %s", f->app, f->timeout_s,
			f->reg_reason[0] ? f->reg_reason : "no answer from the scheduler");
	else if (rc < 0)
		set_err(f, "%s: registration refused: %s", f->app, f->reg_reason);
	if (rc < 0) {
		f->role = ROLE_NONE; /* the caller may register again (e.g. a replica before its server) */
		f->reg_state = 0;
		f->reg_no_sched = 0;
		f->reg_reason[0] = '\0';
	}
	pthread_mutex_unlock(&f->lock);
	json_decref(reg);
	return rc;
}

int mlf_register_as_worker(mlf_t *f, const char *server)
{
	static const uint16_t chans[] = { 3 };

	if (!server || cluster_find(&f->cl, server) < 0) {
		set_err(f, "register as worker: unknown server host '%s'", server ? server : "(null)");
		return -EINVAL;
	}
	snprintf(f->worker_server, sizeof(f->worker_server), "%s", server);
	return do_register(f, ROLE_WORKER, chans, 1, json_pack("{s:s}", "server", server));
}

int64_t mlf_push(mlf_t *f, const char *server, const float *u, size_t n, double norm, int64_t version)
{
	struct held_update *h;
	struct mlf_payload_hdr *hdr;
	char mapped[APPMSG_NAME_MAX];
	uint64_t id;
	int rc;

	if (!server || cluster_find(&f->cl, server) < 0 || n == 0) {
		set_err(f, "push: %s", n == 0 ? "empty update" : "unknown server host");
		return -EINVAL;
	}
	if (f->dead || f->sched_lost) {
		set_err(f, "push: %s", f->dead ? "dataplane gone" : "scheduler connection lost");
		return -ENOTCONN;
	}
	pthread_mutex_lock(&f->lock);
	server = server_map(f, server, mapped, sizeof(mapped));
	pthread_mutex_unlock(&f->lock);
	h = calloc(1, sizeof(*h));
	if (!h || (rc = mlfabric_buf_alloc(mlf_payload_bytes(n), &h->buf)) < 0) {
		free(h);
		set_err(f, "push: no memory for an update of %zu floats", n);
		return -ENOMEM;
	}
	pthread_mutex_lock(&f->lock);
	id = next_id(f);
	f->ws.pushed++;
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
	snprintf(h->server, sizeof(h->server), "%s", server);
	if (f->mode == MLF_MODE_DIRECT) {
		struct direct_send *d = calloc(1, sizeof(*d));
		if (!d) {
			mlfabric_buf_free(&h->buf);
			free(h);
			return -ENOMEM;
		}
		d->buf = h->buf;
		d->id = id;
		d->bytes = h->bytes;
		d->chan = 1;
		snprintf(d->dst, sizeof(d->dst), "%s", server);
		free(h);
		pthread_mutex_lock(&f->lock);
		struct direct_send **p = &f->direct;
		while (*p)
			p = &(*p)->next;
		*p = d;
		pthread_mutex_unlock(&f->lock);
		wake(f);
		return (int64_t)id;
	}
	pthread_mutex_lock(&f->lock);
	h->next = f->held;
	f->held = h;
	pthread_mutex_unlock(&f->lock);
	rc = ctl(f, json_pack("{s:s, s:I, s:s, s:I, s:I, s:f}", "type", "update", "id", (json_int_t)id,
			      "server", server, "bytes", (json_int_t)h->bytes, "version", (json_int_t)version,
			      "norm", norm));
	if (rc < 0) {
		set_err(f, "push: dataplane socket: %s", strerror(-rc));
		return -ENOTCONN;
	}
	return (int64_t)id;
}

/* Get with a minimum version (MLfabric-S) or any (min_version < 0). */
static int get_model(mlf_t *f, const char *server, float *model, size_t n, int64_t min_version,
		     int64_t *version, double timeout_s)
{
	double wait_s = timeout_s > 0 ? timeout_s : f->timeout_s, deadline = now_s() + wait_s;
	char mapped[APPMSG_NAME_MAX];
	uint64_t pull;
	int rc = 0;

	if (!server || cluster_find(&f->cl, server) < 0 || n == 0) {
		set_err(f, "get: %s", n == 0 ? "empty model" : "unknown server host");
		return -EINVAL;
	}
	pthread_mutex_lock(&f->lock);
	server = server_map(f, server, mapped, sizeof(mapped));
	pull = next_id(f);
	f->get.active = 1;
	f->get.done = 0;
	f->get.dst = model;
	f->get.n = n;
	f->get.min_version = min_version;
	snprintf(f->get.server, sizeof(f->get.server), "%s", server);
	pthread_mutex_unlock(&f->lock);
	if (f->mode == MLF_MODE_DIRECT) {
		struct direct_send *d = calloc(1, sizeof(*d));
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
			pthread_mutex_lock(&f->lock);
			d->next = f->direct;
			f->direct = d;
			pthread_mutex_unlock(&f->lock);
			wake(f);
		}
	} else {
		json_t *m = json_pack("{s:s, s:I, s:s}", "type", "pull", "id", (json_int_t)pull, "server", server);
		if (min_version >= 0)
			json_object_set_new(m, "min_version", json_integer(min_version));
		rc = ctl(f, m);
	}
	pthread_mutex_lock(&f->lock);
	while (rc == 0 && !f->get.done && !f->dead && !f->sched_lost && now_s() < deadline)
		wait_until(f, deadline);
	if (rc < 0)
		set_err(f, "get: cannot ask %s for its model: %s", server, strerror(-rc));
	else if (f->get.done)
		rc = f->get.status;
	else if (f->dead || f->sched_lost)
		rc = -ENOTCONN, set_err(f, "get: %s while waiting for the model of %s",
					 f->dead ? "dataplane gone" : "scheduler connection lost", server);
	else
		rc = -ETIMEDOUT, set_err(f, "get: no model from server %s within %.1f s (pull %llu)", server,
					  wait_s, (unsigned long long)pull);
	if (rc == 0 && version)
		*version = f->get.version;
	f->get.active = 0;
	pthread_mutex_unlock(&f->lock);
	return rc;
}

int mlf_get(mlf_t *f, const char *server, float *model, size_t n, int64_t *version, double timeout_s)
{
	return get_model(f, server, model, n, -1, version, timeout_s);
}

int mlf_allreduce(mlf_t *f, const char *server, const float *u, size_t n, double norm,
		  int64_t version, float *model, int64_t *new_version, double timeout_s)
{
	int workers = 0;
	int64_t id = mlf_push(f, server, u, n, norm, version);

	if (id < 0)
		return (int)id;
	for (int i = 0; i < f->cl.n_hosts; i++)
		workers += !!(f->cl.hosts[i].roles & CLUSTER_ROLE_WORKER);
	return get_model(f, server, model, n, version + (workers ? workers : 1), new_version, timeout_s);
}

void mlf_get_worker_stats(mlf_t *f, struct mlf_worker_stats *s)
{
	pthread_mutex_lock(&f->lock);
	*s = f->ws;
	pthread_mutex_unlock(&f->lock);
}

int mlf_register_as_server(mlf_t *f, const struct mlf_params *p, size_t n, int64_t version0,
			   mlf_update_cb on_update, mlf_request_cb on_request, void *arg)
{
	static const uint16_t chans[] = { 1, 5 };

	if (!p || !on_update || !on_request || n == 0 || p->tau_max < 0 || p->momentum < 0 ||
	    p->momentum >= 1 || p->n_workers < 0) {
		set_err(f, "register as server: bad parameters (need callbacks, n > 0, tau_max >= 0, "
			   "momentum in [0, 1), n_workers >= 0)");
		return -EINVAL;
	}
	f->on_update = on_update;
	f->on_request = on_request;
	f->arg = arg;
	f->n_floats = n;
	f->version = version0;
	f->params = *p;
	return do_register(f, ROLE_SERVER, chans, f->mode == MLF_MODE_DIRECT ? 2 : 1,
			   json_pack("{s:s, s:I, s:I, s:I, s:I, s:f, s:i}", "mode",
				     f->mode == MLF_MODE_SYNC ? "sync" : "async", "n_floats", (json_int_t)n,
				     "bytes", (json_int_t)mlf_payload_bytes(n), "version", (json_int_t)version0,
				     "tau_max", (json_int_t)p->tau_max, "momentum", p->momentum,
				     "n_workers", p->n_workers));
}

int mlf_register_as_replica(mlf_t *f, const char *server, const struct mlf_params *p, size_t n,
			    int64_t version0, enum mlf_replication replication, mlf_update_cb on_update,
			    mlf_request_cb on_request, void *arg)
{
	static const uint16_t chans[] = { 4 };

	if (!p || !on_update || !on_request || n == 0 || !server || cluster_find(&f->cl, server) < 0 ||
	    p->div_max < 0 || p->momentum < 0 || p->momentum >= 1 ||
	    (replication != MLF_REPL_MLFABRIC && replication != MLF_REPL_CHAIN)) {
		set_err(f, "register as replica: bad parameters (need callbacks, n > 0, div_max >= 0, momentum "
			   "in [0, 1), replication mlfabric or chain) or unknown server '%s'", server ? server : "(null)");
		return -EINVAL;
	}
	f->on_update = on_update;
	f->on_request = on_request;
	f->arg = arg;
	f->n_floats = n;
	f->version = version0;
	f->params = *p;
	f->replication = replication;
	return do_register(f, ROLE_REPLICA, chans, 1,
			   json_pack("{s:s, s:f, s:s, s:I, s:I, s:I, s:f}", "server", server, "div_max", p->div_max,
				     "replication", replication == MLF_REPL_CHAIN ? "chain" : "mlfabric",
				     "n_floats", (json_int_t)n, "bytes", (json_int_t)mlf_payload_bytes(n),
				     "version", (json_int_t)version0, "momentum", p->momentum));
}

int mlf_register_as_aggregator(mlf_t *f)
{
	static const uint16_t chans[] = { 2 };

	return do_register(f, ROLE_AGGREGATOR, chans, 1, json_object());
}

void mlf_get_aggregator_stats(mlf_t *f, struct mlf_aggregator_stats *s)
{
	pthread_mutex_lock(&f->lock);
	*s = f->as;
	pthread_mutex_unlock(&f->lock);
}

int mlf_mode_parse(const char *name, enum mlf_mode *mode)
{
	if (!strcasecmp(name, "mlfabric-a"))
		*mode = MLF_MODE_ASYNC;
	else if (!strcasecmp(name, "mlfabric-s"))
		*mode = MLF_MODE_SYNC;
	else if (!strcasecmp(name, "async"))
		*mode = MLF_MODE_DIRECT;
	else
		return -EINVAL;
	return 0;
}
