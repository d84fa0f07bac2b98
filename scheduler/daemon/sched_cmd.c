/* sched_cmd.c - the command messages a batch queues (docs/control.md): send, order, drop, rate steps. */
#include "sched_cmd.h"

#include "sched_rec.h"

json_t *sched_cmd_steps(const struct plan_transfer *t)
{
	json_t *a = json_array();
	int group = (t->n_rate + SCHED_MAX_STEPS - 1) / SCHED_MAX_STEPS;
	double last_off = 0;

	if (group < 1)
		group = 1;
	for (int i = 0; i < t->n_rate; i += group) {
		int last = i + group < t->n_rate ? i + group : t->n_rate;
		double from = t->rate[i].from_s;
		double to = last < t->n_rate ? t->rate[last].from_s : t->end_s;
		double gbps = t->rate[i].gbps;
		if (group > 1 && to > from) {
			double bits = 0;
			for (int k = i; k < last; k++) {
				double e = k + 1 < t->n_rate ? t->rate[k + 1].from_s : t->end_s;
				bits += t->rate[k].gbps * (e - t->rate[k].from_s);
			}
			gbps = bits / (to - from);
		}
		double off = from - t->start_s;
		size_t n = json_array_size(a);
		if (off < 0)
			off = 0; /* float noise: a step a hair before the start */
		if (!(gbps > 0))
			gbps = 0; /* float noise in a residual: -1e-15 Gbit/s */
		if (n > 0 && off < last_off + SCHED_MIN_STEP_S) {
			/* a step shorter than 1 us (float noise between reservations): the
			 * dataplane needs increasing offsets; the later rate replaces it */
			json_array_set_new(a, n - 1, json_pack("[f, f]", last_off, gbps));
			continue;
		}
		json_array_append_new(a, json_pack("[f, f]", off, gbps));
		last_off = off;
	}
	return a;
}

json_t *sched_cmd_send(struct sched *s, const char *what, uint64_t id, uint64_t xfer, int dst,
			int chan, uint64_t bytes, const struct plan_transfer *t, double now_s,
			int keep)
{
	return json_pack("{s:s, s:s, s:I, s:I, s:s, s:i, s:I, s:f, s:o, s:b}", "type", "send",
			 "what", what, "id", (json_int_t)id, "xfer", (json_int_t)xfer,
			 "dst", s->cl.hosts[dst].name, "chan", chan, "bytes", (json_int_t)bytes,
			 "start", s->t0 + (t ? t->start_s : now_s), "steps",
			 t ? sched_cmd_steps(t) : json_array(), "keep", keep);
}

void sched_cmd_order(struct sched *s, const char *role, int host, int chan, json_t *xs)
{
	if (json_array_size(xs) > 0) {
		sched_to_app(s, role, host, json_pack("{s:s, s:i, s:O}", "type", "order", "chan",
			     chan, "xfers", xs));
		sched_flush_host(s, host);
	}
	json_decref(xs);
}

void sched_cmd_drop(struct sched *s, struct sched_update *u, const char *reason)
{
	u->state = SCHED_UPD_DROPPED;
	sched_to_app(s, "worker", u->worker, json_pack("{s:s, s:I, s:s}", "type", "drop", "id",
		     (json_int_t)u->id, "reason", reason));
	sched_rec_update(s, u, "dropped", reason);
}
