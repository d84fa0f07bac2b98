/* lossresp.c - tells random loss from congestion for the sender's loss response (docs/dataplane.md "Loss response"). */
#include "lossresp.h"

void lossresp_rtt(struct lossresp *l, double us)
{
	if (!(us > 0))
		return;
	if (!l->base_us || us < l->base_us)
		l->base_us = us;
	l->recent[l->next] = us;
	l->next = (l->next + 1) % LOSSRESP_RECENT;
}

void lossresp_sent(struct lossresp *l)
{
	l->loss_rate -= LOSSRESP_GAIN * l->loss_rate;
}

double lossresp_qdelay_us(const struct lossresp *l)
{
	double low = 0;

	for (int i = 0; i < LOSSRESP_RECENT; i++)
		if (l->recent[i] > 0 && (!low || l->recent[i] < low))
			low = l->recent[i];
	return low > l->base_us ? low - l->base_us : 0;
}

int lossresp_lost(struct lossresp *l)
{
	double q = LOSSRESP_QDELAY_FRAC * l->base_us;

	l->loss_rate += LOSSRESP_GAIN * (1 - l->loss_rate);
	if (lossresp_qdelay_us(l) > (q > LOSSRESP_QDELAY_MIN_US ? q : LOSSRESP_QDELAY_MIN_US) ||
	    l->loss_rate > LOSSRESP_BURST_FRAC) {
		l->congested++;
		return 1;
	}
	l->random++;
	return 0;
}
