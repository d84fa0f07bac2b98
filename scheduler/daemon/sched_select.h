/* sched_select.h - which pending updates and pulls a batch takes (§5.1 batching, §6 MLfabric-S). */
#ifndef MLF_SCHED_SELECT_H
#define MLF_SCHED_SELECT_H

#include "sched_state.h"

/* Longest a ready pull waits for the server's uplink to free up so that it is planned together
 * with the pulls that gather meanwhile (a distribution tree, §10.3), seconds. */
#define SCHED_PULL_HOLD_S 1.0

/**
 * sched_select_updates - pick the updates of the next batch (indexes into s->upd, at most
 * @max, into @sel). MLfabric-A and Async: every pending update. MLfabric-S (§6): with
 * --sync-batching eager (default) the ready updates of the current iteration, one per worker,
 * none computed from the next iteration's versions; with --sync-batching all one per worker
 * only once n_workers have one. After --sync-timeout the iteration goes with the ones present,
 * the log naming the missing workers, and a `sync_step` tells the server and replica its size.
 * @now: CLOCK_REALTIME seconds. Returns how many were picked (0: nothing to plan yet).
 */
int sched_select_updates(struct sched *s, double now, int *sel, int max);

/**
 * sched_select_planned - MLfabric-S bookkeeping after a planned batch: those of the @n updates
 * @sel that the plan did not drop count for the iteration, which ends when n_workers are
 * planned (--sync-batching all: with every batch). @now: CLOCK_REALTIME seconds.
 */
void sched_select_planned(struct sched *s, double now, const int *sel, int n);

/**
 * sched_ssp_count - worker host @h announced an update at @now (CLOCK_REALTIME s): one more
 * iteration on its SSP clock, and a sample of its working iteration rate (ASP's load signal):
 * 1 / the time since its model was sent or its last update, whichever is later, so waits at
 * the gate do not make a throttled fast worker look slow.
 */
void sched_ssp_count(struct sched *s, int h, double now);

/**
 * sched_ssp_threshold - the staleness threshold in iterations in force: --ssp S as given, or
 * with --asp (asp-ieee-access2018 §III.C, eq. 4) alpha = fastest / slowest iteration rate of
 * the live workers; alpha < SCHED_ASP_ALPHA0 (similar workers): the weak threshold --asp-weak W;
 * otherwise min(S, ceil(alpha)): the more the workers differ, the more staleness is allowed.
 * @alpha (may be NULL) receives alpha (1 before every worker has a rate). -1 when off.
 */
int sched_ssp_threshold(const struct sched *s, double *alpha);

/**
 * sched_ssp_allows - stale-synchronous parallel (--ssp S; issue 12, asp-ieee-access2018 §III,
 * SSP with staleness threshold S): 1 when worker host @h may get the model for its next
 * iteration, i.e. its iteration clock (updates it announced, sched_host.n_pushed) is at most S
 * ahead of the slowest live host that runs a worker; 0 while it must wait. Always 1 with --ssp
 * off. Hosts that died (not alive) do not hold the others back.
 */
int sched_ssp_allows(const struct sched *s, int h);

/**
 * sched_select_hold_pulls - 1 when the @n_psel answerable pulls @psel should wait for the next
 * batch (§10.3): distributors are on and the server's uplink is reserved past the next batch
 * by copies commanded earlier, so pulls that gather meanwhile share one distribution tree;
 * never more than SCHED_PULL_HOLD_S after a pull's arrival. @now: CLOCK_REALTIME seconds.
 * Returns 0 to plan them now.
 */
int sched_select_hold_pulls(const struct sched *s, double now, const int *psel, int n_psel);

#endif
