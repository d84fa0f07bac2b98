/* monitor.c - telemetry: counters and throughput snapshots, run-time fault, shaper and capacity commands. */
#include "monitor.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_telemetry.h>

#include "dp.h"
#include "log.h"
#include "netmon.h"
#include "portio.h"
#include "transport.h"

#define MAX_SHOWN 32 /* transfers listed by /mlfabric/stats */

static struct {
	pthread_mutex_t lock;  /* guards everything below (telemetry thread vs main loop) */
	struct dp_counters cnt;
	struct xfer_stat xf[MAX_SHOWN];
	int nxf;
	double rx_gbps, tx_gbps; /* measured over the last snapshot interval */
	struct fault_spec faults;
	double shaper_gbps;
	double up_gbps, down_gbps; /* declared link capacities reported to the scheduler */
	int faults_pending, shaper_pending;
	struct fault_spec new_faults;
	double new_shaper;
	struct portio_port_stats port; /* port counters and link state (portio_poll_port) */
	/* main-loop private */
	uint64_t last_ns, last_rx, last_tx;
} mon = { .lock = PTHREAD_MUTEX_INITIALIZER };

static const char *const state_names[] = { "waiting", "active", "done", "failed" };

/* The port's counters, link state and set-up into @d (caller holds mon.lock). */
static void add_port_stats(struct rte_tel_data *d)
{
	const struct portio_port_stats *p = &mon.port;

	rte_tel_data_add_dict_string(d, "port", portio_name());
#define P(k, v) rte_tel_data_add_dict_u64(d, "port_" k, (uint64_t)(v))
	P("imissed", p->imissed); P("ierrors", p->ierrors); P("rx_nombuf", p->rx_nombuf);
	P("oerrors", p->oerrors); P("link_up", p->link_up); P("speed_mbps", p->speed_mbps);
	P("full_duplex", p->full_duplex); P("link_changes", p->link_changes);
	P("rx_desc", p->nb_rxd); P("tx_desc", p->nb_txd); P("rx_cksum_offload", p->rx_cksum);
	P("tx_cksum_offload", p->tx_cksum); P("scatter", p->scatter); P("promisc", p->promisc);
	P("polls", p->polls);
#undef P
}

void monitor_port(struct portio_port_stats *out)
{
	pthread_mutex_lock(&mon.lock);
	*out = mon.port;
	pthread_mutex_unlock(&mon.lock);
}

static int cmd_stats(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct rte_tel_data *xs;

	rte_tel_data_start_dict(d);
	pthread_mutex_lock(&mon.lock);
	rte_tel_data_add_dict_string(d, "host", dp.cluster.hosts[dp.me].name);
	rte_tel_data_add_dict_u64(d, "rx_frames", mon.cnt.rx_frames);
	rte_tel_data_add_dict_u64(d, "rx_bytes", mon.cnt.rx_bytes);
	rte_tel_data_add_dict_u64(d, "tx_frames", mon.cnt.tx_frames);
	rte_tel_data_add_dict_u64(d, "tx_bytes", mon.cnt.tx_bytes);
	rte_tel_data_add_dict_u64(d, "rx_mbit_s", (uint64_t)(mon.rx_gbps * 1000));
	rte_tel_data_add_dict_u64(d, "tx_mbit_s", (uint64_t)(mon.tx_gbps * 1000));
	for (int e = 1; e < WIRE_ERR_MAX; e++) {
		char k[48];
		snprintf(k, sizeof(k), "rx_reject_%s", wire_err_name((enum wire_err)e));
		rte_tel_data_add_dict_u64(d, k, mon.cnt.rx_reject[e]);
	}
#define C(f) rte_tel_data_add_dict_u64(d, #f, mon.cnt.f)
	C(rx_multiseg); C(rx_oversize); C(rx_cksum_bad); C(rx_data); C(rx_data_dup); C(rx_sack); C(rx_abort); C(rx_stray);
	C(tx_data); C(tx_retx); C(tx_sack); C(tx_abort); C(tx_nobuf); C(tx_rate_cuts);
	C(fault_rx_drop); C(fault_rx_dup); C(fault_rx_reorder); C(fault_rx_delay);
	C(fault_tx_drop); C(fault_tx_dup); C(fault_tx_reorder); C(fault_tx_delay); C(fault_cut);
	C(xfer_tx_ok); C(xfer_tx_failed); C(xfer_rx_ok); C(xfer_rx_failed);
	C(rx_held); C(rx_unannounced); C(tx_sack_held); C(rx_sack_held);
#undef C
	add_port_stats(d);
	xs = rte_tel_data_alloc();
	if (xs) {
		rte_tel_data_start_array(xs, RTE_TEL_STRING_VAL);
		for (int i = 0; i < mon.nxf; i++) {
			const struct xfer_stat *s = &mon.xf[i];
			char line[RTE_TEL_MAX_STRING_LEN];
			snprintf(line, sizeof(line), "%llx %s %s %s %llu/%llu bytes frames=%llu retx=%llu rate=%.3f",
				 (unsigned long long)s->id, s->outgoing ? "to" : "from",
				 dp.cluster.hosts[s->peer].name, state_names[s->state],
				 (unsigned long long)s->done_bytes, (unsigned long long)s->bytes,
				 (unsigned long long)s->frames, (unsigned long long)s->retransmits, s->gbps_cmd);
			rte_tel_data_add_array_string(xs, line);
		}
		rte_tel_data_add_dict_container(d, "transfers", xs, 0);
	}
	pthread_mutex_unlock(&mon.lock);
	return 0;
}

