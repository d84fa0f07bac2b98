/* appmsg.h - messages between applications (libmlfabric) and the local dataplane over a Unix socket. */
#ifndef MLF_APPMSG_H
#define MLF_APPMSG_H

#include <stddef.h>
#include <stdint.h>

/** Default socket of the dataplane of host H in cluster C: /run/mlfabric/C-H.sock. */
#define MLFABRIC_SOCK_DIR "/run/mlfabric"

#define APPMSG_MAX_STEPS 256 /* rate steps per transfer (a plan's stepped residual bandwidth) */
#define APPMSG_MAX_IDS 64    /* transfer ids per ORDER message (send several to append more) */
#define APPMSG_NAME_MAX 32
#define APPMSG_REASON_MAX 160
#define APPMSG_CTL_MAX 16384 /* bytes of control JSON text per CTL message (docs/control.md) */
#define APPMSG_ORDER_REPLACE 1u /* ORDER flag: replace the channel's order instead of appending */
#define APPMSG_ORDER_SKIP 2u    /* ORDER flag: these ids will never arrive; stop waiting for them */
#define APPMSG_LISTEN_ANNOUNCED 4u /* LISTEN flag: this channel takes only transfers the scheduler
				    * announced (docs/security.md "Announced transfers") */

/** Message types; the direction is in brackets. */
enum appmsg_type {
	APPMSG_SEND = 1,   /* [app -> dp] start a transfer; carries the buffer's memfd (SCM_RIGHTS) */
	APPMSG_ACCEPTED,   /* [dp -> app] reply to SEND: status 0 and id, or status -errno and reason */
	APPMSG_TX_DONE,    /* [dp -> app] a transfer this app sent completed (status 0) or failed */
	APPMSG_LISTEN,     /* [app -> dp] deliver incoming transfers of channel `chan` to this app */
	APPMSG_RX_DONE,    /* [dp -> app] an incoming transfer; status 0 carries its memfd */
	APPMSG_ORDER,      /* [app -> dp] append ids to the commit order of channel `chan` */
	APPMSG_ERROR,      /* [dp -> app] a request was refused (reason says why) */
	APPMSG_CTL,        /* [both] one control JSON object (n bytes of u.text, no NUL on the socket) */
};

/** One step of a rate schedule: from @at_ns after the start, @gbps Gbit/s (0 = pause). */
struct appmsg_step {
	uint64_t at_ns;
	double gbps;
};

/**
 * The one message struct of the protocol (one SOCK_SEQPACKET datagram). On the socket only the
 * used part of `u` follows the fixed fields (SEND: n steps, ORDER: n ids, else nothing), see
 * appmsg_len(). Fields unused by a type are zero.
 */
struct appmsg {
	uint32_t type;       /* enum appmsg_type */
	int32_t status;      /* 0 or -errno (ACCEPTED, TX_DONE, RX_DONE, ERROR) */
	uint64_t id;         /* transfer id (SEND: 0 = let the dataplane choose) */
	uint64_t bytes;      /* SEND: bytes to send; DONE: bytes of the transfer */
	uint64_t offset;     /* SEND: offset of the first byte in the buffer */
	uint64_t start_ns;   /* SEND: CLOCK_REALTIME start in ns (0 = now) */
	uint64_t timeout_ns; /* SEND: peer silence that fails the transfer (0 = dataplane default) */
	uint64_t first_tx_ns;  /* TX_DONE: CLOCK_REALTIME when the first data frame left */
	uint64_t end_ns;       /* DONE: CLOCK_REALTIME of completion or failure */
	int64_t start_error_ns; /* TX_DONE: first_tx_ns - commanded start */
	uint64_t retransmits;  /* TX_DONE: segments sent again */
	uint64_t frames;       /* TX_DONE: data frames sent, RX_DONE: data frames received */
	uint16_t chan;       /* application channel at the destination (SEND, LISTEN, ORDER, RX_DONE) */
	uint16_t n;          /* SEND: rate steps (0 = unpaced); ORDER: ids; CTL: text bytes (1..APPMSG_CTL_MAX) */
	uint32_t flags;      /* ORDER: APPMSG_ORDER_REPLACE or APPMSG_ORDER_SKIP; LISTEN: APPMSG_LISTEN_ANNOUNCED */
	char peer[APPMSG_NAME_MAX];     /* SEND: destination host; DONE: the other end */
	char reason[APPMSG_REASON_MAX]; /* failures: what went wrong, naming the peer */
	union {
		struct appmsg_step steps[APPMSG_MAX_STEPS];
		uint64_t ids[APPMSG_MAX_IDS];
		char text[APPMSG_CTL_MAX + 8]; /* CTL: JSON text, NUL-terminated after appmsg_recv */
	} u;
};

/**
 * appmsg_len - bytes of @m on the socket: the fixed fields plus the n used steps (SEND), ids
 * (ORDER) or text bytes (CTL); an out-of-range n sends no array (the receiver refuses such a
 * SEND or ORDER; appmsg_recv refuses such a CTL with -EPROTO).
 */
size_t appmsg_len(const struct appmsg *m);

/**
 * appmsg_ctl - make @m a CTL message carrying the control JSON @text (docs/control.md).
 * Returns 0, or -EMSGSIZE when @text is empty or longer than APPMSG_CTL_MAX bytes.
 */
int appmsg_ctl(struct appmsg *m, const char *text);

/**
 * appmsg_send - send @m on the SOCK_SEQPACKET socket @sock, with file descriptor @fd attached
 * (SCM_RIGHTS) when @fd >= 0. Blocks only as the socket does.
 * Returns 0, -EAGAIN (non-blocking socket full), -EPIPE (peer gone), or another -errno.
 */
int appmsg_send(int sock, const struct appmsg *m, int fd);

/**
 * appmsg_recv - receive one message into @m; an attached descriptor goes to *@fd (else -1).
 * Returns 1 for a message, 0 when the peer closed the connection, -EAGAIN when nothing is
 * waiting on a non-blocking socket, -EPROTO for a message whose size does not match its type
 * and n (appmsg_len) or a CTL with n outside 1..APPMSG_CTL_MAX, other -errno. The unused part
 * of the array is zeroed (so a CTL's text is NUL-terminated).
 */
int appmsg_recv(int sock, struct appmsg *m, int *fd);

#endif
