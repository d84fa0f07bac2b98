/* delivery.h - commit order of incoming transfers: which finished transfer may be handed over now. */
#ifndef MLF_DP_DELIVERY_H
#define MLF_DP_DELIVERY_H

#include <stdint.h>

/**
 * The commit order of one application channel (DESIGN.md §5 ordered delivery): ids[0..n) in
 * order; done[i] once ids[i] was handed to the app (delivered or reported failed).
 */
struct delivery_list {
	uint64_t *ids;
	uint8_t *done;
	int n, cap;
};

/**
 * delivery_add - append @n transfer ids (or replace the list when @replace).
 * Returns 0, or -ENOMEM (the list is unchanged).
 */
int delivery_add(struct delivery_list *o, const uint64_t *ids, int n, int replace);

/**
 * delivery_may_deliver - 1 when transfer @id may be handed over now: it is not in the list, or
 * every id before it was handed over; 0 when it must wait for a predecessor.
 */
int delivery_may_deliver(const struct delivery_list *o, uint64_t id);

/** delivery_mark_done - record that @id was handed over (no-op for ids not in the list). */
void delivery_mark_done(struct delivery_list *o, uint64_t id);

/** delivery_free - release the list; safe on a zeroed struct. */
void delivery_free(struct delivery_list *o);

#endif
