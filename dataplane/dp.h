/* dp.h - private definitions of mlf-dataplane shared by its modules: config, clock, counters. */
#ifndef MLF_DP_H
#define MLF_DP_H

#include <stdint.h>

#include "auth.h"
#include "cluster.h"
#include "log.h"
#include "wire.h"

/* Per-transfer INFO lines (opened, complete, held, handed over locally): at most this many per
 * second on average, bursts of DP_XFER_LOG_BURST (docs/dataplane.md "Log"). */
#define DP_XFER_LOG_RATE 50
#define DP_XFER_LOG_BURST 500

/* Unacknowledged DATA segments a sender keeps in flight per destination host (sender.c): the rx
 * ring of a port holds at least twice this (portio.c), two senders' windows. */
#define DP_WINDOW_SEGS 2048

/** Port and engine counters (monotonic; read by the monitor). */
struct dp_counters {
	uint64_t rx_frames, rx_bytes, tx_frames, tx_bytes;
	uint64_t rx_reject[WIRE_ERR_MAX];  /* frames refused by wire_parse (and for a foreign source
					    * or a bad tag: WIRE_EPEER, WIRE_EAUTH), per reason */
	uint64_t rx_multiseg;              /* frames in chained mbufs (scatter rx), copied into one
					    * buffer for the engine */
	uint64_t rx_oversize;              /* frames longer than the MTU allows (dropped) */
	uint64_t rx_cksum_bad;             /* frames the port flagged with a bad IPv4 or UDP
					    * checksum (rx checksum offload; dropped) */
	uint64_t rx_data, rx_data_dup, rx_sack, rx_abort, rx_stray; /* stray: unknown transfer */
	uint64_t tx_data, tx_retx, tx_sack, tx_abort, tx_nobuf;
	uint64_t tx_rate_cuts; /* paced transfers slowed after a loss (pacer_on_loss) */
	uint64_t fault_rx_drop, fault_rx_dup, fault_rx_reorder, fault_rx_delay;
	uint64_t fault_tx_drop, fault_tx_dup, fault_tx_reorder, fault_tx_delay, fault_cut;
	uint64_t xfer_tx_ok, xfer_tx_failed, xfer_rx_ok, xfer_rx_failed;
	uint64_t rx_held, rx_unannounced; /* incoming transfers held for an announcement; refused
					   * because none came (docs/security.md) */
	uint64_t tx_sack_held, rx_sack_held; /* SACKs sent / received with WIRE_F_HELD (after a
					      * hold: no round-trip sample at the sender) */
};

/** The clock sample of one loop iteration. */
struct dp_clock {
	uint64_t tsc;     /* rte_rdtsc() */
	uint64_t mono_ns; /* tsc converted to ns (timeouts, SACK timers) */
	uint64_t real_ns; /* CLOCK_REALTIME ns (commanded start times, reports) */
};

/** Dataplane-wide settings and state. */
struct dp {
	struct cluster cluster;
	int me;                    /* index of this host in cluster.hosts */
	uint8_t my_mac[6];         /* the port's MAC address */
	double hz;                 /* TSC ticks per second */
	uint64_t timeout_ns;       /* default peer-silence timeout */
	int busy_poll;
	struct auth_frame *frame_auth; /* cluster frame_auth: tag every frame, drop untagged or forged
					* ones (docs/security.md "Frames"); NULL = off */
	struct dp_counters cnt;
	struct dp_clock clk;
};

/** The one dataplane of this process (dp.c; set up by main.c). */
extern struct dp dp;

/** The token bucket of the per-transfer INFO lines (dp.c). */
extern struct log_bucket dp_xfer_log;

/** dp_xfer_info - a per-transfer INFO line, under dp_xfer_log's rate. */
#define dp_xfer_info(...) log_printf_bucket(&dp_xfer_log, "per-transfer INFO", LOG_INFO, __VA_ARGS__)

/** dp_host_name - the name of host @i of the cluster (for logs and reasons). */
static inline const char *dp_host_name(int i)
{
	return dp.cluster.hosts[i].name;
}

/**
 * dp_tx_flags - header flags every frame this dataplane sends carries: WIRE_F_AUTH with frame
 * tags, and WIRE_F_CHACHA when their MAC is ChaCha20-Poly1305 ("frame_mac"); 0 without tags.
 */
static inline uint16_t dp_tx_flags(void)
{
	if (!dp.frame_auth)
		return 0;
	return WIRE_F_AUTH | (auth_frame_alg(dp.frame_auth) == AUTH_FRAME_CHACHA20POLY1305 ? WIRE_F_CHACHA : 0);
}

#endif
