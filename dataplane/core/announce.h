/* announce.h - transfers the scheduler announced to this receiver (docs/security.md "Announced transfers"). */
#ifndef MLF_DP_ANNOUNCE_H
#define MLF_DP_ANNOUNCE_H

#include <stdint.h>

/** Announcements remembered at once (oldest forgotten first when full). */
#define ANNOUNCE_CAP 8192

/**
 * One announcement: transfer @id from host index @peer on channel @chan may be received until
 * @until_ns (a monotonic ns clock, the caller's). id 0 marks a free (taken or expired) slot.
 */
struct announce_entry {
	uint64_t id, until_ns;
	int peer;
	uint16_t chan;
};

/**
 * The receiver's announcements: a ring of per-transfer entries, newest at head - 1 (lookups go
 * newest first: an arriving transfer was usually announced moments before), and standing
 * permissions, one bit per (peer, channel < 64) (chain replication: every transfer the server
 * forwards). @ttl_ns: how long an announced transfer that never came is kept.
 */
struct announce {
	struct announce_entry *ring;
	int cap, head, n;
	uint64_t *standing; /* [n_peers]: bit c = every transfer from that peer on channel c */
	int n_peers;
	uint64_t ttl_ns;
	uint64_t added, evicted; /* counters: announcements received, forgotten unused when full */
};

/**
 * announce_init - an empty table for hosts 0..@n_peers-1 keeping announcements @ttl_ns ns.
 * Returns 0, -EINVAL (n_peers < 1, ttl 0) or -ENOMEM.
 */
int announce_init(struct announce *a, int n_peers, uint64_t ttl_ns);

/**
 * announce_add - transfer @id (non-zero) from @peer on @chan (< 64) is announced at @now_ns. A
 * full table forgets its oldest entry (counted in `evicted`). Returns 0, or -EINVAL (bad peer,
 * channel or id 0: nothing stored).
 */
int announce_add(struct announce *a, int peer, unsigned chan, uint64_t id, uint64_t now_ns);

/**
 * announce_standing - from now on every transfer from @peer on @chan is announced (@on) or no
 * longer (@on 0). Returns 0 or -EINVAL (bad peer or channel).
 */
int announce_standing(struct announce *a, int peer, unsigned chan, int on);

/**
 * announce_take - was transfer @id from @peer on @chan announced (and not expired at @now_ns)?
 * Returns 1 and consumes the entry (an id is received once), 1 for a standing permission, 0 when
 * not announced, -1 when @id was announced from another peer or for another channel (the entry
 * stays: the announced transfer may still come).
 */
int announce_take(struct announce *a, int peer, unsigned chan, uint64_t id, uint64_t now_ns);

/** announce_free - release the table; safe on a zeroed struct and twice. */
void announce_free(struct announce *a);

#endif
