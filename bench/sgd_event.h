/* sgd_event.h - bench-sgd-delay's event-driven mode: an asynchronous parameter server's workers, scheduler and server in virtual time. */
#ifndef MLF_SGD_EVENT_H
#define MLF_SGD_EVENT_H

#include <stdint.h>

#include "train.h"

/**
 * The scheduler's rules of one simulated system (docs/results/staleness.md "An event-driven
 * model of the fabric"): @tick_us, the scheduler's batch period in microseconds (mlf-scheduler
 * --batch-ms; 0 = every push and pull is served on arrival, as a plain parameter server does);
 * @pull_after, the pull's snapshot rule (0: a pull is answered with the server's model before
 * the updates of its batch are applied, as MLfabric-A is built; 1: after them; on arrival: after
 * the worker's own update); @tau_max, the delay bound (the planner's eq. 9: an update is applied
 * only while the server version before its commit - v(g) < tau_max, else dropped; -1 = none).
 */
struct sgd_event_rules {
	long tick_us;
	int pull_after;
	long tau_max;
};

/**
 * The simulated cluster: @workers workers, worker i's gradient taking @compute_s x @speeds[i]
 * (>= 1) x the straggler draw of @straggle (train_straggle_parse(): C1-C3, "R,S", "none"; worker
 * i's draws seeded as tools/mlf-cluster's worker i of the same experiment seed) virtual seconds; one model or update transfer takes
 * @transfer_s; the server's model is evaluated every @eval_every_s virtual seconds; a run stops
 * (a miss) before the gradient that would pass @max_grads.
 */
struct sgd_event_cluster {
	int workers;
	const double *speeds;
	double compute_s, transfer_s, eval_every_s;
	const char *straggle;
	long max_grads;
};

/**
 * What a run asks of the model, with the @ctx given to sgd_event_run(): @update computes worker
 * @i's update u = -lr x gradient of model @w into @u (m->n floats each), returning 0 or -ENOMEM;
 * @eval evaluates model @w into *@acc and returns 1 when the target is reached, 0 when not yet,
 * -1 when the model diverged (the run stops, a miss), -ENOMEM.
 */
struct sgd_event_ops {
	int (*update)(void *ctx, int i, const float *w, float *u);
	int (*eval)(void *ctx, const float *w, double *acc);
};

/**
 * A run's figures, at the evaluation that reached the target (else at the end): @grads,
 * gradients computed (pushed); @applied and @dropped (for the delay bound) updates;
 * @delay_sum, the sum over applied updates of the server version before its apply - v(g) (mean
 * delay = delay_sum / applied); @t_s, virtual seconds; @reached, 1 when the target was reached;
 * @accuracy, the last evaluation's; @evaluated, whether the server's final model was evaluated.
 */
struct sgd_event_result {
	long grads, applied, dropped;
	double delay_sum, t_s, accuracy;
	int reached, evaluated;
};

/**
 * sgd_event_parse - the rules of system @spec (what follows "event:"): "async" (0:after:-),
 * "mlfabric-a" (100:before:8, MLfabric-A as built) or "TICK_MS:before|after[:TAU]" (TAU "-" or
 * absent: no bound). Returns 0, or -EINVAL.
 */
int sgd_event_parse(const char *spec, struct sgd_event_rules *r);

/**
 * sgd_event_run - one run in virtual time from model @m (the server's: train_apply() applies
 * each update as one eq. 2 step), straggler draws seeded from @seed. Every worker pulls, computes
 * an update on the model it got, pushes it and pulls again; the rules @r decide when updates are
 * applied or dropped and which model a pull gets. Fills @res. Returns 0, -EINVAL (a bad
 * @c->straggle), -ENOMEM, or @ops's errors.
 */
int sgd_event_run(const struct sgd_event_cluster *c, const struct sgd_event_rules *r, uint64_t seed,
		  struct train_model *m, const struct sgd_event_ops *ops, void *ctx, struct sgd_event_result *res);

#endif
