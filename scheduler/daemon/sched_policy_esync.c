/* sched_policy_esync.c - ESync's State Server (esync.txt Alg. 2; docs/scheduler.md "ESync's
 * State Server"): a worker asks, before each local iteration, whether to aggregate now. */
#include "sched_policy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_esync.h"
#include "sched_state.h"

/* Its state: one record per cluster host (its worker at the State Server). */
static int esync_init(struct sched *s, void **data, char *err, size_t len)
{
	*data = calloc((size_t)s->cl.n_hosts + 1, sizeof(struct esync_rec));
	if (!*data) {
		snprintf(err, len, "ESync's State Server: out of memory");
		return -ENOMEM;
	}
	return 0;
}

static void esync_fini(struct sched *s, void *data)
{
	(void)s;
	free(data);
}

/*
 * `state_query` {app, seq, round, k, c}: the worker's communication round, the local iterations
 * done in it, the seconds its last one took. Answered with `state` {seq, ready}.
 */
static int state_query(struct sched *s, void *data, int h, const char *app, const char *type,
		       json_t *m, double now, char *err, size_t len)
{
	struct esync_rec *recs = data;
	json_t *c = json_object_get(m, "c");
	const char *const keys[] = { "seq", "round", "k" };
	int64_t v[3];

	(void)type;
	for (int i = 0; i < 3; i++) {
		json_t *x = json_object_get(m, keys[i]);
		if (!json_is_integer(x)) {
			snprintf(err, len, "state_query: field \"%s\" %s", keys[i],
				 x ? "is not an integer" : "is missing");
			return -EINVAL;
		}
		v[i] = json_integer_value(x);
	}
	int64_t seq = v[0], round = v[1], k = v[2];
	if (!json_is_number(c) || !(json_number_value(c) >= 0 && json_number_value(c) < 3600)) {
		snprintf(err, len, "state_query: field \"c\" must be seconds in [0, 3600)");
		return -EINVAL;
	}
	if (seq < 0 || round < 0 || round > SCHED_MAX_VERSION || k < 0 || k > (1 << 30)) {
		snprintf(err, len, "state_query: seq, round or k out of range (k at most 2^30)");
		return -EINVAL;
	}
	if (strncmp(app, "worker@", 7)) {
		snprintf(err, len, "state_query: only a worker asks the State Server");
		return -EINVAL;
	}
	if (!recs) {
		snprintf(err, len, "state_query: the State Server does not run");
		return -EINVAL;
	}
	for (int i = 0; i < s->cl.n_hosts; i++)
		recs[i].alive = s->hosts[i].alive && (s->hosts[i].apps & SCHED_ROLE_WORKER);
	int ready = esync_query(recs, s->cl.n_hosts, h, round, (int)k, json_number_value(c), now,
				ESYNC_EPS_S);
	sched_to_app(s, "worker", h, json_pack("{s:s, s:I, s:b}", "type", "state", "seq",
					       (json_int_t)seq, "ready", ready));
	return 0;
}

static const char *const esync_types[] = { "state_query", NULL };

const struct sched_policy_ops sched_policy_esync = {
	.name = "esync",
	.msg_types = esync_types,
	.init = esync_init,
	.fini = esync_fini,
	.on_msg = state_query,
};