static int cmd_faults(const char *cmd, const char *params, struct rte_tel_data *d)
{
	char buf[256], err[256];
	struct fault_spec f;

	rte_tel_data_start_dict(d);
	if (params && *params) {
		if (fault_parse(params, &f, err, sizeof(err)) < 0) {
			rte_tel_data_add_dict_string(d, "error", err);
			return 0;
		}
		if (f.cut[0] && cluster_find(&dp.cluster, f.cut) < 0) {
			snprintf(err, sizeof(err), "fault spec: cut: unknown host '%s'", f.cut);
			rte_tel_data_add_dict_string(d, "error", err);
			return 0;
		}
		pthread_mutex_lock(&mon.lock);
		mon.new_faults = f;
		mon.faults_pending = 1;
		pthread_mutex_unlock(&mon.lock);
		fault_format(&f, buf, sizeof(buf));
		rte_tel_data_add_dict_string(d, "faults", buf);
		return 0;
	}
	pthread_mutex_lock(&mon.lock);
	fault_format(&mon.faults, buf, sizeof(buf));
	pthread_mutex_unlock(&mon.lock);
	rte_tel_data_add_dict_string(d, "faults", buf);
	return 0;
}

static int cmd_shaper(const char *cmd, const char *params, struct rte_tel_data *d)
{
	char *end;
	double g;

	rte_tel_data_start_dict(d);
	if (params && *params) {
		g = strtod(params, &end);
		if (end == params || *end || !(g >= 0 && g <= 1000)) {
			rte_tel_data_add_dict_string(d, "error", "shaper: rate must be Gbit/s in [0, 1000] (0 = off)");
			return 0;
		}
		pthread_mutex_lock(&mon.lock);
		mon.new_shaper = g;
		mon.shaper_pending = 1;
		pthread_mutex_unlock(&mon.lock);
	} else {
		pthread_mutex_lock(&mon.lock);
		g = mon.shaper_gbps;
		pthread_mutex_unlock(&mon.lock);
	}
	rte_tel_data_add_dict_u64(d, "shaper_mbit_s", (uint64_t)(g * 1000 + 0.5));
	return 0;
}

static int cmd_capacity(const char *cmd, const char *params, struct rte_tel_data *d)
{
	double up, down;
	char *end;

	rte_tel_data_start_dict(d);
	if (params && *params) {
		up = strtod(params, &end);
		if (end == params || *end != ',' || !(up >= 0 && up <= 1000)) {
			rte_tel_data_add_dict_string(d, "error", "capacity: expected UP_GBPS,DOWN_GBPS in [0, 1000]");
			return 0;
		}
		down = strtod(end + 1, &end);
		if (*end || !(down >= 0 && down <= 1000)) {
			rte_tel_data_add_dict_string(d, "error", "capacity: expected UP_GBPS,DOWN_GBPS in [0, 1000]");
			return 0;
		}
		pthread_mutex_lock(&mon.lock);
		mon.up_gbps = up;
		mon.down_gbps = down;
		pthread_mutex_unlock(&mon.lock);
		log_info("declared capacity now up %.3f down %.3f Gbit/s", up, down);
	}
	pthread_mutex_lock(&mon.lock);
	up = mon.up_gbps;
	down = mon.down_gbps;
	pthread_mutex_unlock(&mon.lock);
	rte_tel_data_add_dict_u64(d, "up_mbit_s", (uint64_t)(up * 1000 + 0.5));
	rte_tel_data_add_dict_u64(d, "down_mbit_s", (uint64_t)(down * 1000 + 0.5));
	return 0;
}

