/* log.h - the one logging macro family of MLfabric-C (log_err/warn/info/debug). */
#ifndef MLF_LOG_H
#define MLF_LOG_H

#include <stdio.h>
#include <time.h>

/** Log levels, lowest is most severe. */
enum log_level { LOG_ERR = 0, LOG_WARN = 1, LOG_INFO = 2, LOG_DEBUG = 3 };

/** Current threshold; messages above it are not printed. Default LOG_INFO. */
extern enum log_level log_threshold;

/** Component name printed in every line (e.g. "dataplane[w0]"); set once at start-up. */
extern const char *log_component;

/**
 * log_printf - print one line to stderr: "<realtime s> <level> <component>: <message>".
 * @level: severity; lines with level > log_threshold are skipped.
 * @fmt:   printf format of the message, without a trailing newline.
 */
void log_printf(enum log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define log_err(...)   log_printf(LOG_ERR, __VA_ARGS__)
#define log_warn(...)  log_printf(LOG_WARN, __VA_ARGS__)
#define log_info(...)  log_printf(LOG_INFO, __VA_ARGS__)
#define log_debug(...) do { if (log_threshold >= LOG_DEBUG) log_printf(LOG_DEBUG, __VA_ARGS__); } while (0)

/**
 * log_ratelimited - rate-limited variant for hot paths: prints at most once per @interval_s per
 * call site. Use as: static double last; if (log_ratelimited(&last, 1.0)) log_warn(...);
 * Returns 1 when the caller may print now (and records the time), 0 otherwise.
 */
int log_ratelimited(double *last_s, double interval_s);

#endif
