/* netstate.c - residual link bandwidth step functions: t_en, NetUp, undo log (paper fig. 4). */
#include "netstate.h"
#include "arr.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Bytes carried in @dt seconds at @gbps. */
static inline double bytes_in(double gbps, double dt)
{
	return gbps * 1e9 / 8.0 * dt;
}

/* Set link @l to @gbps from @at_s on (used only while building the initial capacities). */
static int link_set_from(struct netstate_link *l, double at_s, double gbps)
{
	int i = l->n;

	while (i > 0 && l->s[i - 1].from_s >= at_s)
		i--;
	/* Later changes override: the step function is rebuilt from a sorted change list. */
	if (arr_grow((void **)&l->s, &l->cap, i + 1, sizeof(*l->s)))
		return -ENOMEM;
	l->n = i;
	if (i > 0 && l->s[i - 1].gbps == gbps)
		return 0;
	l->s[i].from_s = at_s;
	l->s[i].gbps = gbps;
	l->n = i + 1;
	return 0;
}

static int cmp_change(const void *a, const void *b)
{
	const struct plan_capacity_change *x = *(const struct plan_capacity_change *const *)a;
	const struct plan_capacity_change *y = *(const struct plan_capacity_change *const *)b;

	if (x->at_s < y->at_s)
		return -1;
	if (x->at_s > y->at_s)
		return 1;
	return x < y ? -1 : (x > y);
}

int netstate_init(struct netstate *ns, const struct plan_batch *b)
{
	const struct plan_capacity_change **ch = NULL;
	int i, rc = 0;

	memset(ns, 0, sizeof(*ns));
	ns->now_s = b->now_s;
	ns->n_links = 2 * b->n_hosts;
	ns->links = calloc((size_t)ns->n_links + 1, sizeof(*ns->links));
	if (!ns->links)
		return -ENOMEM;
	for (i = 0; i < b->n_hosts; i++) {
		rc |= link_set_from(&ns->links[netstate_up(i)], b->now_s, b->hosts[i].up_gbps);
		rc |= link_set_from(&ns->links[netstate_down(i)], b->now_s, b->hosts[i].down_gbps);
	}
	if (rc)
		goto fail;
	if (b->n_changes > 0) {
		ch = malloc((size_t)b->n_changes * sizeof(*ch));
		if (!ch) {
			rc = -ENOMEM;
			goto fail;
		}
		for (i = 0; i < b->n_changes; i++) {
			if (b->changes[i].host < 0 || b->changes[i].host >= b->n_hosts) {
				rc = -EINVAL;
				goto fail;
			}
			ch[i] = &b->changes[i];
		}
		/* Stable by position among equal times: the later entry wins. */
		qsort(ch, (size_t)b->n_changes, sizeof(*ch), cmp_change);
		for (i = 0; i < b->n_changes; i++) {
			int link = ch[i]->dir == PLAN_UP ? netstate_up(ch[i]->host)
							 : netstate_down(ch[i]->host);
			double at = ch[i]->at_s < b->now_s ? b->now_s : ch[i]->at_s;

			if (link_set_from(&ns->links[link], at, ch[i]->gbps)) {
				rc = -ENOMEM;
				goto fail;
			}
		}
	}
	free(ch);
	ns->version = ns->counter = 1;
	return 0;
fail:
	free(ch);
	netstate_free(ns);
	return rc;
}

void netstate_free(struct netstate *ns)
{
	int i;

	if (ns->links)
		for (i = 0; i < ns->n_links; i++)
			free(ns->links[i].s);
	free(ns->links);
	free(ns->undo);
	free(ns->saved);
	memset(ns, 0, sizeof(*ns));
}

int netstate_copy(struct netstate *dst, const struct netstate *src)
{
	int i;

	memset(dst, 0, sizeof(*dst));
	dst->now_s = src->now_s;
	dst->n_links = src->n_links;
	dst->version = src->version;
	dst->counter = src->counter;
	dst->links = calloc((size_t)src->n_links + 1, sizeof(*dst->links));
	if (!dst->links)
		return -ENOMEM;
	for (i = 0; i < src->n_links; i++) {
		const struct netstate_link *s = &src->links[i];
		struct netstate_link *d = &dst->links[i];

		d->s = malloc((size_t)s->n * sizeof(*d->s));
		if (!d->s) {
			netstate_free(dst);
			return -ENOMEM;
		}
		memcpy(d->s, s->s, (size_t)s->n * sizeof(*d->s));
		d->n = d->cap = s->n;
	}
	return 0;
}

