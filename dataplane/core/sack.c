/* sack.c - selective acknowledgement: which segments to (re)send, which arrived, SACK bitmaps. */
#include "sack.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static inline int bit_get(const uint64_t *b, uint64_t i) { return (b[i >> 6] >> (i & 63)) & 1; }
static inline void bit_set(uint64_t *b, uint64_t i) { b[i >> 6] |= 1ULL << (i & 63); }

/* First index >= @from and < @to whose bit is clear, or @to. */
static uint64_t first_clear(const uint64_t *b, uint64_t from, uint64_t to)
{
	while (from < to) {
		uint64_t w = ~b[from >> 6] >> (from & 63);
		if (w) {
			uint64_t i = from + (uint64_t)__builtin_ctzll(w);
			return i < to ? i : to;
		}
		from = (from | 63) + 1;
	}
	return to;
}

uint32_t sack_seg_len(uint64_t total, uint32_t seg, uint64_t i)
{
	uint64_t off = i * seg;
	return off + seg <= total ? seg : (uint32_t)(total - off);
}

int sack_tx_init(struct sack_tx *s, uint64_t total, uint32_t seg, uint64_t now_ns)
{
	memset(s, 0, sizeof(*s));
	if (total == 0 || seg == 0)
		return -EINVAL;
	s->total = total;
	s->seg = seg;
	s->nseg = (total + seg - 1) / seg;
	s->acked = calloc((s->nseg + 63) / 64 + 1, sizeof(uint64_t));
	s->sent_us = calloc(s->nseg, sizeof(uint32_t));
	s->resent = calloc((s->nseg + 63) / 64 + 1, sizeof(uint64_t));
	if (!s->acked || !s->sent_us || !s->resent) {
		sack_tx_free(s);
		return -ENOMEM;
	}
	s->t0 = now_ns;
	s->last_ack_ns = s->last_progress_ns = now_ns;
	s->prm.min_age_ns = 5000000;
	s->prm.reorder_segs = 64;
	s->prm.tail_ns = 10000000;
	return 0;
}

void sack_tx_free(struct sack_tx *s)
{
	free(s->acked);
	free(s->sent_us);
	free(s->resent);
	s->acked = NULL;
	s->sent_us = NULL;
	s->resent = NULL;
}

static uint32_t stamp(const struct sack_tx *s, uint64_t now_ns)
{
	return (uint32_t)((now_ns - s->t0) / 1000) + 1;
}

uint64_t sack_tx_rto_ns(const struct sack_tx *s)
{
	uint64_t rto = (uint64_t)((s->srtt_us + 4 * s->rttvar_us) * 1000);

	if (s->prm.rto_max_ns) {
		/* bound the variance term only: with a round trip truly above the bound, a copy
		 * still in flight must not be resent again and again */
		uint64_t srtt_ns = (uint64_t)(s->srtt_us * 1000), lim = srtt_ns + srtt_ns / 4;
		if (lim < s->prm.rto_max_ns)
			lim = s->prm.rto_max_ns;
		if (rto > lim)
			rto = lim;
	}
	return rto > s->prm.min_age_ns ? rto : s->prm.min_age_ns;
}

/* RFC 6298 smoothing of one round-trip sample in us. */
static void rtt_sample(struct sack_tx *s, double r)
{
	s->last_rtt_us = r;
	s->rtt_samples++;
	if (s->srtt_us == 0) {
		s->srtt_us = r;
		s->rttvar_us = r / 2;
		return;
	}
	s->rttvar_us = 0.75 * s->rttvar_us + 0.25 * (r > s->srtt_us ? r - s->srtt_us : s->srtt_us - r);
	s->srtt_us = 0.875 * s->srtt_us + 0.125 * r;
}

