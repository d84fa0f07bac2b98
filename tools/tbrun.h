/* tbrun.h - run ip/tc commands without a shell and clean up processes left in namespaces. */
#ifndef MLF_TBRUN_H
#define MLF_TBRUN_H

#include <stddef.h>
#include <sys/types.h>

#include "tbcmd.h"

/**
 * tbrun_run - run @a (searched in PATH, no shell) and wait for it. Its stdout is captured into
 * @out (@outlen bytes, NUL-terminated, may be NULL to discard); its stderr into @err.
 * Returns the exit status (0 = success, 1..255 = the command failed, 128+N = killed by signal N),
 * or -errno when it could not be started (@err then says why).
 */
int tbrun_run(const struct tbcmd_argv *a, char *out, size_t outlen, char *err, size_t errlen);

/**
 * tbrun_must - tbrun_run() that logs a failure as one line naming @what (usually the host), the
 * command and its stderr: `host a: 'ip -n pair-a link set eth0 up' failed (exit 1): <stderr>`.
 * Returns 0, or -1 after logging.
 */
int tbrun_must(const char *what, const struct tbcmd_argv *a);

/** tbrun_ns_exists - 1 when the named network namespace exists (/run/netns/<ns>), else 0. */
int tbrun_ns_exists(const char *ns);

/**
 * tbrun_ns_pids - process ids running in namespace @ns (as `ip netns pids` lists them).
 * Fills at most @max entries of @pids. Returns the count, or -1 (logged) when `ip` failed.
 */
int tbrun_ns_pids(const char *ns, pid_t *pids, int max);

/**
 * tbrun_ns_kill - stop every process in @ns: SIGTERM, then SIGKILL to those still alive after
 * @grace_ms milliseconds. Returns the number of processes signalled, or -1 (logged).
 */
int tbrun_ns_kill(const char *ns, int grace_ms);

#endif
