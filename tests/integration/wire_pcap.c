/* wire_pcap.c - writes a pcap of MLfabric frames made by wire_encode(), to test tools/mlfabric.lua. */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "wire.h"

static void put_record(FILE *f, const uint8_t *frame, uint32_t len, uint32_t sec)
{
	uint32_t rec[4] = { sec, 0, len, len };

	fwrite(rec, sizeof(rec), 1, f);
	fwrite(frame, 1, len, f);
}

/*
 * Frames, in order: DATA (id 0x0001000000000007, offset 2920, 1460 bytes of 0xab, total 1 MB),
 * SACK (cumulative 12, bitmap 0x0f 0x01 = 5 segments, DONE), ABORT (reason "peer b silent"),
 * DATA retransmission with a corrupted header checksum.
 */
int main(int argc, char **argv)
{
	struct wire_addr a = { .src_mac = { 2, 0, 10, 78, 0, 1 }, .dst_mac = { 2, 0, 10, 78, 0, 2 },
			       .udp_port = 47000 };
	uint8_t frame[2048];
	struct wire_hdr h;
	uint32_t gh[6] = { 0xa1b2c3d4, 0x00040002, 0, 0, 65535, 1 };
	FILE *f;
	size_t n;

	if (argc != 2) {
		fprintf(stderr, "usage: wire_pcap OUT.pcap\n");
		return 2;
	}
	f = fopen(argv[1], "wb");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	fwrite(gh, sizeof(gh), 1, f);
	a.src_ip = inet_addr("10.78.0.1");
	a.dst_ip = inet_addr("10.78.0.2");

	memset(&h, 0, sizeof(h));
	h = (struct wire_hdr){ .type = WIRE_DATA, .chan = 3, .len = 1460, .seg = 1460,
			       .id = 0x0001000000000007ULL, .offset = 2920, .total = 1000000 };
	memset(frame + WIRE_HDRS_LEN, 0xab, 1460);
	n = wire_encode(frame, &a, &h);
	put_record(f, frame, (uint32_t)n, 1);

	h = (struct wire_hdr){ .type = WIRE_SACK, .flags = WIRE_F_DONE, .len = 2,
			       .id = 0x0001000000000007ULL, .offset = 12, .total = 1000000 };
	frame[WIRE_HDRS_LEN] = 0x0f;
	frame[WIRE_HDRS_LEN + 1] = 0x01;
	n = wire_encode(frame, &a, &h);
	put_record(f, frame, (uint32_t)n, 2);

	h = (struct wire_hdr){ .type = WIRE_ABORT, .len = 13, .id = 0x0001000000000007ULL };
	memcpy(frame + WIRE_HDRS_LEN, "peer b silent", 13);
	n = wire_encode(frame, &a, &h);
	put_record(f, frame, (uint32_t)n, 3);

	h = (struct wire_hdr){ .type = WIRE_DATA, .flags = WIRE_F_RETX, .len = 100, .seg = 1460,
			       .id = 0x0001000000000007ULL, .offset = 998540, .total = 998640 };
	n = wire_encode(frame, &a, &h);
	frame[WIRE_ETH_LEN + WIRE_IP_LEN + WIRE_UDP_LEN + 20] ^= 0x55; /* inside the id field */
	put_record(f, frame, (uint32_t)n, 4);

	/* a tagged ABORT (frame_auth): the 24-byte tag (stamp 0, MAC), then the reason */
	h = (struct wire_hdr){ .type = WIRE_ABORT, .flags = WIRE_F_AUTH, .len = 11, .id = 0x0001000000000008ULL };
	memset(frame + WIRE_HDRS_LEN, 0xcc, WIRE_TAG_LEN);
	memcpy(frame + wire_body_off(h.flags), "tagged stop", 11);
	n = wire_encode(frame, &a, &h);
	put_record(f, frame, (uint32_t)n, 5);
	return fclose(f) ? 1 : 0;
}