int64_t sack_tx_next(struct sack_tx *s, uint64_t now_ns, int *retx)
{
	uint32_t now_us = stamp(s, now_ns), age_us = (uint32_t)(sack_tx_rto_ns(s) / 1000);
	int budget = 512; /* bounded work per call; the scan resumes next time */

	if (s->done)
		return -1;
	if (s->rscan < s->cum)
		s->rscan = s->cum;
	while (s->rscan < s->rlimit && budget-- > 0) {
		uint64_t i = first_clear(s->acked, s->rscan, s->rlimit);
		if (i >= s->rlimit || i >= s->next_new) {
			s->rscan = s->rlimit;
			break;
		}
		s->rscan = i + 1;
		if (s->sent_us[i] && now_us - s->sent_us[i] >= age_us) {
			s->prev_sent_ns = s->t0 + (uint64_t)(s->sent_us[i] - 1) * 1000;
			/* a silent tail round limits the scan to the first hole, and any SACK
			 * (which would widen it) resets the backoff: this copy is its probe */
			s->last_probe = s->tail_backoff > 0;
			s->sent_us[i] = now_us;
			bit_set(s->resent, i);
			s->retransmits++;
			*retx = 1;
			return (int64_t)i;
		}
	}
	if (s->next_new < s->nseg && (!s->prm.window || s->next_new - s->n_acked < s->prm.window)) {
		*retx = 0;
		s->prev_sent_ns = 0;
		s->last_probe = 0;
		s->sent_us[s->next_new] = now_us;
		return (int64_t)s->next_new++;
	}
	return -1;
}

int sack_tx_on_sack(struct sack_tx *s, uint64_t cum, const uint8_t *bitmap, size_t nbytes,
		    unsigned flags, uint64_t now_ns)
{
	int done = !!(flags & SACK_DONE);
	uint64_t before = s->n_acked;
	int64_t newest = -1; /* newly acknowledged segment sent last and only once: the round-trip
			     * sample (Karn: an ack of a resent segment matches either copy) */

	/* a receiver can only hold what was sent: an ack of a segment never sent is forged or
	 * corrupt, and counting it would make next_new - n_acked (the window) wrap around */
	if (cum > s->next_new || (done && cum != s->nseg))
		return -EINVAL;
	/* validate the whole bitmap before changing anything: a bad SACK leaves no trace */
	for (size_t k = nbytes; k-- > 0;) {
		if (bitmap[k]) {
			if (cum + k * 8 + (uint64_t)(31 - __builtin_clz(bitmap[k])) >= s->next_new)
				return -EINVAL;
			break;
		}
	}
	s->last_ack_ns = now_ns;
	s->sacks++;
	s->tail_backoff = 0; /* the receiver is heard: the next tail round waits the base time */
	for (uint64_t i = s->cum; i < cum; i++) {
		if (!bit_get(s->acked, i)) {
			bit_set(s->acked, i);
			s->n_acked++;
			if (!bit_get(s->resent, i) && (newest < 0 || s->sent_us[i] > s->sent_us[newest]))
				newest = (int64_t)i;
		}
	}
	for (size_t k = 0; k < nbytes; k++) {
		if (!bitmap[k])
			continue;
		for (int b = 0; b < 8; b++) {
			uint64_t i = cum + k * 8 + (uint64_t)b;
			if (!(bitmap[k] >> b & 1))
				continue;
			if (!bit_get(s->acked, i)) {
				bit_set(s->acked, i);
				s->n_acked++;
				if (!bit_get(s->resent, i) && (newest < 0 || s->sent_us[i] > s->sent_us[newest]))
					newest = (int64_t)i;
			}
			if (i + 1 > s->highest)
				s->highest = i + 1;
		}
	}
	if (cum > s->highest)
		s->highest = cum;
	s->cum = first_clear(s->acked, s->cum > cum ? s->cum : cum, s->nseg);
	if (s->n_acked > before)
		s->last_progress_ns = now_ns;
	if (newest >= 0 && !(flags & SACK_HELD) && s->sent_us[newest] &&
	    stamp(s, now_ns) >= s->sent_us[newest])
		rtt_sample(s, (double)(stamp(s, now_ns) - s->sent_us[newest]));
	/* holes well below the highest arrival are lost: scan them (again) from the bottom */
	if (s->highest > s->prm.reorder_segs && s->highest - s->prm.reorder_segs > s->cum) {
		uint64_t lim = s->highest - s->prm.reorder_segs;
		if (lim > s->rlimit || s->rscan >= s->rlimit) {
			s->rlimit = lim > s->rlimit ? lim : s->rlimit;
			s->rscan = s->cum;
		}
	}
	if (done || s->n_acked == s->nseg)
		s->done = 1;
	return (int)(s->n_acked - before);
}

