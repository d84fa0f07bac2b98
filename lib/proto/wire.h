/* wire.h - MLfabric frame format: Ethernet / IPv4 / UDP / MLfabric header (docs/wire.md). */
#ifndef MLF_WIRE_H
#define MLF_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "proto.h"

#define WIRE_MAGIC 0x4d46        /* "MF" */
#define WIRE_VERSION MLF_PROTO_VERSION
#define WIRE_ETH_LEN 14
#define WIRE_IP_LEN 20
#define WIRE_UDP_LEN 8
#define WIRE_MLF_LEN 40
/* Bytes in front of the MLfabric payload of every frame we send. */
#define WIRE_HDRS_LEN (WIRE_ETH_LEN + WIRE_IP_LEN + WIRE_UDP_LEN + WIRE_MLF_LEN)
#define WIRE_SACK_MAX_BYTES 1024 /* largest SACK bitmap carried in one frame (8192 segments) */

/** Frame types of the MLfabric header. */
enum wire_type {
	WIRE_DATA = 1,  /* payload bytes of a transfer at `offset` */
	WIRE_SACK = 2,  /* receiver -> sender: cumulative + selective acknowledgement */
	WIRE_ABORT = 3, /* either side: the transfer failed, stop */
	WIRE_TYPE_MAX = 3,
};

/** Header flags. */
enum wire_flags {
	WIRE_F_DONE = 1 << 0,   /* SACK: every byte arrived, the transfer is complete */
	WIRE_F_RETX = 1 << 1,   /* DATA: this segment is a retransmission */
	WIRE_F_ACKREQ = 1 << 2, /* DATA: sender asks for a SACK now (tail probe) */
	WIRE_F_AUTH = 1 << 3,   /* any type: WIRE_TAG_LEN bytes of frame tag (the stamp, the nonce,
				 * then the MAC) follow the header, the body after them (docs/wire.md,
				 * docs/security.md "Frames") */
	WIRE_F_HELD = 1 << 4,   /* SACK: the receiver held the transfer for its announcement and no
				 * segment's first copy arrived since it was released; the arrivals it
				 * reports waited at the receiver, so it is no round-trip sample */
	WIRE_F_CHACHA = 1 << 5, /* with AUTH: the MAC is ChaCha20-Poly1305; without: AES-256-GCM (the
				 * cluster's "frame_mac"; a receiver refuses the other one by name) */
};

#define WIRE_STAMP_LEN 8  /* bytes of the transfer stamp, first in the frame tag (docs/security.md
			   * "Replays"); the MAC covers the header and the stamp as one block */
#define WIRE_NONCE_LEN 12 /* bytes of the MAC's nonce after the stamp (AUTH_FRAME_NONCE_BYTES) */
#define WIRE_MAC_LEN 16   /* bytes of the MAC after the nonce (AUTH_TAG_BYTES) */
#define WIRE_TAG_LEN (WIRE_STAMP_LEN + WIRE_NONCE_LEN + WIRE_MAC_LEN) /* the frame tag: stamp, nonce, MAC */

/** wire_tag_len - bytes of frame tag between the MLfabric header and the body for @flags. */
static inline uint32_t wire_tag_len(uint16_t flags)
{
	return flags & WIRE_F_AUTH ? WIRE_TAG_LEN : 0;
}

/** wire_body_off - offset in bytes of the body from the start of a frame with header @flags. */
static inline uint32_t wire_body_off(uint16_t flags)
{
	return WIRE_HDRS_LEN + wire_tag_len(flags);
}

/**
 * The MLfabric header as a host-order struct (40 bytes on the wire, big-endian).
 * DATA:  offset = byte offset of the payload in the transfer, len = payload bytes,
 *        total = transfer size in bytes, seg = segment size in bytes (every DATA frame of a
 *        transfer but the last carries exactly seg bytes), chan = destination application channel.
 * SACK:  offset = cumulative acknowledgement in segments (all segments below it arrived),
 *        len = bitmap bytes following the header, bit i of the bitmap = segment offset+i arrived.
 * ABORT: len = length of an ASCII reason following the header.
 */
struct wire_hdr {
	uint8_t type;    /* enum wire_type */
	uint16_t flags;  /* enum wire_flags */
	uint16_t chan;   /* application channel at the destination */
	uint32_t len;    /* bytes after the header (payload, bitmap or reason) */
	uint16_t seg;    /* segment size of the transfer in bytes */
	uint64_t id;     /* transfer id, unique per cluster (sender host index in the top 16 bits) */
	uint64_t offset; /* see above */
	uint64_t total;  /* transfer size in bytes */
	uint64_t stamp;  /* WIRE_F_AUTH only: the transfer stamp, the first WIRE_STAMP_LEN bytes of the
			  * frame tag (DATA: the sender's stamp of the transfer; SACK, ABORT: 0) */
};

