/* fuzz_wire.c - libFuzzer harness (docs/fuzzing.md): the dataplane's frame parser (wire_parse)
 * on arbitrary bytes, then the SACK state machines driven by what a frame may claim: the
 * receiver records DATA at any offset/length of a transfer of any size and builds its SACK; the
 * sender, having sent a prefix, applies that SACK and an arbitrary bitmap (forged acks). A
 * parsed frame with flag AUTH has its tag checked as the dataplane does (dataplane/transport.c:
 * header, stamp, nonce and MAC read at their offsets before the body): no read outside it. */
#include <stdint.h>
#include <string.h>

#include "auth.h"
#include "sack.h"
#include "wire.h"

#define MY_IP 0x0200a8c0u /* 192.168.0.2, network order on little-endian */

static uint64_t get(const uint8_t **p, size_t *n, int bytes)
{
	uint64_t v = 0;

	for (int i = 0; i < bytes && *n; i++, (*p)++, (*n)--)
		v |= (uint64_t)**p << (8 * i);
	return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wire_hdr h;
	uint32_t src;
	const uint8_t *body, *p = data;
	size_t n = size;

	if (wire_parse(data, size, MY_IP, 47000, &h, &src, &body) == WIRE_OK && (h.flags & WIRE_F_AUTH)) {
		static struct auth_frame *af;
		static const uint8_t key[AUTH_KEY_BYTES];
		char err[256];

		if (!af)
			af = auth_frame_new(key, AUTH_FRAME_CHACHA20POLY1305, err, sizeof(err));
		if (af && auth_frame_check(af, src, MY_IP, body - WIRE_TAG_LEN - WIRE_MLF_LEN,
					   WIRE_MLF_LEN + WIRE_STAMP_LEN, body, h.len, body - WIRE_MAC_LEN - WIRE_NONCE_LEN,
					   body - WIRE_MAC_LEN) == 0)
			__builtin_trap(); /* a tag of the all-zero key from bytes without it: impossible */
	}
	/* SACK machines: total up to 64 MiB, segment 64..9000 bytes, then ops from the input */
	uint64_t total = get(&p, &n, 4) % (64u << 20) + 1;
	uint32_t seg = (uint32_t)(get(&p, &n, 2) % 8937) + 64;
	struct sack_rx rx;
	struct sack_tx tx;
	uint64_t now = 0;
	int retx;

	if (sack_rx_init(&rx, total, seg) < 0)
		return 0;
	if (sack_tx_init(&tx, total, seg, 0) < 0) {
		sack_rx_free(&rx);
		return 0;
	}
	/* the RTO bound, on for odd totals (taken from bytes already read: the corpora keep
	 * their meaning), 0-999 ms */
	tx.prm.rto_max_ns = total & 1 ? total % 1000 * 1000000 : 0;
	while (n >= 3) {
		uint8_t op = (uint8_t)get(&p, &n, 1);
		uint64_t a = get(&p, &n, 4);
		uint8_t bm[WIRE_SACK_MAX_BYTES];
		uint64_t cum;
		size_t nb;

		now += 100000;
		switch (op % 4) {
		case 0: /* DATA as a frame may claim it (wire_parse's rules: offset multiple of seg) */
			(void)sack_rx_on_data(&rx, (a % (total / seg + 1)) * seg, (uint32_t)(get(&p, &n, 2) % (seg + 1)));
			break;
		case 1: /* the receiver's SACK, applied by the sender */
			nb = sack_rx_build(&rx, &cum, bm, sizeof(bm));
			(void)sack_tx_on_sack(&tx, cum, bm, nb, sack_rx_complete(&rx) ? SACK_DONE : 0, now);
			break;
		case 2: { /* a forged SACK: any cum, any bitmap from the input */
			size_t k = n < 64 ? n : 64;
			(void)sack_tx_on_sack(&tx, a, p, k, (op >> 6) & 3, now);
			p += k;
			n -= k;
			break;
		}
		default: /* the sender sends */
			for (uint64_t i = 0; i < a % 32; i++)
				if (sack_tx_next(&tx, now, &retx) < 0)
					break;
			(void)sack_tx_check(&tx, now, 1000000000ULL);
			break;
		}
	}
	sack_tx_free(&tx);
	sack_rx_free(&rx);
	return 0;
}
