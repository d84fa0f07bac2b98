/* sack.h - selective-acknowledgement state machines: sender retransmission and receiver reassembly. */
#ifndef MLF_SACK_H
#define MLF_SACK_H

#include <stddef.h>
#include <stdint.h>

/*
 * A transfer of `total` bytes is cut into segments of `seg` bytes (the last may be shorter);
 * segment i covers bytes [i*seg, min((i+1)*seg, total)). Times are nanoseconds of one monotonic
 * clock chosen by the caller.
 */

/** Tunables of the sender side (defaults in sack_tx_init, override after init). */
struct sack_tx_params {
	uint64_t min_age_ns;   /* a segment is resent only if its last copy left this long ago
	                        * (or the RTO when larger, sack_tx_rto_ns: queues on a busy port) */
	uint64_t reorder_segs; /* holes this close below the highest acked segment are not yet lost */
	uint64_t tail_ns;      /* with everything sent and no ack progress this long, a tail round
	                        * (see sack_tx_check: every hole, or one probe when no SACK came) */
	uint64_t rto_max_ns;   /* bound of the RTO's variance term (0: none): the RTO is at most
	                        * max(rto_max_ns, 1.25 srtt, min_age_ns). The sender sets it to a
	                        * quarter of the shorter of its own and the receiver's timeout, so a
	                        * resend reaches a receiver that hears nothing else before it gives
	                        * the transfer up (RFC 6298 2.5 allows a maximum) */
	uint64_t probe_max_ns; /* longest wait between silent tail rounds (0: the @timeout_ns of
	                        * sack_tx_check / 8); the sender sets it to an eighth of the shorter
	                        * of its own and the receiver's timeout, so probes keep a receiver
	                        * that hears nothing else from giving the transfer up */
	uint64_t window;       /* at most this many segments sent and not yet acknowledged (0 = no
	                        * limit): keeps the receiver's rx ring from overflowing */
};

/** Sender state of one transfer. */
struct sack_tx {
	uint64_t total, nseg;
	uint32_t seg;
	uint64_t *acked;        /* bitmap, bit i = segment i acknowledged */
	uint32_t *sent_us;      /* per segment: last send time in us since t0, plus 1 (0 = never) */
	uint64_t *resent;       /* bitmap, bit i = segment i was retransmitted (no RTT sample) */
	uint64_t t0;
	uint64_t cum;           /* all segments below are acknowledged */
	uint64_t next_new;      /* first segment never sent */
	uint64_t highest;       /* one past the highest acknowledged segment */
	uint64_t n_acked;
	uint64_t rscan, rlimit; /* retransmission scan: candidates in [rscan, rlimit) */
	uint64_t retransmits;   /* segments sent more than once */
	uint64_t prev_sent_ns;  /* segment last returned by sack_tx_next: when its previous copy
	                         * left, ns of the caller's clock, truncated to the us (a first
	                         * copy: 0). The sender's loss response tells a new loss episode
	                         * by it */
	int last_probe;         /* segment last returned by sack_tx_next is a silent tail round's
	                         * probe: no evidence of loss (its copies may have arrived and only
	                         * the SACKs been lost), so the sender does not cut its rate for it */
	uint64_t last_ack_ns;   /* last SACK from the peer (silence detection) */
	uint64_t last_progress_ns; /* last time n_acked grew or a tail round started */
	uint64_t sacks;         /* SACKs accepted so far */
	uint64_t tail_sacks;    /* `sacks` when the last tail round started (0 before the first) */
	unsigned tail_backoff;  /* silent tail rounds in a row (no SACK before them): each one
	                         * resends only the first hole (a probe) and doubles the wait for
	                         * the next; 0 again at any accepted SACK */
	double srtt_us, rttvar_us; /* smoothed round-trip time and its variation (RFC 6298), us */
	double last_rtt_us;     /* the latest round-trip sample, us (the loss response's input) */
	uint64_t rtt_samples;   /* round-trip samples taken so far */
	int done;               /* the peer reported every byte received */
	struct sack_tx_params prm;
};

/**
 * sack_tx_init - sender state for @total bytes (> 0) in segments of @seg bytes (> 0), at @now_ns.
 * Returns 0, -EINVAL for a zero size, -ENOMEM.
 */
int sack_tx_init(struct sack_tx *s, uint64_t total, uint32_t seg, uint64_t now_ns);

/** sack_tx_free - release the bitmaps; safe on a zeroed struct. */
void sack_tx_free(struct sack_tx *s);

/**
 * sack_tx_next - choose the next segment to send at @now_ns and record it as sent.
 * Lost segments (below the reorder window of the highest acknowledged one, or the holes a tail
 * round names: all of them, or the first as a probe; and older than sack_tx_rto_ns()) go before
 * never-sent ones. Sets prev_sent_ns and last_probe for the returned segment.
 * @retx: set to 1 when the returned segment is a retransmission.
 * Returns the segment index, or -1 when nothing should be sent now.
 */
int64_t sack_tx_next(struct sack_tx *s, uint64_t now_ns, int *retx);

