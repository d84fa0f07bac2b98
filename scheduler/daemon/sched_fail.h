/* sched_fail.h - what a failed transfer, a lost update, a gone application or a dead host dooms. */
#ifndef MLF_SCHED_FAIL_H
#define MLF_SCHED_FAIL_H

#include "sched_state.h"

/*
 * The scheduler's side of docs/control.md "Behaviour the scheduler guarantees" and
 * docs/scheduler.md "Failures" (paper §4: reality differs from the plan). Every function
 * tells the applications concerned (`drop`, `skip`), writes updates.jsonl and logs one line;
 * none can fail (a message to a host without a connection is discarded, see sched_to_app).
 */

/**
 * sched_fail_update - update @u will never be committed at the server (@reason goes to the
 * worker's `drop` and to updates.jsonl): a planned update becomes lost, a pending one
 * dropped; the replica learns of it (sched_repl_server_lost). Committed, dropped or lost
 * updates are left alone. Returns 1 when a planned update was lost, else 0.
 */
int sched_fail_update(struct sched *s, struct sched_update *u, const char *reason);

/**
 * sched_fail_xfer - transfer s->xfers[@xi] will not arrive (a `done` with status < 0, a dead
 * peer, no `done` --xfer-timeout after its planned end): marks it done and loses what it
 * carries. An update copy or an aggregate: its updates are lost; an aggregator still waiting
 * for other inputs of the aggregate gets `skip` chan 2 of the lost input (the aggregate of the
 * rest goes on), and the server gets `skip` chan 1 of a transfer towards it that will never
 * arrive. A model: its pull is queued again while the worker lives. A replica copy makes the
 * replica stale (§5.3); a state snapshot is sent again (catch-up). Transfers already delivered
 * (done) only have their updates lost.
 */
void sched_fail_xfer(struct sched *s, int xi, const char *reason);

/**
 * sched_fail_apps - the @roles applications (enum sched_role bits) of host @h are gone (dead
 * host, or an application its dataplane no longer has): a gone replica is forgotten, a gone
 * server fails over to a caught-up replica (sched_repl_failover) or else every update is
 * dropped until a server registers; their unfinished transfers fail, their pending updates and
 * pulls are dropped.
 */
void sched_fail_apps(struct sched *s, int h, unsigned roles, const char *reason);

/**
 * sched_fail_host - host @h is dead (silent for --peer-timeout seconds, or its connection
 * closed): closes its connection, then sched_fail_apps for every role with reason
 * "peer <name> dead".
 */
void sched_fail_host(struct sched *s, int h);

#endif
