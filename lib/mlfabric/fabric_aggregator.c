/* fabric_aggregator.c - an aggregator endpoint (paper Table 1, §4, §5.2): inputs on chan 2, `aggregate` commands, the aggregate's send. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "fabric_agg.h"
#include "fabric_int.h"
#include "log.h"

/* Whether input @in carries update @id (and, for a shard's aggregate, @off >= 0: is that shard). */
static int input_has(const struct fabric_agg_input *in, uint64_t id, int64_t off)
{
	const struct mlf_payload_hdr *h = in->ev.buf.data;

	if (off >= 0 && h->offset != (uint64_t)off)
		return 0;
	for (uint32_t k = 0; k < h->n_parts; k++)
		if (h->parts[k].id == id)
			return 1;
	return 0;
}

static int find_input(struct mlf *f, uint64_t id, int64_t off)
{
	for (int i = 0; i < f->agg.n_inputs; i++)
		if (input_has(&f->agg.inputs[i], id, off))
			return i;
	return -1;
}

static void drop_input(struct mlf *f, int i)
{
	struct mlf_aggregator_state *ag = &f->agg;

	mlfabric_event_release(&ag->inputs[i].ev);
	ag->inputs[i] = ag->inputs[--ag->n_inputs];
}

/* Sums what arrived of @a's inputs and sends the aggregate; reports `partial` when some are missing. */
static void aggregate(struct mlf *f, struct fabric_agg_cmd *a)
{
	struct mlf_aggregator_state *ag = &f->agg;
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
		int j = find_input(f, c->ids[i], c->shard_off);
		const struct mlf_payload_hdr *ih = j >= 0 ? ag->inputs[j].ev.buf.data : NULL;
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
	ag->stats.inputs_missing += json_array_size(missing);
	if (json_array_size(missing))
		fabric_core_ctl(f, json_pack("{s:s, s:I, s:O}", "type", "partial", "agg", (json_int_t)c->id,
					     "missing", missing));
	if (k == 0 || mlfabric_buf_alloc(mlf_payload_bytes(n), &b) < 0) {
		if (k)
			log_err("aggregate %llu: no memory for %llu floats", (unsigned long long)c->id, (unsigned long long)n);
		else
			log_warn("aggregate %llu: none of its %d inputs arrived; nothing sent", (unsigned long long)c->id, c->n_ids);
		/* a failed `done`: the scheduler skips the aggregate at its destination at once
		 * instead of waiting --xfer-timeout for it (docs/control.md) */
		fabric_core_report_done(f, c->id, k ? -ENOMEM : -ENODATA, 0, 0, clock_real_s(),
					k ? "aggregator out of memory" : "no input of the aggregate arrived");
		goto out;
	}
	h = b.data;
	h->magic = MLF_PAYLOAD_MAGIC_UPDATE;
	h->n_floats = n;
	h->offset = c->shard_off >= 0 ? (uint64_t)c->shard_off : 0; /* a shard's aggregate (§10.2) */
	for (int q = 0; q < k; q++) {
		const struct mlf_payload_hdr *ih = ag->inputs[slot[q]].ev.buf.data;
		for (uint32_t p = 0; p < ih->n_parts && h->n_parts < MLF_PAYLOAD_MAX_PARTS; p++)
			h->parts[h->n_parts++] = ih->parts[p];
	}
	h->version = h->parts[0].version;
	t0 = clock_real_s();
	fabric_agg_sum((float *)((char *)b.data + MLF_PAYLOAD_HDR), src, c->weights ? w : NULL, k, n);
	ag->stats.sum_seconds += clock_real_s() - t0;
	ag->stats.sum_bytes += (uint64_t)k * n * 4;
	ag->stats.inputs_summed += (uint64_t)k;
	for (int q = 0; q < k; q++)
		ag->inputs[slot[q]].t = -1; /* used: released below */
	pthread_mutex_unlock(&f->lock);
	if (fabric_core_send_buf(f, &b, mlf_payload_bytes(n), c->dst, c->chan, c->id, c->start, c->steps,
				 c->n_steps, &id) < 0)
		fabric_core_report_done(f, c->id, -EINVAL, mlf_payload_bytes(n), 0, clock_real_s(), f->err);
	pthread_mutex_lock(&f->lock);
	ag->stats.aggregates_sent++;
	fabric_core_track_out(f, c->id, 0, 0);
	for (int i = ag->n_inputs - 1; i >= 0; i--)
		if (ag->inputs[i].t < 0)
			drop_input(f, i);
out:
	json_decref(missing);
	free(src);
	free(w);
	free(slot);
}

