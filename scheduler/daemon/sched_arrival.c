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

/*
 * The earliest time after @now a kept link report that changed a host's capacities becomes
 * usable (its t + t_lag), or 0: sched.arrival_later holds only the earliest such time, so the
 * later ones are found again in the hosts' report rings once it came due.
 */
static double next_capacity_change(const struct sched *s, double now)
{
	double next = 0;

	for (int h = 0; h < s->cl.n_hosts; h++) {
		const struct sched_host *ho = &s->hosts[h];
		for (int k = 0; k < ho->n_reports; k++) {
			int i = (ho->next_report - ho->n_reports + k + 2 * SCHED_LINK_HIST) % SCHED_LINK_HIST;
			const struct sched_link_report *r = &ho->reports[i];
			const struct sched_link_report *prev = k ?
				&ho->reports[(i + SCHED_LINK_HIST - 1) % SCHED_LINK_HIST] : NULL;
			double at = r->t + s->cfg.t_lag_s;
			if (prev && prev->up_gbps == r->up_gbps && prev->down_gbps == r->down_gbps)
				continue;
			if (at > now && (next == 0 || at < next))
				next = at;
		}
	}
	return next;
}

void sched_arrival_due(struct sched *s, double now)
{
	if (s->arrival_later > 0 && now >= s->arrival_later) {
		double at = s->arrival_later;
		s->arrival_later = 0;
		sched_arrival_note(s, at);
		double next = next_capacity_change(s, now);
		if (next > 0)
			sched_arrival_note(s, next);
	}
}
