/* clocksync.c - NTP-style clock offset estimate with the minimum-delay filter (clocksync.h). */
#include "clocksync.h"

#include <errno.h>
#include <math.h>
#include <string.h>

void clocksync_init(struct clocksync *c)
{
	memset(c, 0, sizeof(*c));
}

int clocksync_sample(struct clocksync *c, double t1, double t2, double t3, double t4)
{
	if (!isfinite(t1) || !isfinite(t2) || !isfinite(t3) || !isfinite(t4) || t1 <= 0 ||
	    t2 <= 0 || t3 <= 0 || t4 <= 0 || t4 < t1 || t3 < t2)
		return -EINVAL;
	double delta = (t4 - t1) - (t3 - t2);
	if (delta < -1e-3)
		return -EINVAL;
	if (delta < 0)
		delta = 0;
	c->theta[c->next] = ((t2 - t1) + (t3 - t4)) / 2;
	c->delta[c->next] = delta;
	c->next = (c->next + 1) % CLOCKSYNC_SAMPLES;
	if (c->n < CLOCKSYNC_SAMPLES)
		c->n++;
	int best = 0;
	for (int i = 1; i < c->n; i++)
		if (c->delta[i] < c->delta[best])
			best = i;
	c->offset_s = c->theta[best];
	c->err_s = c->delta[best] / 2;
	c->known = 1;
	return 0;
}
