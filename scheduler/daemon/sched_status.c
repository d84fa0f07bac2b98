/* sched_status.c - the read-only `status` answer (mlf-top) and the applications' `waits`. */
#include "sched_status.h"

#include <string.h>

#include "log.h"
#include "sched_batch.h"

static const char *what_name(enum sched_what w)
{
	switch (w) {
	case SCHED_WHAT_UPDATE: return "update";
	case SCHED_WHAT_AGGREGATE: return "aggregate";
	case SCHED_WHAT_MODEL: return "model";
	default: return "state";
	}
}

/* The newest link report of @h, or NULL. */
/* A host's port counters and link state from its newest link report with them, or null. */
static json_t *port_json(const struct sched_port_report *p)
{
	if (!p->known)
		return json_null();
	return json_pack("{s:s, s:b, s:I, s:I, s:I, s:I, s:I, s:I}", "name", p->name, "link_up", p->link_up,
			 "speed_mbps", (json_int_t)p->speed_mbps, "imissed", (json_int_t)p->imissed,
			 "ierrors", (json_int_t)p->ierrors, "rx_nombuf", (json_int_t)p->rx_nombuf,
			 "oerrors", (json_int_t)p->oerrors, "link_changes", (json_int_t)p->link_changes);
}

static const struct sched_link_report *newest_report(const struct sched_host *h)
{
	if (!h->n_reports)
		return NULL;
	return &h->reports[(h->next_report + SCHED_LINK_HIST - 1) % SCHED_LINK_HIST];
}

static json_t *host_json(const struct sched *s, int h, double now)
{
	const struct sched_host *sh = &s->hosts[h];
	const struct sched_link_report *r = newest_report(sh);
	json_t *roles = json_array(), *apps = json_array();
	static const char *const cl_roles[] = { "worker", "server", "replica", "aggregator",
						"scheduler" };

	for (unsigned b = 0; b < sizeof(cl_roles) / sizeof(cl_roles[0]); b++)
		if (s->cl.hosts[h].roles & (1u << b))
			json_array_append_new(roles, json_string(cl_roles[b]));
	for (unsigned b = SCHED_ROLE_WORKER; b <= SCHED_ROLE_REPLICA; b <<= 1)
		if (sh->apps & b)
			json_array_append_new(apps, json_string(sched_role_name(b)));
	json_t *o = json_pack("{s:s, s:o, s:o, s:b, s:b, s:f, s:f}", "name", s->cl.hosts[h].name,
			      "roles", roles, "apps", apps, "connected", sh->conn >= 0, "alive",
			      sh->alive, "up_gbps", sched_batch_link_gbps(s, h, 1, now),
			      "down_gbps", sched_batch_link_gbps(s, h, 0, now));
	json_object_set_new(o, "silent_s", sh->last_heard > 0 ? json_real(now - sh->last_heard) :
			    json_null());
	/* its clock (docs/control.md "Clocks"): offset to ours and how far its starts were off */
	json_object_set_new(o, "clock_offset_ms", sh->clk_known ? json_real(sh->clk_offset_s * 1e3) :
			    json_null());
	json_object_set_new(o, "clock_err_ms", sh->clk_known ? json_real(sh->clk_err_s * 1e3) :
			    json_null());
	json_object_set_new(o, "starts", json_integer((json_int_t)sh->n_starts));
	json_object_set_new(o, "start_err_mean_ms", sh->n_starts ?
			    json_real(sh->start_err_sum_s / (double)sh->n_starts * 1e3) : json_null());
	json_object_set_new(o, "start_err_max_ms", sh->n_starts ?
			    json_real(sh->start_err_max_s * 1e3) : json_null());
	/* the measured estimates (sched_netmon.h), whether or not the plan uses them */
	json_object_set_new(o, "est_up_gbps", json_real(sched_netmon_gbps(s, h, 1)));
	json_object_set_new(o, "est_down_gbps", json_real(sched_netmon_gbps(s, h, 0)));
	if (r) {
		json_object_set_new(o, "tx_gbps", json_real(r->tx_gbps));
		json_object_set_new(o, "rx_gbps", json_real(r->rx_gbps));
		json_object_set_new(o, "link_age_s", json_real(now - r->t));
	} else {
		json_object_set_new(o, "tx_gbps", json_null());
		json_object_set_new(o, "rx_gbps", json_null());
		json_object_set_new(o, "link_age_s", json_null());
	}
	json_object_set_new(o, "port", port_json(&sh->port));
	return o;
}

