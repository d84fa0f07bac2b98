/* log.c - line-oriented logging to stderr with a wall-clock timestamp and component name. */
#include "log.h"

#include "clock.h"

#include <stdarg.h>

enum log_level log_threshold = LOG_INFO;
const char *log_component = "mlf";

static const char *const level_names[] = { "ERROR", "WARN", "INFO", "DEBUG" };

void log_printf(enum log_level level, const char *fmt, ...)
{
	va_list ap;

	if (level > log_threshold)
		return;
	/* One fprintf per part under the stdio lock keeps lines from different threads whole. */
	flockfile(stderr);
	fprintf(stderr, "%.6f %s %s: ", clock_real_s(), level_names[level], log_component);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
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
