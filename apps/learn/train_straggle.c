/* train_straggle.c - stragglers (paper §7, compute settings C1..C3), the emulated accelerator and the deterministic generator. */
#include "train_straggle.h"

#include "clock.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

uint64_t train_rng_next(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

int train_straggle_parse(const char *spec, uint64_t seed, struct train_straggle *st)
{
	static const struct { const char *name; double r, s; } named[] = {
		{ "C1", 0.10, 2 }, { "C2", 0.10, 4 }, { "C3", 0.04, 2 }, { "none", 0, 1 },
	};
	char *end;

	memset(st, 0, sizeof(*st));
	st->state = seed ^ 0x5374726167676c65ULL;
	for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++)
		if (!strcasecmp(spec, named[i].name)) {
			st->rate = named[i].r;
			st->factor = named[i].s;
			return 0;
		}
	st->rate = strtod(spec, &end);
	if (end == spec || *end != ',')
		return -EINVAL;
	spec = end + 1;
	st->factor = strtod(spec, &end);
	if (end == spec || *end)
		return -EINVAL;
	if (!(st->rate >= 0 && st->rate <= 1) || !(st->factor >= 1))
		return -EINVAL;
	return 0;
}

double train_straggle_next(struct train_straggle *st)
{
	double u = (double)(train_rng_next(&st->state) >> 11) * (1.0 / 9007199254740992.0);

	return u < st->rate ? st->factor : 1.0;
}

/* Sleeps @s seconds (> 0), resuming after signals. */
static void sleep_s(double s)
{
	struct timespec ts;

	ts.tv_sec = (time_t)s;
	ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

double train_compute_pad(double t_start, double min_s)
{
	double elapsed = clock_real_s() - t_start;

	if (min_s > elapsed) {
		sleep_s(min_s - elapsed);
		return min_s;
	}
	return elapsed;
}

double train_straggle_sleep(double compute_s, double factor)
{
	double extra = (factor - 1) * compute_s;

	if (!(extra > 0))
		return 0;
	sleep_s(extra);
	return extra;
}
