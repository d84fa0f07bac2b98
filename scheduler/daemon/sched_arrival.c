/* sched_arrival.c - planning on arrival: when the poll loop plans what arrived (docs/scheduler.md "Batches"). */
#include "sched_arrival.h"

#include "clock.h"

void sched_arrival_note(struct sched *s, double at)
{
	double now = clock_real_s();

	if (at > now) {
		if (s->arrival_later == 0 || at < s->arrival_later)
			s->arrival_later = at;
		return;
	}
	if (s->arrival_at == 0 || at < s->arrival_at)
		s->arrival_at = at;
}

double sched_arrival_plan_at(const struct sched *s)
{
	if (s->arrival_at == 0)
		return 0;
	double at = s->arrival_at + s->cfg.replan_s, latest = s->arrival_at + s->cfg.batch_s;

	if (s->last_plan + s->cfg.replan_s > at)
		at = s->last_plan + s->cfg.replan_s;
	return at < latest ? at : latest;
}

void sched_arrival_due(struct sched *s, double now)
{
	if (s->arrival_later > 0 && now >= s->arrival_later) {
		double at = s->arrival_later;
		s->arrival_later = 0;
		sched_arrival_note(s, at);
	}
}
