/* sched_shard.h - sharded parameter servers in the running scheduler (paper §10.2). */
#ifndef MLF_SCHED_SHARD_H
#define MLF_SCHED_SHARD_H

#include <stddef.h>

#include "sched_state.h"

/*
 * A sharded model (docs/scheduler.md "Sharded servers"): S server applications, each holding a
 * contiguous slice of the model, register with `shard`, `n_shards`, `offset` and `n_total`.
 * Once all S are registered and alive the group plans like one server, except that:
 *   - every update is S legs (eq. 18: planned together, t_en = the latest leg), each sent by its
 *     worker as the slice of the held update (`send` with `offset`, `n_floats`) to its shard's
 *     server on chan 1, with one commit order per shard server (the same update order);
 *   - a pull is answered by one copy from every shard server, all at one group version: the
 *     version once every update ordered before the batch is applied. The copies are commanded
 *     before the batch's orders with `at_version` (the shard's own count) and `version` (the
 *     group's, written into every copy's header), so no shard can pass it first; the worker
 *     library assembles the copies of one version;
 *   - aggregation per shard (§5.2 with eq. 18): a worker sends its legs to the aggregator, which
 *     gets one `aggregate` per shard (`offset`: sum those slices) sent to that shard's server;
 *     aggregators never run on a shard server's host;
 *   - no distribution trees, no replica, no MLfabric-S (refused at registration or not
 *     planned; docs/scheduler.md says why).
 */

/** sched_shard_of - the shard index of host @h in the registered group, or -1. */
int sched_shard_of(const struct sched *s, int h);

/**
 * sched_shard_ready - 1 when the model is not sharded, or every shard server registered and is
 * alive (the group can be planned); 0 otherwise.
 */
int sched_shard_ready(const struct sched *s);

/**
 * sched_shard_pull_version - the model version a pull's min_version is checked against, and
 * for sharded MLfabric-S (§6 over §10.2) the version its copies carry. Unsharded, or sharded
 * MLfabric-A: the committed (group) version, server.version. Sharded MLfabric-S: sync.v, the
 * boundary of the last iteration whose updates are all planned, before the shards applied it:
 * a shard steps once per iteration, so it sits at that boundary until the puller's own next
 * update arrives, and its copy (at_version) is sent the moment it steps, not one commit, batch
 * tick and command later. The ordered count is no such version: once a worker of the next
 * iteration pushed, it lies inside an iteration no shard ever sits at. Cannot fail.
 */
int64_t sched_shard_pull_version(const struct sched *s);

/**
 * sched_shard_register - `register` role server with `n_shards` from host @h: @sv holds the
 * fields common to every server registration (mode, n_floats and bytes of this shard, version,
 * tau_max, momentum, n_workers). The first shard starts a group (replacing a previous server
 * whose host is dead); the others must agree on n_shards, n_total, mode, tau_max, momentum and
 * n_workers, and their slices must not overlap. A shard behind the group's version joins: back
 * at the same host (its host was taken for dead) with the lag counted for it, at most group -
 * own version; a new server of the shard with lag = group - own version. One ahead is refused
 * when the group ran without it, and otherwise (its first registration in the group, e.g. after
 * a scheduler restart) lifts the group to its version, the other shards lagging by the
 * difference. Every accepted registration gets the `skip`s of the legs failed to its host in
 * the last minute again. In MLfabric-S a shard back at the same host whose version is below
 * its start of the oldest iteration the scheduler remembers is refused: it may hold parts of an
 * iteration whose size nobody can tell it any more (docs/scheduler.md "A shard that comes back").
 * Returns 0 when accepted, or -1 with @err naming the field that disagrees (nothing in the
 * group changed).
 */
int sched_shard_register(struct sched *s, int h, json_t *m, const struct sched_server *sv,
			 char *err, size_t cap);

/**
 * sched_shard_sync_start - the own version server @k (shard k of a sharded model; 0: the one
 * server) starts remembered MLfabric-S iteration @r from (§6, docs/scheduler.md "MLfabric-S"):
 * one server, the iteration's (moved down by the parts lost before it); a shard, the group's
 * less its lag, where the lag does not yet count the legs of @r and later iterations. Cannot fail.
 */
int64_t sched_shard_sync_start(const struct sched *s, int k, const struct sched_sync_it *r);

/**
 * sched_shard_sync_oldest - the oldest closed MLfabric-S iteration still remembered
 * (s->sync.ring, the last SCHED_SYNC_RING), or NULL when none is. Cannot fail.
 */
const struct sched_sync_it *sched_shard_sync_oldest(const struct sched *s);

/**
 * sched_shard_copy_ready - when (plan time: seconds since sched.t0) shard @k's model copies of
 * a batch planned at @now_s may start (§10.2): they carry the version of every update ordered
 * before the batch, so they wait for the legs in flight to the shard (not `done`), by
 * s->cfg.copy_wait: the update legs' planned ends (SCHED_COPY_WAIT_UPDATES), the update and
 * aggregate legs' (SCHED_COPY_WAIT_LEGS), or those plus the shard's learned lateness late_s
 * (SCHED_COPY_WAIT_LEARNED). At least @now_s. Cannot fail.
 */
double sched_shard_copy_ready(const struct sched *s, int k, double now_s);

/**
 * sched_shard_commit - a shard server at host @h reported a commit of transfer @xfer at its own
 * @version: if @xfer was counted as skipped there (sched_shard_skipped), those parts leave the
 * lag (it was delivered after all); the group version becomes the lowest of the shards'
 * (own version + lag). A leg's commit also updates the shard's learned lateness (late_s: how
 * long after the leg's planned end it was committed, read by sched_shard_copy_ready).
 */
void sched_shard_commit(struct sched *s, int h, int64_t version, uint64_t xfer);

/**
 * sched_shard_skipped - @n updates ordered to the shard server at @h will never be applied there
 * (a skipped leg or aggregate, an aggregate sent without some inputs): lag + @n. @xfer: the
 * failed transfer that carried them (remembered, so that its commit takes them back), or 0.
 */
void sched_shard_skipped(struct sched *s, int h, int n, uint64_t xfer);

/**
 * sched_shard_fill - the sharded part of batch @b (already filled for one server): the shard
 * servers, S legs per update (bytes of each shard's payload), S pull entries per pull (entry
 * q * S + k: shard k's copy, ready once the legs already ordered to shard k are planned to
 * have arrived), no aggregator on a shard server's host, no distributors, v_init = the group version after everything
 * ordered. Arrays are allocated here and freed by sched_shard_free_batch. 0 or -ENOMEM.
 */
int sched_shard_fill(struct sched *s, struct plan_batch *b);

/** sched_shard_free_batch - free what sched_shard_fill allocated in @b. */
void sched_shard_free_batch(struct plan_batch *b);

/**
 * sched_shard_command - the commands of plan @p of sharded batch @b (@sel: update indexes,
 * @psel: pull indexes into s->pulls): the model copies first (`send` what:model with
 * at_version and version), then one `order` per shard server, then the legs (`send`
 * what:update with offset and n_floats, `keep` until the last leg), then drops. Returns 0 or
 * -ENOMEM (the commands queued so far stand).
 */
int sched_shard_command(struct sched *s, const struct plan_batch *b, const struct plan *p,
			const int *sel, const int *psel);

#endif
