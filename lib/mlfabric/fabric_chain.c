/* fabric_chain.c - chain replication of a server (docs/replication.md: the chain-replication baseline): applied transfers forwarded to the chain replica on chan 4, commits after delivery. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "fabric_int.h"
#include "log.h"

/* The chain forward of transfer @xfer failed (@why): logged, the chain is broken, the scheduler told. */
static void chain_broken(struct mlf *f, uint64_t xfer, int status, const char *why)
{
	char reason[APPMSG_REASON_MAX];

	snprintf(reason, sizeof(reason), "chain forward of transfer %llu to replica %s failed: %s",
		 (unsigned long long)xfer, f->chain.host, why);
	log_err("%s: %s; chain replication stopped", f->app, reason);
	f->chain.host[0] = '\0';
	fabric_core_report_done(f, xfer, status < 0 ? status : -EIO, 0, 0, clock_real_s(), reason);
}

void fabric_chain_set(struct mlf *f, const struct fabric_cmd *c)
{
	if (c->dst[0] && (!c->chain || cluster_find(&f->cl, c->dst) < 0)) {
		log_err("%s: replica command: %s; ignored", f->app,
			c->chain ? "unknown replica host" : "only chain replication is forwarded by the server");
		return;
	}
	snprintf(f->chain.host, sizeof(f->chain.host), "%s", c->dst);
	log_info("%s: %s%s", f->app, c->dst[0] ? "chain replication to " : "no chain replica", c->dst);
}

void fabric_chain_forward(struct mlf *f, const struct mlfabric_event *ev, json_t *commit)
{
	struct mlf_chain_state *ch = &f->chain;
	struct mlfabric_buf b;
	uint64_t id;

	if (mlfabric_buf_alloc(ev->bytes, &b) < 0) {
		chain_broken(f, ev->id, -ENOMEM, "no memory for the copy");
		fabric_core_ctl(f, commit);
		return;
	}
	memcpy(b.data, ev->buf.data, ev->bytes);
	if (fabric_core_send_buf(f, &b, ev->bytes, ch->host, 4, 0, 0, NULL, 0, &id) < 0) {
		chain_broken(f, ev->id, -EINVAL, f->err);
		fabric_core_ctl(f, commit);
		return;
	}
	ch->active = 1;
	ch->fwd = id;
	ch->xfer = ev->id;
	ch->commit = commit;
}

int fabric_chain_sent(struct mlf *f, const struct mlfabric_event *ev)
{
	struct mlf_chain_state *ch = &f->chain;
	json_t *commit = ch->commit;

	if (!ch->active || ev->id != ch->fwd)
		return 0;
	ch->active = 0;
	ch->commit = NULL;
	if (ev->status)
		chain_broken(f, ch->xfer, ev->status, ev->reason);
	json_object_set_new(commit, "t", json_real(clock_real_s())); /* committed once replicated */
	fabric_core_ctl(f, commit);
	return 1;
}

void fabric_chain_hold(struct mlf *f, struct mlfabric_event *ev)
{
	struct mlf_chain_state *ch = &f->chain;
	struct fabric_queued_ev *q = calloc(1, sizeof(*q));

	if (!q) {
		log_err("transfer %llx from %s: no memory to hold it behind a chain forward; not applied",
			(unsigned long long)ev->id, ev->peer);
		return;
	}
	q->ev = *ev;
	ev->buf.data = NULL; /* kept */
	ev->buf.fd = -1;
	ev->ctl = NULL;
	if (ch->q_tail)
		ch->q_tail->next = q;
	else
		ch->q = q;
	ch->q_tail = q;
}

struct fabric_queued_ev *fabric_chain_next(struct mlf *f)
{
	struct mlf_chain_state *ch = &f->chain;
	struct fabric_queued_ev *q = ch->q;

	if (ch->active || !q)
		return NULL;
	ch->q = q->next;
	if (!ch->q)
		ch->q_tail = NULL;
	return q;
}

void fabric_chain_release(struct mlf *f)
{
	while (f->chain.q) {
		struct fabric_queued_ev *q = f->chain.q;
		f->chain.q = q->next;
		mlfabric_event_release(&q->ev);
		free(q);
	}
	f->chain.q_tail = NULL;
	json_decref(f->chain.commit);
	f->chain.commit = NULL;
}
