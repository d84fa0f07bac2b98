/* fabric_core_xfer.c - the core's outgoing side: control messages to the scheduler (through the
 * dataplane), transfers handed to the dataplane and their completions reported back, the direct
 * mode's queue. Services to the roles and to the command handling (fabric_core_cmd.c). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "clock.h"
#include "fabric_int.h"
#include "log.h"

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
