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
	int ordered; /* a scheduler orders this channel: set by a delivery_add of one id or more,
		      * cleared by a replace with none (a lost scheduler's orders emptied) */
};

/*
 * How long a finished transfer on an ordered channel whose id no order named yet waits for its
 * `order` (ns). The order travels scheduler -> dataplane -> app -> dataplane while the data goes
 * sender -> dataplane: on a loaded host the data can come first, and handed over at once it
 * would be applied before transfers planned ahead of it (each commit's version one higher than
 * planned: an update planned at the delay bound then goes past it). Past this the transfer is
 * handed over unordered, with a WARN.
 */
#define DELIVERY_UNKNOWN_HOLD_NS 500000000ull

/**
 * delivery_add - append @n transfer ids (or replace the list when @replace); the channel is
 * ordered from then on when @n > 0, and no longer when @replace and @n == 0.
 * Returns 0, or -ENOMEM (the list is unchanged).
 */
int delivery_add(struct delivery_list *o, const uint64_t *ids, int n, int replace);

/**
 * delivery_may_deliver - 1 when transfer @id may be handed over now: it is not in the list, or
 * every id before it was handed over; 0 when it must wait for a predecessor.
 */
int delivery_may_deliver(const struct delivery_list *o, uint64_t id);

/**
 * delivery_unknown_waits - 1 when the channel is ordered (a scheduler orders it) and no order
 * named @id yet: a finished transfer @id should wait for its order (DELIVERY_UNKNOWN_HOLD_NS at
 * most, counted by the caller); else 0.
 */
int delivery_unknown_waits(const struct delivery_list *o, uint64_t id);

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
