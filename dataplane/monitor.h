/* monitor.h - DPDK telemetry commands /mlfabric/stats, /mlfabric/faults, /mlfabric/shaper, /mlfabric/capacity. */
#ifndef MLF_MONITOR_H
#define MLF_MONITOR_H

#include "fault.h"
#include "portio.h"

/**
 * monitor_init - register the telemetry commands (served by DPDK's telemetry thread; the main
 * loop publishes snapshots and applies changes). @faults: the spec in force at start.
 * Returns 0 or -errno from rte_telemetry_register_cmd.
 */
int monitor_init(const struct fault_spec *faults, double shaper_gbps);

/**
 * monitor_step - called by the main loop every few ms: publish a fresh snapshot of counters,
 * per-transfer figures and measured throughput; apply pending fault/shaper changes.
 */
void monitor_step(void);

/**
 * monitor_capacity - the declared link capacities in Gbit/s (default the config's up/down_gbps;
 * changed at run time by the telemetry command /mlfabric/capacity,UP,DOWN), reported to the
 * scheduler in hello and link messages (docs/control.md).
 */
void monitor_capacity(double *up_gbps, double *down_gbps);

/**
 * monitor_port - the port counters and link state of the last snapshot (monitor_step reads them
 * every PORTIO_POLL_S), reported to the scheduler in link messages (docs/control.md).
 */
void monitor_port(struct portio_port_stats *out);

/** monitor_apply_faults - put @f in force now (also used for --fault at start). 0 or -EINVAL. */
int monitor_apply_faults(const struct fault_spec *f, char *err, size_t errlen);

#endif
