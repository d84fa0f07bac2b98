/* test_dp_arp.c - Check tests of ARP parsing, answering and learning (dataplane/core/arp.c). */
#include <check.h>
#include <string.h>

#include "arp.h"
#include "test_dp_main.h"

#define IP(a, b, c, d) ((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 | (uint32_t)(d) << 24)
#define MS 1000000ULL

static const uint8_t mac_a[6] = { 0x02, 0, 0, 0, 0, 0xa };
static const uint8_t mac_b[6] = { 0x02, 0, 0, 0, 0, 0xb };
static const uint8_t mac_c[6] = { 0x02, 0, 0, 0, 0, 0xc };
static const uint8_t mac_x[6] = { 0x02, 0, 0, 0, 0, 0x99 };

static struct arp_table t; /* the table of each test (table()) */
static struct arp_entry e[3];

/* a table of 3 hosts seen from a (index 0): b unknown, c static at mac_c */
static void table(void)
{
	memset(e, 0, 3 * sizeof(*e));
	e[0].ip = IP(10, 0, 0, 1);
	e[1].ip = IP(10, 0, 0, 2);
	e[1].state = ARP_UNKNOWN;
	e[2].ip = IP(10, 0, 0, 3);
	e[2].state = ARP_STATIC;
	memcpy(e[2].mac, mac_c, 6);
	arp_table_init(&t, e, 3, 0, mac_a, 0);
}

/* the frame of a message, through arp_build, parsed back */
static enum arp_parse_err roundtrip(const struct arp_msg *m, struct arp_msg *out)
{
	uint8_t f[60] = { 0 };

	ck_assert_uint_eq(arp_build(f, arp_broadcast, m), ARP_FRAME_LEN);
	return arp_parse(f, sizeof(f), out);
}

START_TEST(parse_build_roundtrip)
{
	struct arp_msg q, r, p;
	uint8_t f[ARP_FRAME_LEN];

	arp_request(&q, mac_b, IP(10, 0, 0, 2), IP(10, 0, 0, 1));
	ck_assert_int_eq(roundtrip(&q, &p), ARP_OK);
	ck_assert_uint_eq(p.op, 1);
	ck_assert_mem_eq(p.sha, mac_b, 6);
	ck_assert_uint_eq(p.spa, IP(10, 0, 0, 2));
	ck_assert_uint_eq(p.tpa, IP(10, 0, 0, 1));
	arp_reply(&r, mac_a, IP(10, 0, 0, 1), &p);
	arp_build(f, r.tha, &r);
	ck_assert_mem_eq(f, mac_b, 6); /* a reply goes to the requester, not to everyone */
	ck_assert_mem_eq(f + 6, mac_a, 6);
	ck_assert_int_eq(arp_parse(f, sizeof(f), &p), ARP_OK);
	ck_assert_uint_eq(p.op, 2);
	ck_assert_mem_eq(p.tha, mac_b, 6);
	ck_assert_uint_eq(p.tpa, IP(10, 0, 0, 2));
	ck_assert_uint_eq(f[12], 0x08);
	ck_assert_uint_eq(f[13], 0x06);
}
END_TEST

START_TEST(parse_refuses_malformed)
{
	struct arp_msg q, p;
	uint8_t f[ARP_FRAME_LEN];

	arp_request(&q, mac_b, IP(10, 0, 0, 2), IP(10, 0, 0, 1));
	arp_build(f, arp_broadcast, &q);
	for (size_t n = 0; n < 14; n++)
		ck_assert_int_eq(arp_parse(f, n, &p), ARP_ENOTARP);
	for (size_t n = 14; n < ARP_FRAME_LEN; n++)
		ck_assert_int_eq(arp_parse(f, n, &p), ARP_ETRUNC); /* truncated */
	f[12] = 0x08, f[13] = 0x00; /* IPv4, not ARP */
	ck_assert_int_eq(arp_parse(f, sizeof(f), &p), ARP_ENOTARP);
	f[13] = 0x06;
	f[15] = 6; /* hardware type 6 (IEEE 802), not Ethernet */
	ck_assert_int_eq(arp_parse(f, sizeof(f), &p), ARP_EHW);
	f[15] = 1, f[18] = 8; /* hardware address length 8 */
	ck_assert_int_eq(arp_parse(f, sizeof(f), &p), ARP_EHW);
	f[18] = 6, f[16] = 0x86, f[17] = 0xdd; /* IPv6 */
	ck_assert_int_eq(arp_parse(f, sizeof(f), &p), ARP_EPROTO);
	f[16] = 0x08, f[17] = 0x00, f[19] = 16;
	ck_assert_int_eq(arp_parse(f, sizeof(f), &p), ARP_EPROTO);
	f[19] = 4, f[21] = 3; /* RARP request */
	ck_assert_int_eq(arp_parse(f, sizeof(f), &p), ARP_EOP);
	f[21] = 1, f[22] = 0xff; /* multicast sender */
	ck_assert_int_eq(arp_parse(f, sizeof(f), &p), ARP_EADDR);
	f[22] = 0x02;
	memset(f + 28, 0, 4); /* sender 0.0.0.0 (an ARP probe) */
	ck_assert_int_eq(arp_parse(f, sizeof(f), &p), ARP_EADDR);
}
END_TEST

