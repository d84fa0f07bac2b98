/* announce.c - transfers the scheduler announced to this receiver (docs/security.md "Announced transfers"). */
#include "announce.h"

#include <errno.h>
#include <stdlib.h>

int announce_init(struct announce *a, int n_peers, uint64_t ttl_ns)
{
	*a = (struct announce){ 0 };
	if (n_peers < 1 || ttl_ns == 0)
		return -EINVAL;
	a->ring = calloc(ANNOUNCE_CAP, sizeof(*a->ring));
	a->standing = calloc((size_t)n_peers, sizeof(*a->standing));
	if (!a->ring || !a->standing) {
		announce_free(a);
		return -ENOMEM;
	}
	a->cap = ANNOUNCE_CAP;
	a->n_peers = n_peers;
	a->ttl_ns = ttl_ns;
	return 0;
}

int announce_add(struct announce *a, int peer, unsigned chan, uint64_t id, uint64_t now_ns)
{
	struct announce_entry *e;

	if (!a->ring || peer < 0 || peer >= a->n_peers || chan >= 64 || id == 0)
		return -EINVAL;
	e = &a->ring[a->head];
	if (a->n == a->cap && e->id && e->until_ns > now_ns)
		a->evicted++;
	*e = (struct announce_entry){ .id = id, .until_ns = now_ns + a->ttl_ns, .peer = peer,
				      .chan = (uint16_t)chan };
	a->head = (a->head + 1) % a->cap;
	if (a->n < a->cap)
		a->n++;
	a->added++;
	return 0;
}

int announce_standing(struct announce *a, int peer, unsigned chan, int on)
{
	if (!a->standing || peer < 0 || peer >= a->n_peers || chan >= 64)
		return -EINVAL;
	if (on)
		a->standing[peer] |= 1ULL << chan;
	else
		a->standing[peer] &= ~(1ULL << chan);
	return 0;
}

int announce_take(struct announce *a, int peer, unsigned chan, uint64_t id, uint64_t now_ns)
{
	int mismatch = 0;

	if (!a->ring || peer < 0 || peer >= a->n_peers || chan >= 64)
		return 0;
	if (a->standing[peer] & (1ULL << chan))
		return 1;
	for (int k = 1; k <= a->n; k++) {
		struct announce_entry *e = &a->ring[(a->head - k + a->cap) % a->cap];
		if (e->id != id || e->until_ns <= now_ns)
			continue;
		if (e->peer != peer || e->chan != chan) {
			mismatch = 1;
			continue;
		}
		e->id = 0;
		return 1;
	}
	return mismatch ? -1 : 0;
}

void announce_free(struct announce *a)
{
	free(a->ring);
	free(a->standing);
	*a = (struct announce){ 0 };
}
