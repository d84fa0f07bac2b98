/* fabric_cmd.h - the library's side of the control protocol: scheduler commands parsed into
 * structs, and validation of update/aggregate/model payload headers (docs/control.md). */
#ifndef MLF_FABRIC_CMD_H
#define MLF_FABRIC_CMD_H

#include <stddef.h>
#include <stdint.h>

#include "appmsg.h"
#include "mlf_payload.h"
#include "mlfabric.h"

/** Messages an application receives from the scheduler or its dataplane. */
enum fabric_cmd_kind {
	FABRIC_CMD_REGISTERED = 1, /* registration accepted */
	FABRIC_CMD_ERROR,          /* a message was refused (reason; no_scheduler from the dataplane) */
	FABRIC_CMD_SCHEDULER_LOST, /* the dataplane lost its scheduler connection */
	FABRIC_CMD_SCHEDULER_BACK, /* ... and was welcomed by a (restarted) scheduler */
	FABRIC_CMD_SEND,           /* send an update or a model snapshot */
	FABRIC_CMD_DROP,           /* an update will never be sent (delay bound, dead peer) */
	FABRIC_CMD_AGGREGATE,      /* aggregator: sum inputs, send the aggregate */
	FABRIC_CMD_ORDER,          /* server/replica: append to the commit order of chan */
	FABRIC_CMD_SKIP,           /* server/replica: these transfers will never arrive */
	FABRIC_CMD_RELEASE,        /* worker: forget held update @id (its last copy is not needed) */
	FABRIC_CMD_REPLICA,        /* server: chain replica is host @dst ("" = none) */
	FABRIC_CMD_PROMOTE,        /* replica: become the server (@version: last reported commit) */
	FABRIC_CMD_SERVER_MOVED,   /* worker: the server now runs on host @dst */
	FABRIC_CMD_SNAPSHOT,       /* server/replica: write the model for verification (tag @id) */
	FABRIC_CMD_SYNC_STEP,      /* server/replica (MLfabric-S): the iteration starting at @version
				    * has @id contributions, fewer than n_workers (sync timeout) */
	FABRIC_CMD_FORWARD,        /* worker (distributor, §10.3): forward model copy @xfer_in */
	FABRIC_CMD_STATE,          /* worker: ESync's State Server answers query @id: @keep = READY */
	FABRIC_CMD_COMMIT_RATE,    /* worker: ADSP's commit rate: @version = checkpoint, @id = ΔC_i
				    * commits by the next one, @start = the check period Γ, s */
};

/** One parsed command; fields a kind does not use are zero. Free with fabric_cmd_free. */
struct fabric_cmd {
	enum fabric_cmd_kind kind;
	char app[64];
	int what_model;          /* SEND: 1 = a model snapshot answering pull @id, 0 = update @id */
	int what_state;          /* SEND: 1 = a state snapshot (w then h) for the replica (catch-up) */
	int keep;                /* SEND: 1 = send a copy, keep holding the update (more copies follow) */
	int chain;               /* REPLICA: 1 = replication "chain" */
	int64_t version;         /* PROMOTE: the replica's last reported commit version; SYNC_STEP:
				  * the iteration's start version */
	uint64_t id;             /* SEND/DROP/RELEASE: update or pull id; AGGREGATE: the aggregate's
				  * xfer; SNAPSHOT: the tag (batch number); SYNC_STEP: parts */
	uint64_t xfer;           /* SEND: transfer id to use */
	char dst[APPMSG_NAME_MAX]; /* SEND/AGGREGATE: destination host; REPLICA: the chain replica's
				    * host ("" = none); SERVER_MOVED: the server's new host */
	uint16_t chan;           /* SEND/AGGREGATE/ORDER/SKIP */
	double start;            /* SEND/AGGREGATE: CLOCK_REALTIME start, seconds */
	struct appmsg_step steps[APPMSG_MAX_STEPS]; /* offsets in ns from start, Gbit/s */
	int n_steps;             /* 0 = unpaced */
	uint64_t *ids;           /* AGGREGATE: input update ids; ORDER/SKIP: transfer ids */
	double *weights;         /* AGGREGATE: n_ids weights, NULL = 1 each */
	int n_ids;
	char reason[APPMSG_REASON_MAX]; /* ERROR, DROP */
	int no_scheduler;        /* ERROR: the dataplane has no scheduler connection (retry later) */
	/* model distribution (§10.3) */
	uint64_t xfer_in;        /* FORWARD: the incoming model copy (its transfer id) to forward;
				  * @xfer: the forward's transfer id, @id: the pull it answers */
	int n_fwd;               /* FORWARD: forwards of @xfer_in in all; SEND model: forwards
				  * its destination makes of it (0 = none) */
	int64_t batch;           /* SEND model: the batch whose copies share one snapshot (0 = none) */
	/* sharded servers (§10.2) */
	int64_t shard_off;       /* SEND update: send floats [shard_off, shard_off + shard_n) of the
				  * held update as one shard (-1 = the whole update); AGGREGATE: sum
				  * the inputs' shards starting at this float (-1 = whole updates) */
	uint64_t shard_n;
	int64_t at_version;      /* SEND model: take the snapshot when the shard server's version is
				  * exactly this, an unsharded server's at least this (fresh pulls,
				  * docs/scheduler.md); -1 = now */
	int64_t label;           /* SEND model: version written into the snapshot's header, the
				  * one every shard of the pull carries (-1 = the server's own) */
};

/**
 * fabric_cmd_parse - parse the control JSON @text into @c.
 * Returns 0, or -EBADMSG with @err naming the problem: not JSON, no "type", unknown type, or
 * "command 'send': missing or bad field 'xfer'" for a missing / mistyped / out-of-range field
 * (steps: at most APPMSG_MAX_STEPS pairs [offset_s in [0, 1e6], gbps in [0, 1e6]]; chan < 64; weights the
 * length of inputs). @c needs fabric_cmd_free only after a 0 return.
 */
int fabric_cmd_parse(const char *text, struct fabric_cmd *c, char *err, size_t errlen);

/** fabric_cmd_free - release the id and weight arrays of @c. */
void fabric_cmd_free(struct fabric_cmd *c);

/**
 * fabric_cmd_payload_check - validate the struct mlf_payload_hdr at the start of a received
 * transfer of @bytes bytes against the expected @magic (MLF_PAYLOAD_MAGIC_UPDATE: 1..62 parts,
 * MLF_PAYLOAD_MAGIC_MODEL: 0 parts, MLF_PAYLOAD_MAGIC_STATE: 0 parts and an even, non-zero
 * n_floats: w then h, docs/replication.md). Returns 0, or -EBADMSG with @err saying what was
 * wrong (truncated below the 1024-byte header, bad magic, n_parts out of range, size not
 * MLF_PAYLOAD_HDR + 4 x n_floats, a state of odd size).
 */
int fabric_cmd_payload_check(const void *data, uint64_t bytes, uint32_t magic, char *err, size_t errlen);

#endif
