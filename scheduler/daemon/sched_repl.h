/* sched_repl.h - the scheduler's replica: registration, carried copies, catch-up, fail-over (§3.3, §5.3). */
#ifndef MLF_SCHED_REPL_H
#define MLF_SCHED_REPL_H

#include "sched_state.h"

/**
 * sched_repl_planned - 1 when the next batch carries the replica (§5.3): a registered, live,
 * caught-up `mlfabric` replica and no fail-over in progress; else 0.
 */
int sched_repl_planned(const struct sched *s);

/**
 * sched_repl_paused - 1 while planning of updates is paused: a catch-up of the replica
 * (docs/replication.md "Catch-up") or a fail-over waiting for `promoted`. Pulls are still
 * answered during a catch-up.
 */
int sched_repl_paused(const struct sched *s);

/**
 * sched_repl_carried_sel - write into @sel the indexes into s->upd of the carried (punted)
 * replica copies, in replica order; they go first in the batch as replica_only updates.
 * Returns how many (carried ids no longer known are forgotten).
 */
int sched_repl_carried_sel(struct sched *s, int *sel);

/**
 * sched_repl_fill - set @b's replica fields: replica host, replica aggregators (the
 * --replica-aggregators hosts that are live registered aggregators, else @b's aggregators),
 * div_max, history_norm, replica_lag = @n_carried; marks @b->updates[0..n_carried) replica_only.
 * Allocates b->replica_aggregators (freed by the caller). Returns 0 or -ENOMEM.
 */
int sched_repl_fill(struct sched *s, struct plan_batch *b, int n_carried);

/**
 * sched_repl_carry - after commanding plan @p of batch @b (updates are s->upd[@sel[i]]):
 * plan_carry_next() gives the punted copies (the new carried list) and the history norm of
 * the next batch. Returns 0 or -ENOMEM.
 */
int sched_repl_carry(struct sched *s, const struct plan_batch *b, const struct plan *p,
		     const int *sel);

/**
 * sched_repl_register - a replica on host @h (docs/replication.md `register` role replica):
 * Div_max @div_max, @chain replication, model of @n_floats floats at @version. Refused (-1,
 * @err says why) when no live server is registered, on the server's host, when n_floats
 * differs from the server's, or when another live replica is registered. A replica that
 * starts with the server from version 0 before anything was planned is caught up at once; any
 * other starts a catch-up. A chain replica that is caught up is announced to the server
 * (`replica` message). Returns 0.
 */
int sched_repl_register(struct sched *s, int h, double div_max, int chain, uint64_t n_floats,
			int64_t version, char *err, size_t errlen);

/**
 * sched_repl_commit - a `commit` @m from the replica's host: transfer @xfer applied, replica
 * at @version. With `state: true` (catch-up) and `history_norm`, ends the catch-up (or starts
 * another when the server moved on meanwhile). Otherwise marks the updates of `parts` (or
 * those planned for @xfer) replica-committed and records them.
 */
void sched_repl_commit(struct sched *s, json_t *m, uint64_t xfer, int64_t version, double now);

/**
 * sched_repl_stale - a replica copy can never arrive (@why): skip chan 4 of every replica
 * transfer not committed, release the punted copies, and start a catch-up. No-op without a
 * replica or while a catch-up already waits for the server.
 */
void sched_repl_stale(struct sched *s, const char *why);

/** sched_repl_state_failed - the catch-up's state transfer failed (@why): send it again. */
void sched_repl_state_failed(struct sched *s, const char *why);

/**
 * sched_repl_server_lost - update @u's server copy will never be committed: a punted replica
 * copy is forgotten (the worker got a `drop`); a replica copy already commanded or committed
 * makes the replica stale.
 */
void sched_repl_server_lost(struct sched *s, struct sched_update *u);

/**
 * sched_repl_server_committed - update @u was committed at the server: one planned before
 * the replica caught up (a catch-up that timed out) is missing at the replica: stale.
 */
void sched_repl_server_committed(struct sched *s, const struct sched_update *u);

/**
 * sched_repl_worker_gone - the worker application of host @h is gone: a punted copy it held
 * can never be sent, so the replica is stale.
 */
void sched_repl_worker_gone(struct sched *s, int h);

/**
 * sched_repl_tick - catch-up progress, called before each batch: once the server committed
 * every planned update (or --catchup-timeout passed), command the state snapshot (`order`
 * chan 4 to the replica, then `send what:"state"` to the server; docs/replication.md
 * "Catch-up").
 * @now: CLOCK_REALTIME seconds.
 * Returns 0 (also when there was nothing to do), or -ENOMEM when the state transfer could not
 * be remembered: logged, nothing commanded, the catch-up still waits and the next call tries
 * again.
 */
int sched_repl_tick(struct sched *s, double now);

/**
 * sched_repl_gone - the replica application is gone (@why): release punted copies, tell the
 * server of a chain replica (`replica` with host ""), abort a fail-over waiting for it.
 */
void sched_repl_gone(struct sched *s, const char *why);

/**
 * sched_repl_failover - the server on host @old is gone (detected at @now, CLOCK_REALTIME s).
 * With a caught-up replica: loses what the replica will not have (`drop` "server failed",
 * `skip` chan 4, `release`), puts the pulls the old server did not answer back in the queue,
 * sends `promote` and returns 1 (planning waits for `promoted`).
 * Returns 0 without a usable replica: the caller then drops the updates until a server
 * registers again (docs/scheduler.md "Failures").
 */
int sched_repl_failover(struct sched *s, int old, double now);

/**
 * sched_repl_promoted - `promoted` from host @h: it serves @version from now on. The host
 * becomes the server (pending updates' and pulls' versions clamped to @version), every worker
 * gets `server_moved`. Returns 0, or -1 with @err when no promotion was asked of @h.
 */
int sched_repl_promoted(struct sched *s, int h, int64_t version, double now, char *err,
			size_t errlen);

/**
 * sched_repl_server_commit - a commit at the server at @now: the first one after a
 * promotion completes the fail-over record (failover.jsonl and one log line).
 */
void sched_repl_server_commit(struct sched *s, double now);

/** sched_repl_finish - write a pending fail-over record (no commit at the new server yet). */
void sched_repl_finish(struct sched *s);

/**
 * sched_repl_verify - verification mode: after batch @batch_no, when it is a multiple of
 * --verify-every, `snapshot` {tag: batch_no} to the server and the replica.
 */
void sched_repl_verify(struct sched *s, int batch_no);

#endif
