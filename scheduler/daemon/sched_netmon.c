/* sched_netmon.c - link reports' `paths` into per-link capacity estimates (MLfabric §3, §4), and
 * their `port` into the host's port report (sched_netmon.h). */
#include "sched_netmon.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "sched_rec.h"
#include "sched_state.h"

/* The estimator of @h's link, set up from the config on first use. */
static struct capest *est(struct sched *s, int h, int up)
{
	struct sched_netmon_host *n = &s->hosts[h].net;
	struct capest *e = up ? &n->up : &n->down;

	if (!(e->max_gbps > 0))
		capest_init(e, up ? s->cl.hosts[h].up_gbps : s->cl.hosts[h].down_gbps);
	return e;
}

static void changed(struct sched *s, int h, int up, int how, const struct capest_obs *o, double t)
{
	const struct capest *e = up ? &s->hosts[h].net.up : &s->hosts[h].net.down;

	log_info("capacity estimate of %s's %s: %.3f Gbit/s (%s: achieved %.3f of %.3f commanded, "
		 "loss %.4f, rtt %.2f ms, declared %.3f)", s->cl.hosts[h].name, up ? "uplink" : "downlink",
		 e->est_gbps, how < 0 ? "shortfall, backed off" : "on plan, probing up", o->gbps,
		 o->cmd_gbps, o->loss, o->rtt_ms, e->max_gbps);
	if (s->rec_capacity)
		sched_rec_put(s->rec_capacity, json_pack("{s:f, s:s, s:s, s:s, s:f, s:f, s:f, s:f, s:f, s:f}",
			"t", t, "host", s->cl.hosts[h].name, "link", up ? "up" : "down",
			"event", how < 0 ? "backoff" : "probe", "est_gbps", e->est_gbps,
			"declared_gbps", e->max_gbps, "achieved_gbps", o->gbps, "cmd_gbps", o->cmd_gbps,
			"loss", o->loss, "rtt_ms", o->rtt_ms));
}

static double num(json_t *o, const char *k, int *ok)
{
	json_t *v = json_object_get(o, k);
	double x = json_is_number(v) ? json_number_value(v) : NAN;

	if (!isfinite(x) || (x < 0 && strcmp(k, "cmd_gbps")))
		*ok = 0;
	return x;
}

/* Closes @h's downlink window (if any): one observation of the downlink. */
static int close_window(struct sched *s, int h, double t)
{
	struct sched_netmon_host *n = &s->hosts[h].net;
	struct capest_obs o = { .period_s = SCHED_NETMON_WINDOW_S };
	double segs = 0, retx = 0, rtt = 0, rtt_w = 0;
	int unpaced = 0, how;

	if (!n->win_t0)
		return 0;
	for (int i = 0; i < n->n_src; i++) {
		const struct sched_netmon_src *c = &n->src[i];
		if (!(c->active_s > 0))
			continue;
		/* concurrent senders: their rates add; the link was active at least the longest */
		o.gbps += c->bytes * 8 / c->active_s / 1e9;
		o.cmd_gbps += c->cmd_bits / c->active_s;
		if (c->active_s > o.active_s)
			o.active_s = c->active_s;
		segs += c->segs;
		retx += c->retx;
		rtt += c->rtt_ms_w;
		rtt_w += c->rtt_w;
		unpaced |= c->unpaced;
	}
	if (unpaced)
		o.cmd_gbps = -1;
	o.loss = segs > 0 ? retx / segs : 0;
	o.rtt_ms = rtt_w > 0 ? rtt / rtt_w : 0;
	if (o.active_s > o.period_s)
		o.period_s = o.active_s;
	n->win_t0 = 0;
	n->n_src = 0;
	how = capest_feed(est(s, h, 0), CAPEST_DOWN, &o);
	if (how)
		changed(s, h, 0, how, &o, t);
	return how != 0;
}

/* One `tx` entry of `paths`, checked. */
struct path_rec {
	int peer;
	double bytes, act, cmd, segs, retx, rtt;
};

/* Entry @p of @host's report as a path_rec: 1, or 0 when it is not a usable `tx` entry. */
static int path_of(const struct sched *s, int host, json_t *p, struct path_rec *r)
{
	const char *dir = json_string_value(json_object_get(p, "dir"));
	const char *pn = json_string_value(json_object_get(p, "peer"));
	int ok = 1;

	if (!dir || strcmp(dir, "tx") || !pn || (r->peer = cluster_find(&s->cl, pn)) < 0 || r->peer == host)
		return 0; /* rx entries are informative (the senders' tx entries carry the figures) */
	r->bytes = num(p, "bytes", &ok);
	r->act = num(p, "active_s", &ok);
	r->cmd = num(p, "cmd_gbps", &ok);
	r->segs = num(p, "segs", &ok);
	r->retx = num(p, "retx", &ok);
	r->rtt = num(p, "rtt_ms", &ok);
	return ok && r->act > 0;
}

