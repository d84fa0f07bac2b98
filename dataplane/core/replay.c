/* replay.c - transfer stamps and the receiver's per-sender window of them (docs/security.md "Replays"). */
#include "replay.h"

#include <string.h>

#define SEQ_MAX ((1U << REPLAY_SEQ_BITS) - 1)

uint64_t replay_next(struct replay_tx *t, uint64_t real_ns)
{
	uint64_t ms = real_ns / 1000000, now = ms > REPLAY_EPOCH_UNIX_MS ? ms - REPLAY_EPOCH_UNIX_MS : 1;

	if (!t->epoch_ms || t->seq > SEQ_MAX) {
		t->epoch_ms = now > t->epoch_ms ? now : t->epoch_ms + 1;
		t->seq = 0;
	}
	return t->epoch_ms << REPLAY_SEQ_BITS | t->seq++;
}

static int bit(const struct replay_win *w, uint64_t i)
{
	return (int)(w->bits[i / 64] >> (i % 64) & 1);
}

enum replay_verdict replay_check(const struct replay_win *w, uint64_t stamp)
{
	if (!stamp)
		return REPLAY_ZERO;
	if (!w->top || stamp > w->top)
		return REPLAY_FRESH;
	if (w->top - stamp >= REPLAY_WINDOW)
		return REPLAY_STALE;
	return bit(w, w->top - stamp) ? REPLAY_SEEN : REPLAY_FRESH;
}

void replay_mark(struct replay_win *w, uint64_t stamp)
{
	uint64_t d, i;

	if (w->top && stamp <= w->top) {
		if (w->top - stamp < REPLAY_WINDOW)
			w->bits[(w->top - stamp) / 64] |= 1ULL << ((w->top - stamp) % 64);
		return;
	}
	/* slide up by d: bit i moves to i + d */
	d = w->top ? stamp - w->top : REPLAY_WINDOW;
	if (d >= REPLAY_WINDOW) {
		memset(w->bits, 0, sizeof(w->bits));
	} else {
		for (i = REPLAY_WINDOW; i-- > d;)
			if (bit(w, i - d))
				w->bits[i / 64] |= 1ULL << (i % 64);
			else
				w->bits[i / 64] &= ~(1ULL << (i % 64));
		for (i = 0; i < d; i++)
			w->bits[i / 64] &= ~(1ULL << (i % 64));
	}
	w->top = stamp;
	w->bits[0] |= 1;
}

const char *replay_verdict_name(enum replay_verdict v)
{
	static const char *const n[] = { "fresh", "seen", "stale", "zero" };

	return (unsigned)v < sizeof(n) / sizeof(n[0]) ? n[v] : "unknown";
}
