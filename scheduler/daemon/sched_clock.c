/* sched_clock.c - hosts' clock offsets: commanded times into a host's clock, reported times into the scheduler's (sched_clock.h). */
#include "sched_clock.h"

#include <math.h>

#include "sched_state.h"

void sched_clock_reset(struct sched *s, int h)
{
	struct sched_host *sh = &s->hosts[h];

	sh->clk_offset_s = sh->clk_err_s = sh->clk_rec_s = 0;
	sh->clk_known = sh->clk_warned = 0;
}

double sched_clock_to_host(const struct sched *s, int h, double t)
{
	if (t == 0 || h < 0 || !s->cfg.clock_correct || !s->hosts[h].clk_known)
		return t;
	return t - s->hosts[h].clk_offset_s;
}

double sched_clock_from_host(const struct sched *s, int h, double t)
{
	if (t == 0 || !isfinite(t) || h < 0 || !s->hosts[h].clk_known)
		return t;
	return t + s->hosts[h].clk_offset_s;
}

static void convert_start(const struct sched *s, int h, json_t *o)
{
	json_t *st = json_object_get(o, "start");

	if (json_is_number(st))
		json_object_set_new(o, "start", json_real(sched_clock_to_host(s, h,
						  json_number_value(st))));
}

void sched_clock_command(const struct sched *s, int h, json_t *msg)
{
	json_t *xs = json_object_get(msg, "xfers"), *x;
	size_t i;

	if (h < 0 || !s->cfg.clock_correct || !s->hosts[h].clk_known)
		return;
	convert_start(s, h, msg);
	if (json_is_array(xs))
		json_array_foreach(xs, i, x)
			if (json_is_object(x))
				convert_start(s, h, x);
}