/* Adds path @r of sender @host to its peer's downlink window opened at @t. */
static void add_to_window(struct sched *s, int host, const struct path_rec *r, double t)
{
	struct sched_netmon_host *d = &s->hosts[r->peer].net;
	struct sched_netmon_src *c = NULL;

	if (!d->win_t0)
		d->win_t0 = t;
	for (int k = 0; k < d->n_src && !c; k++)
		if (d->src[k].host == host)
			c = &d->src[k];
	if (!c && d->n_src < SCHED_NETMON_SENDERS) {
		c = &d->src[d->n_src++];
		memset(c, 0, sizeof(*c));
		c->host = host;
	}
	if (!c)
		c = &d->src[SCHED_NETMON_SENDERS - 1]; /* merged with the last */
	c->bytes += r->bytes;
	c->active_s += r->act;
	if (r->cmd < 0)
		c->unpaced = 1;
	else
		c->cmd_bits += r->cmd * r->act;
	c->segs += r->segs;
	c->retx += r->retx;
	if (r->rtt > 0) {
		c->rtt_ms_w += r->rtt * r->act;
		c->rtt_w += r->act;
	}
}

int sched_netmon_on_link(struct sched *s, int host, json_t *m, double t, double up_gbps,
			 double down_gbps)
{
	json_t *paths = json_object_get(m, "paths"), *p;
	struct sched_netmon_host *n = &s->hosts[host].net;
	struct capest_obs o = { 0 };
	struct path_rec r;
	double segs = 0, retx = 0, rtt = 0, rtt_w = 0, bytes = 0, cmd_bits = 0;
	int unpaced = 0, any = 0, chg = 0, how, n_paths, n_short, sender_limited;
	size_t i;

	capest_set_max(est(s, host, 1), up_gbps);
	capest_set_max(est(s, host, 0), down_gbps);
	o.period_s = n->last_t > 0 && t > n->last_t && t - n->last_t < 10 ? t - n->last_t : 0;
	n->last_t = t;
	for (int h = 0; h < s->cl.n_hosts; h++) /* windows that ended before this report */
		if (s->hosts[h].net.win_t0 && t - s->hosts[h].net.win_t0 >= SCHED_NETMON_WINDOW_S)
			chg |= close_window(s, h, t);
	/* this host's uplink: every peer it sent to; concurrent transfers to different peers share
	 * it: their bytes add over the longest active time (sent one after the other, this
	 * understates the rate; the ratio to the commanded rate stays) */
	json_array_foreach(json_is_array(paths) ? paths : NULL, i, p) {
		if (!path_of(s, host, p, &r))
			continue;
		any = 1;
		bytes += r.bytes;
		if (r.act > o.active_s)
			o.active_s = r.act;
		if (r.cmd < 0)
			unpaced = 1;
		else
			cmd_bits += r.cmd * r.act;
		segs += r.segs;
		retx += r.retx;
		if (r.rtt > 0) {
			rtt += r.rtt * r.act;
			rtt_w += r.act;
		}
	}
	if (!any)
		return chg;
	o.gbps = bytes * 8 / o.active_s / 1e9;
	o.cmd_gbps = unpaced ? -1 : cmd_bits / o.active_s;
	o.loss = segs > 0 ? retx / segs : 0;
	o.rtt_ms = rtt_w > 0 ? rtt / rtt_w : 0;
	/* a sender whose paths to two or more peers all fell short explains the shortfall itself
	 * (its own queue grows the RTT of every path): they say nothing about the receivers'
	 * downlinks. A single path, or some on plan: the receivers' downlinks decide */
	n_paths = n_short = 0;
	json_array_foreach(json_is_array(paths) ? paths : NULL, i, p) {
		if (!path_of(s, host, p, &r) || r.cmd == 0)
			continue;
		n_paths++;
		n_short += r.cmd > 0 && r.bytes * 8 / r.act / 1e9 < CAPEST_SHORT * r.cmd;
	}
	sender_limited = n_paths >= 2 && n_short == n_paths;
	json_array_foreach(sender_limited ? NULL : paths, i, p)
		if (path_of(s, host, p, &r))
			add_to_window(s, host, &r, t);
	if (!(o.period_s > 0))
		return chg;
	if (o.active_s > o.period_s)
		o.period_s = o.active_s;
	how = capest_feed(est(s, host, 1), CAPEST_UP, &o);
	if (how)
		changed(s, host, 1, how, &o, t);
	return chg || how;
}

void sched_netmon_port(struct sched_port_report *p, json_t *o)
{
	const char *name = json_string_value(json_object_get(o, "name"));
	json_t *v;

	if (!json_is_object(o))
		return;
	memset(p, 0, sizeof(*p));
	p->known = 1;
	snprintf(p->name, sizeof(p->name), "%s", name ? name : "");
	p->link_up = json_is_true(json_object_get(o, "link_up"));
#define U(f) p->f = json_is_integer(v = json_object_get(o, #f)) && json_integer_value(v) > 0 ? \
		(uint64_t)json_integer_value(v) : 0
	U(speed_mbps); U(imissed); U(ierrors); U(rx_nombuf); U(oerrors); U(link_changes);
#undef U
}

double sched_netmon_gbps(const struct sched *s, int host, int up)
{
	const struct capest *e = up ? &s->hosts[host].net.up : &s->hosts[host].net.down;

	if (e->max_gbps > 0)
		return e->est_gbps;
	return up ? s->cl.hosts[host].up_gbps : s->cl.hosts[host].down_gbps;
}
