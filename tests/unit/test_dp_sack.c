/* test_dp_sack.c - Check tests of the SACK state machines (sack.c): loss, duplicates, reordering, timeout. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fault.h"
#include "sack.h"
#include "test_dp_main.h"

#define SEG 1000
#define MS 1000000ULL
#define WIRE_SACK_BYTES 1024

/*
 * Simulated link in both directions with the given faults: each step of 10 us the sender emits up
 * to 8 segments, frames take 100 us; reordered frames take 300 us. Returns the simulated time at
 * which the sender learned completion, or 0 if it did not within @limit_ns.
 */
struct inflight { uint64_t at, seg; };

static uint64_t simulate(uint64_t total, const struct fault_dir *fd, uint64_t limit_ns,
			 struct sack_tx *tx, struct sack_rx *rx, uint8_t *dst, const uint8_t *src)
{
	static struct inflight q[1 << 16];
	size_t nq = 0;
	uint64_t rng = 99, now = 0, ack_due = 0;

	ck_assert_int_eq(sack_tx_init(tx, total, SEG, 0), 0);
	ck_assert_int_eq(sack_rx_init(rx, total, SEG), 0);
	for (now = 0; now < limit_ns; now += 10000) {
		int retx;
		/* deliver due frames */
		for (size_t i = 0; i < nq;) {
			if (q[i].at > now) {
				i++;
				continue;
			}
			uint64_t s = q[i].seg;
			uint32_t len = sack_seg_len(total, SEG, s);
			q[i] = q[--nq];
			if (sack_rx_on_data(rx, s * SEG, len) == 1)
				memcpy(dst + s * SEG, src + s * SEG, len);
		}
		/* receiver acknowledges every 100 us (acks see the same drop rate) */
		if (now >= ack_due) {
			uint8_t bm[WIRE_SACK_BYTES];
			uint64_t cum;
			size_t n = sack_rx_build(rx, &cum, bm, sizeof(bm));
			ack_due = now + 100000;
			if (!(fd->drop > 0 && fault_rand(&rng) < fd->drop))
				ck_assert_int_ge(sack_tx_on_sack(tx, cum, bm, n, sack_rx_complete(rx), now), 0);
		}
		if (sack_tx_check(tx, now, 3000 * MS) == 1)
			return now;
		for (int k = 0; k < 8 && nq + 2 < sizeof(q) / sizeof(q[0]); k++) {
			int64_t s = sack_tx_next(tx, now, &retx);
			if (s < 0)
				break;
			switch (fault_decide(fd, &rng)) {
			case FAULT_DROP:
				break;
			case FAULT_DUP:
				q[nq++] = (struct inflight){ now + 100000, (uint64_t)s };
				q[nq++] = (struct inflight){ now + 120000, (uint64_t)s };
				break;
			case FAULT_REORDER:
				q[nq++] = (struct inflight){ now + 300000, (uint64_t)s };
				break;
			default:
				q[nq++] = (struct inflight){ now + 100000, (uint64_t)s };
			}
		}
	}
	return 0;
}



static void check_transfer(uint64_t total, struct fault_dir fd, int expect_retx)
{
	struct sack_tx tx;
	struct sack_rx rx;
	uint8_t *src = malloc(total), *dst = calloc(1, total);
	uint64_t end;

	for (uint64_t i = 0; i < total; i++)
		src[i] = (uint8_t)(i * 2654435761u >> 13);
	end = simulate(total, &fd, 2000 * MS, &tx, &rx, dst, src);
	ck_assert_msg(end > 0, "transfer of %llu bytes did not complete (%llu/%llu segments)",
		      (unsigned long long)total, (unsigned long long)rx.n_got, (unsigned long long)rx.nseg);
	ck_assert(sack_rx_complete(&rx));
	ck_assert_mem_eq(src, dst, total);
	if (expect_retx)
		ck_assert_uint_gt(tx.retransmits, 0);
	else
		ck_assert_uint_eq(tx.retransmits, 0);
	if (fd.dup > 0)
		ck_assert_uint_gt(rx.dups, 0);
	sack_tx_free(&tx);
	sack_rx_free(&rx);
	free(src);
	free(dst);
}

START_TEST(clean_link_no_retransmits)
{
	check_transfer(1234567, (struct fault_dir){ 0 }, 0);
}
END_TEST

START_TEST(loss_dup_reorder_byte_exact)
{
	check_transfer(3000001, (struct fault_dir){ .drop = 0.01, .dup = 0.01, .reorder = 0.01 }, 1);
}
END_TEST

