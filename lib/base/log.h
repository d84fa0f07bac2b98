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

/**
 * Rate limit of repeated errors and warnings (docs/control.md "Limits"): log_err and log_warn
 * print at most log_rl_burst lines per call site in a window of log_rl_window_s seconds
 * (defaults LOG_RL_BURST and LOG_RL_WINDOW_S); the ones beyond are counted, and the next line
 * of that call site after the window prints first one line "suppressed K similar messages in
 * S s (file:line)". log_info and log_debug are not limited.
 */
#define LOG_RL_BURST 20          /* lines per call site and window */
#define LOG_RL_WINDOW_S 1.0      /* window, seconds */
extern unsigned log_rl_burst;
extern double log_rl_window_s;

/** One call site's rate-limit state (a static in the log_err / log_warn expansion). */
struct log_rl {
	double window_start;      /* CLOCK_MONOTONIC seconds the current window started */
	unsigned n;               /* lines printed in the current window */
	unsigned long suppressed; /* lines not printed since the last suppressed-line report */
	double first_suppressed;  /* CLOCK_MONOTONIC seconds of the first of them */
};

/**
 * log_printf_rl - log_printf under the rate limit of call site @rl (@site: "file:line", named
 * in the suppressed-messages line). Lines above log_threshold are neither printed nor counted.
 */
void log_printf_rl(struct log_rl *rl, const char *site, enum log_level level, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#define LOG_STR_(x) #x
#define LOG_STR(x) LOG_STR_(x)
#define log_printf_limited(level, ...) ({ static struct log_rl log_rl_site_; \
	log_printf_rl(&log_rl_site_, __FILE__ ":" LOG_STR(__LINE__), level, __VA_ARGS__); })
#define log_err(...)   log_printf_limited(LOG_ERR, __VA_ARGS__)
#define log_warn(...)  log_printf_limited(LOG_WARN, __VA_ARGS__)
#define log_info(...)  log_printf(LOG_INFO, __VA_ARGS__)
#define log_debug(...) do { if (log_threshold >= LOG_DEBUG) log_printf(LOG_DEBUG, __VA_ARGS__); } while (0)

/**
 * A token bucket shared by a family of lines (e.g. a dataplane's per-transfer INFO lines, which
 * a peer's flood of transfers would otherwise multiply): @rate lines per second on average,
 * bursts of @burst. Initialise with LOG_BUCKET_INIT.
 */
struct log_bucket {
	double rate, burst;       /* lines per second; most lines at once */
	double tokens, last;      /* lines allowed now; CLOCK_MONOTONIC seconds of the last refill */
	unsigned long suppressed; /* lines not printed since the last printed one */
	double first_suppressed;  /* CLOCK_MONOTONIC seconds of the first of them */
};
#define LOG_BUCKET_INIT(rate_, burst_) { .rate = (rate_), .burst = (burst_), .tokens = (burst_) }

/**
 * log_printf_bucket - log_printf when bucket @b has a token (then one is taken); otherwise the
 * line is counted. The next line printed is preceded by "suppressed K lines of @what in S s (at
 * most R per second, bursts of B)". Lines above log_threshold are neither printed nor counted.
 */
void log_printf_bucket(struct log_bucket *b, const char *what, enum log_level level,
		       const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/**
 * log_ratelimited - rate-limited variant for hot paths: prints at most once per @interval_s per
 * call site. Use as: static double last; if (log_ratelimited(&last, 1.0)) log_warn(...);
 * Returns 1 when the caller may print now (and records the time), 0 otherwise.
 */
int log_ratelimited(double *last_s, double interval_s);

#endif