struct netstate_mark netstate_mark(const struct netstate *ns)
{
	struct netstate_mark m = { ns->n_undo, ns->n_saved, ns->version };
	return m;
}

/* Replace steps [pos, pos+n_old) of @link by @n_new steps @nw, logging the old ones. */
static int splice(struct netstate *ns, int link, int pos, int n_old,
		  const struct plan_rate_step *nw, int n_new)
{
	struct netstate_link *l = &ns->links[link];
	struct netstate_undo *u;

	if (arr_grow((void **)&ns->undo, &ns->cap_undo, ns->n_undo + 1, sizeof(*ns->undo)))
		return -ENOMEM;
	if (ns->n_saved + (size_t)n_old > ns->cap_saved) {
		size_t nc = ns->cap_saved ? ns->cap_saved : 64;
		struct plan_rate_step *np;

		while (nc < ns->n_saved + (size_t)n_old)
			nc *= 2;
		np = realloc(ns->saved, nc * sizeof(*np));
		if (!np)
			return -ENOMEM;
		ns->saved = np;
		ns->cap_saved = nc;
	}
	if (arr_grow((void **)&l->s, &l->cap, l->n - n_old + n_new, sizeof(*l->s)))
		return -ENOMEM;
	u = &ns->undo[ns->n_undo++];
	u->link = link;
	u->pos = pos;
	u->n_old = n_old;
	u->n_new = n_new;
	u->old_off = ns->n_saved;
	u->version = ns->version;
	memcpy(ns->saved + ns->n_saved, l->s + pos, (size_t)n_old * sizeof(*l->s));
	ns->n_saved += (size_t)n_old;
	memmove(l->s + pos + n_new, l->s + pos + n_old, (size_t)(l->n - pos - n_old) * sizeof(*l->s));
	memcpy(l->s + pos, nw, (size_t)n_new * sizeof(*l->s));
	l->n += n_new - n_old;
	return 0;
}

void netstate_undo(struct netstate *ns, struct netstate_mark m)
{
	while (ns->n_undo > m.n_undo) {
		struct netstate_undo *u = &ns->undo[--ns->n_undo];
		struct netstate_link *l = &ns->links[u->link];

		/* Capacity suffices: the link held these n_old steps before. */
		memmove(l->s + u->pos + u->n_old, l->s + u->pos + u->n_new,
			(size_t)(l->n - u->pos - u->n_new) * sizeof(*l->s));
		memcpy(l->s + u->pos, ns->saved + u->old_off, (size_t)u->n_old * sizeof(*l->s));
		l->n += u->n_old - u->n_new;
	}
	ns->n_saved = m.n_saved;
	ns->version = m.version;
}

