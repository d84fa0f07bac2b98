/* fabric_replica.c - a replica endpoint (paper §3.3): applying copies on chan 4, catch-up from a state transfer, `promote`. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fabric_int.h"
#include "log.h"

/* ||x||_2 of @n floats, accumulated in double. */
static double norm2(const float *x, size_t n)
{
	double s = 0;

	for (size_t i = 0; i < n; i++)
		s += (double)x[i] * (double)x[i];
	return sqrt(s);
}

/* A replica's catch-up: installs the state in @ev with set_state, commits it with state: true. */
static void replica_state(struct mlf *f, const struct mlfabric_event *ev)
{
	const struct mlf_payload_hdr *h = ev->buf.data;
	const float *w = (const float *)((const char *)h + MLF_PAYLOAD_HDR);
	struct mlf_server_state *s = &f->s;
	json_t *m;
	char err[160];
	int rc;

	if (fabric_cmd_payload_check(ev->buf.data, ev->bytes, MLF_PAYLOAD_MAGIC_STATE, err, sizeof(err)) < 0 ||
	    (h->n_floats != 2 * s->n_floats && snprintf(err, sizeof(err), "%llu floats, 2 x the model is %zu",
							  (unsigned long long)h->n_floats, 2 * s->n_floats))) {
		log_err("bad state payload from host %s (transfer %llx): %s; not installed", ev->peer,
			(unsigned long long)ev->id, err);
		return;
	}
	if (!s->set_state) {
		log_err("state from host %s (transfer %llx): no state callbacks set (mlf_set_state_callbacks); "
			"not installed", ev->peer, (unsigned long long)ev->id);
		return;
	}
	if ((rc = s->set_state(s->state_arg, w, w + s->n_floats, s->n_floats, h->version)) < 0) {
		log_err("state from host %s (transfer %llx): set_state refused it (%d); not installed", ev->peer,
			(unsigned long long)ev->id, rc);
		return;
	}
	pthread_mutex_lock(&f->lock);
	s->version = h->version;
	pthread_mutex_unlock(&f->lock);
	fabric_server_sync_reset(f); /* MLfabric-S: the state holds every applied iteration */
	log_info("%s: state of version %lld installed from %s", f->app, (long long)h->version, ev->peer);
	if (f->mode == MLF_MODE_DIRECT)
		return;
	m = fabric_server_commit_msg(ev->id, h->version, NULL);
	json_object_set_new(m, "state", json_true());
	json_object_set_new(m, "history_norm", json_real(norm2(w + s->n_floats, s->n_floats)));
	fabric_core_ctl(f, m);
}

static int replica_received(struct mlf *f, struct mlfabric_event *ev)
{
	const struct mlf_payload_hdr *h = ev->buf.data;

	if (ev->chan != 1 && ev->chan != 4)
		return 0;
	if (ev->chan == 4 && ev->bytes >= MLF_PAYLOAD_HDR && h->magic == MLF_PAYLOAD_MAGIC_STATE)
		replica_state(f, ev);
	else
		fabric_server_apply(f, ev);
	return 1;
}

/* `promote`: the replica becomes the server (chan 1, pulls, commits as the server); answers `promoted`. */
static void cmd_promote(struct mlf *f, const struct fabric_cmd *c)
{
	struct mlf_server_state *s = &f->s;
	double hn = 0;
	int64_t v;
	int rc;

	if ((rc = fabric_core_listen(f, 1)) < 0) {
		log_err("%s: promote: cannot receive on channel 1: %s", f->app, strerror(-rc));
		fabric_core_ctl(f, json_pack("{s:s, s:s}", "type", "error", "reason",
					     "promote: the dataplane refused channel 1"));
		return;
	}
	if (s->get_state) {
		float *w = malloc(2 * s->n_floats * sizeof(float));
		if (w) {
			s->get_state(s->state_arg, w, w + s->n_floats, s->n_floats);
			hn = norm2(w + s->n_floats, s->n_floats);
		}
		free(w);
	}
	fabric_core_set_role(f, FABRIC_ROLE_SERVER, &fabric_server_ops);
	pthread_mutex_lock(&f->lock);
	v = s->version;
	/* a restarted scheduler must hear a server's registration from now on (scheduler_back) */
	json_t *reg = fabric_server_reg_fields(f);
	if (reg) {
		json_object_set_new(reg, "type", json_string("register"));
		json_object_set_new(reg, "role", json_string("server"));
		/* the server it replaces: workers may still name it (docs/control.md `register`) */
		json_t *old = f->reg_msg ? json_object_get(f->reg_msg, "server") : NULL;
		if (json_is_string(old))
			json_object_set_new(reg, "replaces", json_pack("[O]", old));
		json_decref(f->reg_msg);
		f->reg_msg = reg;
	}
	pthread_mutex_unlock(&f->lock);
	if (v != c->version)
		log_warn("%s: promoted at version %lld; the scheduler last saw version %lld", f->app,
			 (long long)v, (long long)c->version);
	log_info("%s: promoted from replica: serving version %lld (history norm %g)", f->app, (long long)v, hn);
	fabric_core_ctl(f, json_pack("{s:s, s:I, s:f}", "type", "promoted", "version", (json_int_t)v, "history_norm", hn));
}

static int replica_command(struct mlf *f, struct fabric_cmd *c)
{
	if (c->kind == FABRIC_CMD_PROMOTE)
		cmd_promote(f, c);
	else if (c->kind == FABRIC_CMD_SNAPSHOT)
		fabric_server_snapshot(f, c->id);
	else if (c->kind == FABRIC_CMD_SYNC_STEP)
		fabric_server_sync_step(f, c);
	else
		return 0;
	return 1;
}

static const struct fabric_role_ops replica_ops = {
	.received = replica_received,
	.command = replica_command,
	.release = fabric_server_sync_release,
};

int mlf_register_as_replica(mlf_t *f, const char *server, const struct mlf_params *p, size_t n,
			    int64_t version0, enum mlf_replication replication, mlf_update_cb on_update,
			    mlf_request_cb on_request, void *arg)
{
	static const uint16_t chans[] = { 4 };

	if (!p || !on_update || !on_request || n == 0 || !server || cluster_find(&f->cl, server) < 0 ||
	    p->div_max < 0 || p->momentum < 0 || p->momentum >= 1 ||
	    (replication != MLF_REPL_MLFABRIC && replication != MLF_REPL_CHAIN)) {
		fabric_core_set_err(f, "register as replica: bad parameters (need callbacks, n > 0, div_max >= 0, "
				       "momentum in [0, 1), replication mlfabric or chain) or unknown server '%s'",
				    server ? server : "(null)");
		return -EINVAL;
	}
	f->s.on_update = on_update;
	f->s.on_request = on_request;
	f->s.arg = arg;
	f->s.n_floats = n;
	f->s.version = version0;
	f->s.params = *p;
	f->s.replication = replication;
	return fabric_core_register(f, FABRIC_ROLE_REPLICA, &replica_ops, chans, 1,
				    json_pack("{s:s, s:f, s:s, s:I, s:I, s:I, s:f}", "server", server,
					      "div_max", p->div_max,
					      "replication", replication == MLF_REPL_CHAIN ? "chain" : "mlfabric",
					      "n_floats", (json_int_t)n, "bytes", (json_int_t)mlf_payload_bytes(n),
					      "version", (json_int_t)version0, "momentum", p->momentum));
}
