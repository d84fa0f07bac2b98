/* wire.c - encode and validate MLfabric frames (Ethernet / IPv4 / UDP / MLfabric header). */
#include "wire.h"

#include <string.h>

/*
 * MLfabric header layout (big-endian, 40 bytes):
 *  0 magic u16 | 2 version u8 | 3 type u8 | 4 flags u16 | 6 chan u16 | 8 len u32 |
 * 12 seg u16 | 14 checksum u16 | 16 id u64 | 24 offset u64 | 32 total u64
 */
enum { M_MAGIC = 0, M_VER = 2, M_TYPE = 3, M_FLAGS = 4, M_CHAN = 6, M_LEN = 8, M_SEG = 12,
       M_CSUM = 14, M_ID = 16, M_OFF = 24, M_TOTAL = 32 };

static const char *const err_names[WIRE_ERR_MAX] = {
	[WIRE_OK] = "ok",          [WIRE_ENOTOURS] = "not_ours", [WIRE_ETRUNC] = "trunc",
	[WIRE_EIPHDR] = "ip_hdr",  [WIRE_EMAGIC] = "magic",      [WIRE_EVERSION] = "version",
	[WIRE_ECSUM] = "csum",     [WIRE_ETYPE] = "type",        [WIRE_ELEN] = "len",
	[WIRE_EPEER] = "peer",     [WIRE_EAUTH] = "auth",        [WIRE_EREPLAY] = "replay",
};

const char *wire_err_name(enum wire_err e)
{
	return (unsigned)e < WIRE_ERR_MAX ? err_names[e] : "unknown";
}

static void put16(uint8_t *p, uint16_t v) { p[0] = v >> 8; p[1] = (uint8_t)v; }
static void put32(uint8_t *p, uint32_t v) { put16(p, v >> 16); put16(p + 2, (uint16_t)v); }
static void put64(uint8_t *p, uint64_t v) { put32(p, v >> 32); put32(p + 4, (uint32_t)v); }
static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static uint32_t get32(const uint8_t *p) { return (uint32_t)get16(p) << 16 | get16(p + 2); }
static uint64_t get64(const uint8_t *p) { return (uint64_t)get32(p) << 32 | get32(p + 4); }

