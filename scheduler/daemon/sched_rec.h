/* sched_rec.h - the scheduler's record files (docs/fabric.md): batches, updates, transfers. */
#ifndef MLF_SCHED_REC_H
#define MLF_SCHED_REC_H

#include "sched_state.h"

/**
 * sched_rec_open - create DIR (if needed) and open batches.jsonl, updates.jsonl,
 * transfers.jsonl and failover.jsonl in it for appending; when batches.jsonl has lines (a
 * restart), the batch numbers go on from its last one. Returns 0 or -errno with @err naming the file.
 */
int sched_rec_open(struct sched *s, const char *dir, char *err, size_t errlen);

/** sched_rec_close - close the record files (safe when none are open). */
void sched_rec_close(struct sched *s);

/** One batch's summary line of batches.jsonl (delays in versions, plan_ms in milliseconds). */
struct sched_rec_batch {
	double t;            /* CLOCK_REALTIME seconds */
	int batch;
	int n_updates, dropped, aggregated, pulls;
	double plan_ms, mean_delay;
	int64_t max_delay, v_init;
	int replica;              /* 1: the batch carried a replica (the fields below are written) */
	double divergence_bound;  /* the plan's bound on ||w_s - w_r||_2 (eq. 11) */
	int replica_commits, punted;
	int64_t replica_version;  /* the replica's last reported commit version */
};

/** sched_rec_batch - append one line to batches.jsonl and flush it. */
void sched_rec_batch(struct sched *s, const struct sched_rec_batch *r);

/**
 * sched_rec_update - append the fate of update @u to updates.jsonl (@fate: "direct",
 * "aggregated", "dropped" or "lost"; @reason may be NULL), with `replica` from u->rstate
 * ("committed" when planned or committed there, "punted", "lost"; absent without a copy).
 * A lost update gets a second line after its planned one, so does a change of its replica
 * copy: the last line of an id is its fate. `t` is when the line was written (Unix time,
 * seconds): a loss written after the run's stop is the teardown's, not a fault's.
 */
void sched_rec_update(struct sched *s, const struct sched_update *u, const char *fate,
		      const char *reason);

/** sched_rec_transfer - append commanded transfer @x to transfers.jsonl (CLOCK_REALTIME times). */
void sched_rec_transfer(struct sched *s, const struct sched_xfer *x);

/**
 * sched_rec_failover - append s->fo to failover.jsonl: t_gone, t_promoted, t_first_commit
 * (CLOCK_REALTIME seconds, null when it did not happen), old_server, new_server, version,
 * lost_committed, lost_planned.
 */
void sched_rec_failover(struct sched *s);

/**
 * sched_rec_open_file - open (append) the record file @name in the --records directory into
 * *@f, for a policy's own records (*@f NULL when the records are off). Returns 0, or -errno
 * with @err naming the path.
 */
int sched_rec_open_file(const struct sched *s, const char *name, FILE **f, char *err,
			size_t errlen);

/** sched_rec_ms - @x seconds in milliseconds rounded to 1 us, for records (readable figures). */
double sched_rec_ms(double x);

/**
 * sched_rec_put - append @o (reference stolen) as one line of record file @f (opened by
 * sched_rec_open_file), flushed; discarded when @f is NULL.
 */
void sched_rec_put(FILE *f, json_t *o);

#endif
