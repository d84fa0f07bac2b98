/* netmon.c - the network monitor's measurements (MLfabric §3/§4): per-peer achieved rate, loss and RTT from sampled transfers. */
#include "netmon.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dp.h"
#include "egress.h"
#include "transport.h"

#define SLOTS 4096           /* open-addressed table of the last sample, per transfer */
#define SAMPLE_MAX 2048      /* transfers sampled per step (both directions) */
#define GAP_MAX_NS 100000000 /* a step further than this from the last counts no active time */

struct slot {
	uint64_t key;   /* transfer id, bit 63 set for outgoing */
	uint32_t gen;   /* valid when equal to the table's generation */
	uint64_t done, frames, retx;
};

static struct {
	struct netmon_path *path; /* [peer * 2 + tx] */
	int n_hosts;
	double payload_ratio;     /* payload bytes per L2 frame byte */
	struct slot tab[2][SLOTS];
	uint32_t gen[2];
	int cur;
	uint64_t last_ns, last_real; /* monotonic and CLOCK_REALTIME ns of the last step */
	struct xfer_stat st[SAMPLE_MAX];
} nm;

int netmon_init(void)
{
	uint32_t seg = wire_seg_payload(dp.cluster.mtu) - wire_tag_len(dp_tx_flags());

	nm.n_hosts = dp.cluster.n_hosts;
	nm.path = calloc((size_t)nm.n_hosts * 2, sizeof(*nm.path));
	if (!nm.path)
		return -ENOMEM;
	nm.payload_ratio = (double)seg / egress_frame_len(seg);
	return 0;
}

static uint64_t key_of(const struct xfer_stat *s)
{
	return s->id | (s->outgoing ? 1ULL << 63 : 0);
}

static struct slot *find(int t, uint64_t key, int insert)
{
	uint64_t h = key * 0x9E3779B97F4A7C15ULL;

	for (unsigned i = 0; i < SLOTS; i++) {
		struct slot *sl = &nm.tab[t][((h >> 52) + i) & (SLOTS - 1)];
		if (sl->gen != nm.gen[t])
			return insert ? sl : NULL;
		if (sl->key == key)
			return sl;
	}
	return NULL;
}

void netmon_step(void)
{
	int n, prev = nm.cur, cur = !nm.cur;
	uint64_t now = dp.clk.mono_ns, dt = nm.last_ns ? now - nm.last_ns : 0;
	uint64_t real = dp.clk.real_ns, from = nm.last_real;
	uint64_t span[2 * CLUSTER_HOSTS_MAX]; /* per peer and direction: longest active span in this step, ns */

	if (!nm.path)
		return;
	if (dt > GAP_MAX_NS)
		dt = 0;
	nm.last_ns = now;
	nm.last_real = real;
	n = transport_stats(nm.st, SAMPLE_MAX);
	if (++nm.gen[cur] == 0)
		nm.gen[cur] = 1;
	memset(span, 0, sizeof(span[0]) * (size_t)nm.n_hosts * 2);
	for (int i = 0; i < n; i++) {
		const struct xfer_stat *s = &nm.st[i];
		struct slot *old = find(prev, key_of(s), 0), *sl = find(cur, key_of(s), 1);
		int idx = s->peer * 2 + (s->outgoing ? 1 : 0);
		uint64_t dbytes = old && s->done_bytes > old->done ? s->done_bytes - old->done : 0;
		struct netmon_path *p;

		if (sl) {
			*sl = (struct slot){ key_of(s), nm.gen[cur], s->done_bytes, s->frames, s->retransmits };
		}
		if (s->peer < 0 || s->peer >= nm.n_hosts)
			continue;
		p = &nm.path[idx];
		p->bytes += dbytes;
		if (s->outgoing) {
			/* active from its first frame (or the last step) to its end (or now), while
			 * not paused: exact at both ends, where a transfer of a few steps would
			 * otherwise gain up to a step of idle time each */
			uint64_t lo = s->first_ns > from ? s->first_ns : from;
			uint64_t hi = s->end_ns && s->end_ns < real ? s->end_ns : real;
			uint64_t a = dt && s->first_ns && hi > lo ? hi - lo : 0;
			if (s->state == XFER_ACTIVE && s->gbps_cmd == 0 && !dbytes)
				a = 0; /* paused all along (no acknowledgement either) */
			if (old) {
				p->segs += s->frames > old->frames ? s->frames - old->frames : 0;
				p->retx += s->retransmits > old->retx ? s->retransmits - old->retx : 0;
			}
			if (!a)
				continue;
			if (s->gbps_cmd < 0)
				p->unpaced = 1;
			else
				p->cmd_bits += s->gbps_cmd * nm.payload_ratio * (double)a / 1e9;
			if (s->srtt_us > 0) {
				p->rtt_us_sum += s->srtt_us;
				p->rtt_n++;
			}
			if (a > span[idx])
				span[idx] = a;
		} else if (dbytes && dt > span[idx]) {
			span[idx] = dt; /* received in this step: the step counts */
		}
	}
	for (int i = 0; i < nm.n_hosts * 2; i++)
		nm.path[i].active_ns += span[i];
	nm.cur = cur;
}

int netmon_take(int peer, int tx, struct netmon_path *out)
{
	if (!nm.path || peer < 0 || peer >= nm.n_hosts) {
		memset(out, 0, sizeof(*out));
		return -1;
	}
	*out = nm.path[peer * 2 + (tx ? 1 : 0)];
	memset(&nm.path[peer * 2 + (tx ? 1 : 0)], 0, sizeof(*out));
	return 0;
}
