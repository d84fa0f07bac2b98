/* order.c - shortest-transfer-first ordering with deadlines and look-ahead dropping (Alg. 1, 2, §5.1). */
#include "order.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int64_t order_deadline(const struct plan_batch *b, int u)
{
	return b->updates[u].version + b->tau_max - b->v_init;
}

/*
 * Candidates: update indexes still to place. FAST also keeps, per update, a t_en computed on
 * network version lbver[u] (a lower bound on every later network) in an indexed binary heap.
 */
struct cands {
	int *c;
	int n;
	double *lb;
	uint64_t *lbver;
	int *heap;          /* update indexes, heap-ordered by (lb, index); NULL in SIMPLE */
	int *hpos;          /* position of each update in heap, -1 when absent */
	int hn;
	int refreshed;      /* t_en refreshes of the last ShrtUp */
};

static int key_less(double ta, int a, double tb, int b)
{
	return ta < tb || (ta == tb && a < b);
}

static int heap_less(const struct cands *cs, int i, int j)
{
	return key_less(cs->lb[cs->heap[i]], cs->heap[i], cs->lb[cs->heap[j]], cs->heap[j]);
}

static void heap_swap(struct cands *cs, int i, int j)
{
	int t = cs->heap[i];

	cs->heap[i] = cs->heap[j];
	cs->heap[j] = t;
	cs->hpos[cs->heap[i]] = i;
	cs->hpos[cs->heap[j]] = j;
}

static void heap_down(struct cands *cs, int i)
{
	for (;;) {
		int l = 2 * i + 1, r = l + 1, m = i;

		if (l < cs->hn && heap_less(cs, l, m))
			m = l;
		if (r < cs->hn && heap_less(cs, r, m))
			m = r;
		if (m == i)
			return;
		heap_swap(cs, i, m);
		i = m;
	}
}

