/* test_dp_wire.c - Check tests of the MLfabric frame encoder and parser (lib/wire.c). */
#include <arpa/inet.h>
#include <check.h>
#include <string.h>

#include "test_dp_main.h"
#include "wire.h"

#define PORT 47000

static struct wire_addr addr(void)
{
	struct wire_addr a = { .src_mac = { 2, 0, 10, 78, 0, 1 }, .dst_mac = { 2, 0, 10, 78, 0, 2 },
			       .udp_port = PORT };
	a.src_ip = inet_addr("10.78.0.1");
	a.dst_ip = inet_addr("10.78.0.2");
	return a;
}

/* A DATA frame of 100 payload bytes at offset 1432 of a 1532-byte transfer. */
static size_t make_data(uint8_t *buf)
{
	struct wire_addr a = addr();
	struct wire_hdr h = { .type = WIRE_DATA, .flags = WIRE_F_RETX, .chan = 7, .len = 100,
			      .seg = 1432, .id = 0x0001000000000abcULL, .offset = 1432, .total = 1532 };
	for (int i = 0; i < 100; i++)
		buf[WIRE_HDRS_LEN + i] = (uint8_t)i;
	return wire_encode(buf, &a, &h);
}

START_TEST(round_trip)
{
	uint8_t buf[2048];
	size_t n = make_data(buf);
	struct wire_hdr h;
	uint32_t src;
	const uint8_t *body;

	ck_assert_uint_eq(n, WIRE_HDRS_LEN + 100);
	ck_assert_int_eq(wire_parse(buf, n, inet_addr("10.78.0.2"), PORT, &h, &src, &body), WIRE_OK);
	ck_assert_uint_eq(h.type, WIRE_DATA);
	ck_assert_uint_eq(h.flags, WIRE_F_RETX);
	ck_assert_uint_eq(h.chan, 7);
	ck_assert_uint_eq(h.len, 100);
	ck_assert_uint_eq(h.seg, 1432);
	ck_assert_uint_eq(h.id, 0x0001000000000abcULL);
	ck_assert_uint_eq(h.offset, 1432);
	ck_assert_uint_eq(h.total, 1532);
	ck_assert_uint_eq(src, inet_addr("10.78.0.1"));
	ck_assert_ptr_eq(body, buf + WIRE_HDRS_LEN);
	ck_assert_uint_eq(body[99], 99);
	/* valid IPv4 header checksum, as a kernel or tcpdump would check it */
	ck_assert_uint_eq(wire_csum16(buf + WIRE_ETH_LEN, WIRE_IP_LEN), 0);
}
END_TEST

/* Every truncation of a valid frame is rejected as truncated, never accepted, never a crash. */
START_TEST(every_truncation_rejected)
{
	uint8_t buf[2048];
	size_t n = make_data(buf);
	struct wire_hdr h;
	uint32_t src;
	const uint8_t *body;

	for (size_t len = 0; len < n; len++) {
		enum wire_err e = wire_parse(buf, len, inet_addr("10.78.0.2"), PORT, &h, &src, &body);
		ck_assert_msg(e == WIRE_ETRUNC, "length %zu gave %s", len, wire_err_name(e));
	}
}
END_TEST

START_TEST(bad_checksum_and_version)
{
	uint8_t buf[2048];
	size_t n = make_data(buf);
	uint8_t *m = buf + WIRE_ETH_LEN + WIRE_IP_LEN + WIRE_UDP_LEN;
	struct wire_hdr h;
	uint32_t src, me = inet_addr("10.78.0.2");
	const uint8_t *body;

	m[30] ^= 0x40; /* flip a bit of the offset */
	ck_assert_int_eq(wire_parse(buf, n, me, PORT, &h, &src, &body), WIRE_ECSUM);
	m[30] ^= 0x40;
	m[2] = WIRE_VERSION + 1;
	ck_assert_int_eq(wire_parse(buf, n, me, PORT, &h, &src, &body), WIRE_EVERSION);
	m[2] = WIRE_VERSION;
	m[0] = 'X';
	ck_assert_int_eq(wire_parse(buf, n, me, PORT, &h, &src, &body), WIRE_EMAGIC);
	m[0] = 'M';
	buf[WIRE_ETH_LEN + 8] ^= 1; /* TTL: IPv4 checksum no longer matches */
	ck_assert_int_eq(wire_parse(buf, n, me, PORT, &h, &src, &body), WIRE_EIPHDR);
	buf[WIRE_ETH_LEN + 8] ^= 1;
	ck_assert_int_eq(wire_parse(buf, n, me, PORT, &h, &src, &body), WIRE_OK);
}
END_TEST