/* Index of the step of @l holding time @t (the last step whose from_s <= t; 0 if none). */
static int step_at(const struct netstate_link *l, double t)
{
	int lo = 0, hi = l->n - 1;

	while (lo < hi) {
		int mid = (lo + hi + 1) / 2;

		if (l->s[mid].from_s <= t)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

double netstate_gbps_at(const struct netstate *ns, int link, double t_s)
{
	const struct netstate_link *l = &ns->links[link];

	return l->s[step_at(l, t_s)].gbps;
}

static int prof_push(struct netstate_profile *p, double from, double gbps)
{
	if (p->n > 0 && p->steps[p->n - 1].gbps == gbps)
		return 0;
	if (arr_grow((void **)&p->steps, &p->cap, p->n + 1, sizeof(*p->steps)))
		return -ENOMEM;
	p->steps[p->n].from_s = from;
	p->steps[p->n].gbps = gbps;
	p->n++;
	return 0;
}

double netstate_tend(const struct netstate *ns, int src, int dst, double t0, uint64_t bytes,
		     struct netstate_profile *prof)
{
	const struct netstate_link *a, *b;
	int ia, ib;
	double t = t0 < ns->now_s ? ns->now_s : t0;
	double left = (double)bytes;

	if (prof) {
		prof->n = 0;
		prof->start_s = prof->end_s = t;
	}
	if (src == dst || bytes == 0)
		return t;
	a = &ns->links[netstate_up(src)];
	b = &ns->links[netstate_down(dst)];
	ia = step_at(a, t);
	ib = step_at(b, t);
	for (;;) {
		double na = ia + 1 < a->n ? a->s[ia + 1].from_s : INFINITY;
		double nb = ib + 1 < b->n ? b->s[ib + 1].from_s : INFINITY;
		double next = na < nb ? na : nb;
		double r = a->s[ia].gbps < b->s[ib].gbps ? a->s[ia].gbps : b->s[ib].gbps;

		if (r < NETSTATE_RATE_EPS)
			r = 0.0;
		if (prof && prof_push(prof, t, r))
			return -1.0;
		if (r > 0.0) {
			double can = next == INFINITY ? INFINITY : bytes_in(r, next - t);

			if (can >= left) {
				double end = t + left / (r * 1e9 / 8.0);

				if (end > next)
					end = next;
				if (prof)
					prof->end_s = end;
				return end;
			}
			left -= can;
		} else if (next == INFINITY) {
			return INFINITY;
		}
		t = next;
		if (na == next)
			ia++;
		if (nb == next)
			ib++;
	}
}

/* Subtract @prof from one link (see netstate_reserve). */
static int reserve_link(struct netstate *ns, int link, const struct netstate_profile *prof)
{
	struct netstate_link *l = &ns->links[link];
	struct plan_rate_step *nw;
	int i0, i1, n_new = 0, j, i, cap, rc;
	double t;

	i0 = step_at(l, prof->start_s);
	if (i0 > 0)
		i0--;
	i1 = step_at(l, prof->end_s) + 2; /* exclusive, with one step after for coalescing */
	if (i1 > l->n)
		i1 = l->n;
	/* New steps <= old steps in the window + profile steps + start + end. */
	cap = 2 * (i1 - i0) + 2 * prof->n + 4;
	nw = malloc((size_t)cap * sizeof(*nw));
	if (!nw)
		return -ENOMEM;
	/* Walk the union of the old boundaries in [i0, i1) and the profile's boundaries. */
	i = i0;
	j = 0;
	t = l->s[i0].from_s;
	for (;;) {
		double old = l->s[i].gbps, use = 0.0, r, nt_old, nt_prof;

		if (t >= prof->start_s && t < prof->end_s && prof->n > 0) {
			while (j + 1 < prof->n && prof->steps[j + 1].from_s <= t)
				j++;
			use = prof->steps[j].gbps;
		}
		r = old - use;
		if (r < NETSTATE_RATE_EPS)
			r = 0.0;
		if (n_new == 0 || nw[n_new - 1].gbps != r) {
			nw[n_new].from_s = t;
			nw[n_new].gbps = r;
			n_new++;
		}
		nt_old = i + 1 < i1 ? l->s[i + 1].from_s : INFINITY;
		if (t < prof->start_s)
			nt_prof = prof->start_s;
		else if (t < prof->end_s)
			nt_prof = j + 1 < prof->n && prof->steps[j + 1].from_s < prof->end_s
					  ? prof->steps[j + 1].from_s : prof->end_s;
		else
			nt_prof = INFINITY;
		if (nt_old == INFINITY && nt_prof == INFINITY)
			break;
		if (nt_old <= nt_prof) {
			i++;
			t = nt_old;
		} else {
			t = nt_prof;
		}
	}
	/* The step after the window (if any) keeps its rate: merge if equal. */
	if (i1 < l->n && n_new > 0 && nw[n_new - 1].gbps == l->s[i1].gbps &&
	    nw[n_new - 1].from_s < l->s[i1].from_s) {
		rc = splice(ns, link, i0, i1 - i0 + 1, nw, n_new);
	} else {
		rc = splice(ns, link, i0, i1 - i0, nw, n_new);
	}
	free(nw);
	return rc;
}

int netstate_reserve(struct netstate *ns, int src, int dst, const struct netstate_profile *prof)
{
	struct netstate_mark m = netstate_mark(ns);

	if (src == dst || prof->n == 0 || !(prof->end_s > prof->start_s))
		return 0;
	if (reserve_link(ns, netstate_up(src), prof) ||
	    reserve_link(ns, netstate_down(dst), prof)) {
		netstate_undo(ns, m);
		return -ENOMEM;
	}
	ns->version = ++ns->counter;
	return 0;
}

void netstate_profile_free(struct netstate_profile *prof)
{
	free(prof->steps);
	memset(prof, 0, sizeof(*prof));
}
