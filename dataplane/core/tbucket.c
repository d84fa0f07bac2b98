/* tbucket.c - token bucket: tokens accrue at the shaper rate up to the depth, frames spend them. */
#include "tbucket.h"

void tbucket_init(struct tbucket *tb, double gbps, double burst_bytes, double hz, uint64_t now)
{
	*tb = (struct tbucket){ .hz = hz, .burst = burst_bytes, .tokens = burst_bytes, .last = now };
	tbucket_set_rate(tb, gbps, now);
}

void tbucket_set_rate(struct tbucket *tb, double gbps, uint64_t now)
{
	tbucket_refill(tb, now);
	tb->gbps = gbps > 0 ? gbps : 0;
	tb->bpt = tb->gbps * 1e9 / 8.0 / tb->hz;
}

void tbucket_refill(struct tbucket *tb, uint64_t now)
{
	if (now <= tb->last)
		return;
	tb->tokens += tb->bpt * (double)(now - tb->last);
	if (tb->tokens > tb->burst)
		tb->tokens = tb->burst;
	tb->last = now;
}

int tbucket_take(struct tbucket *tb, uint32_t bytes)
{
	if (tb->gbps > 0) {
		if (tb->tokens < bytes) {
			tb->held++;
			return 0;
		}
		tb->tokens -= bytes;
	}
	tb->passed_bytes += bytes;
	return 1;
}

void tbucket_force(struct tbucket *tb, uint32_t bytes)
{
	if (tb->gbps > 0)
		tb->tokens -= bytes;
	tb->passed_bytes += bytes;
}

void tbucket_refund(struct tbucket *tb, uint32_t bytes)
{
	if (tb->gbps > 0)
		tb->tokens += bytes;
	tb->passed_bytes -= bytes;
}

uint64_t tbucket_wait_ticks(const struct tbucket *tb, uint32_t bytes)
{
	double need = (double)bytes - tb->tokens;

	if (!(tb->gbps > 0) || need <= 0)
		return 0;
	return (uint64_t)(need / tb->bpt) + 1;
}