/* Per worker: updates held (announced, not planned), planned-not-committed, pulls waiting. */
static json_t *workers_json(const struct sched *s, double now)
{
	json_t *a = json_array();

	for (int h = 0; h < s->cl.n_hosts; h++) {
		int held = 0, planned = 0, pulls = 0;
		double oldest_held = 0, oldest_pull = 0;
		uint64_t held_bytes = 0;

		for (int i = 0; i < s->n_upd; i++) {
			const struct sched_update *u = &s->upd[i];
			if (u->worker != h)
				continue;
			if (u->state == SCHED_UPD_PENDING) {
				held++;
				held_bytes += u->bytes;
				if (now - u->t_arrival > oldest_held)
					oldest_held = now - u->t_arrival;
			} else if (u->state == SCHED_UPD_PLANNED) {
				planned++;
			}
		}
		for (int i = 0; i < s->n_pulls; i++)
			if (s->pulls[i].worker == h) {
				pulls++;
				if (now - s->pulls[i].t_arrival > oldest_pull)
					oldest_pull = now - s->pulls[i].t_arrival;
			}
		if (!held && !planned && !pulls && !(s->hosts[h].apps & SCHED_ROLE_WORKER))
			continue;
		json_array_append_new(a, json_pack("{s:s, s:i, s:I, s:f, s:i, s:i, s:f}", "worker",
						   s->cl.hosts[h].name, "held", held, "held_bytes",
						   (json_int_t)held_bytes, "held_oldest_s", oldest_held,
						   "planned", planned, "pulls", pulls,
						   "pull_oldest_s", oldest_pull));
	}
	return a;
}

/* Transfers in flight into *@xs (at most SCHED_STATUS_MAX_XFERS), the late ones into @late. */
static int xfers_json(const struct sched *s, double now, json_t *xs, json_t *late)
{
	int n = 0;

	for (int i = 0; i < s->n_xfers; i++) {
		const struct sched_xfer *x = &s->xfers[i];
		double late_s = now - s->t0 - x->end;

		if (x->done)
			continue;
		n++;
		if (late_s < 0)
			late_s = 0;
		if (json_array_size(xs) < SCHED_STATUS_MAX_XFERS)
			json_array_append_new(xs, json_pack(
				"{s:I, s:s, s:I, s:s, s:s, s:i, s:I, s:f, s:f, s:f, s:b}", "xfer",
				(json_int_t)x->xfer, "what", what_name(x->what), "id", (json_int_t)x->id,
				"src", s->cl.hosts[x->src].name, "dst", s->cl.hosts[x->dst].name,
				"chan", x->chan, "bytes", (json_int_t)x->bytes, "t_start",
				s->t0 + x->start, "t_end", s->t0 + x->end, "late_s", late_s, "replica",
				x->replica));
		if (late_s >= SCHED_STATUS_LATE_S) {
			char what[160];
			snprintf(what, sizeof(what), "%s transfer %llu to %s (planned end passed)",
				 what_name(x->what), (unsigned long long)x->xfer,
				 s->cl.hosts[x->dst].name);
			json_array_append_new(late, json_pack("{s:s, s:s, s:s, s:f}", "who", "scheduler",
							      "what", what, "peer",
							      s->cl.hosts[x->src].name, "wait_s",
							      late_s));
		}
	}
	return n;
}

/* Hosts whose dataplane the scheduler heard from once and that are dead or silent > 0.5 s. */
static void silent_json(const struct sched *s, double now, json_t *late)
{
	for (int h = 0; h < s->cl.n_hosts; h++) {
		const struct sched_host *sh = &s->hosts[h];
		double silent = now - sh->last_heard;

		if (sh->last_heard <= 0 || (sh->alive && silent <= 0.5))
			continue;
		json_array_append_new(late, json_pack("{s:s, s:s, s:s, s:f}", "who", "scheduler",
						      "what", sh->alive ? "dataplane heartbeat" :
						      "dataplane (declared dead)", "peer",
						      s->cl.hosts[h].name, "wait_s", silent));
	}
}

