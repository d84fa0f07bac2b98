/* sched_select.c - which ready pulls a batch answers: fresh pulls and held pulls (§10.3). */
#include "sched_select.h"

#include <errno.h>
#include <math.h>

#include "sched_lead.h"
#include "sched_policy.h"

int sched_select_fresh(const struct sched *s, double now, const int *sel, int n_sel, int *psel,
		       int n_psel, struct sched_fresh *fr)
{
	int n = 0;

	for (int k = 0; k < n_psel; k++) {
		const struct sched_pull *pl = &s->pulls[psel[k]];
		struct sched_fresh *f = &fr[psel[k]];
		int ui = pl->after ? sched_find_update(s, pl->after) : -1, wait = 0;
		*f = (struct sched_fresh){ .upd = -1, .v = -1, .t = 0 };
		if (ui >= 0 && s->upd[ui].worker == pl->worker &&
		    sched_policy_plan_mode(s) == PLAN_MLFABRIC_A) {
			const struct sched_update *u = &s->upd[ui];
			if (u->state == SCHED_UPD_PENDING) {
				for (int j = 0; j < n_sel && f->upd < 0; j++)
					if (sel[j] == ui)
						f->upd = j;
				wait = (f->upd < 0 || s->server.n_shards > 0) &&
				       now - pl->t_arrival < SCHED_PULL_FRESH_WAIT_MAX_S;
				if (wait || s->server.n_shards > 0)
					f->upd = -1;
			} else if (u->state == SCHED_UPD_PLANNED && !s->server.n_shards) {
				f->v = u->v_commit;
				f->t = u->t_commit;
			}
		}
		if (!wait)
			psel[n++] = psel[k];
	}
	return n;
}

void sched_select_lost(struct sched *s, const struct sched_update *u)
{
	if (s->server.n_shards || u->v_commit < 0)
		return;
	for (int i = 0; i < s->n_upd; i++)
		if (&s->upd[i] != u && s->upd[i].state == SCHED_UPD_PLANNED &&
		    s->upd[i].v_commit >= u->v_commit)
			s->upd[i].v_commit--;
}

int sched_select_commit(const struct plan *p, int srv, int i, int64_t *v, double *t)
{
	for (int c = 0; c < p->n_commits; c++) {
		const struct plan_commit *pc = &p->commits[c];
		int one = pc->carries, hit = 0;
		if (pc->host != srv)
			continue;
		if (pc->kind == PLAN_CARRY_AGGREGATE) {
			for (int k = 0; k < p->aggregates[one].n_inputs && !hit; k++)
				hit = p->aggregates[one].inputs[k] == i;
		} else {
			hit = one == i;
		}
		if (hit) {
			*v = pc->version;
			*t = pc->at_s;
			return 0;
		}
	}
	return -ENOENT;
}

/*
 * The preconditions of a hold (§10.3): with distributors, while the server's uplink is reserved
 * past this plan's start by copies commanded earlier, a copy planned now only queues behind
 * them; held until the uplink frees, the pulls that gather meanwhile can share one server copy.
 */
int sched_select_may_hold(const struct sched *s, double now, const int *psel, int n_psel,
			  double *t_free)
{
	double now_plan = now - s->t0 + sched_lead_s(s), until = 0;

	if (s->cfg.distributors == 0 || s->server.n_shards) /* no trees for a sharded model */
		return 0;
	for (int i = 0; i < s->n_xfers; i++) {
		const struct sched_xfer *x = &s->xfers[i];
		if (!x->done && x->src == s->server.host && x->dst != x->src && x->end > until)
			until = x->end;
	}
	if (until <= now_plan) /* free at this plan's start: a copy planned now goes at once */
		return 0;
	for (int k = 0; k < n_psel; k++)
		if (now - s->pulls[psel[k]].t_arrival >= SCHED_PULL_HOLD_MAX_S)
			return 0;
	*t_free = until;
	return 1;
}

double sched_select_pulls_end(const struct plan_batch *b, const struct plan *p)
{
	double end = b->now_s;

	for (int q = 0; q < b->n_pulls; q++) {
		double e = INFINITY;
		for (int i = 0; i < p->n_transfers; i++) {
			const struct plan_transfer *t = &p->transfers[i];
			if (t->kind == PLAN_CARRY_MODEL && t->carries == q &&
			    t->dst == b->pulls[q].worker && t->end_s < e)
				e = t->end_s;
		}
		if (e > end)
			end = e;
	}
	return end;
}
