/* mlf_payload.h - the payload header at byte 0 of every update, aggregate, model and state
 * transfer (protocol layer: written by libmlfabric, read by the aggregator, server and replica;
 * the version is MLF_PROTO_VERSION, proto.h). Not installed: an application's update callback
 * sees the library's copy of it, struct mlf_update_hdr of include/mlfabric/mlfabric.h. */
#ifndef MLF_PAYLOAD_H
#define MLF_PAYLOAD_H

#include <stdint.h>

#define MLF_PAYLOAD_MAGIC_UPDATE 0x55464c4du /* "MLFU": an update or an aggregate of updates */
#define MLF_PAYLOAD_MAGIC_MODEL  0x4d464c4du /* "MLFM": a model snapshot */
#define MLF_PAYLOAD_MAGIC_STATE  0x53464c4du /* "MLFS": a state snapshot: 2n floats, w then the
					      * momentum history h (replica catch-up, docs/replication.md) */
#define MLF_PAYLOAD_MAGIC_PEER   0x50464c4du /* "MLFP": a worker's parameters for a neighbour
					      * (decentralized training, Hop; version = its iteration) */
#define MLF_PAYLOAD_MAGIC_TOKEN  0x54464c4du /* "MLFT": Hop tokens, no floats; version = how many */
#define MLF_PAYLOAD_MAX_PARTS 62             /* worker updates one aggregate can name */

/** One worker update inside an update/aggregate payload (its id and the version it was computed from). */
struct mlf_part {
	uint64_t id;      /* update id (mlf_push's return value, unique in the cluster) */
	int64_t version;  /* v(g): model version the update was computed from */
};

/**
 * Header at byte 0 of every update, aggregate and model transfer; MLF_PAYLOAD_HDR bytes, then
 * the float32 vector. An update has n_parts = 1; an aggregate the n_parts updates summed into it
 * (the server's version advances by n_parts when it is applied, docs/planner.md); a model has
 * n_parts = 0 and version = the server's model version of the snapshot. With a sharded model
 * (§10.2, docs/fabric.md "Sharded servers") each transfer carries one shard: the floats
 * [offset, offset + n_floats) of the whole model.
 */
struct mlf_payload_hdr {
	uint32_t magic;          /* MLF_PAYLOAD_MAGIC_* */
	uint32_t n_parts;        /* 0..MLF_PAYLOAD_MAX_PARTS */
	int64_t version;         /* model: its version; update: version of parts[0] */
	uint64_t n_floats;       /* float32 values after the header */
	uint64_t offset;         /* sharded model (§10.2): index of the first float after the
				  * header in the whole model (a shard's slice); 0 when unsharded */
	struct mlf_part parts[MLF_PAYLOAD_MAX_PARTS];
};
#define MLF_PAYLOAD_HDR 1024u /* bytes reserved for the header (>= sizeof(struct mlf_payload_hdr)) */

/** mlf_payload_bytes - bytes of a transfer carrying @n_floats values (header included). */
static inline uint64_t mlf_payload_bytes(uint64_t n_floats) { return MLF_PAYLOAD_HDR + 4 * n_floats; }

#endif
