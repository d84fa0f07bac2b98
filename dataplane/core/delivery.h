/* delivery.h - commit order of incoming transfers: which finished transfer may be handed over now. */
#ifndef MLF_DP_DELIVERY_H
#define MLF_DP_DELIVERY_H

#include <stdint.h>

/**
 * The commit order of one application channel (docs/dataplane.md, ordered delivery): ids[0..n) in
 * order; done[i] once ids[i] was handed to the app (delivered or reported failed). Handed-over
 * ids at the head are dropped, so ids[0] is always the one the channel waits for.
 * head_id/head_since_ns: the head and since when (ns) it holds the channel (delivery_stalled).
 */
struct delivery_list {
	uint64_t *ids;
	uint8_t *done;
	int n, cap;
	uint64_t head_id, head_since_ns;
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

/**
 * delivery_waits_for - 1 when @id is in the list and not yet handed over (a failure event for it
 * must be delivered on this channel), else 0.
 */
int delivery_waits_for(const struct delivery_list *o, uint64_t id);

/**
 * delivery_mark_done - record that @id was handed over (no-op for ids not in the list); drops
 * every handed-over id from the head so the list stays as short as what is still awaited.
 */
void delivery_mark_done(struct delivery_list *o, uint64_t id);

/**
 * delivery_stalled - hold timeout of the head of the order (it never arrived: its sender failed
 * before starting, or the app cancelled it). Call at @now_ns (ns) while later transfers wait for
 * it; @alive: the head is being received right now (restarts the clock). Returns 1 with *@id set
 * when the same head has held the channel for more than @hold_ns, else 0.
 */
int delivery_stalled(struct delivery_list *o, uint64_t now_ns, uint64_t hold_ns, int alive,
		     uint64_t *id);

/** delivery_free - release the list; safe on a zeroed struct. */
void delivery_free(struct delivery_list *o);

#endif