void monitor_capacity(double *up_gbps, double *down_gbps)
{
	pthread_mutex_lock(&mon.lock);
	*up_gbps = mon.up_gbps;
	*down_gbps = mon.down_gbps;
	pthread_mutex_unlock(&mon.lock);
}

int monitor_apply_faults(const struct fault_spec *f, char *err, size_t errlen)
{
	int cut = -1;
	char buf[256];

	if (f->cut[0] && (cut = cluster_find(&dp.cluster, f->cut)) < 0) {
		snprintf(err, errlen, "fault spec: cut: unknown host '%s'", f->cut);
		return -EINVAL;
	}
	portio_set_faults(f, cut >= 0 ? dp.cluster.hosts[cut].ip : 0);
	pthread_mutex_lock(&mon.lock);
	mon.faults = *f;
	pthread_mutex_unlock(&mon.lock);
	fault_format(f, buf, sizeof(buf));
	log_info("faults: %s", buf);
	return 0;
}

int monitor_init(const struct fault_spec *faults, double shaper_gbps)
{
	int rc;
	char err[256];

	mon.shaper_gbps = shaper_gbps;
	mon.up_gbps = dp.cluster.hosts[dp.me].up_gbps;
	mon.down_gbps = dp.cluster.hosts[dp.me].down_gbps;
	if ((rc = netmon_init()) < 0) {
		log_err("network monitor: out of memory");
		return rc;
	}
	if ((rc = monitor_apply_faults(faults, err, sizeof(err))) < 0) {
		log_err("%s", err);
		return rc;
	}
	if ((rc = rte_telemetry_register_cmd("/mlfabric/stats", cmd_stats,
			"Port and per-transfer counters, measured throughput. No parameters")) < 0 ||
	    (rc = rte_telemetry_register_cmd("/mlfabric/faults", cmd_faults,
			"Show fault injection, or set it: /mlfabric/faults,rx_drop=0.01,dup=0.01,cut=b")) < 0 ||
	    (rc = rte_telemetry_register_cmd("/mlfabric/shaper", cmd_shaper,
			"Show or set the egress shaper rate: /mlfabric/shaper,<gbps> (0 = off)")) < 0 ||
	    (rc = rte_telemetry_register_cmd("/mlfabric/capacity", cmd_capacity,
			"Show or declare the link capacities reported to the scheduler: /mlfabric/capacity,UP,DOWN")) < 0)
		return rc;
	return 0;
}

void monitor_step(void)
{
	struct xfer_stat xf[MAX_SHOWN];
	int n = transport_stats(xf, MAX_SHOWN), fp, sp;
	struct fault_spec f;
	double g, dt;
	char err[256];
	struct portio_port_stats port;
	int port_read = portio_poll_port(dp.clk.mono_ns);

	portio_port_stats(&port);
	netmon_step();
	pthread_mutex_lock(&mon.lock);
	if (port_read)
		mon.port = port;
	dt = (double)(dp.clk.mono_ns - mon.last_ns) / 1e9;
	if (mon.last_ns && dt > 0) {
		mon.rx_gbps = (double)(dp.cnt.rx_bytes - mon.last_rx) * 8 / dt / 1e9;
		mon.tx_gbps = (double)(dp.cnt.tx_bytes - mon.last_tx) * 8 / dt / 1e9;
	}
	mon.last_ns = dp.clk.mono_ns;
	mon.last_rx = dp.cnt.rx_bytes;
	mon.last_tx = dp.cnt.tx_bytes;
	mon.cnt = dp.cnt;
	memcpy(mon.xf, xf, (size_t)n * sizeof(xf[0]));
	mon.nxf = n;
	fp = mon.faults_pending;
	sp = mon.shaper_pending;
	f = mon.new_faults;
	g = mon.new_shaper;
	mon.faults_pending = mon.shaper_pending = 0;
	if (sp)
		mon.shaper_gbps = g;
	pthread_mutex_unlock(&mon.lock);
	if (fp && monitor_apply_faults(&f, err, sizeof(err)) < 0)
		log_warn("%s", err);
	if (sp)
		transport_set_shaper(g);
}
