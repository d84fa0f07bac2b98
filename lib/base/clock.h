/* clock.h - the one wall-clock helper of every process: CLOCK_REALTIME, the clock all hosts of
 * a cluster share (PTP/NTP on bare metal, the same kernel clock in the emulated testbed), so
 * times in commands, logs and records of different processes compare directly; and
 * CLOCK_MONOTONIC for measuring intervals (benchmarks), which no clock step can disturb. */
#ifndef MLF_CLOCK_H
#define MLF_CLOCK_H

#include <stdint.h>

/** Largest |MLF_CLOCK_SKEW_MS| honoured, ms (one hour); a larger or malformed value is ignored. */
#define CLOCK_SKEW_MAX_MS 3600000.0

/**
 * clock_skew_ns - the skew this process adds to CLOCK_REALTIME, ns: the environment variable
 * MLF_CLOCK_SKEW_MS (milliseconds, may be negative or fractional) read once, 0 when unset. A
 * testing knob: every process of one emulated host started with the same value behaves like a
 * X
 * clock offset estimation of docs/control.md "Clocks" must then correct it). Cannot fail.
 */
int64_t clock_skew_ns(void);

/** clock_real_ns - nanoseconds since the Unix epoch (CLOCK_REALTIME, plus clock_skew_ns). Cannot fail. */
uint64_t clock_real_ns(void);

/** clock_real_s - seconds since the Unix epoch (CLOCK_REALTIME, plus clock_skew_ns) as a double (~0.2 us resolution). */
double clock_real_s(void);

/** clock_mono_s - seconds of CLOCK_MONOTONIC (arbitrary origin): for intervals only. */
double clock_mono_s(void);

#endif