/**
 * sack_tx_on_sack - apply a SACK: all segments below @cum arrived, and bit i of @bitmap
 * (@nbytes bytes, bit i = byte i/8 bit i%8) says segment cum+i arrived. @flags: SACK_DONE, the
 * peer has all; SACK_HELD, the peer held the arrivals before answering (no RTT sample).
 * The round-trip estimate takes one sample per SACK from a newly acknowledged segment that was
 * sent only once (Karn's rule), except from a SACK_HELD one: after a receiver held a transfer
 * for its announcement, its SACKs acknowledge copies that waited there until a new segment
 * arrives. Such samples (0.73 and 0.91 s in Table 2's N3 runs) made RTOs near 3 s, and the holes
 * were resent only after the receiver had given the transfer up for silence.
 * Returns the number of newly acknowledged segments, or -EINVAL when the SACK names segments
 * not sent yet (at or beyond next_new: forged or corrupt; counting them would wrap the window
 * arithmetic) or says done before every segment was sent (then the state is left unchanged).
 */
int sack_tx_on_sack(struct sack_tx *s, uint64_t cum, const uint8_t *bitmap, size_t nbytes,
		    unsigned flags, uint64_t now_ns);

/** Flags of sack_tx_on_sack. */
enum sack_flags {
	SACK_DONE = 1 << 0, /* the peer reported every byte received */
	SACK_HELD = 1 << 1, /* the peer held the arrivals before this SACK: no round-trip sample */
};

#define SACK_TAIL_BACKOFF_MAX 6 /* a silent tail waits at most 64x max(tail_ns, RTO) ... */
#define SACK_PROBE_DIV 8        /* ... and at most prm.probe_max_ns, by default timeout / 8 */
#define SACK_RTO_MAX_DIV 4      /* the sender's prm.rto_max_ns: a quarter of the silence timeout */

/**
 * sack_tx_check - timers: start a tail-loss round when due, detect a silent peer.
 * A tail round starts when everything was sent once and nothing new was acknowledged for
 * max(prm.tail_ns, sack_tx_rto_ns()) x 2^tail_backoff (but at most prm.probe_max_ns, default
 * @timeout_ns / 8, unless the base wait is longer). When a SACK came since the previous round
 * (or since the start),
 * the receiver is heard and its SACK lists the holes: every hole is resent, and the backoff
 * returns to 0. When none came, the copies sent may have arrived and only the SACKs been lost
 * (a congested way back, as in Table 2's N3): only the first hole is resent, as a probe the
 * receiver answers, and the backoff grows (RFC 6298 5.5 and RFC 8985's tail loss probe, in
 * spirit). A probe round waits until the first hole's last copy is older than the RTO.
 * Before 2026-11-27 every round resent every hole: a Table 2 N3 leg whose receiver had all
 * 36 segments after 88 ms was resent 531 times over 1.2 s.
 * Returns 1 when the transfer is complete, -ETIMEDOUT when no SACK came for @timeout_ns while
 * data is outstanding (the caller fails the transfer naming the peer), 0 otherwise.
 */
int sack_tx_check(struct sack_tx *s, uint64_t now_ns, uint64_t timeout_ns);

/** sack_tx_rto_ns - age in ns after which an unacknowledged segment may be resent:
 * srtt + 4 rttvar (RFC 6298 2.3), when prm.rto_max_ns is set at most max(prm.rto_max_ns,
 * 1.25 srtt) (2.5), and at least prm.min_age_ns. */
uint64_t sack_tx_rto_ns(const struct sack_tx *s);

/** sack_seg_len - bytes of segment @i of a transfer of @total bytes cut in @seg-byte segments. */
uint32_t sack_seg_len(uint64_t total, uint32_t seg, uint64_t i);

/** Receiver (reassembly) state of one transfer. */
struct sack_rx {
	uint64_t total, nseg;
	uint32_t seg;
	uint64_t *got;      /* bitmap, bit i = segment i arrived */
	uint64_t cum;       /* all segments below arrived */
	uint64_t highest;   /* one past the highest segment that arrived */
	uint64_t n_got;
	uint64_t dups;      /* DATA frames of segments already held */
	uint32_t since_sack; /* new segments since the last SACK was built */
	int gap;            /* a segment arrived beyond a hole since the last SACK */
};

/** sack_rx_init - receiver state for @total bytes (> 0) in @seg-byte segments. 0, -EINVAL, -ENOMEM. */
int sack_rx_init(struct sack_rx *r, uint64_t total, uint32_t seg);

/** sack_rx_free - release the bitmap; safe on a zeroed struct. */
void sack_rx_free(struct sack_rx *r);

/**
 * sack_rx_on_data - record DATA at byte @offset with @len bytes.
 * Returns 1 when new (the caller copies the payload), 0 for a duplicate, -EINVAL when offset/len
 * do not describe exactly one segment of this transfer.
 */
int sack_rx_on_data(struct sack_rx *r, uint64_t offset, uint32_t len);

/** sack_rx_complete - 1 when every segment arrived. */
static inline int sack_rx_complete(const struct sack_rx *r)
{
	return r->n_got == r->nseg;
}

/**
 * sack_rx_build - build the SACK to send now: *@cum = cumulative segment count, bitmap of the
 * segments after it (at most @max bytes, only as long as needed to reach the highest arrival).
 * Resets since_sack and gap. Returns the bitmap length in bytes.
 */
size_t sack_rx_build(struct sack_rx *r, uint64_t *cum, uint8_t *bitmap, size_t max);

#endif