/** Addresses of one frame (network byte order for ip, raw bytes for mac). */
struct wire_addr {
	uint8_t src_mac[6], dst_mac[6];
	uint32_t src_ip, dst_ip; /* network byte order */
	uint16_t udp_port;       /* host order; used as both source and destination port */
};

/** Why wire_parse() rejected a frame; indexes the dataplane's per-reason drop counters. */
enum wire_err {
	WIRE_OK = 0,
	WIRE_ENOTOURS,   /* not IPv4/UDP to our address and port: someone else's traffic */
	WIRE_ETRUNC,     /* shorter than its headers or than the lengths it announces */
	WIRE_EIPHDR,     /* bad IPv4 header (version, header length, checksum, fragment) */
	WIRE_EMAGIC,     /* UDP to our port without the MLfabric magic */
	WIRE_EVERSION,   /* MLfabric version we do not speak */
	WIRE_ECSUM,      /* MLfabric header checksum mismatch */
	WIRE_ETYPE,      /* unknown frame type */
	WIRE_ELEN,       /* length fields inconsistent (e.g. DATA beyond total, SACK too long) */
	/* not returned by wire_parse: why the dataplane refused a well-formed frame */
	WIRE_EPEER,      /* source IP not a cluster host, or its source MAC not that host's */
	WIRE_EAUTH,      /* frame tag missing, forged or corrupt (frame_auth on, docs/security.md) */
	WIRE_EREPLAY,    /* correctly tagged DATA of a transfer already received, or too old to tell
			  * (docs/security.md "Replays") */
	WIRE_ERR_MAX,
};

/** wire_err_name - short name of a parse result for counters and logs ("trunc", "csum", ...). */
const char *wire_err_name(enum wire_err e);

/**
 * wire_encode - write Ethernet, IPv4, UDP and MLfabric headers into @buf.
 * @buf:  at least wire_body_off(@h->flags) bytes; the @h->len bytes of body must follow at
 *        buf + wire_body_off(@h->flags) (written by the caller before or after this call).
 *        With WIRE_F_AUTH in @h->flags the frame tag follows the header: @h->stamp is written
 *        into its first WIRE_STAMP_LEN bytes; its WIRE_NONCE_LEN bytes of nonce and
 *        WIRE_MAC_LEN bytes of MAC are left for the caller (written after this call: the MAC
 *        covers the encoded header and stamp).
 * Fills the IPv4 header checksum and the MLfabric header checksum; the UDP checksum is 0
 * (allowed for IPv4). Returns the frame length in bytes (wire_body_off(h->flags) + h->len).
 */
size_t wire_encode(uint8_t *buf, const struct wire_addr *a, const struct wire_hdr *h);

/**
 * wire_parse - validate a received frame and decode its headers.
 * @frame/@len:  the whole Ethernet frame (len in bytes, without FCS).
 * @my_ip:       our IPv4 address (network order); frames to other addresses are WIRE_ENOTOURS.
 * @udp_port:    the cluster's MLfabric UDP port (host order).
 * @h:           filled on WIRE_OK.
 * @src_ip:      filled with the sender's IPv4 address (network order) on WIRE_OK.
 * @body:        set to the first byte of the body (h->len bytes are valid); with WIRE_F_AUTH in
 *               h->flags the frame tag is the WIRE_TAG_LEN bytes before it (h->stamp read
 *               from its start, then the nonce, the MAC its last WIRE_MAC_LEN bytes) and the MLfabric header
 *               the WIRE_MLF_LEN bytes before the tag (checked by the caller).
 * Never reads outside [frame, frame + len). Returns WIRE_OK or the reason of rejection.
 */
enum wire_err wire_parse(const uint8_t *frame, size_t len, uint32_t my_ip, uint16_t udp_port,
			 struct wire_hdr *h, uint32_t *src_ip, const uint8_t **body);

/** wire_csum16 - RFC 1071 Internet checksum of @len bytes (the value to store, network order). */
uint16_t wire_csum16(const void *data, size_t len);

/** wire_seg_payload - DATA payload bytes per frame at IP MTU @mtu (bytes). */
static inline uint32_t wire_seg_payload(int mtu)
{
	return (uint32_t)(mtu - WIRE_IP_LEN - WIRE_UDP_LEN - WIRE_MLF_LEN);
}

#endif
