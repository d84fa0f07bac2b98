/* replay.h - transfer stamps and the receiver's per-sender window of them (docs/security.md "Replays"). */
#ifndef MLF_DP_REPLAY_H
#define MLF_DP_REPLAY_H

#include <stdint.h>

/*
 * A transfer stamp (64 bits, carried in every tagged frame and covered by its tag):
 *   bits 63..23  epoch: milliseconds since REPLAY_EPOCH_UNIX_MS when the sender's dataplane first
 *                stamped a transfer to this destination (a restarted dataplane has a later one)
 *   bits 22..0   sequence of the transfer within the epoch, per (sender, destination)
 * So the stamps a sender gives one destination increase strictly, across restarts too (unless
 * its clock steps back), and are dense within an epoch: the receiver keeps a bitmap of them.
 */
#define REPLAY_SEQ_BITS 23
#define REPLAY_EPOCH_UNIX_MS 1577836800000ULL /* 2020-01-01 00:00 UTC: 41 bits of ms last to 2089 */
#define REPLAY_WINDOW 4096                    /* stamps below the highest one still told apart */

/** The stamps one sender gives one destination. */
struct replay_tx {
	uint64_t epoch_ms; /* 0: nothing stamped yet */
	uint32_t seq;      /* next sequence within the epoch */
};

/**
 * replay_next - the stamp of the next transfer to this destination at wall-clock time @real_ns
 * (CLOCK_REALTIME ns). The first call takes the epoch from the clock; when the sequence runs out
 * (2^23 transfers) the epoch moves to max(now, epoch + 1) ms. Never returns 0.
 */
uint64_t replay_next(struct replay_tx *t, uint64_t real_ns);

/**
 * The stamps one receiver accepted from one sender: the highest, and bit i of @bits = stamp
 * top - i was accepted (i < REPLAY_WINDOW). All zero: nothing accepted yet (a fresh receiver).
 */
struct replay_win {
	uint64_t top;
	uint64_t bits[REPLAY_WINDOW / 64];
};

/** What replay_check says of a stamp. */
enum replay_verdict {
	REPLAY_FRESH = 0,  /* never seen: the transfer may open */
	REPLAY_SEEN = 1,   /* a transfer with this stamp was opened before: a replay */
	REPLAY_STALE = 2,  /* REPLAY_WINDOW or more below the highest stamp, or of an older epoch:
			    * too old to tell, refused (a replay, or a transfer whose every frame
			    * was lost while 4096 newer ones opened) */
	REPLAY_ZERO = 3,   /* stamp 0: no sender makes it */
};

/** replay_check - may a new transfer stamped @stamp open under @w? Changes nothing. */
enum replay_verdict replay_check(const struct replay_win *w, uint64_t stamp);

/**
 * replay_mark - remember that a transfer stamped @stamp opened (call after replay_check said
 * REPLAY_FRESH): the window slides up to a higher stamp, forgetting what falls out of it.
 */
void replay_mark(struct replay_win *w, uint64_t stamp);

/** replay_verdict_name - "fresh", "seen", "stale", "zero" (logs). */
const char *replay_verdict_name(enum replay_verdict v);

#endif
