/* sched_index.h - an open-addressing hash index from a 64-bit id to a position in an array. */
#ifndef MLF_SCHED_INDEX_H
#define MLF_SCHED_INDEX_H

#include <stdint.h>

/*
 * The scheduler's tables (updates, transfers) are arrays compacted once per batch; the index
 * maps an id to its position so that a message naming an id costs O(1), not a scan of the table
 * (60,000 updates took 7.3 s of CPU in sched_find_update with scans). Entries are only added
 * (sched_index_put) and the whole index is rebuilt after a compaction; a put of an id already
 * present replaces its position (the newest entry wins, as the scans from the end did).
 * When memory runs out the index is marked stale and lookups must scan (sched_index_usable).
 */

/** One slot: @pos < 0 is empty. */
struct sched_index_slot {
	uint64_t id;
	int pos;
};

/** The index. Zero-initialised is an empty, usable index. */
struct sched_index {
	struct sched_index_slot *slot; /* cap slots (a power of two), or NULL */
	unsigned cap, n;               /* slots, used slots (kept <= cap / 2) */
	int stale;                     /* a put failed (out of memory): not every id is in it */
	int off;                       /* never used (bench-sched's baseline: every lookup scans) */
};

/**
 * sched_index_put - map @id to @pos (>= 0), replacing an earlier position of @id. Returns 0,
 * or -ENOMEM (the index is then stale until the next sched_index_clear).
 */
int sched_index_put(struct sched_index *ix, uint64_t id, int pos);

/** sched_index_get - the position of @id, or -1 when it is not in the index. */
int sched_index_get(const struct sched_index *ix, uint64_t id);

/** sched_index_usable - 1 when a get's -1 means "not in the table" (not stale, not off). */
int sched_index_usable(const struct sched_index *ix);

/** sched_index_clear - forget every id (keeps the memory; clears stale). */
void sched_index_clear(struct sched_index *ix);

/** sched_index_free - free the slots; the index is empty and usable again (off is kept). */
void sched_index_free(struct sched_index *ix);

#endif
