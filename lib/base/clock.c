/* clock.c - CLOCK_REALTIME in nanoseconds and seconds, CLOCK_MONOTONIC in seconds (clock.h). */
#include "clock.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

static int64_t skew_ns;
static pthread_once_t skew_once = PTHREAD_ONCE_INIT;

/* MLF_CLOCK_SKEW_MS: a test's host whose clock disagrees with the scheduler's (clock.h). */
static void skew_read(void)
{
	const char *v = getenv("MLF_CLOCK_SKEW_MS");
	char *end;
	double ms;

	if (!v || !*v)
		return;
	ms = strtod(v, &end);
	if (*end == 0 && ms >= -CLOCK_SKEW_MAX_MS && ms <= CLOCK_SKEW_MAX_MS)
		skew_ns = (int64_t)(ms * 1e6);
}

int64_t clock_skew_ns(void)
{
	pthread_once(&skew_once, skew_read);
	return skew_ns;
}

uint64_t clock_real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)((int64_t)((uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec) +
			  clock_skew_ns());
}

double clock_real_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9 + (double)clock_skew_ns() * 1e-9;
}

double clock_mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}
