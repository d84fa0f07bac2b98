/* order.c - commit-order bookkeeping: hold early arrivals until their predecessors are handed over. */
#include "order.h"

#include <errno.h>
#include <stdlib.h>

int order_add(struct order_list *o, const uint64_t *ids, int n, int replace)
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

static int position(const struct order_list *o, uint64_t id)
{
	for (int i = 0; i < o->n; i++)
		if (o->ids[i] == id)
			return i;
	return -1;
}

int order_may_deliver(const struct order_list *o, uint64_t id)
{
	int pos = position(o, id);

	for (int i = 0; i < pos; i++)
		if (!o->done[i])
			return 0;
	return 1;
}

void order_mark_done(struct order_list *o, uint64_t id)
{
	int pos = position(o, id);

	if (pos >= 0)
		o->done[pos] = 1;
}

void order_free(struct order_list *o)
{
	free(o->ids);
	free(o->done);
	o->ids = NULL;
	o->done = NULL;
	o->n = o->cap = 0;
}
