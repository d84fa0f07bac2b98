/* sched_select.h - whether the ready pulls wait for the next batch (§10.3 held pulls); the
 * updates a batch takes are the planning policy's choice (sched_policy.h). */
#ifndef MLF_SCHED_SELECT_H
#define MLF_SCHED_SELECT_H

#include "sched_state.h"

/* Longest a ready pull waits for the server's uplink to free up so that it is planned together
 * with the pulls that gather meanwhile (a distribution tree, §10.3), seconds. */
#define SCHED_PULL_HOLD_S 1.0

/**
 * sched_select_hold_pulls - 1 when the @n_psel answerable pulls @psel should wait for the next
 * batch (§10.3): distributors are on and the server's uplink is reserved past the next batch
 * by copies commanded earlier, so pulls that gather meanwhile share one distribution tree;
 * never more than SCHED_PULL_HOLD_S after a pull's arrival. @now: CLOCK_REALTIME seconds.
 * Returns 0 to plan them now.
 */
int sched_select_hold_pulls(const struct sched *s, double now, const int *psel, int n_psel);

#endif
