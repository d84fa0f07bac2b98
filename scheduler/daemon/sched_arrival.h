/* sched_arrival.h - planning on arrival: when the poll loop plans what arrived (docs/scheduler.md "Batches"). */
#ifndef MLF_SCHED_ARRIVAL_H
#define MLF_SCHED_ARRIVAL_H

#include "sched_state.h"

/**
 * sched_arrival_note - something that can be planned arrived, or becomes usable at
 * CLOCK_REALTIME @at (an update, a pull, a `done`, a commit, a registration, a link report
 * that changes a capacity): the loop plans at max(earliest arrival, last plan) + replan_s,
 * and never later than the earliest arrival + batch_s (docs/scheduler.md "Batches").
 */
void sched_arrival_note(struct sched *s, double at);

/**
 * sched_arrival_plan_at - CLOCK_REALTIME seconds the loop plans the arrivals of @s at
 * (sched_arrival_note), or 0 when none waits.
 */
double sched_arrival_plan_at(const struct sched *s);

/**
 * sched_arrival_due - at CLOCK_REALTIME @now, the future arrival of @s whose time came (a link
 * report's t + t_lag) becomes an arrival (sched_arrival_note), and the next capacity change in
 * the hosts' kept link reports still in the future becomes the future arrival. Cannot fail.
 */
void sched_arrival_due(struct sched *s, double now);

#endif
