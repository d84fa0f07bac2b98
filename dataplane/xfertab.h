/* xfertab.h - hash tables of the transport's transfers: (peer, transfer id) -> record (rte_hash). */
#ifndef MLF_XFERTAB_H
#define MLF_XFERTAB_H

#include <stdint.h>

/**
 * A table of at most `entries` keys (peer, id) -> non-NULL pointer, on librte_hash (cuckoo hash
 * with an extendable bucket table, so that an add of a new key never fails below `entries`).
 * One thread only (the dataplane's loop). Replaces the linear scans of the receive, finished-
 * receive and send tables (docs/dataplane.md "Transfer lookups"); needs the EAL initialised.
 */
struct xfertab;

/**
 * xfertab_new - a table for @entries keys (>= 1), memory on NUMA socket @socket (SOCKET_ID_ANY:
 * any); @what names it in logs and in the rte_hash name. NULL on failure (rte_errno; logged).
 */
struct xfertab *xfertab_new(const char *what, unsigned entries, int socket);

/** xfertab_free - free the table (NULL is fine). */
void xfertab_free(struct xfertab *t);

/**
 * xfertab_put - map (@peer, @id) to @v (non-NULL), replacing what it mapped to. Returns 0, or
 * -ENOSPC when the table holds `entries` other keys, -EINVAL for a NULL @v.
 */
int xfertab_put(struct xfertab *t, int peer, uint64_t id, void *v);

/** xfertab_get - what (@peer, @id) maps to, or NULL. */
void *xfertab_get(const struct xfertab *t, int peer, uint64_t id);

/** xfertab_del - forget (@peer, @id). Returns 0, or -ENOENT when it was not there. */
int xfertab_del(struct xfertab *t, int peer, uint64_t id);

/** xfertab_clear - forget every key. */
void xfertab_clear(struct xfertab *t);

/** xfertab_count - keys in the table. */
unsigned xfertab_count(const struct xfertab *t);

/**
 * A ring of the keys of the newest `cap` records (the receiver's finished transfers): the caller
 * keeps the records in its own array indexed by slot; a table maps each key to the slot of its
 * newest record, so that finding one costs a hash lookup, not a newest-first scan of the ring.
 * Pushing into a full ring overwrites the oldest record: its key is forgotten unless a newer
 * record has it (xferring.c; the scan's semantics, tests/unit/test_dp_xfertab.c).
 */
struct xferring {
	struct xfertab *tab;  /* key -> 1 + slot of its newest record */
	int *peer;            /* [cap]: key of the record in each slot */
	uint64_t *id;
	unsigned cap, head, n; /* slots; next slot written; slots in use */
};

/** xferring_init - an empty ring of @cap (>= 1) slots (see xfertab_new). 0 or -ENOMEM. */
int xferring_init(struct xferring *r, const char *what, unsigned cap, int socket);

/** xferring_free - free the ring (a zeroed or freed ring is fine) and zero it. */
void xferring_free(struct xferring *r);

/**
 * xferring_push - the slot for a new record of (@peer, @id), the newest from now on: the next
 * free one, or the oldest one's (overwritten) when all @cap are in use. Never fails.
 */
unsigned xferring_push(struct xferring *r, int peer, uint64_t id);

/** xferring_find - the slot of the newest record of (@peer, @id) still in the ring, or -1. */
int xferring_find(const struct xferring *r, int peer, uint64_t id);

#endif
