/*
 * sgd_event.c - bench-sgd-delay's event-driven mode: workers at their speeds, the scheduler's
 * batches and delay bound, and the server's applies, simulated in virtual time on the real model.
 *
 * A worker's cycle: its pull is answered with a snapshot of the server's model (version v); the
 * model arrives transfer_s later; it computes for compute_s x speed x straggler draw; it pushes
 * the update u = -lr x gradient (v(g) = v) and pulls again. Plan on arrival (tick 0): the update
 * reaches the server transfer_s later and is applied or dropped there; the pull is answered at
 * once (rule before) or after the worker's own update (rule after). Ticks: pushes and pulls wait
 * for the next batch boundary; the batch orders its updates as the planner does with equal
 * transfers (scheduler/planner/order.c: oldest first, an update whose deadline is the next commit
 * position forced, those past their deadline dropped) and they are applied transfer_s later; its
 * pulls get the model before (rule before) or after (rule after) the batch's updates.
 * Events at one time run in this order: applies, pushes, the batch, pulls' snapshots,
 * evaluations; among equals, in the order they were scheduled.
 */
#include "sgd_event.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Event kinds, in their order at one virtual time. */
enum { EV_APPLY, EV_DONE, EV_TICK, EV_SNAP, EV_EVAL };

struct ev {
	int64_t t;   /* virtual microseconds */
	int kind, i; /* worker, for APPLY, DONE, SNAP */
	long seq;
};

/* The run's state: the event set (at most 2 per worker plus a tick and an evaluation), the
 * workers' models, updates and straggler draws, and the batch's pending pushes and pulls. */
struct sim {
	const struct sgd_event_cluster *c;
	const struct sgd_event_rules *r;
	struct train_model *m;
	const struct sgd_event_ops *ops;
	void *ctx;
	struct sgd_event_result *res;
	struct ev *evs;
	int n_ev;
	long seq;
	float *w, *u;          /* per worker: the model it pulled, its update (m->n floats each) */
	int64_t *v, *vg;       /* per worker: the version of its model; v(g) of its update */
	struct train_straggle *st;
	int *push, *pull;      /* tick: workers with a pending update, a pending pull */
	int n_push, n_pull;
	int64_t planned;       /* versions planned: applied + planned and not yet applied */
};

int sgd_event_parse(const char *spec, struct sgd_event_rules *r)
{
	char *end;
	long tick;

	if (!strcmp(spec, "async"))
		spec = "0:after:-";
	else if (!strcmp(spec, "mlfabric-a"))
		spec = "100:before:8";
	tick = strtol(spec, &end, 10);
	if (end == spec || *end != ':' || tick < 0 || tick > 60000)
		return -EINVAL;
	spec = end + 1;
	if (!strncmp(spec, "before", 6) || !strncmp(spec, "after", 5)) {
		r->pull_after = spec[0] == 'a';
		spec += r->pull_after ? 5 : 6;
	} else {
		return -EINVAL;
	}
	r->tick_us = tick * 1000;
	r->tau_max = -1;
	if (!*spec || !strcmp(spec, ":-"))
		return 0;
	if (*spec != ':')
		return -EINVAL;
	r->tau_max = strtol(spec + 1, &end, 10);
	return end == spec + 1 || *end || r->tau_max < 0 || r->tau_max > 1000000 ? -EINVAL : 0;
}

static int64_t us(double s)
{
	return (int64_t)llround(s * 1e6);
}

static void ev_add(struct sim *s, int64_t t, int kind, int i)
{
	s->evs[s->n_ev++] = (struct ev){ .t = t, .kind = kind, .i = i, .seq = s->seq++ };
}

/* Removes and returns the first event: the earliest, then by kind, then as scheduled. */
static struct ev ev_next(struct sim *s)
{
	int b = 0;

	for (int k = 1; k < s->n_ev; k++) {
		const struct ev *x = &s->evs[k], *y = &s->evs[b];
		if (x->t < y->t || (x->t == y->t && (x->kind < y->kind || (x->kind == y->kind && x->seq < y->seq))))
			b = k;
	}
	struct ev e = s->evs[b];
	s->evs[b] = s->evs[--s->n_ev];
	return e;
}

/* Worker @i's pull answered at @t: the server's model now; the gradient is done after the
 * model's transfer and the compute. */
static void snapshot(struct sim *s, int i, int64_t t)
{
	size_t n = s->m->n;
	double factor = train_straggle_next(&s->st[i]) * s->c->speeds[i];

	memcpy(s->w + (size_t)i * n, s->m->w, sizeof(float) * n);
	s->v[i] = s->m->version;
	ev_add(s, t + us(s->c->transfer_s) + us(s->c->compute_s * factor), EV_DONE, i);
}

/* Applies worker @i's update (its fate decided: on arrival, or by the batch that planned it). */
static void apply(struct sim *s, int i)
{
	s->res->delay_sum += (double)(s->m->version - s->vg[i]);
	s->res->applied++;
	s->res->evaluated = 0;
	train_apply(s->m, s->u + (size_t)i * s->m->n, 1);
}

/* The batch at @t: its updates in the planner's order (equal transfers: oldest first, a forced
 * deadline first, those past their deadline dropped), applied transfer_s later; its pulls. */
