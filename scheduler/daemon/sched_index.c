/* sched_index.c - open addressing with linear probing over a power-of-two table of slots. */
#include "sched_index.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static unsigned slot_of(uint64_t id, unsigned cap)
{
	id ^= id >> 33; /* the finaliser of MurmurHash3: ids differ mostly in their low bits */
	id *= 0xff51afd7ed558ccdull;
	id ^= id >> 33;
	return (unsigned)id & (cap - 1);
}

static void insert(struct sched_index_slot *slot, unsigned cap, uint64_t id, int pos, unsigned *n)
{
	unsigned i = slot_of(id, cap);

	while (slot[i].pos >= 0 && slot[i].id != id)
		i = (i + 1) & (cap - 1);
	if (slot[i].pos < 0)
		(*n)++;
	slot[i].id = id;
	slot[i].pos = pos;
}

static int grow(struct sched_index *ix)
{
	unsigned cap = ix->cap ? ix->cap * 2 : 256, n = 0;
	struct sched_index_slot *s = malloc(sizeof(*s) * cap);

	if (!s || cap < ix->cap) {
		free(s);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < cap; i++)
		s[i].pos = -1;
	for (unsigned i = 0; i < ix->cap; i++)
		if (ix->slot[i].pos >= 0)
			insert(s, cap, ix->slot[i].id, ix->slot[i].pos, &n);
	free(ix->slot);
	ix->slot = s;
	ix->cap = cap;
	ix->n = n;
	return 0;
}

int sched_index_put(struct sched_index *ix, uint64_t id, int pos)
{
	if (ix->off)
		return 0;
	if ((ix->n + 1) * 2 > ix->cap && grow(ix)) {
		ix->stale = 1;
		return -ENOMEM;
	}
	insert(ix->slot, ix->cap, id, pos, &ix->n);
	return 0;
}

int sched_index_get(const struct sched_index *ix, uint64_t id)
{
	if (!ix->cap)
		return -1;
	for (unsigned i = slot_of(id, ix->cap);; i = (i + 1) & (ix->cap - 1)) {
		if (ix->slot[i].pos < 0)
			return -1;
		if (ix->slot[i].id == id)
			return ix->slot[i].pos;
	}
}

int sched_index_usable(const struct sched_index *ix)
{
	return !ix->stale && !ix->off;
}

void sched_index_clear(struct sched_index *ix)
{
	for (unsigned i = 0; i < ix->cap; i++)
		ix->slot[i].pos = -1;
	ix->n = 0;
	ix->stale = 0;
}

void sched_index_free(struct sched_index *ix)
{
	free(ix->slot);
	ix->slot = NULL;
	ix->cap = ix->n = 0;
	ix->stale = 0;
}
