/* dp_forge.c - forges MLfabric frames from a host that is not the one it claims to be, for
 * tests/integration/test_dp_forge.sh (docs/security.md): DATA with foreign bytes for a running
 * transfer, a SACK saying done, an ABORT, a flood of new transfer ids; and captures a real
 * transfer's frames to replay them verbatim later. Raw AF_PACKET socket on eth0 of the namespace
 * it runs in (run it through `mlf-testbed exec CLUSTER x`). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cluster.h"
#include "wire.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: dp_forge --cluster FILE --as HOST --to HOST --kind data|sack|abort|flood|capture|replay\n"
		"                [--id HEX] [--total BYTES] [--count N] [--own-mac] [--tag [--chacha]] [--dev IF]\n"
		"                [--file FILE] [--wait S]\n"
		"Sends frames that claim to come from --as (its IP; its configured MAC unless --own-mac,\n"
		"then this interface's) to --to, from the namespace it runs in:\n"
		"  data   every segment of transfer --id (--total bytes) with bytes 0x5a, N rounds\n"
		"  sack   N SACKs for --id saying every segment arrived (DONE)\n"
		"  abort  N ABORTs for --id\n"
		"  flood  DATA frames opening N new transfers (ids --id, --id+1, ...)\n"
		"--tag sets WIRE_F_AUTH with a random tag (a forger without the cluster key); --chacha also\n"
		"sets WIRE_F_CHACHA (a tag of the other frame_mac than the default aes256-gcm).\n"
		"  capture  (in --to's namespace) save every DATA frame of transfer --id from --as to --to\n"
		"           arriving within --wait S (default 10) into --file; ends 1 s after the last one\n"
		"  replay   send the frames of --file verbatim, N rounds\n"
		"Prints: forged kind= frames= (captured frames= for capture); exit 0 when every frame was\n"
		"sent (captured: at least one).\n");
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* --kind capture: DATA frames of transfer @id from host @ia to host @it arriving on @fd, each
 * saved to @path as a 2-byte length (host order) and the frame. Returns the exit status. */
static int capture(int fd, const struct cluster *cl, int ia, int it, uint64_t id, const char *path,
		   double wait_s)
{
	FILE *out = fopen(path, "wb");
	uint8_t buf[10000];
	uint64_t n = 0;
	double end = now_s() + wait_s, last = 0;
	int big = 16 << 20;

	if (!out) {
		fprintf(stderr, "dp_forge: %s: %s\n", path, strerror(errno));
		return 1;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big));
	printf("capturing\n");
	fflush(stdout);
	while (now_s() < end && !(last && now_s() - last > 1.0)) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		struct sockaddr_ll from;
		socklen_t fl = sizeof(from);
		struct wire_hdr h;
		uint32_t src;
		const uint8_t *body;
		ssize_t len;
		uint16_t l16;

		if (poll(&p, 1, 100) <= 0)
			continue;
		len = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl);
		if (len <= 0 || from.sll_pkttype == PACKET_OUTGOING ||
		    wire_parse(buf, (size_t)len, cl->hosts[it].ip, cl->udp_port, &h, &src, &body) != WIRE_OK ||
		    src != cl->hosts[ia].ip || h.type != WIRE_DATA || h.id != id)
			continue;
		l16 = (uint16_t)len;
		if (fwrite(&l16, 2, 1, out) != 1 || fwrite(buf, (size_t)len, 1, out) != 1) {
			fprintf(stderr, "dp_forge: %s: write failed\n", path);
			fclose(out);
			return 1;
		}
		n++;
		last = now_s();
	}
	fclose(out);
	printf("captured frames=%llu\n", (unsigned long long)n);
	return n ? 0 : 1;
}

