/* order.h - commit order of incoming transfers: which finished transfer may be handed over now. */
#ifndef MLF_ORDER_H
#define MLF_ORDER_H

#include <stdint.h>

/**
 * The commit order of one application channel (DESIGN.md §5 ordered delivery): ids[0..n) in
 * order; done[i] once ids[i] was handed to the app (delivered or reported failed).
 */
struct order_list {
	uint64_t *ids;
	uint8_t *done;
	int n, cap;
};

/**
 * order_add - append @n transfer ids (or replace the list when @replace).
 * Returns 0, or -ENOMEM (the list is unchanged).
 */
int order_add(struct order_list *o, const uint64_t *ids, int n, int replace);

/**
 * order_may_deliver - 1 when transfer @id may be handed over now: it is not in the list, or
 * every id before it was handed over; 0 when it must wait for a predecessor.
 */
int order_may_deliver(const struct order_list *o, uint64_t id);

/** order_mark_done - record that @id was handed over (no-op for ids not in the list). */
void order_mark_done(struct order_list *o, uint64_t id);

/** order_free - release the list; safe on a zeroed struct. */
void order_free(struct order_list *o);

#endif
