/* sched_daemon.h - the scheduler daemon (paper §4): life cycle and the poll loop. */
#ifndef MLF_SCHED_DAEMON_H
#define MLF_SCHED_DAEMON_H

#include <signal.h>

#include "sched_state.h"

/** sched_daemon_defaults - fill @cfg with the documented defaults (docs/scheduler.md). */
void sched_daemon_defaults(struct sched_config *cfg);

/**
 * sched_daemon_create - load the cluster config @cluster_path, open the records (if
 * cfg->records) and listen on cfg->listen (or the scheduler host's IP and control_port).
 * Returns a new daemon, or NULL with @err saying why (unreadable/invalid config, no
 * scheduler host and no --listen, unknown --aggregators host, records not writable, address
 * in use).
 */
struct sched *sched_daemon_create(const struct sched_config *cfg, const char *cluster_path,
				  char *err, size_t errlen);

/** sched_daemon_set_hook - call @hook(@arg, ...) after every plan_compute (tests). */
void sched_daemon_set_hook(struct sched *s, sched_batch_hook hook, void *arg);

/**
 * sched_daemon_run - the single-threaded poll loop: accept dataplanes, handle their messages,
 * detect silent peers, plan on arrival (sched_arrival.h) and every batch_s without one
 * (what waits on a timer: the sync timeout, held pulls, drops). Returns 0 when *@stop becomes non-zero
 * (checked at least every 50 ms), or -errno when the listening socket fails.
 */
int sched_daemon_run(struct sched *s, const volatile sig_atomic_t *stop);

/** sched_daemon_free - close every connection and record file, free @s (NULL is fine). */
void sched_daemon_free(struct sched *s);

#endif