/* The applications' reported waits of hosts still alive, with their age at @now. */
static json_t *waits_json(const struct sched *s, double now)
{
	json_t *a = json_array(), *v;
	const char *app;

	if (!s->app_waits)
		return a;
	json_object_foreach(s->app_waits, app, v) {
		int h = (int)json_integer_value(json_object_get(v, "host"));
		json_t *w;
		size_t k;

		if (h < 0 || h >= s->cl.n_hosts || !s->hosts[h].alive)
			continue;
		json_array_foreach(json_object_get(v, "waits"), k, w) {
			double since = json_number_value(json_object_get(w, "since"));
			json_array_append_new(a, json_pack("{s:s, s:s, s:O, s:O, s:f, s:f}", "app", app,
							   "host", s->cl.hosts[h].name, "what",
							   json_object_get(w, "what"), "peer",
							   json_object_get(w, "peer"), "since", since,
							   "wait_s", now - since));
		}
	}
	return a;
}

json_t *sched_status_build(const struct sched *s, double now)
{
	json_t *hosts = json_array(), *xs = json_array(), *late = json_array();

	for (int h = 0; h < s->cl.n_hosts; h++)
		json_array_append_new(hosts, host_json(s, h, now));
	int n_xfers = xfers_json(s, now, xs, late);
	silent_json(s, now, late);
	json_t *srv = json_pack("{s:s?, s:s, s:I, s:i}", "host", s->server.host >= 0 ?
				s->cl.hosts[s->server.host].name : NULL, "mode",
				s->server.sync ? "mlfabric-s" : "mlfabric-a", "version",
				(json_int_t)s->server.version, "n_workers", s->server.n_workers);
	return json_pack("{s:s, s:s, s:f, s:f, s:i, s:f, s:o, s:o, s:i, s:o, s:o, s:o, s:o, s:o*}",
			 "type", "status", "cluster", s->cl.name, "t", now, "uptime_s", now - s->t0,
			 "batches", s->batch_no, "peer_timeout_s", s->cfg.peer_timeout_s, "server",
			 srv, "hosts", hosts, "n_transfers", n_xfers, "transfers", xs, "workers",
			 workers_json(s, now), "waits", waits_json(s, now), "late", late, "policies",
			 sched_policy_status(s, now));
}

void sched_status_request(struct sched *s, int ci, double now)
{
	struct sched_conn *c = &s->conns[ci];

	if (s->auth_on && c->host < 0 && !c->viewer) {
		char who[64];
		sched_conn_peer(s, ci, who, sizeof(who));
		log_warn("control connection from %s: status without authenticating: refused (cluster %s "
			 "has a key_file)", who, s->cl.name);
		sched_conn_queue(s, ci, json_pack("{s:s, s:s}", "type", "error", "reason",
						  "status: this cluster authenticates its viewers: send hello with "
						  "\"viewer\": true and a nonce first (key_file, docs/security.md)"));
		c->closing = 1;
		return;
	}
	if (c->host < 0) {
		c->viewer = 1;
		sched_conn_trust(s, ci);
	}
	json_t *st = sched_status_build(s, now);
	if (!st)
		log_err("status: out of memory");
	sched_conn_queue(s, ci, st);
}

int sched_status_waits(struct sched *s, int host, const char *app, json_t *msg, char *err,
		       size_t errlen)
{
	json_t *ws = json_object_get(msg, "waits"), *w;
	size_t k;

	if (!json_is_array(ws)) {
		snprintf(err, errlen, "waits: field \"waits\" %s", ws ? "is not an array" :
			 "is missing");
		return -1;
	}
	if (json_array_size(ws) > SCHED_STATUS_MAX_WAITS) {
		snprintf(err, errlen, "waits: field \"waits\" has more than %d entries",
			 SCHED_STATUS_MAX_WAITS);
		return -1;
	}
	json_array_foreach(ws, k, w)
		if (!json_is_string(json_object_get(w, "what")) ||
		    !json_is_string(json_object_get(w, "peer")) ||
		    !json_is_number(json_object_get(w, "since"))) {
			snprintf(err, errlen, "waits: entry %zu needs string \"what\", string \"peer\""
				 " and number \"since\"", k);
			return -1;
		}
	if (!s->app_waits && !(s->app_waits = json_object())) {
		snprintf(err, errlen, "waits: out of memory");
		return -1;
	}
	if (!json_array_size(ws)) {
		json_object_del(s->app_waits, app);
		return 0;
	}
	json_object_set_new(s->app_waits, app, json_pack("{s:i, s:O}", "host", host, "waits", ws));
	return 0;
}

void sched_status_free(struct sched *s)
{
	json_decref(s->app_waits);
	s->app_waits = NULL;
}
