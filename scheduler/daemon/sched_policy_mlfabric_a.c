/* sched_policy_mlfabric_a.c - MLfabric-A (§5): every pending update goes into the next batch,
 * which the planner orders and bounds by the delay bound (server mode "mlfabric-a"). */
#include "sched_policy.h"

#include "sched_state.h"

/* Every pending update, oldest first (at most @max). */
static int select_all(struct sched *s, void *data, double now, int *sel, int max)
{
	int n = 0;

	(void)data;
	(void)now;
	for (int i = 0; i < s->n_upd && n < max; i++)
		if (s->upd[i].state == SCHED_UPD_PENDING)
			sel[n++] = i;
	return n;
}

const struct sched_policy_ops sched_policy_mlfabric_a = {
	.name = "mlfabric-a",
	.plan_mode = PLAN_MLFABRIC_A,
	.select_updates = select_all,
};
