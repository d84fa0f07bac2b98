/* fabric_core.c - an endpoint's core: open/close, the event thread and its dispatch to the role ops, transfer commands, registration. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
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

void fabric_core_set_err(struct mlf *f, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(f->err, sizeof(f->err), fmt, ap);
	va_end(ap);
}

void fabric_core_wake(struct mlf *f)
{
	char c = 1;
	ssize_t rc = write(f->wake[1], &c, 1);
	(void)rc;
}

int fabric_core_ctl(struct mlf *f, json_t *msg)
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

json_t *fabric_core_pull_msg(const struct fabric_get *g)
{
	json_t *m = json_pack("{s:s, s:I, s:s}", "type", "pull", "id", (json_int_t)g->pull,
			      "server", g->server);

	if (m && g->min_version >= 0)
		json_object_set_new(m, "min_version", json_integer(g->min_version));
	if (m && g->after)
		json_object_set_new(m, "after", json_integer((json_int_t)g->after));
	return m;
}

uint64_t fabric_core_next_id(struct mlf *f)
{
	return ((uint64_t)(f->me + 1) << 40) | (++f->seq & FABRIC_SEQ_MASK);
}

/* The role's ops, none before a registration (or after a failed one). */
static const struct fabric_role_ops *role_ops(const struct mlf *f)
{
	return f->role != FABRIC_ROLE_NONE ? f->ops : NULL;
}

/* ---- transfers ----------------------------------------------------------------------------- */

