/* sched_clock.h - every host's clock offset to the scheduler's: commanded times in the host's clock, reported times in the scheduler's (docs/control.md "Clocks"). */
#ifndef MLF_SCHED_CLOCK_H
#define MLF_SCHED_CLOCK_H

#include <jansson.h>

struct sched;

/** sched_clock_reset - host @h (a new connection) has no estimate yet: offset 0. */
void sched_clock_reset(struct sched *s, int h);

/**
 * sched_clock_to_host - CLOCK_REALTIME @t (s) of the scheduler's clock in host @h's clock: t -
 * offset, with --clock-correct on and an estimate known; else @t. 0 (no time) stays 0.
 */
double sched_clock_to_host(const struct sched *s, int h, double t);

/**
 * sched_clock_from_host - CLOCK_REALTIME @t (s) reported by host @h in the scheduler's clock: t +
 * offset when an estimate is known (reports are converted even with --clock-correct off, so
 * start errors stay measurable); else @t. 0 or a non-finite value stays as it is.
 */
double sched_clock_from_host(const struct sched *s, int h, double t);

/**
 * sched_clock_command - converts the commanded start times of @msg, a command to an app on
 * host @h (its "start", and the "start" of every object in its "xfers"), into @h's clock
 * (sched_clock_to_host). Steps are offsets from the start and need nothing. Cannot fail.
 */
void sched_clock_command(const struct sched *s, int h, json_t *msg);

#endif
