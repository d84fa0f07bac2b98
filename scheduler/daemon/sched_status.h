/* sched_status.h - the read-only `status` answer (mlf-top, docs/mlf-top.md) and the waits
 * the applications report (`waits`, docs/control.md). */
#ifndef MLF_SCHED_STATUS_H
#define MLF_SCHED_STATUS_H

#include "sched_state.h"

#define SCHED_STATUS_MAX_XFERS 256 /* transfers listed in one answer (the count is complete) */
#define SCHED_STATUS_MAX_WAITS 64  /* waits kept per application */
#define SCHED_STATUS_LATE_S 0.1    /* a transfer this many seconds past its planned end without
				      * `done` counts as a wait on its source (a done report normally
				      * comes within milliseconds; 0.1 s is one monitor period) */

/**
 * sched_status_build - the `status` answer: one JSON object describing the cluster as the
 * scheduler sees it at CLOCK_REALTIME @now (seconds): per host the capacities in Gbit/s the
 * network model uses now, the measured tx/rx rate of the newest `link` report, whether its
 * dataplane is alive and how long it has been silent (s), the registered applications; the
 * transfers in flight (commanded, not reported done) with their planned end and how late
 * they are (s); the updates held and pulls not yet planned per worker; the waits the
 * applications reported; and the scheduler's own list of hosts it waits on (a transfer past
 * its planned end: its source; a silent dataplane); and per running policy its state
 * ("policies", sched_policy_status). Layout in docs/mlf-top.md. Returns a new
 * reference, NULL when out of memory.
 */
json_t *sched_status_build(const struct sched *s, double now);

/**
 * sched_status_request - answer `status` on connection @ci at @now. A connection that has
 * not said `hello` becomes a read-only viewer: it may only send more `status` requests
 * (anything else is refused and closes it) and is never timed out for lacking a hello.
 * When the cluster has a key, only a host's connection or a viewer that authenticated
 * (`hello` with "viewer": true, challenge, `auth` as role "viewer"; docs/security.md) is
 * answered; any other gets an error and is closed, with a WARN naming its address.
 */
void sched_status_request(struct sched *s, int ci, double now);

/**
 * sched_status_waits - the `waits` message of application @app at host @host: its list of
 * current waits longer than its threshold (`waits`: array of {what, peer, since}; empty when
 * nothing waits any more) replaces the one it reported before. Returns 0, or -1 with @err
 * naming the bad field.
 */
int sched_status_waits(struct sched *s, int host, const char *app, json_t *msg, char *err,
		       size_t errlen);

/** sched_status_free - forget every reported wait (in sched_daemon_free). */
void sched_status_free(struct sched *s);

#endif
