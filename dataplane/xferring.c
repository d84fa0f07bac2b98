/* xferring.c - a ring of finished transfers' keys with a (peer, id) index (xfertab). */
#include "xfertab.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int xferring_init(struct xferring *r, const char *what, unsigned cap, int socket)
{
	memset(r, 0, sizeof(*r));
	r->cap = cap ? cap : 1;
	r->peer = calloc(r->cap, sizeof(*r->peer));
	r->id = calloc(r->cap, sizeof(*r->id));
	r->tab = r->peer && r->id ? xfertab_new(what, r->cap, socket) : NULL;
	if (!r->tab) {
		xferring_free(r);
		return -ENOMEM;
	}
	return 0;
}

void xferring_free(struct xferring *r)
{
	xfertab_free(r->tab);
	free(r->peer);
	free(r->id);
	memset(r, 0, sizeof(*r));
}

unsigned xferring_push(struct xferring *r, int peer, uint64_t id)
{
	unsigned slot = r->head;

	/* the oldest record is overwritten: forget its key unless a newer record has it (then the
	 * table points there: a key maps to its newest slot) */
	if (r->n == r->cap &&
	    (uintptr_t)xfertab_get(r->tab, r->peer[slot], r->id[slot]) == (uintptr_t)slot + 1)
		xfertab_del(r->tab, r->peer[slot], r->id[slot]);
	/* cannot fail: at most cap keys, each with a slot in the ring */
	(void)xfertab_put(r->tab, peer, id, (void *)((uintptr_t)slot + 1));
	r->peer[slot] = peer;
	r->id[slot] = id;
	r->head = (slot + 1) % r->cap;
	if (r->n < r->cap)
		r->n++;
	return slot;
}

int xferring_find(const struct xferring *r, int peer, uint64_t id)
{
	uintptr_t k = r->tab ? (uintptr_t)xfertab_get(r->tab, peer, id) : 0;

	return k ? (int)(k - 1) : -1;
}