START_TEST(heavy_loss_byte_exact)
{
	check_transfer(500000, (struct fault_dir){ .drop = 0.2 }, 1);
}
END_TEST

START_TEST(tail_loss_recovered)
{
	struct sack_tx tx;
	int retx;
	uint64_t total = 10 * SEG, cum;
	int64_t s;

	ck_assert_int_eq(sack_tx_init(&tx, total, SEG, 0), 0);
	for (int i = 0; i < 10; i++)
		ck_assert_int_eq(sack_tx_next(&tx, 0, &retx), i);
	ck_assert_int_eq(sack_tx_next(&tx, 0, &retx), -1);
	/* segments 0..7 acknowledged, the last two lost: no reorder evidence, only the tail timer */
	cum = 8;
	ck_assert_int_eq(sack_tx_on_sack(&tx, cum, NULL, 0, 0, 1 * MS), 8);
	ck_assert_int_eq(sack_tx_next(&tx, 2 * MS, &retx), -1);
	ck_assert_int_eq(sack_tx_check(&tx, 20 * MS, 3000 * MS), 0);
	s = sack_tx_next(&tx, 20 * MS, &retx);
	ck_assert_int_eq(s, 8);
	ck_assert_int_eq(retx, 1);
	ck_assert_int_eq(sack_tx_next(&tx, 20 * MS, &retx), 9);
	ck_assert_int_eq(sack_tx_next(&tx, 20 * MS, &retx), -1);
	ck_assert_int_eq(sack_tx_on_sack(&tx, 10, NULL, 0, 1, 21 * MS), 2);
	ck_assert_int_eq(sack_tx_check(&tx, 22 * MS, 3000 * MS), 1);
	sack_tx_free(&tx);
}
END_TEST

START_TEST(window_limits_unacknowledged)
{
	struct sack_tx tx;
	int retx;
	uint8_t bm[1] = { 0x01 };

	ck_assert_int_eq(sack_tx_init(&tx, 100 * SEG, SEG, 0), 0);
	tx.prm.window = 4;
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(sack_tx_next(&tx, 0, &retx), i);
	ck_assert_int_eq(sack_tx_next(&tx, 0, &retx), -1);
	/* segment 0 (cumulative) and segment 2 (bitmap bit 1, relative to cum = 1) acknowledged */
	bm[0] = 0x02;
	ck_assert_int_eq(sack_tx_on_sack(&tx, 1, bm, 1, 0, 1000), 2);
	ck_assert_int_eq(sack_tx_next(&tx, 1000, &retx), 4);
	ck_assert_int_eq(sack_tx_next(&tx, 1000, &retx), 5);
	ck_assert_int_eq(sack_tx_next(&tx, 1000, &retx), -1);
	/* the round-trip sample (1 us after the sends at t=0) was taken */
	ck_assert(tx.srtt_us > 0);
	sack_tx_free(&tx);
}
END_TEST

START_TEST(silent_peer_times_out)
{
	struct sack_tx tx;
	int retx;

	ck_assert_int_eq(sack_tx_init(&tx, 5 * SEG, SEG, 0), 0);
	/* nothing sent yet: no timeout however long the wait for the start time */
	ck_assert_int_eq(sack_tx_check(&tx, 10000 * MS, 3000 * MS), 0);
	tx.last_ack_ns = 10000 * MS;
	ck_assert_int_ge(sack_tx_next(&tx, 10000 * MS, &retx), 0);
	ck_assert_int_eq(sack_tx_check(&tx, 12000 * MS, 3000 * MS), 0);
	ck_assert_int_eq(sack_tx_check(&tx, 13001 * MS, 3000 * MS), -ETIMEDOUT);
	sack_tx_free(&tx);
}
END_TEST

