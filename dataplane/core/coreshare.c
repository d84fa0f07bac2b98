/* coreshare.c - is the dataplane loop's core shared with other threads? (coreshare.h) */
#include "coreshare.h"

int coreshare_sample(struct coreshare *c, uint64_t run_ns, uint64_t wait_ns, uint64_t now_ns)
{
	int was = c->shared;

	if (c->have && run_ns >= c->run_ns && wait_ns >= c->wait_ns && run_ns + wait_ns > c->run_ns + c->wait_ns) {
		double f = (double)(wait_ns - c->wait_ns) / (double)(run_ns + wait_ns - c->run_ns - c->wait_ns);
		c->frac += (f - c->frac) * CORESHARE_GAIN;
		if (c->frac > CORESHARE_ON) {
			c->shared = 1;
			c->calm_since_ns = now_ns;
		} else if (c->frac < CORESHARE_OFF && now_ns - c->calm_since_ns >= CORESHARE_HOLD_NS) {
			c->shared = 0;
		}
	}
	c->have = 1;
	c->run_ns = run_ns;
	c->wait_ns = wait_ns;
	return c->shared != was;
}