/* --kind replay: send the frames saved by capture in @path verbatim, @rounds times. */
static int replay(int fd, struct sockaddr_ll *sll, const char *path, uint64_t rounds)
{
	uint8_t buf[10000];
	uint64_t frames = 0, failed = 0;
	uint16_t l16;

	for (uint64_t r = 0; r < rounds; r++) {
		FILE *in = fopen(path, "rb");
		if (!in) {
			fprintf(stderr, "dp_forge: %s: %s\n", path, strerror(errno));
			return 1;
		}
		while (fread(&l16, 2, 1, in) == 1 && l16 <= sizeof(buf) && fread(buf, l16, 1, in) == 1) {
			memcpy(sll->sll_addr, buf, 6); /* the captured destination MAC */
			if (sendto(fd, buf, l16, 0, (struct sockaddr *)sll, sizeof(*sll)) != (ssize_t)l16)
				failed++;
			else
				frames++;
			if (frames % 64 == 0)
				usleep(200);
		}
		fclose(in);
	}
	printf("forged kind=replay frames=%llu failed=%llu\n", (unsigned long long)frames,
	       (unsigned long long)failed);
	return failed || !frames ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *cfile = NULL, *as = NULL, *to = NULL, *kind = NULL, *dev = "eth0";
	uint64_t id = 0x7777000000000001ULL, total = 1 << 20, count = 1;
	const char *file = NULL;
	double wait_s = 10;
	int own_mac = 0, tag = 0, c, fd, ia, it;
	static const struct option lo[] = { { "cluster", 1, 0, 'c' }, { "as", 1, 0, 'a' }, { "to", 1, 0, 't' },
					    { "kind", 1, 0, 'k' },    { "id", 1, 0, 'i' }, { "total", 1, 0, 'T' },
					    { "count", 1, 0, 'n' },   { "own-mac", 0, 0, 'm' }, { "tag", 0, 0, 'g' },
					    { "chacha", 0, 0, 'C' },
					    { "dev", 1, 0, 'd' },     { "file", 1, 0, 'f' },   { "wait", 1, 0, 'w' },
					    { "help", 0, 0, 'h' },    { 0, 0, 0, 0 } };
	struct cluster cl;
	char err[512];
	struct wire_addr a;
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_IP), .sll_halen = 6 };
	struct ifreq ifr;
	uint8_t buf[10000];
	uint64_t frames = 0, failed = 0;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'c': cfile = optarg; break;
		case 'a': as = optarg; break;
		case 't': to = optarg; break;
		case 'k': kind = optarg; break;
		case 'i': id = strtoull(optarg, NULL, 16); break;
		case 'T': total = strtoull(optarg, NULL, 10); break;
		case 'n': count = strtoull(optarg, NULL, 10); break;
		case 'm': own_mac = 1; break;
		case 'g': tag |= WIRE_F_AUTH; break;
		case 'C': tag |= WIRE_F_CHACHA; break;
		case 'd': dev = optarg; break;
		case 'f': file = optarg; break;
		case 'w': wait_s = strtod(optarg, NULL); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!cfile || !as || !to || !kind || !total || !count) {
		usage(stderr);
		return 2;
	}
	if (cluster_load(cfile, &cl, err, sizeof(err)) < 0) {
		fprintf(stderr, "dp_forge: %s\n", err);
		return 2;
	}
	if ((ia = cluster_find(&cl, as)) < 0 || (it = cluster_find(&cl, to)) < 0) {
		fprintf(stderr, "dp_forge: no host %s in %s\n", ia < 0 ? as : to, cfile);
		return 2;
	}
	fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_IP));
	if (fd < 0) {
		perror("dp_forge: AF_PACKET socket");
		return 1;
	}
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", dev);
	if (ioctl(fd, SIOCGIFINDEX, &ifr) < 0) {
		fprintf(stderr, "dp_forge: %s: %s\n", dev, strerror(errno));
		return 1;
	}
	sll.sll_ifindex = ifr.ifr_ifindex;
	if (ioctl(fd, SIOCGIFHWADDR, &ifr) < 0) {
		fprintf(stderr, "dp_forge: %s: no MAC: %s\n", dev, strerror(errno));
		return 1;
	}
	memcpy(a.src_mac, own_mac ? (uint8_t *)ifr.ifr_hwaddr.sa_data : cl.hosts[ia].mac, 6);
	memcpy(a.dst_mac, cl.hosts[it].mac, 6);
	memcpy(sll.sll_addr, a.dst_mac, 6);
	a.src_ip = cl.hosts[ia].ip;
	a.dst_ip = cl.hosts[it].ip;
	a.udp_port = cl.udp_port;

	if (!strcmp(kind, "capture") || !strcmp(kind, "replay")) {
		if (!file) {
			fprintf(stderr, "dp_forge: --kind %s needs --file\n", kind);
			return 2;
		}
		c = !strcmp(kind, "capture") ? capture(fd, &cl, ia, it, id, file, wait_s) :
		    replay(fd, &sll, file, count);
		cluster_free(&cl);
		return c;
	}
	uint32_t seg = wire_seg_payload(cl.mtu) - ((tag & WIRE_F_AUTH) || cl.frame_auth ? WIRE_TAG_LEN : 0);
	uint64_t nseg = (total + seg - 1) / seg;
	srand((unsigned)time(NULL));
	for (uint64_t r = 0; r < count; r++) {
		uint64_t n = !strcmp(kind, "data") ? nseg : 1;
		for (uint64_t s = 0; s < n; s++) {
			struct wire_hdr h = { .flags = tag & WIRE_F_AUTH ? (uint16_t)tag : 0, .id = id };
			uint32_t off;
			size_t len;

			if (!strcmp(kind, "data") || !strcmp(kind, "flood")) {
				h.type = WIRE_DATA;
				h.seg = (uint16_t)seg;
				h.total = !strcmp(kind, "flood") ? (uint64_t)seg * 64 : total;
				h.id = !strcmp(kind, "flood") ? id + r : id;
				h.offset = s * seg;
				h.len = (uint32_t)(h.total - h.offset < seg ? h.total - h.offset : seg);
			} else if (!strcmp(kind, "sack")) {
				h.type = WIRE_SACK;
				h.flags |= WIRE_F_DONE;
				h.offset = nseg;
			} else if (!strcmp(kind, "abort")) {
				h.type = WIRE_ABORT;
				h.len = 6;
			} else {
				fprintf(stderr, "dp_forge: unknown --kind %s (data, sack, abort or flood)\n", kind);
				return 2;
			}
			off = wire_body_off(h.flags);
			if (off + h.len > sizeof(buf)) {
				fprintf(stderr, "dp_forge: MTU %d too large for the frame buffer\n", cl.mtu);
				return 2;
			}
			memset(buf + off, h.type == WIRE_ABORT ? 'f' : 0x5a, h.len);
			len = wire_encode(buf, &a, &h);
			for (uint32_t i = 0; i < wire_tag_len(h.flags); i++)
				buf[WIRE_HDRS_LEN + i] = (uint8_t)rand();
			if (sendto(fd, buf, len, 0, (struct sockaddr *)&sll, sizeof(sll)) != (ssize_t)len)
				failed++;
			else
				frames++;
			if (frames % 64 == 0)
				usleep(200); /* ~300k frames/s at most: do not drown the real sender's frames */
		}
	}
	printf("forged kind=%s frames=%llu failed=%llu\n", kind, (unsigned long long)frames, (unsigned long long)failed);
	cluster_free(&cl);
	return failed ? 1 : 0;
}