START_TEST(receiver_rejects_and_reports)
{
	struct sack_rx rx;
	uint8_t bm[16];
	uint64_t cum;
	size_t n;

	ck_assert_int_eq(sack_rx_init(&rx, 10 * SEG + 5, SEG), 0);
	ck_assert_int_eq(sack_rx_on_data(&rx, 500, SEG), -EINVAL);      /* not on a segment edge */
	ck_assert_int_eq(sack_rx_on_data(&rx, 0, SEG - 1), -EINVAL);    /* short non-final segment */
	ck_assert_int_eq(sack_rx_on_data(&rx, 11 * SEG, 5), -EINVAL);   /* beyond the end */
	ck_assert_int_eq(sack_rx_on_data(&rx, 10 * SEG, 5), 1);         /* the short last one */
	ck_assert_int_eq(sack_rx_on_data(&rx, 0, SEG), 1);
	ck_assert_int_eq(sack_rx_on_data(&rx, 2 * SEG, SEG), 1);
	ck_assert_int_eq(sack_rx_on_data(&rx, 2 * SEG, SEG), 0);        /* duplicate */
	ck_assert_uint_eq(rx.dups, 1);
	n = sack_rx_build(&rx, &cum, bm, sizeof(bm));
	ck_assert_uint_eq(cum, 1);
	/* bits relative to segment 1: segment 2 -> bit 1, segment 10 -> bit 9 */
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(bm[0], 0x02);
	ck_assert_uint_eq(bm[1], 0x02);
	ck_assert(!sack_rx_complete(&rx));
	sack_rx_free(&rx);
}
END_TEST

START_TEST(bad_sack_leaves_state_unchanged)
{
	struct sack_tx tx;
	uint8_t bm[2] = { 0x01, 0x80 }; /* segment 1 (valid) and segment 16 (beyond 10) */
	int retx;

	ck_assert_int_eq(sack_tx_init(&tx, 10 * SEG, SEG, 0), 0);
	for (int i = 0; i < 10; i++)
		ck_assert_int_ge(sack_tx_next(&tx, 0, &retx), 0);
	ck_assert_int_eq(sack_tx_on_sack(&tx, 1, bm, 2, 0, MS), -EINVAL);
	ck_assert_uint_eq(tx.n_acked, 0);
	ck_assert_uint_eq(tx.cum, 0);
	ck_assert_uint_eq(tx.highest, 0);
	ck_assert_uint_eq(tx.acked[0], 0);
	sack_tx_free(&tx);
}
END_TEST

START_TEST(resent_segment_gives_no_rtt_sample)
{
	struct sack_tx tx;
	uint8_t bm[1] = { 0 };
	double srtt;
	int retx;

	ck_assert_int_eq(sack_tx_init(&tx, 200 * SEG, SEG, 0), 0);
	for (int i = 0; i < 200; i++)
		ck_assert_int_ge(sack_tx_next(&tx, 0, &retx), 0);
	/* segment 0 lost, 1..199 acknowledged after 1 ms: one sample of ~1 ms */
	{
		uint8_t all[25];
		memset(all, 0xff, sizeof(all));
		all[0] = 0xfe; /* bit i = segment i: all but segment 0 */
		ck_assert_int_eq(sack_tx_on_sack(&tx, 0, all, sizeof(all), 0, MS), 199);
	}
	ck_assert(tx.srtt_us > 900 && tx.srtt_us < 1100);
	srtt = tx.srtt_us;
	/* segment 0 is resent; the ack 100 us later may answer the first copy: no sample (Karn) */
	ck_assert_int_eq(sack_tx_next(&tx, 40 * MS, &retx), 0);
	ck_assert_int_eq(retx, 1);
	ck_assert_int_eq(sack_tx_on_sack(&tx, 200, bm, 0, 1, 40 * MS + 100000), 1);
	ck_assert_msg(tx.srtt_us == srtt, "srtt %.1f us took a retransmission sample", tx.srtt_us);
	sack_tx_free(&tx);
}
END_TEST

/* docs/security.md: acks of segments never sent (a forged SACK for the second half) are refused; before,
 * they counted, next_new - n_acked wrapped around and the sender stalled for good */
START_TEST(ack_beyond_sent_refused)
{
	struct sack_tx tx;
	uint8_t bm[8];
	int retx;

	ck_assert_int_eq(sack_tx_init(&tx, 100 * SEG, SEG, 0), 0);
	tx.prm.window = 16;
	for (int i = 0; i < 16; i++)
		ck_assert_int_eq(sack_tx_next(&tx, 0, &retx), i);
	memset(bm, 0xff, sizeof(bm)); /* segments 50..113: never sent */
	ck_assert_int_eq(sack_tx_on_sack(&tx, 50, bm, sizeof(bm), 0, MS), -EINVAL);
	ck_assert_int_eq(sack_tx_on_sack(&tx, 17, NULL, 0, 0, MS), -EINVAL);  /* cum past next_new */
	ck_assert_int_eq(sack_tx_on_sack(&tx, 100, NULL, 0, 1, MS), -EINVAL); /* done, 16 of 100 sent */
	memset(bm, 0, sizeof(bm));
	bm[0] = 0x80; /* cum 8 + bit 7 = segment 15: sent, valid */
	ck_assert_int_eq(sack_tx_on_sack(&tx, 8, bm, 1, 0, MS), 9);
	ck_assert_uint_eq(tx.n_acked, 9);
	ck_assert(!tx.done);
	/* the window still opens: 16 sent, 9 acknowledged -> 9 more may go */
	for (int i = 0; i < 9; i++)
		ck_assert_int_eq(sack_tx_next(&tx, MS, &retx), 16 + i);
	ck_assert_int_eq(sack_tx_next(&tx, MS, &retx), -1);
	sack_tx_free(&tx);
}
END_TEST

