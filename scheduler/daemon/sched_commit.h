/* sched_commit.h - ADSP in the running scheduler (adsp-aaai2020 Alg. 1-2, issue 12): the
 * checkpoint tick that sends each worker its commit rate, and the server's loss reports. */
#ifndef MLF_SCHED_COMMIT_H
#define MLF_SCHED_COMMIT_H

#include "sched_state.h"

/**
 * sched_adsp_tick - an ADSP checkpoint at @now (CLOCK_REALTIME s; call when @now >=
 * s->adsp.next_check): advance the commit-rate search (adsp_checkpoint, with c_i = the updates
 * each live worker announced), send every live worker `commit_rate` {check, delta = ΔC_i,
 * period_s = Γ, r, c_target, c = c_i}, and append a line to adsp.jsonl. Until a worker is live
 * the first checkpoint is put off by one period. No-op when ADSP is off.
 */
void sched_adsp_tick(struct sched *s, double now);

/**
 * sched_adsp_joined - a worker registered on host @h: once the first checkpoint passed it gets
 * the current `commit_rate` at once (before it, the first checkpoint reaches it). No-op when
 * ADSP is off.
 */
void sched_adsp_joined(struct sched *s, int h);

/**
 * sched_adsp_loss - a `loss` report {t (CLOCK_REALTIME s), loss (> 0, finite), version} from
 * the server app @app on host @h: the global model's test loss, the input of ADSP's reward.
 * Returns 0 (recorded, or ignored when ADSP is off), or -EINVAL with @err naming the field or
 * saying that only the server reports losses.
 */
int sched_adsp_loss(struct sched *s, int h, const char *app, json_t *m, char *err, size_t len);

#endif
