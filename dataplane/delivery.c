/* delivery.c - commit-order bookkeeping: hold early arrivals until their predecessors are handed over. */
#include "delivery.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int delivery_add(struct delivery_list *o, const uint64_t *ids, int n, int replace)
{
	int base = replace ? 0 : o->n;

	if (base + n > o->cap) {
		int cap = (base + n) * 2;
		uint64_t *ni = realloc(o->ids, (size_t)cap * sizeof(*ni));
		uint8_t *nd;
		if (!ni)
			return -ENOMEM;
		o->ids = ni;
		nd = realloc(o->done, (size_t)cap);
		if (!nd)
			return -ENOMEM;
		o->done = nd;
		o->cap = cap;
	}
	for (int i = 0; i < n; i++) {
		o->ids[base + i] = ids[i];
		o->done[base + i] = 0;
	}
	o->n = base + n;
	return 0;
}

static int position(const struct delivery_list *o, uint64_t id)
{
	for (int i = 0; i < o->n; i++)
		if (o->ids[i] == id)
			return i;
	return -1;
}

int delivery_may_deliver(const struct delivery_list *o, uint64_t id)
{
	int pos = position(o, id);

	for (int i = 0; i < pos; i++)
		if (!o->done[i])
			return 0;
	return 1;
}

int delivery_waits_for(const struct delivery_list *o, uint64_t id)
{
	int pos = position(o, id);

	return pos >= 0 && !o->done[pos];
}

void delivery_mark_done(struct delivery_list *o, uint64_t id)
{
	int pos = position(o, id), k = 0;

	if (pos < 0)
		return;
	o->done[pos] = 1;
	/* handed-over ids at the head can never hold anything again: drop them */
	while (k < o->n && o->done[k])
		k++;
	if (k) {
		memmove(o->ids, o->ids + k, (size_t)(o->n - k) * sizeof(*o->ids));
		memmove(o->done, o->done + k, (size_t)(o->n - k));
		o->n -= k;
	}
}

int delivery_stalled(struct delivery_list *o, uint64_t now_ns, uint64_t hold_ns, int alive,
		     uint64_t *id)
{
	if (o->n == 0)
		return 0;
	if (!o->head_since_ns || o->head_id != o->ids[0] || alive) {
		o->head_id = o->ids[0];
		o->head_since_ns = now_ns;
		return 0;
	}
	if (now_ns - o->head_since_ns <= hold_ns)
		return 0;
	*id = o->head_id;
	return 1;
}

void delivery_free(struct delivery_list *o)
{
	free(o->ids);
	free(o->done);
	memset(o, 0, sizeof(*o));
}