uint16_t wire_csum16(const void *data, size_t len)
{
	const uint8_t *p = data;
	uint32_t sum = 0;

	for (; len > 1; len -= 2, p += 2)
		sum += get16(p);
	if (len)
		sum += (uint32_t)p[0] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

size_t wire_encode(uint8_t *buf, const struct wire_addr *a, const struct wire_hdr *h)
{
	uint8_t *ip = buf + WIRE_ETH_LEN, *udp = ip + WIRE_IP_LEN, *m = udp + WIRE_UDP_LEN;
	size_t ip_len = WIRE_IP_LEN + WIRE_UDP_LEN + WIRE_MLF_LEN + wire_tag_len(h->flags) + h->len;

	memcpy(buf, a->dst_mac, 6);
	memcpy(buf + 6, a->src_mac, 6);
	put16(buf + 12, 0x0800);

	ip[0] = 0x45;
	ip[1] = 0;
	put16(ip + 2, (uint16_t)ip_len);
	put16(ip + 4, 0);      /* identification: never fragmented */
	put16(ip + 6, 0x4000); /* don't fragment */
	ip[8] = 64;
	ip[9] = 17;
	put16(ip + 10, 0);
	memcpy(ip + 12, &a->src_ip, 4);
	memcpy(ip + 16, &a->dst_ip, 4);
	put16(ip + 10, wire_csum16(ip, WIRE_IP_LEN));

	put16(udp, a->udp_port);
	put16(udp + 2, a->udp_port);
	put16(udp + 4, (uint16_t)(ip_len - WIRE_IP_LEN));
	put16(udp + 6, 0);

	put16(m + M_MAGIC, WIRE_MAGIC);
	m[M_VER] = WIRE_VERSION;
	m[M_TYPE] = h->type;
	put16(m + M_FLAGS, h->flags);
	put16(m + M_CHAN, h->chan);
	put32(m + M_LEN, h->len);
	put16(m + M_SEG, h->seg);
	put16(m + M_CSUM, 0);
	put64(m + M_ID, h->id);
	put64(m + M_OFF, h->offset);
	put64(m + M_TOTAL, h->total);
	put16(m + M_CSUM, wire_csum16(m, WIRE_MLF_LEN));
	if (h->flags & WIRE_F_AUTH)
		put64(m + WIRE_MLF_LEN, h->stamp);
	return wire_body_off(h->flags) + h->len;
}

enum wire_err wire_parse(const uint8_t *frame, size_t len, uint32_t my_ip, uint16_t udp_port,
			 struct wire_hdr *h, uint32_t *src_ip, const uint8_t **body)
{
	const uint8_t *ip, *udp, *m;
	size_t ihl, ip_len, udp_len;

	if (len < WIRE_ETH_LEN + WIRE_IP_LEN)
		return len >= WIRE_ETH_LEN && get16(frame + 12) != 0x0800 ? WIRE_ENOTOURS : WIRE_ETRUNC;
	if (get16(frame + 12) != 0x0800)
		return WIRE_ENOTOURS;
	ip = frame + WIRE_ETH_LEN;
	if (memcmp(ip + 16, &my_ip, 4) != 0 || ip[9] != 17)
		return WIRE_ENOTOURS;
	ihl = (size_t)(ip[0] & 0x0f) * 4;
	if ((ip[0] >> 4) != 4 || ihl < WIRE_IP_LEN)
		return WIRE_EIPHDR;
	ip_len = get16(ip + 2);
	if (len < WIRE_ETH_LEN + ihl + WIRE_UDP_LEN || ip_len < ihl + WIRE_UDP_LEN ||
	    ip_len > len - WIRE_ETH_LEN)
		return WIRE_ETRUNC;
	if (wire_csum16(ip, ihl) != 0 || (get16(ip + 6) & 0x3fff) != 0)
		return WIRE_EIPHDR; /* bad checksum, or a fragment (we never fragment) */
	udp = ip + ihl;
	if (get16(udp + 2) != udp_port)
		return WIRE_ENOTOURS;
	udp_len = get16(udp + 4);
	if (udp_len < WIRE_UDP_LEN || udp_len > ip_len - ihl)
		return WIRE_ETRUNC;
	if (udp_len < WIRE_UDP_LEN + 2)
		return WIRE_ETRUNC;
	m = udp + WIRE_UDP_LEN;
	if (get16(m + M_MAGIC) != WIRE_MAGIC)
		return WIRE_EMAGIC;
	if (udp_len < WIRE_UDP_LEN + WIRE_MLF_LEN)
		return WIRE_ETRUNC;
	if (m[M_VER] != WIRE_VERSION)
		return WIRE_EVERSION;
	if (wire_csum16(m, WIRE_MLF_LEN) != 0)
		return WIRE_ECSUM;
	h->type = m[M_TYPE];
	h->flags = get16(m + M_FLAGS);
	h->chan = get16(m + M_CHAN);
	h->len = get32(m + M_LEN);
	h->seg = get16(m + M_SEG);
	h->id = get64(m + M_ID);
	h->offset = get64(m + M_OFF);
	h->total = get64(m + M_TOTAL);
	if (h->type == 0 || h->type > WIRE_TYPE_MAX)
		return WIRE_ETYPE;
	if (udp_len < WIRE_UDP_LEN + WIRE_MLF_LEN + wire_tag_len(h->flags) ||
	    h->len > udp_len - WIRE_UDP_LEN - WIRE_MLF_LEN - wire_tag_len(h->flags))
		return WIRE_ETRUNC;
	switch (h->type) {
	case WIRE_DATA:
		if (h->seg == 0 || h->len == 0 || h->len > h->seg || h->offset % h->seg != 0 ||
		    h->offset > h->total || h->len > h->total - h->offset ||
		    (h->len < h->seg && h->offset + h->len != h->total))
			return WIRE_ELEN;
		break;
	case WIRE_SACK:
		if (h->len > WIRE_SACK_MAX_BYTES)
			return WIRE_ELEN;
		break;
	default:
		break;
	}
	h->stamp = h->flags & WIRE_F_AUTH ? get64(m + WIRE_MLF_LEN) : 0;
	memcpy(src_ip, ip + 12, 4);
	*body = m + WIRE_MLF_LEN + wire_tag_len(h->flags);
	return WIRE_OK;
}
