/* arp.c - ARP for the dataplane's port: frame parsing and building, the neighbour table (DPDK-free). */
#include "arp.h"

#include <string.h>

#define ETH_P_ARP_BE0 0x08
#define ETH_P_ARP_BE1 0x06

const uint8_t arp_broadcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

static uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static int mac_unicast(const uint8_t m[6])
{
	return !(m[0] & 1) && (m[0] | m[1] | m[2] | m[3] | m[4] | m[5]);
}

enum arp_parse_err arp_parse(const uint8_t *f, size_t len, struct arp_msg *m)
{
	const uint8_t *a = f + 14;

	if (len < 14 || f[12] != ETH_P_ARP_BE0 || f[13] != ETH_P_ARP_BE1)
		return ARP_ENOTARP;
	if (len < ARP_FRAME_LEN)
		return ARP_ETRUNC;
	if (be16(a) != 1 || a[4] != 6)
		return ARP_EHW;
	if (be16(a + 2) != 0x0800 || a[5] != 4)
		return ARP_EPROTO;
	m->op = be16(a + 6);
	if (m->op != 1 && m->op != 2)
		return ARP_EOP;
	memcpy(m->sha, a + 8, 6);
	memcpy(&m->spa, a + 14, 4);
	memcpy(m->tha, a + 18, 6);
	memcpy(&m->tpa, a + 24, 4);
	if (!mac_unicast(m->sha) || m->spa == 0)
		return ARP_EADDR;
	return ARP_OK;
}

size_t arp_build(uint8_t *f, const uint8_t eth_dst[6], const struct arp_msg *m)
{
	uint8_t *a = f + 14;

	memcpy(f, eth_dst, 6);
	memcpy(f + 6, m->sha, 6);
	f[12] = ETH_P_ARP_BE0;
	f[13] = ETH_P_ARP_BE1;
	put16(a, 1);
	put16(a + 2, 0x0800);
	a[4] = 6;
	a[5] = 4;
	put16(a + 6, m->op);
	memcpy(a + 8, m->sha, 6);
	memcpy(a + 14, &m->spa, 4);
	memcpy(a + 18, m->tha, 6);
	memcpy(a + 24, &m->tpa, 4);
	return ARP_FRAME_LEN;
}

void arp_request(struct arp_msg *m, const uint8_t mac[6], uint32_t ip, uint32_t target)
{
	memset(m, 0, sizeof(*m));
	m->op = 1;
	memcpy(m->sha, mac, 6);
	m->spa = ip;
	m->tpa = target;
}

void arp_reply(struct arp_msg *m, const uint8_t mac[6], uint32_t ip, const struct arp_msg *req)
{
	m->op = 2;
	memcpy(m->sha, mac, 6);
	m->spa = ip;
	memcpy(m->tha, req->sha, 6);
	m->tpa = req->spa;
}

void arp_table_init(struct arp_table *t, struct arp_entry *e, int n, int me, const uint8_t my_mac[6],
		    uint64_t now_ns)
{
	t->n = n;
	t->me = me;
	t->e = e;
	memcpy(t->my_mac, my_mac, 6);
	for (int i = 0; i < n; i++) {
		e[i].tries = 0;
		e[i].next_ns = now_ns;
		e[i].conflict_logged = 0;
	}
	e[me].state = ARP_SELF;
	memcpy(e[me].mac, my_mac, 6);
}

static int find(const struct arp_table *t, uint32_t ip)
{
	for (int i = 0; i < t->n; i++)
		if (t->e[i].ip == ip)
			return i;
	return -1;
}

unsigned arp_input(struct arp_table *t, const struct arp_msg *m, int *peer)
{
	uint32_t my_ip = t->e[t->me].ip;
	int to_us = m->tpa == my_ip, gratuitous = m->spa == m->tpa;
	unsigned act = 0;
	struct arp_entry *e;

	*peer = -1;
	if (m->spa == my_ip)
		return 0; /* our own announcement, or the kernel's on a shared interface */
	if (to_us && m->op == 1)
		act |= ARP_ACT_REPLY;
	if (!to_us && !gratuitous)
		return act;
	*peer = find(t, m->spa);
	if (*peer < 0)
		return act;
	e = &t->e[*peer];
	switch (e->state) {
	case ARP_STATIC:
		if (memcmp(e->mac, m->sha, 6) != 0 && !e->conflict_logged) {
			e->conflict_logged = 1;
			act |= ARP_ACT_CONFLICT;
		}
		break;
	case ARP_UNKNOWN:
		memcpy(e->mac, m->sha, 6);
		e->state = ARP_RESOLVED;
		act |= ARP_ACT_LEARNED;
		break;
	case ARP_RESOLVED:
		if (memcmp(e->mac, m->sha, 6) != 0) {
			memcpy(e->mac, m->sha, 6);
			act |= ARP_ACT_CHANGED;
		}
		break;
	default:
		break;
	}
	return act;
}

int arp_due(struct arp_table *t, uint64_t now_ns, int *cursor)
{
	for (; *cursor < t->n; (*cursor)++) {
		struct arp_entry *e = &t->e[*cursor];
		uint64_t wait;

		if (e->state != ARP_UNKNOWN || e->next_ns > now_ns)
			continue;
		wait = e->tries >= 5 ? ARP_RETRY_MAX_NS : ARP_RETRY_MIN_NS << e->tries;
		if (wait > ARP_RETRY_MAX_NS)
			wait = ARP_RETRY_MAX_NS;
		e->next_ns = now_ns + wait;
		e->tries++;
		return (*cursor)++;
	}
	return -1;
}

const uint8_t *arp_mac(const struct arp_table *t, int i)
{
	return t->e[i].state == ARP_UNKNOWN ? NULL : t->e[i].mac;
}
