/* delivery.c - commit-order bookkeeping: hold early arrivals until their predecessors are handed over. */
#include "delivery.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "arr.h"

int delivery_add(struct delivery_list *o, const uint64_t *ids, int n, int replace)
{
	int base = replace ? 0 : o->n;
	/* both arrays grow alike from the same capacity; o->cap is raised only when both did */
	void *pi = o->ids, *pd = o->done;
	int cap_ids = o->cap, cap_done = o->cap, rc;

	rc = arr_grow(&pi, &cap_ids, base + n, sizeof(*o->ids));
	o->ids = pi;
	if (rc == 0)
		rc = arr_grow(&pd, &cap_done, base + n, sizeof(*o->done));
	o->done = pd;
	if (rc < 0)
		return -ENOMEM;
	o->cap = cap_ids < cap_done ? cap_ids : cap_done;
	for (int i = 0; i < n; i++) {
		o->ids[base + i] = ids[i];
		o->done[base + i] = 0;
	}
	o->n = base + n;
	if (n > 0)
		o->ordered = 1;
	else if (replace)
		o->ordered = 0;
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

int delivery_unknown_waits(const struct delivery_list *o, uint64_t id)
{
	return o->ordered && position(o, id) < 0;
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
