/* fabric_dist.c - a worker forwarding model copies it received: distribution trees (paper §10.3). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "fabric_int.h"
#include "log.h"

#define FABRIC_UNCLAIMED_S 2.0 /* an arrival no `forward` named yet is kept this long (s) */

/*
 * The scheduler sends the server's copy of a batch's model to a distributor (`send` model with
 * "forwards": n to the server) and n `forward` commands to the distributor's worker, each naming
 * that copy's transfer id (xfer_in). The arrival is kept mapped and its memfd handed to the
 * dataplane once per forward (no copy through the app: the dataplane maps the same buffer), at
 * the forward's planned start and rate steps. The commands normally arrive before the copy
 * (they leave at plan time, the copy at its planned start); an arrival no command names yet is
 * kept (the newest one only) for FABRIC_UNCLAIMED_S in case its commands follow.
 */

static struct fabric_fwd *fwd_find(struct mlf *f, uint64_t xfer_in)
{
	for (struct fabric_fwd *d = f->dist.fwds; d; d = d->next)
		if (d->xfer_in == xfer_in)
			return d;
	return NULL;
}

static void fwd_free(struct mlf *f, struct fabric_fwd *d)
{
	for (struct fabric_fwd **p = &f->dist.fwds; *p; p = &(*p)->next)
		if (*p == d) {
			*p = d->next;
			break;
		}
	for (int i = 0; i < d->n_cmds; i++)
		fabric_cmd_free(&d->cmds[i]);
	free(d->cmds);
	if (d->have)
		mlfabric_event_release(&d->ev);
	free(d);
}

/* Hands forward @c of the copy in @d to the dataplane; a refusal is reported as a failed `done`. */
static void fwd_send(struct mlf *f, struct fabric_fwd *d, const struct fabric_cmd *c)
{
	uint64_t id;

	if (fabric_core_send_shared(f, &d->ev.buf, d->ev.bytes, c->dst, c->chan, c->xfer, c->start, c->steps,
				    c->n_steps, &id) < 0) {
		fabric_core_report_done(f, c->xfer, -EINVAL, d->ev.bytes, 0, clock_real_s(), f->err);
	} else {
		pthread_mutex_lock(&f->lock);
		fabric_core_track_out(f, id, 0, 0);
		f->dist.forwarded++;
		pthread_mutex_unlock(&f->lock);
		log_debug("%s: forwarding model copy %llx to %s as %llx (pull %llu)", f->app,
			  (unsigned long long)d->xfer_in, c->dst, (unsigned long long)c->xfer,
			  (unsigned long long)c->id);
	}
	d->n_done++;
}

/* Sends the commands waiting in @d (its copy is here); frees @d once every forward went. */
static void fwd_flush(struct mlf *f, struct fabric_fwd *d)
{
	for (int i = 0; i < d->n_cmds; i++) {
		fwd_send(f, d, &d->cmds[i]);
		fabric_cmd_free(&d->cmds[i]);
	}
	d->n_cmds = 0;
	if (d->n_fwd > 0 && d->n_done >= d->n_fwd)
		fwd_free(f, d);
}

static struct fabric_fwd *fwd_new(struct mlf *f, uint64_t xfer_in)
{
	struct fabric_fwd *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->xfer_in = xfer_in;
	d->ev.buf.fd = -1;
	d->next = f->dist.fwds;
	f->dist.fwds = d;
	return d;
}

void fabric_dist_command(struct mlf *f, struct fabric_cmd *c)
{
	struct fabric_fwd *d = fwd_find(f, c->xfer_in);
	struct fabric_cmd *cmds;

	if (!d && !(d = fwd_new(f, c->xfer_in))) {
		log_err("%s: forward %llx: out of memory", f->app, (unsigned long long)c->xfer);
		fabric_core_report_done(f, c->xfer, -ENOMEM, 0, 0, clock_real_s(), "distributor out of memory");
		return;
	}
	d->n_fwd = c->n_fwd;
	if (d->have) {
		fwd_send(f, d, c);
		if (d->n_done >= d->n_fwd)
			fwd_free(f, d);
		return;
	}
	cmds = realloc(d->cmds, sizeof(*cmds) * (size_t)(d->n_cmds + 1));
	if (!cmds) {
		log_err("%s: forward %llx: out of memory", f->app, (unsigned long long)c->xfer);
		fabric_core_report_done(f, c->xfer, -ENOMEM, 0, 0, clock_real_s(), "distributor out of memory");
		d->n_done++;
		return;
	}
	d->cmds = cmds;
	d->cmds[d->n_cmds++] = *c;
	c->ids = NULL;
	c->weights = NULL;
	if (c->start + f->timeout_s > d->deadline)
		d->deadline = c->start + f->timeout_s;
}

/* Whether @d is an arrival no `forward` named (yet). */
static int unclaimed(const struct fabric_fwd *d)
{
	return d->have && d->n_fwd == 0 && d->n_cmds == 0;
}

int fabric_dist_received(struct mlf *f, struct mlfabric_event *ev)
{
	struct fabric_fwd *d = fwd_find(f, ev->id);

	if (!d) {
		/* most model arrivals answer only this worker's pull: keep just the newest one
		 * unnamed, not one model per pull */
		for (struct fabric_fwd *o = f->dist.fwds, *next; o; o = next) {
			next = o->next;
			if (unclaimed(o))
				fwd_free(f, o);
		}
		if (!(d = fwd_new(f, ev->id)))
			return 0;
	}
	if (d->have) { /* the same transfer id twice: keep the first */
		log_warn("%s: model copy %llx arrived twice; the second is not forwarded", f->app,
			 (unsigned long long)ev->id);
		return 0;
	}
	d->ev = *ev;
	d->have = 1;
	ev->buf.data = NULL; /* kept */
	ev->buf.fd = -1;
	if (d->n_cmds == 0 && d->n_fwd == 0) /* its `forward`s may follow (rare: they leave first) */
		d->deadline = clock_real_s() + (f->timeout_s < FABRIC_UNCLAIMED_S ? f->timeout_s : FABRIC_UNCLAIMED_S);
	fwd_flush(f, d);
	return 1;
}

void fabric_dist_progress(struct mlf *f)
{
	double now = clock_real_s();
	char reason[APPMSG_REASON_MAX];

	for (struct fabric_fwd *d = f->dist.fwds, *next; d; d = next) {
		next = d->next;
		if (now < d->deadline)
			continue;
		if (!d->have) {
			snprintf(reason, sizeof(reason), "model copy %llx to forward never arrived at %s",
				 (unsigned long long)d->xfer_in, f->cl.hosts[f->me].name);
			log_warn("%s: %s; %d forward(s) fail", f->app, reason, d->n_cmds);
			for (int i = 0; i < d->n_cmds; i++)
				fabric_core_report_done(f, d->cmds[i].xfer, -ENODATA, 0, 0, now, reason);
		} else if (d->n_done < d->n_fwd) {
			log_warn("%s: model copy %llx: %d of its %d forward(s) never commanded; released",
				 f->app, (unsigned long long)d->xfer_in, d->n_fwd - d->n_done, d->n_fwd);
		}
		fwd_free(f, d);
	}
}

void fabric_dist_release(struct mlf *f)
{
	while (f->dist.fwds)
		fwd_free(f, f->dist.fwds);
}