/*
 * A tail with no SACK since the start (or since the last round): the copies may have arrived and
 * only the SACKs been lost, so a round resends only the first hole, marked as a probe (the
 * sender does not cut its rate for it), and each further silent round waits twice as long, up to
 * timeout / 8 by default. A SACK makes the next round resend every hole again after the base
 * wait (max(tail_ns, RTO) = 10 ms here), none of them a probe.
 */
START_TEST(silent_tail_probes_and_backs_off)
{
	struct sack_tx tx;
	int retx;
	uint64_t t, last;
	int64_t s;

	ck_assert_int_eq(sack_tx_init(&tx, 10 * SEG, SEG, 0), 0);
	for (int i = 0; i < 10; i++) {
		ck_assert_int_eq(sack_tx_next(&tx, 0, &retx), i);
		ck_assert_int_eq(tx.last_probe, 0);
	}
	/* no SACK at all: the first round is one probe of segment 0 */
	ck_assert_int_eq(sack_tx_check(&tx, 10 * MS, 400 * MS), 0);
	ck_assert_int_eq(sack_tx_next(&tx, 10 * MS, &retx), -1); /* not due yet */
	ck_assert_int_eq(sack_tx_check(&tx, 11 * MS, 400 * MS), 0);
	ck_assert_int_eq(sack_tx_next(&tx, 11 * MS, &retx), 0);
	ck_assert_int_eq(retx, 1);
	ck_assert_int_eq(tx.last_probe, 1);
	ck_assert_int_eq(sack_tx_next(&tx, 11 * MS, &retx), -1);
	ck_assert_uint_eq(tx.retransmits, 1);
	ck_assert_uint_eq(tx.tail_backoff, 1);
	/* still silent: the next probes wait 20, 40 ms, then 400 / 8 = 50 ms (the peer is taken
	 * for dead at 400 ms of silence: several probes must go before that) */
	last = 11 * MS;
	for (unsigned k = 1; k <= 5; k++) {
		uint64_t want = (10 * MS) << k;
		if (want > 50 * MS)
			want = 50 * MS;
		ck_assert_int_eq(sack_tx_check(&tx, last + want, 400 * MS), 0);
		ck_assert_int_eq(sack_tx_next(&tx, last + want, &retx), -1);
		t = last + want + MS;
		ck_assert_int_eq(sack_tx_check(&tx, t, 400 * MS), 0);
		ck_assert_uint_eq(tx.tail_backoff, k + 1);
		s = sack_tx_next(&tx, t, &retx);
		ck_assert_int_eq(s, 0);
		ck_assert_int_eq(tx.last_probe, 1);
		ck_assert_uint_eq(tx.prev_sent_ns, last);
		ck_assert_int_eq(sack_tx_next(&tx, t, &retx), -1);
		last = t;
	}
	ck_assert_uint_eq(last, 226 * MS); /* 11 + 21 + 41 + 51 + 51 + 51 */
	ck_assert_uint_eq(tx.retransmits, 6);
	/* a SACK: segment 0 arrived (resent: no RTT sample), 1-9 did not; the next round waits
	 * 10 ms and resends all nine, none a probe */
	ck_assert_int_eq(sack_tx_on_sack(&tx, 1, NULL, 0, 0, last + MS), 1);
	ck_assert_uint_eq(tx.tail_backoff, 0);
	ck_assert_int_eq(sack_tx_check(&tx, last + 11 * MS, 400 * MS), 0);
	ck_assert_int_eq(sack_tx_next(&tx, last + 11 * MS, &retx), -1);
	ck_assert_int_eq(sack_tx_check(&tx, last + 12 * MS, 400 * MS), 0);
	for (int i = 1; i < 10; i++) {
		ck_assert_int_eq(sack_tx_next(&tx, last + 12 * MS, &retx), i);
		ck_assert_int_eq(retx, 1);
		ck_assert_int_eq(tx.last_probe, 0);
		ck_assert_uint_eq(tx.prev_sent_ns, 0); /* their first and only copies left at 0 */
	}
	ck_assert_int_eq(sack_tx_next(&tx, last + 12 * MS, &retx), -1);
	sack_tx_free(&tx);
}
END_TEST

