/* fabric_core_cmd.c - the commands that reach an endpoint from the scheduler or its dataplane
 * (docs/control.md), parsed by fabric_cmd_parse and carried out here: the transfer commands
 * (send, drop, release, order, skip), the scheduler's loss and return (re-registering and
 * announcing held updates again), and the hand-over of role commands to the role's ops. Called
 * by the event thread (fabric_core.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "fabric_int.h"
#include "log.h"

/* A registration sent again to a restarted scheduler was refused (a replica registering before
 * its server did): send it again every 0.25 s for up to 10 s. */
#define REREG_RETRY_S 0.25
#define REREG_FOR_S 10.0

/* ---- transfer commands --------------------------------------------------------------------- */

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
	const struct fabric_role_ops *ops = fabric_core_ops(f);
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
	int shared = 0, pooled = 0, rc;

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
				fabric_pool_give_back(f, &u->buf); /* never sent itself */
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
			b = u->buf; /* a push buffer (mlf_push): back to the pool once sent */
			pooled = 1;
			free(u);
		}
		if (c->chan == 2) {
			pthread_mutex_lock(&f->lock);
			f->ws.aggregated++;
			pthread_mutex_unlock(&f->lock);
		}
	}
	if (shared || pooled)
		rc = fabric_core_send_shared(f, &b, bytes, c->dst, c->chan, c->xfer, c->start, c->steps,
					     c->n_steps, &id);
	else
		rc = fabric_core_send_buf(f, &b, bytes, c->dst, c->chan, c->xfer, c->start, c->steps,
					  c->n_steps, &id);
	if (pooled) /* back to the pool when its SENT comes (on_sent) */
		fabric_pool_sent(f, &b, rc < 0 ? 0 : id);
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

/*
 * `order`: appends to the dataplane's commit order of the channel. The `order` travels through
 * this endpoint while the data goes straight to the dataplane, so a transfer may finish before
 * its `order` is in the dataplane's list. The dataplane holds such an arrival on an ordered
 * channel for its order (DELIVERY_UNKNOWN_HOLD_NS, 0.5 s), then hands it over unordered; for
 * that case ordered delivery would wait for it again
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

/* ---- the scheduler lost and back ------------------------------------------------------------ */

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

/* The accepted registration again, a server's or replica's at its current version (f->lock held). */
static json_t *rereg_msg(struct mlf *f)
{
	json_t *reg = f->reg_msg ? json_deep_copy(f->reg_msg) : NULL;

	if (reg && (f->role == FABRIC_ROLE_SERVER || f->role == FABRIC_ROLE_REPLICA))
		json_object_set_new(reg, "version", json_integer(f->s.version));
	return reg;
}

void fabric_core_rereg_retry(struct mlf *f)
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

/*
 * A (restarted) scheduler welcomed the dataplane: register again (a server or replica at its
 * current version) and announce every held update and the waiting get's pull again, in push
 * order. Sent outside the lock; a push racing with this is announced by exactly one of the two
 * (both decide under f->lock).
 */
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

/* ---- dispatch ------------------------------------------------------------------------------- */

void fabric_core_on_ctl(struct mlf *f, const char *text)
{
	const struct fabric_role_ops *ops = fabric_core_ops(f);
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