/* Restore the heap order around position @i after its key changed. */
static void heap_fix(struct cands *cs, int i)
{
	while (i > 0 && heap_less(cs, i, (i - 1) / 2)) {
		heap_swap(cs, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
	heap_down(cs, i);
}

static void heap_remove(struct cands *cs, int u)
{
	int i = cs->hpos[u];

	if (i < 0)
		return;
	cs->hpos[u] = -1;
	if (--cs->hn == i)
		return;
	cs->heap[i] = cs->heap[cs->hn];
	cs->hpos[cs->heap[i]] = i;
	heap_fix(cs, i);
}

static void cands_free(struct cands *cs)
{
	free(cs->c);
	free(cs->lb);
	free(cs->lbver);
	free(cs->heap);
	free(cs->hpos);
	memset(cs, 0, sizeof(*cs));
}

/* Room for @nb updates; with @heap the FAST structures too. Returns 0 or -ENOMEM. */
static int cands_alloc(struct cands *cs, int nb, int heap)
{
	memset(cs, 0, sizeof(*cs));
	cs->c = malloc(((size_t)nb + 1) * sizeof(*cs->c));
	cs->lb = malloc(((size_t)nb + 1) * sizeof(*cs->lb));
	cs->lbver = calloc((size_t)nb + 1, sizeof(*cs->lbver));
	if (heap) {
		cs->heap = malloc(((size_t)nb + 1) * sizeof(*cs->heap));
		cs->hpos = malloc(((size_t)nb + 1) * sizeof(*cs->hpos));
	}
	if (!cs->c || !cs->lb || !cs->lbver || (heap && (!cs->heap || !cs->hpos))) {
		cands_free(cs);
		return -ENOMEM;
	}
	return 0;
}

static void cands_copy(struct cands *d, const struct cands *s, int nb)
{
	d->n = s->n;
	d->hn = s->hn;
	d->refreshed = s->refreshed;
	memcpy(d->c, s->c, (size_t)s->n * sizeof(*d->c));
	memcpy(d->lb, s->lb, (size_t)nb * sizeof(*d->lb));
	memcpy(d->lbver, s->lbver, (size_t)nb * sizeof(*d->lbver));
	memcpy(d->heap, s->heap, (size_t)s->hn * sizeof(*d->heap));
	memcpy(d->hpos, s->hpos, (size_t)nb * sizeof(*d->hpos));
}

static double upd_tend(struct planwork *pw, struct netstate *net, int u)
{
	struct planwork_job job;

	planwork_update_job(pw, u, -1, &job);
	return planwork_job_tend(pw, net, &job);
}

/* ShrtUp, plain: t_en of every candidate, the smallest (ties: lowest update index). */
static int shortest_simple(struct planwork *pw, struct netstate *net, const struct cands *cs,
			   double *te_out)
{
	int i, best = -1;
	double bt = INFINITY;

	for (i = 0; i < cs->n; i++) {
		double t = upd_tend(pw, net, cs->c[i]);

		if (t < 0.0)
			return -ENOMEM;
		if (best < 0 || key_less(t, cs->c[i], bt, best)) {
			best = cs->c[i];
			bt = t;
		}
	}
	*te_out = bt;
	return best;
}

/*
 * A lower bound on update @u's t_en on this network and every later one: its t_en for one
 * leg; for a sharded update the latest of its legs' t_en each alone on the network (each leg,
 * reserved after the others, can only end later).
 */
static double upd_bound(struct planwork *pw, struct netstate *net, int u)
{
	struct planwork_job job;
	double t = -INFINITY;
	int j;

	if (pw->n_legs == 1)
		return upd_tend(pw, net, u);
	planwork_update_job(pw, u, -1, &job);
	for (j = 0; j < pw->n_legs; j++)
		if (job.bytes[j] > 0)
			t = planwork_max(t, netstate_tend(net, job.src, planwork_leg_dst(pw, &job, j),
							  job.t0_s, job.bytes[j], NULL));
	return t == -INFINITY ? job.t0_s : t;
}

/* Recompute the t_en bound of update @u on the current network. */
static int refresh(struct planwork *pw, struct netstate *net, struct cands *cs, int u)
{
	double t = upd_bound(pw, net, u);

	if (t < 0.0)
		return -ENOMEM;
	cs->lb[u] = t;
	cs->lbver[u] = net->version;
	heap_fix(cs, cs->hpos[u]);
	return 0;
}

/*
 * ShrtUp, lazy: reservations only lower residual bandwidth, so a t_en computed on an earlier
 * network is a lower bound on the current one. Refresh the heap's top until it is fresh;
 * then every stale candidate whose bound is within a rounding margin of the winner is
 * refreshed too (the heap is searched from the root down to that margin), so that
 * floating-point noise cannot make this pick differ from shortest_simple().
 */
static int shortest_fast(struct planwork *pw, struct netstate *net, struct cands *cs,
			 double *te_out)
{
	uint64_t ver = net->version;
	int *stack = NULL, *stale = NULL, rc = -ENOMEM;

	stack = malloc(((size_t)cs->hn + 1) * sizeof(*stack));
	stale = malloc(((size_t)cs->hn + 1) * sizeof(*stale));
	if (!stack || !stale)
		goto out;
	if (cs->refreshed > cs->hn / 2) {
		/*
		 * Last time most bounds were stale (every candidate shares the server's downlink):
		 * refresh them all at once and rebuild the heap, instead of one sift each.
		 */
		int i;

		for (i = 0; i < cs->hn; i++) {
			int u = cs->heap[i];
			double t;

			if (cs->lbver[u] == ver)
				continue;
			t = upd_tend(pw, net, u);
			if (t < 0.0)
				goto out;
			cs->lb[u] = t;
			cs->lbver[u] = ver;
		}
		for (i = cs->hn / 2 - 1; i >= 0; i--)
			heap_down(cs, i);
	}
	cs->refreshed = 0;
	for (;;) {
		int top, sp = 0, ns = 0, i;
		double thr;

		if (cs->hn == 0) {
			rc = -1;
			goto out;
		}
		top = cs->heap[0];
		if (cs->lbver[top] != ver) {
			if (refresh(pw, net, cs, top))
				goto out;
			cs->refreshed++;
			continue;
		}
		thr = cs->lb[top] + 1e-9 * (1.0 + fabs(cs->lb[top]));
		stack[sp++] = 0;
		while (sp > 0) {
			int at = stack[--sp], u = cs->heap[at];

			if (cs->lb[u] > thr)
				continue;
			if (cs->lbver[u] != ver)
				stale[ns++] = u;
			if (2 * at + 1 < cs->hn)
				stack[sp++] = 2 * at + 1;
			if (2 * at + 2 < cs->hn)
				stack[sp++] = 2 * at + 2;
		}
		for (i = 0; i < ns; i++)
			if (refresh(pw, net, cs, stale[i]))
				goto out;
		cs->refreshed += ns;
		if (ns == 0) {
			*te_out = cs->lb[top];
			rc = top;
			goto out;
		}
	}
out:
	free(stack);
	free(stale);
	return rc;
}

/*
 * ShrtUp, lazy, for sharded updates. Their t_en itself is not monotone (eq. 18: the legs are
 * reserved one after the other, and a later first leg can leave an earlier slot to the
 * second), so the heap holds upd_bound() values instead. Candidates are taken off the heap in
 * bound order and their exact t_en computed, until the smallest remaining (fresh) bound is
 * beyond the best exact t_en by more than a rounding margin; then they go back.
 */
static int shortest_fast_legs(struct planwork *pw, struct netstate *net, struct cands *cs,
			      double *te_out)
{
	uint64_t ver = net->version;
	int *popped = malloc(((size_t)cs->hn + 1) * sizeof(*popped));
	int np = 0, best = -1, rc = -ENOMEM, i;
	double bt = INFINITY;

	if (!popped)
		return -ENOMEM;
	while (cs->hn > 0) {
		int top = cs->heap[0];
		double t;

		if (cs->lbver[top] != ver) {
			if (refresh(pw, net, cs, top))
				goto out;
			continue;
		}
		if (best >= 0 && cs->lb[top] > bt + 1e-9 * (1.0 + fabs(bt)))
			break;
		heap_remove(cs, top);
		popped[np++] = top;
		t = upd_tend(pw, net, top);
		if (t < 0.0)
			goto out;
		if (best < 0 || key_less(t, top, bt, best)) {
			best = top;
			bt = t;
		}
	}
	*te_out = bt;
	rc = best;
out:
	for (i = 0; i < np; i++) {
		cs->hpos[popped[i]] = cs->hn;
		cs->heap[cs->hn++] = popped[i];
		heap_fix(cs, cs->hn - 1);
	}
	free(popped);
	return rc;
}

/*
 * ShrtDline of Alg. 2 for commit position @pos: an update whose deadline is @pos if there is
 * one (several: the one with the smallest t_en, ties lowest index), else ShrtUp.
 * *forced tells which. Returns the update index, -1 when there is no candidate, or -ENOMEM.
 */
static int shrt_dline(struct planwork *pw, struct netstate *net, struct cands *cs, int64_t pos,
		      int use_deadlines, double *te, int *forced)
{
	int i, best = -1;
	double bt = INFINITY;

	*forced = 0;
	if (use_deadlines) {
		for (i = 0; i < cs->n; i++) {
			int u = cs->c[i];
			double t;

			if (order_deadline(pw->b, u) != pos)
				continue;
			t = upd_tend(pw, net, u);
			if (t < 0.0)
				return -ENOMEM;
			if (best < 0 || key_less(t, u, bt, best)) {
				best = u;
				bt = t;
			}
		}
		if (best >= 0) {
			*forced = 1;
			*te = bt;
			return best;
		}
	}
	if (pw->impl == PLAN_IMPL_SIMPLE)
		return shortest_simple(pw, net, cs, te);
	if (pw->n_legs > 1)
		return shortest_fast_legs(pw, net, cs, te);
	return shortest_fast(pw, net, cs, te);
}

static int push_int(int **a, int *n, int *cap, int v)
{
	if (arr_grow((void **)a, cap, *n + 1, sizeof(**a)))
		return -ENOMEM;
	(*a)[(*n)++] = v;
	return 0;
}

static void cands_remove(struct cands *cs, int u)
{
	int i;

	for (i = 0; i < cs->n; i++)
		if (cs->c[i] == u)
			break;
	if (i < cs->n) {
		memmove(cs->c + i, cs->c + i + 1, (size_t)(cs->n - i - 1) * sizeof(*cs->c));
		cs->n--;
	}
	if (cs->heap)
		heap_remove(cs, u);
}

/*
 * Look-ahead of Alg. 2 lines 10-11: t_en of the update that would be picked for position
 * @pos+1 once @g is reserved. SIMPLE works on a copy of the network, FAST reserves and undoes
 * (with its own copy of the lower bounds: values computed on the tentative network are not
 * lower bounds for the network without @g).
 */
static int lookahead(struct planwork *pw, struct netstate *net, struct cands *cs, int g,
		     int64_t pos, double *te_next)
{
	struct planwork_job job;
	int forced, nb = pw->b->n_updates, rc = 0, next = 0;

	planwork_update_job(pw, g, -1, &job);
	if (pw->impl == PLAN_IMPL_SIMPLE) {
		struct netstate tmp;

		if (netstate_copy(&tmp, net))
			return -ENOMEM;
		if (planwork_job_reserve(pw, &tmp, &job, NULL, NULL) < 0.0)
			rc = -ENOMEM;
		else
			next = shrt_dline(pw, &tmp, cs, pos + 1, 1, te_next, &forced);
		netstate_free(&tmp);
	} else {
		struct netstate_mark m = netstate_mark(net);
		struct cands look;

		if (cands_alloc(&look, nb, 1))
			return -ENOMEM;
		cands_copy(&look, cs, nb);
		if (planwork_job_reserve(pw, net, &job, NULL, NULL) < 0.0)
			rc = -ENOMEM;
		else
			next = shrt_dline(pw, net, &look, pos + 1, 1, te_next, &forced);
		netstate_undo(net, m);
		cands_free(&look);
	}
	if (rc)
		return rc;
	return next == -ENOMEM ? -ENOMEM : 0;
}

int order_compute(struct planwork *pw, struct netstate *base)
{
	const struct plan_batch *b = pw->b;
	struct plan *o = pw->out;
	int async = b->mode == PLAN_MLFABRIC_A;
	struct cands cs = { 0 };
	struct netstate copy, *net = base;
	struct netstate_mark m0 = netstate_mark(base);
	int64_t pos = 1; /* commit position |O(U)|+1 of the next pick */
	int i, rc = 0;

	if (cands_alloc(&cs, b->n_updates, pw->impl == PLAN_IMPL_FAST))
		return -ENOMEM;
	for (i = 0; i < b->n_updates; i++) {
		cs.lb[i] = -INFINITY;
		if (cs.hpos)
			cs.hpos[i] = -1;
		if (!b->updates[i].replica_only) {
			cs.c[cs.n++] = i;
			if (cs.heap) {
				cs.hpos[i] = cs.hn;
				cs.heap[cs.hn++] = i;
			}
		}
	}
	if (pw->impl == PLAN_IMPL_SIMPLE) {
		if (netstate_copy(&copy, base)) {
			rc = -ENOMEM;
			goto out;
		}
		net = &copy;
	}
	/*
	 * Alg. 2 iterates "for i = 1 to |U|" and uses i as the commit position. After a drop
	 * (line 11, continue) i still advances although nothing was committed, so the paper's
	 * loop counter drifts ahead of the real position and would check deadlines against the
	 * wrong position. We use pos = |O(U)| + 1, which only advances on a commit, and loop
	 * until every candidate is placed or dropped.
	 */
	while (cs.n > 0) {
		double te, te_next;
		int g, forced;

		if (async) {
			/* Updates whose deadline has passed can never be applied in time. */
			for (i = 0; i < cs.n;) {
				int u = cs.c[i];

				if (order_deadline(b, u) < pos) {
					if ((rc = push_int(&o->dropped, &o->n_dropped, &pw->cap_dropped, u)))
						goto out;
					cands_remove(&cs, u);
				} else {
					i++;
				}
			}
			if (cs.n == 0)
				break;
		}
		g = shrt_dline(pw, net, &cs, pos, async, &te, &forced);
		if (g < 0) {
			rc = g == -1 ? 0 : g;
			goto out;
		}
		cands_remove(&cs, g);
		if (te == INFINITY) {
			/* It never reaches the server: drop it at the worker. */
			if ((rc = push_int(&o->dropped, &o->n_dropped, &pw->cap_dropped, g)))
				goto out;
			continue;
		}
		if (forced && cs.n > 0) {
			if ((rc = lookahead(pw, net, &cs, g, pos, &te_next)))
				goto out;
			if (te > te_next) {
				/* §5.1.3: "next" would finish before "current": drop current. */
				if ((rc = push_int(&o->dropped, &o->n_dropped, &pw->cap_dropped, g)))
					goto out;
				continue;
			}
		}
		{
			struct planwork_job job;

			planwork_update_job(pw, g, -1, &job);
			if (planwork_job_reserve(pw, net, &job, NULL, NULL) < 0.0) {
				rc = -ENOMEM;
				goto out;
			}
		}
		if ((rc = push_int(&o->order, &o->n_order, &pw->cap_order, g)))
			goto out;
		pos++;
	}
out:
	if (net == &copy)
		netstate_free(&copy);
	else
		netstate_undo(base, m0);
	cands_free(&cs);
	return rc;
}
