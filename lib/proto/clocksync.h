/* clocksync.h - a host's clock offset to the scheduler's, from NTP-style exchanges on the heartbeat (docs/control.md "Clocks"). */
#ifndef MLF_CLOCKSYNC_H
#define MLF_CLOCKSYNC_H

#define CLOCKSYNC_SAMPLES 8 /* exchanges the filter keeps: 2 s of heartbeats at 0.25 s */

/**
 * The offset estimate of one host (RFC 5905 §8 on-wire exchange, §10 clock filter): each
 * heartbeat is one exchange of four CLOCK_REALTIME timestamps, seconds: t1 the host sent it
 * (host clock), t2 the scheduler received it and t3 it answered (scheduler clock), t4 the host
 * received the answer (host clock). One exchange gives the offset theta = ((t2 - t1) + (t3 -
 * t4)) / 2 (scheduler clock minus host clock) and the round-trip delay delta = (t4 - t1) - (t3 -
 * t2); the true offset lies within theta +- delta / 2 whatever the asymmetry of the two paths.
 * The estimate is the theta of the exchange with the smallest delay among the last
 * CLOCKSYNC_SAMPLES (the one least disturbed by queueing), its uncertainty that delay / 2.
 */
struct clocksync {
	double theta[CLOCKSYNC_SAMPLES], delta[CLOCKSYNC_SAMPLES]; /* s; a ring */
	int n, next;      /* samples held, next slot */
	double offset_s;  /* scheduler clock - host clock, s (0 until known) */
	double err_s;     /* uncertainty of offset_s, s: half the chosen exchange's delay */
	int known;        /* at least one valid exchange */
};

/** clocksync_init - no estimate: offset 0, not known. Cannot fail. */
void clocksync_init(struct clocksync *c);

/**
 * clocksync_sample - one exchange (@t1, @t2, @t3, @t4 as in struct clocksync, seconds) into @c;
 * the estimate follows. Returns 0, or -EINVAL for an exchange that cannot be one (a timestamp
 * not finite or <= 0, t4 < t1, t3 < t2, or a negative delay beyond 1 ms of float and clock
 * noise): it is ignored.
 */
int clocksync_sample(struct clocksync *c, double t1, double t2, double t3, double t4);

#endif
