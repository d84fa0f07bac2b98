/* fault.h - fault injection spec (drop/dup/reorder/delay/cut) and the per-frame decision. */
#ifndef MLF_FAULT_H
#define MLF_FAULT_H

#include <stddef.h>
#include <stdint.h>

#include "cluster.h"

/** Faults of one direction (rx or tx); probabilities per frame in [0, 1]. */
struct fault_dir {
	double drop, dup, reorder;
	uint32_t delay_us; /* every frame is held this long (0 = none) */
};

/** A complete fault configuration of one dataplane. */
struct fault_spec {
	struct fault_dir rx, tx;
	char cut[CLUSTER_NAME_MAX]; /* host whose frames are dropped both ways ("" = none) */
};

/** What to do with one frame. */
enum fault_action { FAULT_PASS = 0, FAULT_DROP, FAULT_DUP, FAULT_REORDER };

/**
 * fault_parse - parse SPEC `key=value,...` into @out (which it resets first).
 * Keys: rx_drop tx_drop rx_dup tx_dup rx_reorder tx_reorder (probabilities in [0,1]),
 * rx_delay_us tx_delay_us (0..1000000), drop dup reorder delay_us (set both directions),
 * cut=<host>. "" or "none" clears every fault.
 * Returns 0, or -EINVAL with @err naming the bad key or value.
 */
int fault_parse(const char *spec, struct fault_spec *out, char *err, size_t errlen);

/** fault_format - write @f back as a SPEC string (only non-zero keys; "none" when clear). */
void fault_format(const struct fault_spec *f, char *buf, size_t len);

/** fault_active - 1 when @d injects anything. */
int fault_active(const struct fault_dir *d);

/** fault_rand - next uniform double in [0, 1) of the xorshift64* generator in *@state (non-zero). */
double fault_rand(uint64_t *state);

/** fault_decide - draw the action for one frame: drop, else duplicate, else reorder, else pass. */
enum fault_action fault_decide(const struct fault_dir *d, uint64_t *rng);

#endif
