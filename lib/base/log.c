/* log.c - line-oriented logging to stderr with a wall-clock timestamp and component name. */
#include "log.h"

#include "clock.h"

#include <stdarg.h>
#include <string.h>

enum log_level log_threshold = LOG_INFO;
unsigned log_rl_burst = LOG_RL_BURST;
double log_rl_window_s = LOG_RL_WINDOW_S;
const char *log_component = "mlf";

static const char *const level_names[] = { "ERROR", "WARN", "INFO", "DEBUG" };

/* One line; the caller holds the stdio lock of stderr. */
static void vline(enum log_level level, const char *fmt, va_list ap)
{
	fprintf(stderr, "%.6f %s %s: ", clock_real_s(), level_names[level], log_component);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

static void line(enum log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vline(level, fmt, ap);
	va_end(ap);
}

void log_printf(enum log_level level, const char *fmt, ...)
{
	va_list ap;

	if (level > log_threshold)
		return;
	/* One fprintf per part under the stdio lock keeps lines from different threads whole. */
	flockfile(stderr);
	va_start(ap, fmt);
	vline(level, fmt, ap);
	va_end(ap);
	funlockfile(stderr);
}

void log_printf_rl(struct log_rl *rl, const char *site, enum log_level level, const char *fmt, ...)
{
	va_list ap;

	if (level > log_threshold)
		return;
	const char *base = strrchr(site, '/');
	double now = clock_mono_s();
	/* the stdio lock of stderr also guards the call site's counters */
	flockfile(stderr);
	if (rl->window_start == 0 || now - rl->window_start >= log_rl_window_s) {
		if (rl->suppressed)
			line(level, "suppressed %lu similar messages in %.1f s (%s)", rl->suppressed,
			     now - rl->first_suppressed, base ? base + 1 : site);
		rl->window_start = now;
		rl->n = 0;
		rl->suppressed = 0;
	}
	if (rl->n < log_rl_burst) {
		rl->n++;
		va_start(ap, fmt);
		vline(level, fmt, ap);
		va_end(ap);
	} else if (rl->suppressed++ == 0) {
		rl->first_suppressed = now;
	}
	funlockfile(stderr);
}

/* Take a token of @b at @now (refilled since its last use); 1 when there was one. */
static int bucket_take(struct log_bucket *b, double now)
{
	if (b->last > 0)
		b->tokens += (now - b->last) * b->rate;
	if (b->tokens > b->burst)
		b->tokens = b->burst;
	b->last = now;
	if (b->tokens < 1)
		return 0;
	b->tokens -= 1;
	return 1;
}

void log_printf_bucket(struct log_bucket *b, const char *what, enum log_level level,
		       const char *fmt, ...)
{
	va_list ap;

	if (level > log_threshold)
		return;
	double now = clock_mono_s();
	flockfile(stderr); /* also guards the bucket */
	if (!bucket_take(b, now)) {
		if (b->suppressed++ == 0)
			b->first_suppressed = now;
		funlockfile(stderr);
		return;
	}
	if (b->suppressed)
		line(level, "suppressed %lu lines of %s in %.1f s (at most %g per second, bursts of %g)",
		     b->suppressed, what, now - b->first_suppressed, b->rate, b->burst);
	b->suppressed = 0;
	va_start(ap, fmt);
	vline(level, fmt, ap);
	va_end(ap);
	funlockfile(stderr);
}

int log_ratelimited(double *last_s, double interval_s)
{
	double now = clock_real_s();

	if (now - *last_s < interval_s)
		return 0;
	*last_s = now;
	return 1;
}