START_TEST(foreign_and_inconsistent_frames)
{
	uint8_t buf[2048];
	size_t n = make_data(buf);
	struct wire_hdr h;
	uint32_t src, me = inet_addr("10.78.0.2");
	const uint8_t *body;
	struct wire_addr a = addr();
	struct wire_hdr bad = { .type = WIRE_DATA, .len = 100, .seg = 1432, .id = 1, .offset = 1432,
				.total = 1500 }; /* payload runs past the end of the transfer */

	ck_assert_int_eq(wire_parse(buf, n, inet_addr("10.78.0.3"), PORT, &h, &src, &body), WIRE_ENOTOURS);
	ck_assert_int_eq(wire_parse(buf, n, me, PORT + 1, &h, &src, &body), WIRE_ENOTOURS);
	buf[12] = 0x86; /* IPv6 ethertype */
	ck_assert_int_eq(wire_parse(buf, n, me, PORT, &h, &src, &body), WIRE_ENOTOURS);

	n = wire_encode(buf, &a, &bad);
	ck_assert_int_eq(wire_parse(buf, n, me, PORT, &h, &src, &body), WIRE_ELEN);
	bad.total = 1532;
	bad.offset = 1000; /* not a multiple of the segment size */
	n = wire_encode(buf, &a, &bad);
	ck_assert_int_eq(wire_parse(buf, n, me, PORT, &h, &src, &body), WIRE_ELEN);
	bad.offset = 1432;
	bad.type = 9;
	n = wire_encode(buf, &a, &bad);
	ck_assert_int_eq(wire_parse(buf, n, me, PORT, &h, &src, &body), WIRE_ETYPE);
	bad.type = WIRE_SACK;
	bad.len = WIRE_SACK_MAX_BYTES + 8;
	n = wire_encode(buf, &a, &bad);
	ck_assert_int_eq(wire_parse(buf, n, me, PORT, &h, &src, &body), WIRE_ELEN);
	/* a header announcing more body bytes than the frame holds */
	bad.len = 100;
	n = wire_encode(buf, &a, &bad);
	ck_assert_int_eq(wire_parse(buf, n - 1, me, PORT, &h, &src, &body), WIRE_ETRUNC);
}
END_TEST

/* WIRE_F_AUTH: the 36-byte tag (stamp 8, nonce 12, MAC 16) sits between header and body;
 * lengths count it; the stamp comes back, nonce and MAC are the caller's; WIRE_F_CHACHA passes
 * through; a frame cut inside the tag or the body is truncated */
START_TEST(tagged_frame_layout)
{
	uint8_t buf[2048];
	struct wire_addr a = addr();
	struct wire_hdr h = { .type = WIRE_SACK, .flags = WIRE_F_AUTH, .len = 8, .id = 42,
			      .stamp = 0x0102030405060708ULL }, g;
	uint32_t src, me = inet_addr("10.78.0.2");
	const uint8_t *body;
	size_t n;

	memset(buf, 0xee, sizeof(buf));
	memcpy(buf + wire_body_off(h.flags), "ABCDEFGH", 8);
	n = wire_encode(buf, &a, &h);
	ck_assert_uint_eq(n, WIRE_HDRS_LEN + WIRE_TAG_LEN + 8);
	ck_assert_int_eq(wire_parse(buf, n, me, PORT, &g, &src, &body), WIRE_OK);
	ck_assert_ptr_eq(body, buf + WIRE_HDRS_LEN + WIRE_TAG_LEN);
	ck_assert_mem_eq(body, "ABCDEFGH", 8);
	ck_assert_uint_eq(g.flags, WIRE_F_AUTH);
	ck_assert_uint_eq(g.len, 8);
	ck_assert_uint_eq(g.stamp, h.stamp);
	ck_assert_uint_eq(buf[WIRE_HDRS_LEN], 0x01); /* big-endian, first in the tag */
	ck_assert_uint_eq(WIRE_TAG_LEN, 36);
	ck_assert_uint_eq(wire_body_off(WIRE_F_AUTH), WIRE_HDRS_LEN + 36);
	ck_assert_uint_eq(wire_body_off(WIRE_F_AUTH | WIRE_F_CHACHA), WIRE_HDRS_LEN + 36);
	ck_assert_uint_eq(wire_body_off(WIRE_F_CHACHA), WIRE_HDRS_LEN); /* no tag without AUTH */
	for (int i = WIRE_STAMP_LEN; i < WIRE_TAG_LEN; i++) /* nonce and MAC are the caller's */
		ck_assert_uint_eq(buf[WIRE_HDRS_LEN + i], 0xee);
	for (size_t cut = WIRE_HDRS_LEN; cut < n; cut++)
		ck_assert_int_ne(wire_parse(buf, cut, me, PORT, &g, &src, &body), WIRE_OK);
	h.flags = WIRE_F_AUTH | WIRE_F_CHACHA;
	ck_assert_uint_eq(wire_encode(buf, &a, &h), n);
	ck_assert_int_eq(wire_parse(buf, n, me, PORT, &g, &src, &body), WIRE_OK);
	ck_assert_uint_eq(g.flags, WIRE_F_AUTH | WIRE_F_CHACHA);
	ck_assert_ptr_eq(body, buf + WIRE_HDRS_LEN + WIRE_TAG_LEN);
	ck_assert_str_eq(wire_err_name(WIRE_EAUTH), "auth");
	ck_assert_str_eq(wire_err_name(WIRE_EPEER), "peer");
	ck_assert_str_eq(wire_err_name(WIRE_EREPLAY), "replay");
}
END_TEST

int main(void)
{
	const TTest *tests[] = { round_trip, every_truncation_rejected, bad_checksum_and_version,
				 foreign_and_inconsistent_frames, tagged_frame_layout };
	return test_dp_run("wire", tests, 5);
}
