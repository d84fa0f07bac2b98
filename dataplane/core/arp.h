/* arp.h - ARP for the dataplane's port: frame parsing and building, the neighbour table (DPDK-free). */
#ifndef MLF_ARP_H
#define MLF_ARP_H

#include <stddef.h>
#include <stdint.h>

#define ARP_FRAME_LEN 42                 /* Ethernet header (14) + ARP for IPv4 over Ethernet (28) */
#define ARP_RETRY_MIN_NS 50000000ULL     /* first retry of an unanswered request: 50 ms */
#define ARP_RETRY_MAX_NS 1000000000ULL   /* backoff doubles up to one request per second */

/** The Ethernet broadcast address, destination of requests. */
extern const uint8_t arp_broadcast[6];

/** Outcome of arp_parse(). */
enum arp_parse_err {
	ARP_OK = 0,
	ARP_ENOTARP,  /* not an ARP frame (EtherType other than 0x0806, or shorter than 14 bytes) */
	ARP_ETRUNC,   /* ARP EtherType but shorter than ARP_FRAME_LEN */
	ARP_EHW,      /* hardware type not Ethernet (1) or hardware address length not 6 */
	ARP_EPROTO,   /* protocol type not IPv4 (0x0800) or protocol address length not 4 */
	ARP_EOP,      /* operation neither request (1) nor reply (2) */
	ARP_EADDR,    /* sender MAC multicast, broadcast or zero, or sender IP 0 */
	ARP_ERR_MAX,
};

/** The fields of an IPv4-over-Ethernet ARP message (addresses in network byte order). */
struct arp_msg {
	uint16_t op;     /* 1 request, 2 reply */
	uint8_t sha[6];  /* sender hardware address */
	uint32_t spa;    /* sender IP */
	uint8_t tha[6];  /* target hardware address (zero in requests) */
	uint32_t tpa;    /* target IP */
};

/**
 * arp_parse - validate the Ethernet frame @f of @len bytes (from the wire, untrusted) as an ARP
 * message for IPv4 over Ethernet and fill @m. Reads at most ARP_FRAME_LEN bytes; longer frames
 * (padding to 60 bytes) are fine. Pure: no state, no allocation.
 * Returns ARP_OK or the reason it is not a usable ARP message (enum arp_parse_err).
 */
enum arp_parse_err arp_parse(const uint8_t *f, size_t len, struct arp_msg *m);

/**
 * arp_build - write an ARP frame of ARP_FRAME_LEN bytes into @f: Ethernet destination @eth_dst
 * (the broadcast address for requests), source @m->sha, then the message @m.
 * Returns ARP_FRAME_LEN.
 */
size_t arp_build(uint8_t *f, const uint8_t eth_dst[6], const struct arp_msg *m);

/** arp_request - fill @m with a request from (@mac, @ip) for @target (gratuitous when @target == @ip). */
void arp_request(struct arp_msg *m, const uint8_t mac[6], uint32_t ip, uint32_t target);

/** arp_reply - fill @m with the reply of (@mac, @ip) to request @req. */
void arp_reply(struct arp_msg *m, const uint8_t mac[6], uint32_t ip, const struct arp_msg *req);

/** State of one neighbour. */
enum arp_state {
	ARP_UNKNOWN = 0,  /* no MAC yet: requests go out with backoff, frames to it wait */
	ARP_RESOLVED,     /* learned by ARP (replaced when the peer announces another MAC) */
	ARP_STATIC,       /* from the cluster config: never replaced */
	ARP_SELF,         /* this host */
};

/** One neighbour: a host of the cluster. */
struct arp_entry {
	uint32_t ip;         /* network byte order */
	uint8_t mac[6];      /* valid unless state is ARP_UNKNOWN */
	uint8_t state;       /* enum arp_state */
	uint8_t conflict_logged; /* a static entry's conflicting ARP was reported (once) */
	uint32_t tries;      /* requests sent since it became unknown */
	uint64_t next_ns;    /* when the next request is due (monotonic ns) */
};

/** The neighbour table of one port: one entry per cluster host, indexed like the cluster. */
struct arp_table {
	int n;                 /* entries */
	int me;                /* index of this host */
	uint8_t my_mac[6];     /* the port's MAC */
	struct arp_entry *e;   /* n entries, owned by the caller */
};

/** What arp_input() found; bits. */
enum arp_action {
	ARP_ACT_REPLY = 1 << 0,    /* a request for our IP: answer it (arp_reply) */
	ARP_ACT_LEARNED = 1 << 1,  /* *peer's MAC became known */
	ARP_ACT_CHANGED = 1 << 2,  /* *peer's learned MAC was replaced by another */
	ARP_ACT_CONFLICT = 1 << 3, /* *peer has a static MAC and the message claims another: first time */
};

/**
 * arp_table_init - table @t over the caller's @n entries @e (ip and state filled by the caller:
 * ARP_STATIC with mac, or ARP_UNKNOWN; entry @me is set to ARP_SELF with @my_mac). Requests for
 * every unknown entry are due at once (@now_ns).
 */
void arp_table_init(struct arp_table *t, struct arp_entry *e, int n, int me, const uint8_t my_mac[6],
		    uint64_t now_ns);

/**
 * arp_input - apply a parsed message @m to @t. Learns the sender's MAC only from messages
 * addressed to this host (a request or reply whose target IP is ours) and from gratuitous ones
 * (sender IP == target IP) of a cluster host; static entries are never replaced. Requests for
 * other IPs and messages from our own IP are ignored. *@peer is set to the sender's index (or
 * -1 when it is not a cluster host).
 * Returns a mask of enum arp_action (0: nothing to do).
 */
unsigned arp_input(struct arp_table *t, const struct arp_msg *m, int *peer);

/**
 * arp_due - the next unknown entry whose request is due at @now_ns, starting the search at
 * *@cursor (updated; start at 0), or -1 when none. Schedules its next request with backoff
 * (ARP_RETRY_MIN_NS doubling to ARP_RETRY_MAX_NS) and counts it in tries.
 */
int arp_due(struct arp_table *t, uint64_t now_ns, int *cursor);

/** arp_mac - the MAC of entry @i, or NULL while it is unknown. */
const uint8_t *arp_mac(const struct arp_table *t, int i);

#endif
