/* fuzz_arp.c - libFuzzer harness (docs/fuzzing.md): the dataplane's ARP parser (arp_parse) on
 * arbitrary bytes, then the neighbour table: the first byte sets which of 8 hosts are static,
 * known or unknown, and the rest is a sequence of 28-byte ARP messages applied with arp_input
 * and interleaved with arp_due at moving times. Checked beyond the sanitizers: a static entry
 * never changes, this host's entry never changes, a reply is asked for only for our IP, a
 * parsed frame rebuilt by arp_build parses to the same message. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arp.h"

#define N 8
#define IPN(i) ((uint32_t)10 | (uint32_t)((i) + 1) << 24) /* 10.0.0.(i+1), network order */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct arp_msg m, m2;
	struct arp_entry e[N];
	struct arp_table t;
	uint8_t f[64], mine[6] = { 0x02, 0, 0, 0, 0, 1 }, st[N][6];
	uint64_t now = 0;

	if (arp_parse(data, size, &m) == ARP_OK) {
		arp_build(f, data, &m);
		if (arp_parse(f, ARP_FRAME_LEN, &m2) != ARP_OK || m.op != m2.op || m.spa != m2.spa ||
		    m.tpa != m2.tpa || memcmp(m.sha, m2.sha, 6) || memcmp(m.tha, m2.tha, 6))
			abort();
	}
	if (size < 1)
		return 0;
	memset(e, 0, sizeof(e));
	for (int i = 0; i < N; i++) {
		e[i].ip = IPN(i);
		e[i].state = (data[0] >> (i % 8)) & 1 ? ARP_STATIC : ARP_UNKNOWN;
		memset(e[i].mac, 0x40 + i, 6);
		e[i].mac[0] = 0x02;
		memcpy(st[i], e[i].mac, 6);
	}
	arp_table_init(&t, e, N, 0, mine, now);
	for (size_t off = 1; off + 28 <= size; off += 28) {
		uint8_t fr[ARP_FRAME_LEN];
		unsigned act;
		int peer, cur = 0;

		memset(fr, 0xff, 6);
		memcpy(fr + 6, data + off + 8, 6);
		fr[12] = 0x08;
		fr[13] = 0x06;
		memcpy(fr + 14, data + off, 28);
		/* bias addresses into the cluster: the low 3 bits of the last byte pick a host */
		if (data[off + 17] & 0x80)
			memcpy(fr + 28, &(uint32_t){ IPN(data[off + 17] & 7) }, 4);
		if (data[off + 27] & 0x80)
			memcpy(fr + 38, &(uint32_t){ IPN(data[off + 27] & 7) }, 4);
		if (arp_parse(fr, sizeof(fr), &m) != ARP_OK)
			continue;
		act = arp_input(&t, &m, &peer);
		if ((act & ARP_ACT_REPLY) && (m.op != 1 || m.tpa != e[0].ip))
			abort();
		if (peer >= N || (act & (ARP_ACT_LEARNED | ARP_ACT_CHANGED | ARP_ACT_CONFLICT) && peer < 1))
			abort();
		now += (uint64_t)data[off] * 1000000ULL;
		while (arp_due(&t, now, &cur) >= 0)
			;
		for (int i = 0; i < N; i++)
			if ((e[i].state == ARP_STATIC || i == 0) && memcmp(e[i].mac, i ? st[i] : mine, 6) != 0)
				abort();
		if (memcmp(arp_mac(&t, 0), mine, 6) != 0)
			abort();
	}
	return 0;
}
