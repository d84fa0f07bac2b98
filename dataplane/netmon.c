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
	uint64_t last_ns;
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
	char seen[2 * 1024]; /* per peer and direction: counted active in this step */

	if (!nm.path)
		return;
	if (dt > GAP_MAX_NS)
		dt = 0;
	nm.last_ns = now;
	n = transport_stats(nm.st, SAMPLE_MAX);
	if (++nm.gen[cur] == 0)
		nm.gen[cur] = 1;
	memset(seen, 0, sizeof(seen));
	for (int i = 0; i < n; i++) {
		const struct xfer_stat *s = &nm.st[i];
		struct slot *old = find(prev, key_of(s), 0), *sl = find(cur, key_of(s), 1);
		int idx = s->peer * 2 + (s->outgoing ? 1 : 0);
		uint64_t dbytes = old && s->done_bytes > old->done ? s->done_bytes - old->done : 0;
		struct netmon_path *p;

		if (sl) {
			*sl = (struct slot){ key_of(s), nm.gen[cur], s->done_bytes, s->frames, s->retransmits };
		}
		if (s->peer < 0 || s->peer >= nm.n_hosts || idx >= (int)sizeof(seen))
			continue;
		p = &nm.path[idx];
		p->bytes += dbytes;
		if (s->outgoing) {
			int active = s->state == XFER_ACTIVE && s->gbps_cmd != 0 && s->done_bytes < s->bytes;
			if (old) {
				p->segs += s->frames > old->frames ? s->frames - old->frames : 0;
				p->retx += s->retransmits > old->retx ? s->retransmits - old->retx : 0;
			}
			if (!active && !dbytes)
				continue;
			if (s->gbps_cmd < 0)
				p->unpaced = 1;
			else
				p->cmd_bits += s->gbps_cmd * nm.payload_ratio * (double)dt / 1e9;
			if (s->srtt_us > 0) {
				p->rtt_us_sum += s->srtt_us;
				p->rtt_n++;
			}
		} else if (!dbytes) {
			continue;
		}
		if (!seen[idx]) {
			seen[idx] = 1;
			p->active_ns += dt;
		}
	}
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