void fabric_core_track_out(struct mlf *f, uint64_t xfer, int is_update, int to_agg)
{
	struct fabric_out *o = calloc(1, sizeof(*o));

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

void fabric_core_report_done(struct mlf *f, uint64_t xfer, int status, uint64_t bytes, double t_start, double t,
			     const char *reason)
{
	if (f->mode == MLF_MODE_DIRECT)
		return;
	json_t *m = json_pack("{s:s, s:I, s:i, s:I, s:f, s:s}", "type", "done", "xfer", (json_int_t)xfer,
			      "status", status, "bytes", (json_int_t)bytes, "t", t, "reason", reason);
	if (m && t_start > 0)
		json_object_set_new(m, "t_start", json_real(t_start));
	fabric_core_ctl(f, m);
}

int fabric_core_send_buf(struct mlf *f, struct mlfabric_buf *b, uint64_t bytes, const char *dst, uint16_t chan,
			 uint64_t xfer, double start, const struct appmsg_step *steps, int n_steps, uint64_t *id)
{
	int rc = fabric_core_send_shared(f, b, bytes, dst, chan, xfer, start, steps, n_steps, id);

	mlfabric_buf_free(b);
	return rc;
}

int fabric_core_send_shared(struct mlf *f, const struct mlfabric_buf *b, uint64_t bytes, const char *dst,
			    uint16_t chan, uint64_t xfer, double start, const struct appmsg_step *steps,
			    int n_steps, uint64_t *id)
{
	struct mlfabric_send req = { .dst = dst, .buf = b, .bytes = bytes, .id = xfer, .chan = chan,
				     .steps = n_steps ? steps : NULL, .n_steps = n_steps };
	char err[256];
	int rc;

	if (start > clock_real_s())
		req.start_ns = (uint64_t)(start * 1e9);
	rc = mlfabric_send(f->dp, &req, id, err, sizeof(err));
	if (rc < 0) {
		pthread_mutex_lock(&f->lock);
		fabric_core_set_err(f, "transfer %llx to %s refused: %s", (unsigned long long)xfer, dst, err);
		pthread_mutex_unlock(&f->lock);
		log_warn("transfer %llx to %s refused: %s", (unsigned long long)xfer, dst, err);
	}
	return rc;
}

int fabric_core_was_skipped(const struct mlf *f, uint64_t id)
{
	for (unsigned i = 0; i < FABRIC_SKIPPED_MAX && i < f->n_skipped; i++)
		if (f->skipped[i] == id)
			return 1;
	return 0;
}

void fabric_core_queue_direct(struct mlf *f, struct fabric_direct *d, int front)
{
	struct fabric_direct **p = &f->direct;

	pthread_mutex_lock(&f->lock);
	while (!front && *p)
		p = &(*p)->next;
	d->next = *p;
	*p = d;
	pthread_mutex_unlock(&f->lock);
	fabric_core_wake(f);
}

/* Takes held update @id off the list (@keep: leaves it there); NULL when not held. */
static struct fabric_held *held_take(struct mlf *f, uint64_t id, int keep)
{
	struct fabric_held **p, *u = NULL;

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

/*
 * The payload of a `send` what:"model" or "state" in @b. A batch's model copies share one
 * snapshot (§10.3: every pull of a batch is answered with one version, and a distributor's
 * forwards are byte-identical to it): the first `send` of batch tag c->batch takes it, later
 * ones re-send it (*@shared: @b is that kept snapshot, not to be released) until the one
 * without `keep`, which takes it over. 0, or -EINVAL when the role has no payload.
 */
static int send_payload(struct mlf *f, const struct fabric_cmd *c, struct mlfabric_buf *b, int *shared)
{
	const struct fabric_role_ops *ops = role_ops(f);
	struct fabric_model_snap *sn = &f->msnap;

	*shared = 0;
	if (c->what_model && c->batch > 0 && sn->buf.data && sn->batch == c->batch &&
	    clock_real_s() - sn->t < f->timeout_s) {
		*b = sn->buf;
		*shared = c->keep;
		if (!c->keep)
			sn->buf = (struct mlfabric_buf){ .fd = -1 };
		return 0;
	}
	if (c->what_model && sn->buf.data)
		mlfabric_buf_free(&sn->buf); /* another batch's: its last copy never came */
	if (!ops || !ops->payload || ops->payload(f, c->what_state, b) < 0)
		return -EINVAL;
	if (c->what_model && c->label >= 0) /* a shard of a pull: the version all shards carry */
		((struct mlf_payload_hdr *)b->data)->version = c->label;
	if (c->what_model && c->batch > 0 && c->keep) {
		*sn = (struct fabric_model_snap){ .buf = *b, .batch = c->batch, .t = clock_real_s() };
		*shared = 1;
	}
	return 0;
}

/*
 * Shard [c->shard_off, + c->shard_n) of held update @u (sharded servers, §10.2) in a fresh
 * buffer @b: the update's header (parts, version) with n_floats = shard_n and offset =
 * shard_off, then the slice. 0, -EINVAL (the range is not inside the update) or -ENOMEM, with
 * @reason set.
 */
static int shard_copy(struct mlf *f, const struct fabric_cmd *c, const struct fabric_held *u,
		      struct mlfabric_buf *b, char *reason, size_t cap)
{
	const struct mlf_payload_hdr *h = u->buf.data;
	struct mlf_payload_hdr *sh;

	if (u->bytes < MLF_PAYLOAD_HDR || (uint64_t)c->shard_off > h->n_floats ||
	    c->shard_n > h->n_floats - (uint64_t)c->shard_off) {
		snprintf(reason, cap, "%s: shard [%lld, +%llu) of update %llu is outside its %llu floats",
			 f->app, (long long)c->shard_off, (unsigned long long)c->shard_n,
			 (unsigned long long)c->id, (unsigned long long)h->n_floats);
		return -EINVAL;
	}
	if (mlfabric_buf_alloc(mlf_payload_bytes(c->shard_n), b) < 0) {
		snprintf(reason, cap, "%s: no memory for a shard of update %llu", f->app,
			 (unsigned long long)c->id);
		return -ENOMEM;
	}
	memcpy(b->data, h, MLF_PAYLOAD_HDR);
	sh = b->data;
	sh->n_floats = c->shard_n;
	sh->offset = h->offset + (uint64_t)c->shard_off;
	memcpy((char *)b->data + MLF_PAYLOAD_HDR,
	       (const char *)h + MLF_PAYLOAD_HDR + 4 * (uint64_t)c->shard_off, 4 * c->shard_n);
	return 0;
}

static void cmd_send_one(struct mlf *f, struct fabric_cmd *c)
{
	struct mlfabric_buf b;
	uint64_t bytes, id;
	char reason[APPMSG_REASON_MAX];
	int shared = 0, rc;

	if (c->what_model || c->what_state) {
		if (send_payload(f, c, &b, &shared) < 0) {
			snprintf(reason, sizeof(reason), "%s cannot send a %s (%s %llu)", f->app,
				 c->what_model ? "model" : "state", c->what_model ? "pull" : "id",
				 (unsigned long long)c->id);
			log_warn("send command: %s", reason);
			fabric_core_report_done(f, c->xfer, -EINVAL, 0, 0, clock_real_s(), reason);
			return;
		}
		bytes = b.size;
	} else {
		struct fabric_held *u = held_take(f, c->id, c->keep);
		if (!u) {
			snprintf(reason, sizeof(reason), "%s holds no update %llu", f->app, (unsigned long long)c->id);
			log_warn("send command: %s", reason);
			fabric_core_report_done(f, c->xfer, -ENOENT, 0, 0, clock_real_s(), reason);
			return;
		}
		bytes = u->bytes;
		if (c->shard_off >= 0) {
			/* one shard of the update (§10.2): its slice in a buffer of its own */
			int rc2 = shard_copy(f, c, u, &b, reason, sizeof(reason));
			if (!c->keep) {
				mlfabric_buf_free(&u->buf);
				free(u);
			}
			if (rc2 < 0) {
				log_err("send command: %s", reason);
				fabric_core_report_done(f, c->xfer, rc2, 0, 0, clock_real_s(), reason);
				return;
			}
			bytes = b.size;
		} else if (c->keep) {
			/* the dataplane owns a buffer once sent: the copy goes, the update stays held */
			if (mlfabric_buf_alloc(bytes, &b) < 0) {
				snprintf(reason, sizeof(reason), "%s: no memory for a copy of update %llu", f->app,
					 (unsigned long long)c->id);
				log_err("send command: %s", reason);
				fabric_core_report_done(f, c->xfer, -ENOMEM, 0, 0, clock_real_s(), reason);
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
	if (shared)
		rc = fabric_core_send_shared(f, &b, bytes, c->dst, c->chan, c->xfer, c->start, c->steps,
					     c->n_steps, &id);
	else
		rc = fabric_core_send_buf(f, &b, bytes, c->dst, c->chan, c->xfer, c->start, c->steps,
					  c->n_steps, &id);
	if (rc < 0) {
		fabric_core_report_done(f, c->xfer, -EINVAL, bytes, 0, clock_real_s(), f->err);
		return;
	}
	pthread_mutex_lock(&f->lock);
	fabric_core_track_out(f, id, !c->what_model && !c->what_state, c->chan == 2);
	pthread_mutex_unlock(&f->lock);
}

/* `send`: cmd_send_one, counted in f->sending so that mlf_close's drain does not see the update
 * between leaving the held list and entering the list of outgoing transfers. */
void fabric_core_send(struct mlf *f, struct fabric_cmd *c)
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
	struct fabric_held *u = held_take(f, c->id, 0);

	if (!u) {
		log_warn("release command: no update %llu held", (unsigned long long)c->id);
		return;
	}
	mlfabric_buf_free(&u->buf);
	free(u);
}

static void cmd_drop(struct mlf *f, const struct fabric_cmd *c)
{
	struct fabric_held **p, *u = NULL;

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

/* ---- event thread -------------------------------------------------------------------------- */

static void on_sent(struct mlf *f, const struct mlfabric_event *ev)
{
	const struct fabric_role_ops *ops = role_ops(f);
	struct fabric_out *o = NULL;

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
		for (unsigned k = 0; k < FABRIC_RECEIVED_MAX && k < f->n_received; k++)
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
	const struct fabric_role_ops *ops = role_ops(f);

	if ((ev->chan == 1 || ev->chan == 4) && f->mode != MLF_MODE_DIRECT) {
		/* handed over: if its `order` reached the dataplane only after it was delivered (the
		 * data overtook it), the dataplane must not wait for it again (see order_append) */
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

/* A role command the endpoint's role does not handle: logged (and answered for `promote`). */
static void role_cmd_refused(struct mlf *f, const struct fabric_cmd *c)
{
	switch (c->kind) {
	case FABRIC_CMD_REPLICA:
		log_warn("%s: replica command for a non-server endpoint; ignored", f->app);
		break;
	case FABRIC_CMD_PROMOTE:
		log_err("%s: promote command for a non-replica endpoint; ignored", f->app);
		fabric_core_ctl(f, json_pack("{s:s, s:s}", "type", "error", "reason",
					     "promote: this endpoint is no replica"));
		break;
	case FABRIC_CMD_SERVER_MOVED:
		log_warn("%s: server_moved command for a non-worker endpoint; ignored", f->app);
		break;
	case FABRIC_CMD_AGGREGATE:
		log_warn("%s: aggregate %llu for a non-aggregator endpoint; ignored", f->app,
			 (unsigned long long)c->id);
		break;
	case FABRIC_CMD_FORWARD: /* failed at once: the scheduler answers the pull again */
		log_warn("%s: forward %llx for a non-worker endpoint; refused", f->app,
			 (unsigned long long)c->xfer);
		fabric_core_report_done(f, c->xfer, -EINVAL, 0, 0, clock_real_s(), "forward: no worker endpoint");
		break;
	default: /* `snapshot`: only servers and replicas write one */
		break;
	}
}

/*
 * The dataplane lost its scheduler. Updates not yet commanded stay held and a waiting get keeps
 * waiting (until its timeout): the dataplane reconnects, and a restarted scheduler is told about
 * them by scheduler_back (docs/scheduler.md "Restart"). What was commanded goes on.
 */
static void scheduler_lost(struct mlf *f)
{
	int n = 0;

	pthread_mutex_lock(&f->lock);
	f->sched_lost = 1;
	for (struct fabric_held *u = f->held; u; u = u->next)
		n++;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
	log_warn("%s: the dataplane lost the scheduler connection; %d update(s) held until a "
		 "scheduler is back", f->app, n);
}

/*
 * A (restarted) scheduler welcomed the dataplane: register again (a server or replica at its
 * current version) and announce every held update and the waiting get's pull again, in push
 * order. Sent outside the lock; a push racing with this is announced by exactly one of the two
 * (both decide under f->lock).
 */
/* The accepted registration again, a server's or replica's at its current version (f->lock held). */
static json_t *rereg_msg(struct mlf *f)
{
	json_t *reg = f->reg_msg ? json_deep_copy(f->reg_msg) : NULL;

	if (reg && (f->role == FABRIC_ROLE_SERVER || f->role == FABRIC_ROLE_REPLICA))
		json_object_set_new(reg, "version", json_integer(f->s.version));
	return reg;
}

/* A registration sent again to a restarted scheduler was refused (a replica registering before
 * its server did): send it again every 0.25 s for up to 10 s. */
#define REREG_RETRY_S 0.25
#define REREG_FOR_S 10.0

static void rereg_retry(struct mlf *f)
{
	json_t *reg = NULL;
	double now = clock_real_s();

	pthread_mutex_lock(&f->lock);
	if (f->rereg_pending && f->rereg_at > 0 && now >= f->rereg_at && !f->sched_lost) {
		f->rereg_at = 0;
		if (now > f->rereg_until) {
			f->rereg_pending = 0;
			log_err("%s: not registered again with the restarted scheduler within %.0f s: %s",
				f->app, REREG_FOR_S, f->reg_reason[0] ? f->reg_reason : "no answer");
		} else {
			reg = rereg_msg(f);
		}
	}
	pthread_mutex_unlock(&f->lock);
	if (reg)
		fabric_core_ctl(f, reg);
}

static void scheduler_back(struct mlf *f)
{
	json_t *msgs = json_array(), *reg = NULL, *m;
	struct fabric_held *u;
	size_t i;
	int n = 0;

	pthread_mutex_lock(&f->lock);
	f->sched_lost = 0;
	/* ESync queries asked of the scheduler that went away get no answer: the State Server's
	 * timeout (mlf_state_wait) counts from its return, not from those */
	if (f->w.state.pending_s)
		f->w.state.pending_s = clock_real_s();
	reg = rereg_msg(f);
	f->rereg_pending = reg != NULL;
	f->rereg_at = 0;
	f->rereg_until = clock_real_s() + REREG_FOR_S;
	for (u = f->held; u; u = u->next, n++)
		json_array_insert_new(msgs, 0, json_pack("{s:s, s:I, s:s, s:I, s:I, s:f}", "type", "update",
							 "id", (json_int_t)u->id, "server", u->server,
							 "bytes", (json_int_t)u->bytes,
							 "version", (json_int_t)u->version, "norm", u->norm));
	for (int i = 0; f->role == FABRIC_ROLE_WORKER && i < FABRIC_GETS_MAX; i++)
		if (f->w.get[i].active && !f->w.get[i].done)
			json_array_append_new(msgs, fabric_core_pull_msg(&f->w.get[i]));
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
	log_info("%s: a scheduler is back: registering again, %d held update(s) announced again",
		 f->app, n);
	if (f->role == FABRIC_ROLE_SERVER || f->role == FABRIC_ROLE_REPLICA) {
		/* The lost scheduler's commit orders (chan 1, 4) may name transfers it never
		 * commanded: killed between an `order` and its `send`s, or the sender's update
		 * still held and announced again above (the new scheduler plans it afresh, maybe
		 * into an aggregate). Such an id would hold every later arrival for the dataplane's
		 * hold timeout (30 s). So the orders are emptied before registering: what the lost
		 * scheduler did command is applied as it arrives (a replica catches up from the
		 * server's state anyway), and the new scheduler orders only what it plans. */
		uint64_t none = 0;
		for (uint16_t chan = 1; chan <= 4; chan += 3)
			if (mlfabric_commit_order(f->dp, chan, &none, 0, 1) < 0)
				log_warn("%s: cannot empty the commit order of channel %u", f->app, chan);
	}
	if (reg)
		fabric_core_ctl(f, reg);
	json_array_foreach(msgs, i, m)
		fabric_core_ctl(f, json_incref(m));
	json_decref(msgs);
}

static void on_ctl(struct mlf *f, const char *text)
{
	const struct fabric_role_ops *ops = role_ops(f);
	struct fabric_cmd c;
	char err[256];

	if (fabric_cmd_parse(text, &c, err, sizeof(err)) < 0) {
		log_err("%s: %s", f->app, err);
		fabric_core_ctl(f, json_pack("{s:s, s:s}", "type", "error", "reason", err));
		return;
	}
	switch (c.kind) {
	case FABRIC_CMD_REGISTERED:
	case FABRIC_CMD_ERROR:
		pthread_mutex_lock(&f->lock);
		if (c.kind == FABRIC_CMD_REGISTERED) {
			f->reg_state = 1;
			f->rereg_pending = 0;
		} else if (f->rereg_pending) {
			f->rereg_at = clock_real_s() + REREG_RETRY_S; /* try the registration again */
			snprintf(f->reg_reason, sizeof(f->reg_reason), "%s", c.reason);
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
	case FABRIC_CMD_SCHEDULER_LOST:
		scheduler_lost(f);
		break;
	case FABRIC_CMD_SCHEDULER_BACK:
		scheduler_back(f);
		break;
	case FABRIC_CMD_SEND:
		/* a model copy at a set version (a shard's, §10.2; a fresh pull's, docs/scheduler.md
		 * "Fresh pulls") may have to wait for it */
		if (c.what_model && c.at_version >= 0 && ops && ops->command && ops->command(f, &c))
			break;
		fabric_core_send(f, &c);
		break;
	case FABRIC_CMD_DROP:
		cmd_drop(f, &c);
		break;
	case FABRIC_CMD_RELEASE:
		cmd_release(f, &c);
		break;
	case FABRIC_CMD_ORDER:
		order_append(f, &c);
		break;
	case FABRIC_CMD_SKIP:
		pthread_mutex_lock(&f->lock);
		for (int i = 0; i < c.n_ids; i++)
			f->skipped[f->n_skipped++ % FABRIC_SKIPPED_MAX] = c.ids[i];
		pthread_mutex_unlock(&f->lock);
		if (c.chan != 2)
			mlfabric_order_skip(f->dp, c.chan, c.ids, c.n_ids);
		else if (ops && ops->progress)
			ops->progress(f); /* aggregator inputs that will never arrive: aggregate the rest now */
		break;
	case FABRIC_CMD_REPLICA:
	case FABRIC_CMD_PROMOTE:
	case FABRIC_CMD_SERVER_MOVED:
	case FABRIC_CMD_SNAPSHOT:
	case FABRIC_CMD_SYNC_STEP:
	case FABRIC_CMD_AGGREGATE:
	case FABRIC_CMD_FORWARD:
	case FABRIC_CMD_STATE:
	case FABRIC_CMD_COMMIT_RATE:
		if (!ops || !ops->command || !ops->command(f, &c))
			role_cmd_refused(f, &c);
		break;
	}
	fabric_cmd_free(&c);
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
		if (fabric_core_send_buf(f, &d->buf, d->bytes, d->dst, d->chan, d->id, 0, NULL, 0, &id) == 0 &&
		    d->chan == 1) {
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
		if ((ops = role_ops(f)) && ops->progress)
			ops->progress(f);
		rereg_retry(f);
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
