/* sched_netmon.h - the scheduler's side of the network monitor: link reports' `paths` into
 * per-link capacity estimates (MLfabric §3, §4), their `port` into the host's port report. */
#ifndef MLF_SCHED_NETMON_H
#define MLF_SCHED_NETMON_H

#include <jansson.h>

#include "sched_capest.h"

struct sched;
struct sched_port_report;

#define SCHED_NETMON_SENDERS 16 /* senders kept apart in one downlink window (more: merged) */

/** One sender's contribution to a downlink's current window (sums of its `paths` entries). */
struct sched_netmon_src {
	int host;             /* sender host index */
	double bytes, active_s, cmd_bits, segs, retx, rtt_ms_w; /* rtt_ms_w: RTT x active_s */
	double rtt_w;         /* sum of active_s of entries with an RTT */
	int unpaced;
};

/** The measured-capacity state of one host (sched_host.net). */
struct sched_netmon_host {
	struct capest up, down;  /* the estimates of its uplink and downlink (sched_capest.h) */
	double last_t;           /* `t` of its previous link report (0: none), s */
	double win_t0;           /* start of the current downlink window (0: empty), s */
	int n_src;               /* senders in it */
	struct sched_netmon_src src[SCHED_NETMON_SENDERS];
};

/** Length of a downlink window: about one report period of every sender, s. */
#define SCHED_NETMON_WINDOW_S 0.1

/**
 * sched_netmon_on_link - host @host reported `link` message @m at @t (scheduler clock, s) with
 * declared capacities @up_gbps / @down_gbps: feed its `paths` (optional; a malformed entry is
 * skipped) to @host's uplink estimate and, unless its paths to two or more peers all fell short
 * (the sender itself was the limit), to the downlink windows of the peers it sent to;
 * close downlink windows older than SCHED_NETMON_WINDOW_S. Every change of an estimate is
 * logged and recorded in capacity.jsonl (--records). Returns 1 when an estimate changed.
 */
int sched_netmon_on_link(struct sched *s, int host, json_t *m, double t, double up_gbps,
			 double down_gbps);

/**
 * sched_netmon_port - the optional "port" object @o of a link report (docs/control.md, field
 * `port`) into @p: nothing when @o is no object (absent); else @p is replaced, its fields
 * absent or of another type (or not positive, for the counters) read as 0 / "".
 */
void sched_netmon_port(struct sched_port_report *p, json_t *o);

/**
 * sched_netmon_gbps - the measured estimate of @host's uplink (@up 1) or downlink, Gbit/s;
 * the config's capacity before any measurement.
 */
double sched_netmon_gbps(const struct sched *s, int host, int up);

#endif