START_TEST(answers_requests_for_our_ip_only)
{
	struct arp_msg q;
	int peer;

	table();
	/* a stranger (not in the cluster) asks for us: answered, nothing learned */
	arp_request(&q, mac_x, IP(10, 0, 0, 77), IP(10, 0, 0, 1));
	ck_assert_uint_eq(arp_input(&t, &q, &peer), ARP_ACT_REPLY);
	ck_assert_int_eq(peer, -1);
	/* b asks for c: not for us, nothing answered or learned from it */
	arp_request(&q, mac_b, IP(10, 0, 0, 2), IP(10, 0, 0, 3));
	ck_assert_uint_eq(arp_input(&t, &q, &peer), 0);
	ck_assert_ptr_null(arp_mac(&t, 1));
	/* our own gratuitous ARP (or the kernel's on a shared interface) is ignored */
	arp_request(&q, mac_a, IP(10, 0, 0, 1), IP(10, 0, 0, 1));
	ck_assert_uint_eq(arp_input(&t, &q, &peer), 0);
	ck_assert_mem_eq(arp_mac(&t, 0), mac_a, 6);
}
END_TEST

START_TEST(learns_from_requests_and_replies_to_us)
{
	struct arp_msg q, r;
	int peer;

	table();
	ck_assert_ptr_null(arp_mac(&t, 1));
	/* b's reply to our request */
	arp_request(&q, mac_a, IP(10, 0, 0, 1), IP(10, 0, 0, 2));
	arp_reply(&r, mac_b, IP(10, 0, 0, 2), &q);
	ck_assert_uint_eq(arp_input(&t, &r, &peer), ARP_ACT_LEARNED);
	ck_assert_int_eq(peer, 1);
	ck_assert_mem_eq(arp_mac(&t, 1), mac_b, 6);
	/* the same again: nothing new */
	ck_assert_uint_eq(arp_input(&t, &r, &peer), 0);
	/* b's request for us, from a new MAC (b restarted on another NIC): answered, replaced */
	arp_request(&q, mac_x, IP(10, 0, 0, 2), IP(10, 0, 0, 1));
	ck_assert_uint_eq(arp_input(&t, &q, &peer), ARP_ACT_REPLY | ARP_ACT_CHANGED);
	ck_assert_mem_eq(arp_mac(&t, 1), mac_x, 6);
}
END_TEST

START_TEST(gratuitous_arp_announces_a_peer)
{
	struct arp_msg g;
	int peer;

	table();
	arp_request(&g, mac_b, IP(10, 0, 0, 2), IP(10, 0, 0, 2));
	ck_assert_uint_eq(arp_input(&t, &g, &peer), ARP_ACT_LEARNED);
	ck_assert_mem_eq(arp_mac(&t, 1), mac_b, 6);
	/* a gratuitous reply from a new MAC moves b */
	g.op = 2;
	memcpy(g.sha, mac_x, 6);
	ck_assert_uint_eq(arp_input(&t, &g, &peer), ARP_ACT_CHANGED);
	ck_assert_mem_eq(arp_mac(&t, 1), mac_x, 6);
	/* a gratuitous ARP of a stranger teaches nothing */
	arp_request(&g, mac_x, IP(10, 0, 0, 9), IP(10, 0, 0, 9));
	ck_assert_uint_eq(arp_input(&t, &g, &peer), 0);
	ck_assert_int_eq(peer, -1);
}
END_TEST

START_TEST(static_entries_win_conflict_reported_once)
{
	struct arp_msg q, r;
	int peer;

	table();
	ck_assert_mem_eq(arp_mac(&t, 2), mac_c, 6);
	arp_request(&q, mac_a, IP(10, 0, 0, 1), IP(10, 0, 0, 3));
	arp_reply(&r, mac_x, IP(10, 0, 0, 3), &q);
	ck_assert_uint_eq(arp_input(&t, &r, &peer), ARP_ACT_CONFLICT);
	ck_assert_int_eq(peer, 2);
	ck_assert_uint_eq(arp_input(&t, &r, &peer), 0); /* once */
	ck_assert_mem_eq(arp_mac(&t, 2), mac_c, 6);
	/* the static MAC itself is no conflict; c's request for us is still answered */
	arp_request(&q, mac_c, IP(10, 0, 0, 3), IP(10, 0, 0, 1));
	ck_assert_uint_eq(arp_input(&t, &q, &peer), ARP_ACT_REPLY);
	ck_assert_mem_eq(arp_mac(&t, 2), mac_c, 6);
}
END_TEST

START_TEST(requests_back_off_until_resolved)
{
	struct arp_msg g;
	int cur = 0, peer;
	uint64_t now = 0, gaps[8];

	table();
	/* only b (unknown) is asked for; at once, then after 50, 100, 200 ... ms up to 1 s */
	ck_assert_int_eq(arp_due(&t, now, &cur), 1);
	ck_assert_int_eq(arp_due(&t, now, &cur), -1);
	for (int k = 0; k < 8; k++) {
		uint64_t from = now;
		do {
			now += MS;
			cur = 0;
		} while (arp_due(&t, now, &cur) != 1);
		gaps[k] = now - from;
	}
	ck_assert_uint_eq(gaps[0], 50 * MS);
	ck_assert_uint_eq(gaps[1], 100 * MS);
	ck_assert_uint_eq(gaps[4], 800 * MS);
	ck_assert_uint_eq(gaps[5], 1000 * MS);
	ck_assert_uint_eq(gaps[7], 1000 * MS);
	ck_assert_uint_eq(e[1].tries, 9);
	arp_request(&g, mac_b, IP(10, 0, 0, 2), IP(10, 0, 0, 2));
	ck_assert_uint_eq(arp_input(&t, &g, &peer), ARP_ACT_LEARNED);
	cur = 0;
	ck_assert_int_eq(arp_due(&t, now + 10000 * MS, &cur), -1);
}
END_TEST

int main(void)
{
	const TTest *tests[] = { parse_build_roundtrip, parse_refuses_malformed, answers_requests_for_our_ip_only,
				 learns_from_requests_and_replies_to_us, gratuitous_arp_announces_a_peer,
				 static_entries_win_conflict_reported_once, requests_back_off_until_resolved };
	return test_dp_run("arp", tests, 7);
}