/*
 * Aggregates every command whose inputs are all here or reported lost by the scheduler (`skip`
 * with chan 2), or whose input timeout passed.
 */
static void agg_progress(struct mlf *f)
{
	double now = clock_real_s();

	pthread_mutex_lock(&f->lock);
	for (struct fabric_agg_cmd **p = &f->agg.cmds, *a; (a = *p);) {
		int all = 1, skipped = 0;
		for (int i = 0; i < a->c.n_ids && all; i++) {
			int here = find_input(f, a->c.ids[i], a->c.shard_off) >= 0;
			int lost = !here && fabric_core_was_skipped(f, a->c.ids[i]);
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
	struct mlf_aggregator_state *ag = &f->agg;
	char err[160];

	if (fabric_cmd_payload_check(ev->buf.data, ev->bytes, MLF_PAYLOAD_MAGIC_UPDATE, err, sizeof(err)) < 0) {
		log_err("bad aggregator input from host %s (transfer %llx): %s; skipped", ev->peer,
			(unsigned long long)ev->id, err);
		mlfabric_event_release(ev);
		return;
	}
	pthread_mutex_lock(&f->lock);
	if (ag->n_inputs == FABRIC_MAX_AGG_INPUTS) {
		log_warn("aggregator holds %d inputs no command named: the oldest is discarded", FABRIC_MAX_AGG_INPUTS);
		int old = 0;
		for (int i = 1; i < ag->n_inputs; i++)
			if (ag->inputs[i].t < ag->inputs[old].t)
				old = i;
		drop_input(f, old);
	}
	ag->inputs[ag->n_inputs].ev = *ev;
	ag->inputs[ag->n_inputs++].t = clock_real_s();
	pthread_mutex_unlock(&f->lock);
	ev->buf.data = NULL; /* kept */
	ev->buf.fd = -1;
}

static void cmd_aggregate(struct mlf *f, struct fabric_cmd *c)
{
	struct fabric_agg_cmd *a = calloc(1, sizeof(*a));

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
	f->agg.stats.commands++;
	a->next = f->agg.cmds;
	f->agg.cmds = a;
	pthread_mutex_unlock(&f->lock);
}

static int agg_received(struct mlf *f, struct mlfabric_event *ev)
{
	if (ev->chan != 2)
		return 0;
	agg_input(f, ev);
	return 1;
}

static int agg_command(struct mlf *f, struct fabric_cmd *c)
{
	if (c->kind != FABRIC_CMD_AGGREGATE)
		return 0;
	cmd_aggregate(f, c);
	return 1;
}

static void agg_release(struct mlf *f)
{
	while (f->agg.cmds) {
		struct fabric_agg_cmd *a = f->agg.cmds;
		f->agg.cmds = a->next;
		fabric_cmd_free(&a->c);
		free(a);
	}
	while (f->agg.n_inputs)
		drop_input(f, 0);
}

static const struct fabric_role_ops aggregator_ops = {
	.received = agg_received,
	.command = agg_command,
	.progress = agg_progress,
	.release = agg_release,
};

int mlf_register_as_aggregator(mlf_t *f)
{
	static const uint16_t chans[] = { 2 };

	return fabric_core_register(f, FABRIC_ROLE_AGGREGATOR, &aggregator_ops, chans, 1, json_object());
}

void mlf_get_aggregator_stats(mlf_t *f, struct mlf_aggregator_stats *s)
{
	pthread_mutex_lock(&f->lock);
	*s = f->agg.stats;
	pthread_mutex_unlock(&f->lock);
}