static void batch(struct sim *s, int64_t t)
{
	int64_t v_init = s->planned, pos = 1, arrive = t + us(s->c->transfer_s);

	while (s->n_push > 0) {
		int pick = -1;
		for (int k = 0; k < s->n_push;) {
			int64_t dl = s->vg[s->push[k]] + s->r->tau_max - v_init; /* eq. 9 */
			if (s->r->tau_max >= 0 && dl < pos) {
				s->res->dropped++;
				memmove(s->push + k, s->push + k + 1, sizeof(int) * (size_t)(s->n_push - k - 1));
				s->n_push--;
				continue;
			}
			if (pick < 0 && s->r->tau_max >= 0 && dl == pos)
				pick = k;
			k++;
		}
		if (s->n_push == 0)
			break;
		if (pick < 0)
			pick = 0;
		ev_add(s, arrive, EV_APPLY, s->push[pick]);
		memmove(s->push + pick, s->push + pick + 1, sizeof(int) * (size_t)(s->n_push - pick - 1));
		s->n_push--;
		s->planned++;
		pos++;
	}
	for (int k = 0; k < s->n_pull; k++) {
		if (s->r->pull_after)
			ev_add(s, arrive, EV_SNAP, s->pull[k]);
		else
			snapshot(s, s->pull[k], t);
	}
	s->n_pull = 0;
	ev_add(s, t + s->r->tick_us, EV_TICK, 0);
}

/* Worker @i's gradient is done at @t: its update is pushed and its next pull made. Returns 0,
 * 1 when the gradient would pass max_grads (the run ends), or an error of ops->update. */
static int done(struct sim *s, int i, int64_t t)
{
	int rc;

	if (s->res->grads >= s->c->max_grads)
		return 1;
	rc = s->ops->update(s->ctx, i, s->w + (size_t)i * s->m->n, s->u + (size_t)i * s->m->n);
	if (rc)
		return rc;
	s->res->grads++;
	s->vg[i] = s->v[i];
	if (s->r->tick_us > 0) {
		s->push[s->n_push++] = i;
		s->pull[s->n_pull++] = i;
		return 0;
	}
	ev_add(s, t + us(s->c->transfer_s), EV_APPLY, i);
	if (s->r->pull_after)
		ev_add(s, t + us(s->c->transfer_s), EV_SNAP, i);
	else
		snapshot(s, i, t);
	return 0;
}

/* Runs the events until the target, a miss or an error. Returns 0 or the error. */
static int sim_loop(struct sim *s)
{
	struct sgd_event_result *res = s->res;
	int rc = 0;

	for (int i = 0; i < s->c->workers; i++) {
		if (s->r->tick_us > 0)
			s->pull[s->n_pull++] = i;
		else
			snapshot(s, i, 0);
	}
	if (s->r->tick_us > 0)
		ev_add(s, 0, EV_TICK, 0);
	ev_add(s, us(s->c->eval_every_s), EV_EVAL, 0);
	while (rc == 0) {
		struct ev e = ev_next(s);
		res->t_s = (double)e.t / 1e6;
		switch (e.kind) {
		case EV_APPLY:
			if (s->r->tick_us == 0 && s->r->tau_max >= 0 && s->m->version - s->vg[e.i] >= s->r->tau_max)
				res->dropped++;
			else
				apply(s, e.i);
			break;
		case EV_DONE:
			rc = done(s, e.i, e.t);
			if (rc == 1)
				return 0;
			break;
		case EV_TICK:
			batch(s, e.t);
			break;
		case EV_SNAP:
			snapshot(s, e.i, e.t);
			break;
		default:
			rc = s->ops->eval(s->ctx, s->m->w, &res->accuracy);
			res->evaluated = 1;
			if (rc == 1)
				res->reached = 1;
			if (rc != 0)
				return rc < 0 && rc != -1 ? rc : 0;
			ev_add(s, e.t + us(s->c->eval_every_s), EV_EVAL, 0);
		}
	}
	return rc;
}

int sgd_event_run(const struct sgd_event_cluster *c, const struct sgd_event_rules *r, uint64_t seed,
		  struct train_model *m, const struct sgd_event_ops *ops, void *ctx, struct sgd_event_result *res)
{
	int nw = c->workers, rc = 0;
	struct sim s = { .c = c, .r = r, .m = m, .ops = ops, .ctx = ctx, .res = res };

	*res = (struct sgd_event_result){ 0 };
	s.evs = malloc(sizeof(*s.evs) * (size_t)(2 * nw + 2));
	s.w = malloc(sizeof(float) * m->n * (size_t)nw);
	s.u = malloc(sizeof(float) * m->n * (size_t)nw);
	s.v = malloc(sizeof(*s.v) * (size_t)nw);
	s.vg = malloc(sizeof(*s.vg) * (size_t)nw);
	s.st = malloc(sizeof(*s.st) * (size_t)nw);
	s.push = malloc(sizeof(int) * (size_t)nw);
	s.pull = malloc(sizeof(int) * (size_t)nw);
	if (!s.evs || !s.w || !s.u || !s.v || !s.vg || !s.st || !s.push || !s.pull)
		rc = -ENOMEM;
	/* worker i of experiment seed S: mlf-worker --seed S x 1000 + i + 1 (tools/mlfcluster/runner.py),
	 * whose straggler draws are seeded with that x 1000003 + i */
	for (int i = 0; !rc && i < nw; i++)
		if (train_straggle_parse(c->straggle, (seed * 1000 + (uint64_t)i + 1) * 1000003u + (uint64_t)i, &s.st[i]))
			rc = -EINVAL;
	if (!rc)
		rc = sim_loop(&s);
	free(s.evs);
	free(s.w);
	free(s.u);
	free(s.v);
	free(s.vg);
	free(s.st);
	free(s.push);
	free(s.pull);
	return rc;
}