/*
 * A silent round is due while the first hole's last copy is younger than the RTO (a full round
 * resent it late, e.g. paced): the probe round waits until the copy is old enough instead of
 * starting a round that sends nothing and still doubles the wait. prm.probe_max_ns caps the wait.
 */
START_TEST(silent_tail_probe_waits_for_old_copy)
{
	struct sack_tx tx;
	int retx;
	uint8_t bm[1] = { 0x02 }; /* cum 0 + bit 1: segment 1 */

	ck_assert_int_eq(sack_tx_init(&tx, 10 * SEG, SEG, 0), 0);
	tx.prm.probe_max_ns = 15 * MS;
	for (int i = 0; i < 10; i++)
		ck_assert_int_eq(sack_tx_next(&tx, 0, &retx), i);
	/* segment 1 acknowledged at 1 ms: RTT 1 ms, so RTO = min_age 5 ms, base wait 10 ms */
	ck_assert_int_eq(sack_tx_on_sack(&tx, 0, bm, 1, 0, 1 * MS), 1);
	ck_assert_uint_eq(sack_tx_rto_ns(&tx), 5 * MS);
	/* the SACK came after the start: a full round at 12 ms, whose copies go only at 20 ms */
	ck_assert_int_eq(sack_tx_check(&tx, 12 * MS, 400 * MS), 0);
	for (int i = 0; i < 10; i++) {
		if (i == 1)
			continue;
		ck_assert_int_eq(sack_tx_next(&tx, 20 * MS, &retx), i);
		ck_assert_int_eq(tx.last_probe, 0);
	}
	/* silent since: due at 22 ms, but segment 0's copy is 3 ms old: no round yet */
	ck_assert_int_eq(sack_tx_check(&tx, 23 * MS, 400 * MS), 0);
	ck_assert_uint_eq(tx.tail_backoff, 0);
	ck_assert_int_eq(sack_tx_next(&tx, 23 * MS, &retx), -1);
	/* at 25.5 ms it is 5.5 ms old: the probe goes */
	ck_assert_int_eq(sack_tx_check(&tx, 25500000, 400 * MS), 0);
	ck_assert_uint_eq(tx.tail_backoff, 1);
	ck_assert_int_eq(sack_tx_next(&tx, 25500000, &retx), 0);
	ck_assert_int_eq(tx.last_probe, 1);
	/* the next silent round would wait 20 ms; probe_max_ns caps it at 15 ms */
	ck_assert_int_eq(sack_tx_check(&tx, 25500000 + 15 * MS, 400 * MS), 0);
	ck_assert_int_eq(sack_tx_next(&tx, 25500000 + 15 * MS, &retx), -1);
	ck_assert_int_eq(sack_tx_check(&tx, 25500000 + 16 * MS, 400 * MS), 0);
	ck_assert_int_eq(sack_tx_next(&tx, 25500000 + 16 * MS, &retx), 0);
	ck_assert_int_eq(tx.last_probe, 1);
	ck_assert_uint_eq(tx.tail_backoff, 2);
	sack_tx_free(&tx);
}
END_TEST

/* The first SACK after a receiver held the transfer for its announcement acknowledges copies
 * that waited there: no round-trip sample from it (Table 2 N3: a 0.9 s sample made a 2.5 s RTO
 * and the receiver gave up before the holes were resent). The next SACK samples again. */
START_TEST(held_sack_gives_no_rtt_sample)
{
	struct sack_tx tx;
	int retx;
	uint8_t bm[1] = { 0x02 }; /* segments 0..1 by cum, 3 by the bitmap: segment 2 lost */

	ck_assert_int_eq(sack_tx_init(&tx, 10 * SEG, SEG, 0), 0);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(sack_tx_next(&tx, 0, &retx), i);
	ck_assert_int_eq(sack_tx_on_sack(&tx, 2, bm, 1, SACK_HELD, 900 * MS), 3);
	ck_assert(tx.srtt_us == 0);
	ck_assert_uint_eq(sack_tx_rto_ns(&tx), tx.prm.min_age_ns);
	/* a segment sent after it, acknowledged 40 ms later without the flag, is a sample */
	ck_assert_int_eq(sack_tx_next(&tx, 900 * MS, &retx), 4);
	bm[0] = 0x06; /* cum 2 still: bit 1 = segment 3, bit 2 = segment 4 */
	ck_assert_int_eq(sack_tx_on_sack(&tx, 2, bm, 1, 0, 940 * MS), 1);
	ck_assert(tx.srtt_us > 39000 && tx.srtt_us < 41000);
	sack_tx_free(&tx);
}
END_TEST

