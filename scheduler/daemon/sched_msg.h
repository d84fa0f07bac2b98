/* sched_msg.h - the handlers of dataplane and application messages (docs/control.md). */
#ifndef MLF_SCHED_MSG_H
#define MLF_SCHED_MSG_H

#include "sched_state.h"

/**
 * sched_msg_handle - handle one message @msg from the dataplane of connection @ci (index into
 * s->conns): `hello` first (anything else before it closes the connection), then `heartbeat`,
 * `link` (capacities in Gbit/s), `error`, and the applications' `register`, `update`, `pull`,
 * `done`, `commit`, `partial`, `promoted` (paper §4; docs/control.md, docs/replication.md).
 * Bad input is answered with `error` naming the message type and the field; nothing else is
 * returned. @msg stays the caller's.
 */
void sched_msg_handle(struct sched *s, int ci, json_t *msg);

/**
 * sched_msg_frame_error - answer connection @ci with `error` @err for input that is not a
 * message (framing or JSON error reported by ctl_next), and log it.
 */
void sched_msg_frame_error(struct sched *s, int ci, const char *err);

#endif