int sack_tx_check(struct sack_tx *s, uint64_t now_ns, uint64_t timeout_ns)
{
	uint64_t base, wait, cap;

	if (s->done)
		return 1;
	/* silence only counts while something sent is unacknowledged (a paused schedule is quiet) */
	if (s->n_acked == s->next_new)
		s->last_ack_ns = now_ns;
	else if (now_ns - s->last_ack_ns > timeout_ns)
		return -ETIMEDOUT;
	if (s->next_new < s->nseg)
		return 0;
	/* tail loss: all sent once, no progress -> resend the holes (or probe with the first) */
	base = s->prm.tail_ns > sack_tx_rto_ns(s) ? s->prm.tail_ns : sack_tx_rto_ns(s);
	cap = s->prm.probe_max_ns ? s->prm.probe_max_ns : timeout_ns / SACK_PROBE_DIV;
	wait = base << s->tail_backoff;
	if (s->tail_backoff && wait > cap)
		wait = base > cap ? base : cap;
	if (now_ns - s->last_progress_ns <= wait)
		return 0;
	if (s->sacks == s->tail_sacks) {
		/* silent: probe with the first hole (cum is never acknowledged here), once its last
		 * copy is old enough for sack_tx_next to resend it */
		if (s->sent_us[s->cum] && stamp(s, now_ns) - s->sent_us[s->cum] < sack_tx_rto_ns(s) / 1000)
			return 0;
		s->rscan = s->cum;
		s->rlimit = s->cum + 1;
		if (s->tail_backoff < SACK_TAIL_BACKOFF_MAX)
			s->tail_backoff++;
	} else {
		s->rscan = s->cum;
		s->rlimit = s->nseg;
		s->tail_backoff = 0;
	}
	s->tail_sacks = s->sacks;
	s->last_progress_ns = now_ns;
	return 0;
}

int sack_rx_init(struct sack_rx *r, uint64_t total, uint32_t seg)
{
	memset(r, 0, sizeof(*r));
	if (total == 0 || seg == 0)
		return -EINVAL;
	r->total = total;
	r->seg = seg;
	r->nseg = (total + seg - 1) / seg;
	r->got = calloc((r->nseg + 63) / 64 + 1, sizeof(uint64_t));
	return r->got ? 0 : -ENOMEM;
}

void sack_rx_free(struct sack_rx *r)
{
	free(r->got);
	r->got = NULL;
}

int sack_rx_on_data(struct sack_rx *r, uint64_t offset, uint32_t len)
{
	uint64_t i = offset / r->seg;

	if (offset % r->seg || i >= r->nseg || len != sack_seg_len(r->total, r->seg, i))
		return -EINVAL;
	if (bit_get(r->got, i)) {
		r->dups++;
		return 0;
	}
	bit_set(r->got, i);
	r->n_got++;
	r->since_sack++;
	if (i > r->cum)
		r->gap = 1;
	if (i + 1 > r->highest)
		r->highest = i + 1;
	if (i == r->cum)
		r->cum = first_clear(r->got, r->cum, r->nseg);
	return 1;
}

size_t sack_rx_build(struct sack_rx *r, uint64_t *cum, uint8_t *bitmap, size_t max)
{
	size_t n = 0;

	*cum = r->cum;
	r->since_sack = 0;
	r->gap = 0;
	if (r->highest > r->cum) {
		n = (size_t)((r->highest - r->cum + 7) / 8);
		if (n > max)
			n = max;
	}
	for (size_t k = 0; k < n; k++) {
		uint64_t p = r->cum + 8 * k, w = p >> 6;
		unsigned sh = p & 63;
		uint64_t v = r->got[w] >> sh;
		if (sh > 56) /* the bitmap has one spare word at the end */
			v |= r->got[w + 1] << (64 - sh);
		bitmap[k] = (uint8_t)v;
	}
	return n;
}
