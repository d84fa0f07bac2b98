/* clock.h - the one wall-clock helper of every process: CLOCK_REALTIME, the clock all hosts of
 * a cluster share (PTP/NTP on bare metal, the same kernel clock in the emulated testbed), so
 * times in commands, logs and records of different processes compare directly. */
#ifndef MLF_CLOCK_H
#define MLF_CLOCK_H

#include <stdint.h>

/** clock_real_ns - nanoseconds since the Unix epoch (CLOCK_REALTIME). Cannot fail. */
uint64_t clock_real_ns(void);

/** clock_real_s - seconds since the Unix epoch (CLOCK_REALTIME) as a double (~0.2 us resolution). */
double clock_real_s(void);

#endif
