/* xfer.h - the transfer records shared by the transport's modules (sender, receiver, transport). */
#ifndef MLF_XFER_H
#define MLF_XFER_H

#include <stddef.h>
#include <stdint.h>

#include "appmsg.h"
#include "lossresp.h"
#include "pacer.h"
#include "sack.h"
#include "tbucket.h"

/** Application channels 0..XFER_MAX_CHANS-1; SEND and DATA naming another are refused. */
#define XFER_MAX_CHANS 64

/** Largest transfer in bytes, refused above by both ends. */
#define XFER_MAX_BYTES (64ULL << 30)

struct portio_extmem;

/** Life of a transfer. */
enum xfer_state { XFER_WAITING = 0, XFER_ACTIVE, XFER_DONE, XFER_FAILED };

/** An outgoing transfer (sender side). */
struct xfer_tx {
	uint64_t id;
	uint64_t stamp;       /* frame_auth: the stamp its tagged DATA frames carry, given at the
	                       * first frame (0: none yet; docs/security.md "Replays") */
	int peer;             /* destination host index */
	uint16_t chan;
	uint64_t owner;       /* opaque tag of the requester (transport_submit), never interpreted
	                       * here: the layer above finds its app connection with it */
	void *map;            /* mapping of the app's buffer (read-only) */
	size_t map_len;
	struct portio_extmem *ext; /* the mapping, registered for zero-copy tx (NULL: frames copy) */
	const uint8_t *data;  /* first byte to send */
	uint64_t bytes;
	uint64_t populated;   /* bytes of the mapping prefaulted so far */
	uint64_t start_tsc, start_ns; /* commanded start: TSC tick and CLOCK_REALTIME ns */
	uint64_t first_tx_ns, end_ns;
	uint64_t last_tx_mono;  /* TSC-derived ns of the last DATA frame (keepalive while paused) */
	uint64_t timeout_ns;
	uint64_t frames;
	enum xfer_state state;
	struct pacer pacer;
	struct tbucket tail;  /* repairs after a final rate step of 0: holes are resent at the last
	                       * non-zero rate of the schedule x the pacer's loss scale */
	double tail_gbps;     /* that last non-zero rate, L2 Gbit/s (0 when it has none) */
	struct sack_tx sack;
	uint64_t recover_seg; /* loss response: segments from here on were first sent after the
	                       * last rate cut; the loss of one of them starts a new episode
	                       * (one cut per episode, as TCP NewReno's recovery point) */
	uint64_t cut_ns;      /* monotonic ns of the last rate cut: a resent copy sent at or
	                       * after it (to the us) and lost again also starts a new episode
	                       * (tail repairs resend only old segments) */
	struct lossresp loss; /* tells random loss (no cut) from congestion (docs/dataplane.md
	                       * "Loss response") */
	char reason[APPMSG_REASON_MAX];
};

/** An incoming transfer (receiver side), reassembled into a memfd. */
struct xfer_rx {
	uint64_t id;
	int peer;              /* source host index */
	uint16_t chan;
	int fd;                /* memfd holding the bytes (written with pwritev, never mapped here);
				* handed over by transport_ops.rx_done on completion */
	uint64_t bytes;
	uint64_t first_ns, last_data_ns, last_sack_ns, end_ns, linger_until_ns;
	uint64_t frames;
	enum xfer_state state;
	int announced;         /* the scheduler announced it (docs/security.md "Announced transfers") */
	int held;              /* not announced, on a channel whose listener requires it: no SACK,
				* no completion until an announcement comes (receiver_announce) */
	uint64_t hold_since_ns; /* when it started to be held (monotonic ns) */
	int held_sack;         /* released from a hold: SACKs carry WIRE_F_HELD (no RTT sample at
				* the sender) until a segment's first copy arrives after the release */
	struct sack_rx sack;
};

/** Per-transfer figures for the monitor. */
struct xfer_stat {
	uint64_t id;
	int outgoing, peer;
	enum xfer_state state;
	uint64_t bytes, done_bytes, frames, retransmits; /* bytes: size; done_bytes: acked/received */
	double gbps_cmd;       /* commanded rate now, Gbit/s of L2 frames; -1 unpaced, 0 paused */
	double srtt_us;        /* outgoing: smoothed round-trip time, us (0: no sample yet) */
	uint64_t first_ns, end_ns; /* outgoing: CLOCK_REALTIME ns of the first frame sent and of the
				    * end (0: not yet); the monitor's active time (netmon.c) */
};

#endif
