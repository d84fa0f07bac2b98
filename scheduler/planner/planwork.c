/* planwork.c - jobs (one leg per shard, eq. 18) and the growing plan arrays of plan_compute(). */
#include "planwork.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void planwork_update_job(const struct planwork *pw, int u, int dst, struct planwork_job *job)
{
	const struct plan_update *up = &pw->b->updates[u];
	int j;

	job->src = up->worker;
	job->dst = dst;
	job->t0_s = planwork_max(up->ready_s, pw->b->now_s);
	if (up->n_shards == 0) {
		job->bytes[0] = up->bytes;
		return;
	}
	for (j = 0; j < pw->n_legs; j++)
		job->bytes[j] = up->shards[j].bytes;
}

int planwork_leg_dst(const struct planwork *pw, const struct planwork_job *job, int j)
{
	return job->dst >= 0 ? job->dst : pw->b->servers[pw->leg_server[j]];
}

double planwork_job_tend(struct planwork *pw, struct netstate *net,
			 const struct planwork_job *job)
{
	struct netstate_mark m;
	double end;

	if (pw->n_legs == 1)
		return netstate_tend(net, job->src, planwork_leg_dst(pw, job, 0), job->t0_s,
				     job->bytes[0], NULL);
	m = netstate_mark(net);
	end = planwork_job_reserve(pw, net, job, NULL, NULL);
	netstate_undo(net, m);
	return end;
}

int planwork_add_transfer(struct planwork *pw, const struct planwork_tag *tag, int shard,
			  int src, int dst, uint64_t bytes, const struct netstate_profile *prof)
{
	struct plan *o = pw->out;
	struct plan_transfer *t;
	int z = 0;

	/* The transfer starts at its first non-zero rate (the dataplane starts it at start_s). */
	while (z + 1 < prof->n && prof->steps[z].gbps <= 0.0)
		z++;
	if (arr_grow((void **)&o->transfers, &pw->cap_transfers, o->n_transfers + 1,
			  sizeof(*o->transfers)))
		return -ENOMEM;
	t = &o->transfers[o->n_transfers];
	memset(t, 0, sizeof(*t));
	t->kind = tag->kind;
	t->carries = tag->carries;
	t->shard = shard;
	t->src = src;
	t->dst = dst;
	t->bytes = bytes;
	t->purpose = tag->purpose;
	t->start_s = z > 0 ? prof->steps[z].from_s : prof->start_s;
	t->end_s = prof->end_s;
	if (prof->n > 0) {
		t->rate = malloc((size_t)(prof->n - z) * sizeof(*t->rate));
		if (!t->rate)
			return -ENOMEM;
		memcpy(t->rate, prof->steps + z, (size_t)(prof->n - z) * sizeof(*t->rate));
	}
	t->n_rate = prof->n - z;
	o->n_transfers++;
	return 0;
}

double planwork_job_reserve(struct planwork *pw, struct netstate *net,
			    const struct planwork_job *job, const struct planwork_tag *tag,
			    double *arrival)
{
	struct netstate_mark m = netstate_mark(net);
	double last = job->t0_s < net->now_s ? net->now_s : job->t0_s;
	int j;

	for (j = 0; j < pw->n_legs; j++) {
		int dst = planwork_leg_dst(pw, job, j);
		double end;

		if (job->bytes[j] == 0 && pw->n_legs > 1) {
			if (arrival)
				arrival[j] = last;
			continue;
		}
		end = netstate_tend(net, job->src, dst, job->t0_s, job->bytes[j], &pw->prof);
		if (end < 0.0 || end == INFINITY) {
			netstate_undo(net, m);
			return end;
		}
		if (netstate_reserve(net, job->src, dst, &pw->prof)) {
			netstate_undo(net, m);
			return -1.0;
		}
		/* A move within one host needs no network and gets no transfer. */
		if (tag && job->src != dst && planwork_add_transfer(pw, tag, pw->n_legs > 1 ? j : -1, job->src, dst,
						 job->bytes[j], &pw->prof))
			return -1.0;
		if (arrival)
			arrival[j] = end;
		last = planwork_max(last, end);
	}
	return last;
}