/* prm.rto_max_ns bounds the RTO's variance term, so a tail round resends before a receiver
 * that hears nothing else gives the transfer up; a round trip truly above the bound keeps an
 * RTO of 1.25 srtt, so a copy still in flight is not resent every rto_max_ns. */
START_TEST(rto_bounded_by_rto_max)
{
	struct sack_tx tx;
	int retx;
	uint8_t bm[1] = { 0x02 }; /* cum 2, bit 1 = segment 3: segment 2 lost */

	/* samples of 10 ms, then 1.2 s (a queue): srtt 159 ms, srtt + 4 rttvar 1364 ms */
	ck_assert_int_eq(sack_tx_init(&tx, 4 * SEG, SEG, 0), 0);
	tx.prm.rto_max_ns = 750 * MS;
	ck_assert_int_eq(sack_tx_next(&tx, 0, &retx), 0);
	ck_assert_int_eq(sack_tx_on_sack(&tx, 1, NULL, 0, 0, 10 * MS), 1);
	for (int i = 1; i < 4; i++)
		ck_assert_int_eq(sack_tx_next(&tx, 10 * MS, &retx), i);
	ck_assert_int_eq(sack_tx_on_sack(&tx, 2, bm, 1, 0, 1210 * MS), 2);
	ck_assert(tx.srtt_us > 158000 && tx.srtt_us < 160000);
	ck_assert_uint_eq(sack_tx_rto_ns(&tx), 750 * MS);
	/* the tail round comes 750 ms after the last progress, and resends segment 2 */
	ck_assert_int_eq(sack_tx_check(&tx, 1959 * MS, 3000 * MS), 0);
	ck_assert_int_eq(sack_tx_next(&tx, 1959 * MS, &retx), -1);
	ck_assert_int_eq(sack_tx_check(&tx, 1961 * MS, 3000 * MS), 0);
	ck_assert_int_eq(sack_tx_next(&tx, 1961 * MS, &retx), 2);
	ck_assert_int_eq(retx, 1);
	tx.prm.rto_max_ns = 0; /* unbounded: srtt + 4 rttvar */
	ck_assert(sack_tx_rto_ns(&tx) > 1360 * MS);
	sack_tx_free(&tx);

	/* a steady 1.6 s round trip: RTO 2 s (1.25 srtt), not 750 ms, and not 4.8 s */
	ck_assert_int_eq(sack_tx_init(&tx, 4 * SEG, SEG, 0), 0);
	tx.prm.rto_max_ns = 750 * MS;
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(sack_tx_next(&tx, 0, &retx), i);
	ck_assert_int_eq(sack_tx_on_sack(&tx, 2, bm, 1, 0, 1600 * MS), 3);
	ck_assert_uint_eq(sack_tx_rto_ns(&tx), 2000 * MS);
	ck_assert_int_eq(sack_tx_check(&tx, 3601 * MS, 3000 * MS), 0);
	ck_assert_int_eq(sack_tx_next(&tx, 3601 * MS, &retx), 2);
	/* 750 ms later its copy may still be in flight: nothing is resent */
	ck_assert_int_eq(sack_tx_check(&tx, 4352 * MS, 3000 * MS), 0);
	ck_assert_int_eq(sack_tx_next(&tx, 4352 * MS, &retx), -1);
	ck_assert_uint_eq(tx.retransmits, 1);
	sack_tx_free(&tx);
}
END_TEST

int main(void)
{
	const TTest *tests[] = { clean_link_no_retransmits, loss_dup_reorder_byte_exact,
				 heavy_loss_byte_exact, tail_loss_recovered, silent_peer_times_out,
				 receiver_rejects_and_reports, window_limits_unacknowledged,
				 bad_sack_leaves_state_unchanged, resent_segment_gives_no_rtt_sample,
				 ack_beyond_sent_refused, silent_tail_probes_and_backs_off,
				 silent_tail_probe_waits_for_old_copy, held_sack_gives_no_rtt_sample,
				 rto_bounded_by_rto_max };
	return test_dp_run("sack", tests, 14);
}
