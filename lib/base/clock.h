/* clock.h - the one wall-clock helper of every process: CLOCK_REALTIME, the clock all hosts of
 * a cluster share (PTP/NTP on bare metal, the same kernel clock in the emulated testbed), so
 * times in commands, logs and records of different processes compare directly; and
 * CLOCK_MONOTONIC for measuring intervals (benchmarks), which no clock step can disturb. */
#ifndef MLF_CLOCK_H
#define MLF_CLOCK_H

#include <stdint.h>

/** clock_real_ns - nanoseconds since the Unix epoch (CLOCK_REALTIME). Cannot fail. */
uint64_t clock_real_ns(void);

/** clock_real_s - seconds since the Unix epoch (CLOCK_REALTIME) as a double (~0.2 us resolution). */
double clock_real_s(void);

/** clock_mono_s - seconds of CLOCK_MONOTONIC (arbitrary origin): for intervals only. */
double clock_mono_s(void);

#endif
