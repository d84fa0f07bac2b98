/* fabric_wait.c - waits of an endpoint on its peers: logged once past a threshold, naming the
 * peer, and reported to the scheduler (`waits`, docs/control.md; shown by tools/mlf-top). */
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "fabric_int.h"
#include "log.h"

#define WAIT_CHECK_S 0.1      /* collect the waits at most this often */
#define WAIT_DEFAULT_S 2.0    /* mlf_opts.wait_log_s 0 */

/* The host of worker-chosen update id @id ((host index + 1) << 40 | sequence), or "?". */
static const char *update_host(const struct mlf *f, uint64_t id)
{
	uint64_t h = id >> 40;

	return h >= 1 && h <= (uint64_t)f->cl.n_hosts ? f->cl.hosts[h - 1].name : "?";
}

/* 1 when an input of the aggregator carries update @id (read from the role's state: the core
 * calls no role function by name, fabric_int.h). */
static int agg_has_input(const struct mlf *f, uint64_t id)
{
	for (int i = 0; i < f->agg.n_inputs; i++) {
		const struct mlf_payload_hdr *h = f->agg.inputs[i].ev.buf.data;
		if (f->agg.inputs[i].t < 0)
			continue;
		for (uint32_t k = 0; k < h->n_parts; k++)
			if (h->parts[k].id == id)
				return 1;
	}
	return 0;
}

/* Append a wait to @w (n entries) unless full; keeps logged/since of the same wait in @old. */
static void add_wait(struct fabric_wait *w, int *n, const struct mlf_wait_state *old,
		     const char *what, const char *peer, double since)
{
	if (*n >= FABRIC_WAITS_MAX)
		return;
	struct fabric_wait *e = &w[(*n)++];
	snprintf(e->what, sizeof(e->what), "%s", what);
	snprintf(e->peer, sizeof(e->peer), "%s", peer);
	e->since = since;
	e->logged = 0;
	for (int i = 0; i < old->n; i++)
		if (!strcmp(old->w[i].what, e->what) && !strcmp(old->w[i].peer, e->peer) &&
		    old->w[i].since == since)
			e->logged = old->w[i].logged;
}

/* The waits now, into @w; returns their number. Caller holds the lock. */
static int collect(struct mlf *f, struct fabric_wait *w, double now)
{
	int n = 0;
	char what[96];

	for (int i = 0; f->role == FABRIC_ROLE_WORKER && i < FABRIC_GETS_MAX; i++) {
		const struct fabric_get *g = &f->w.get[i];

		if (g->active && !g->done)
			add_wait(w, &n, &f->waits, g->min_version >= 0 ? "model (get, min version)" : "model (get)",
				 g->server, g->since);
	}
	if (f->role == FABRIC_ROLE_AGGREGATOR)
		for (const struct fabric_agg_cmd *a = f->agg.cmds; a; a = a->next) {
			if (now < a->c.start)
				continue;
			for (int i = 0; i < a->c.n_ids; i++)
				if (!agg_has_input(f, a->c.ids[i])) {
					snprintf(what, sizeof(what), "input update %llu of aggregate %llu",
						 (unsigned long long)a->c.ids[i],
						 (unsigned long long)a->c.id);
					add_wait(w, &n, &f->waits, what, update_host(f, a->c.ids[i]),
						 a->c.start);
				}
		}
	return n;
}

json_t *fabric_wait_check(struct mlf *f)
{
	struct mlf_wait_state *ws = &f->waits;
	struct fabric_wait now_w[FABRIC_WAITS_MAX];
	double now = clock_real_s();
	int changed = 0, n_logged = 0;
	json_t *msg = NULL;

	if (ws->threshold_s < 0 || now - ws->last_check < WAIT_CHECK_S)
		return NULL;
	ws->last_check = now;
	double thr = ws->threshold_s > 0 ? ws->threshold_s : WAIT_DEFAULT_S;
	pthread_mutex_lock(&f->lock);
	int n = collect(f, now_w, now);
	for (int i = 0; i < n; i++) {
		if (!now_w[i].logged && now - now_w[i].since >= thr) {
			now_w[i].logged = 1;
			changed = 1;
			log_warn("%s: waiting %.1f s for %s from %s", f->app, now - now_w[i].since,
				 now_w[i].what, now_w[i].peer);
		}
		n_logged += now_w[i].logged;
	}
	/* a reported wait ended: the list shrinks */
	for (int i = 0; i < ws->n; i++) {
		int still = 0;
		for (int j = 0; j < n && ws->w[i].logged; j++)
			still |= !strcmp(now_w[j].what, ws->w[i].what) &&
				 !strcmp(now_w[j].peer, ws->w[i].peer);
		if (ws->w[i].logged && !still)
			changed = 1;
	}
	memcpy(ws->w, now_w, sizeof(now_w[0]) * (size_t)n);
	ws->n = n;
	if (changed && f->mode != MLF_MODE_DIRECT && f->reg_state == 1 && !f->sched_lost &&
	    (n_logged || ws->n_reported)) {
		json_t *a = json_array();
		for (int i = 0; i < n; i++)
			if (now_w[i].logged)
				json_array_append_new(a, json_pack("{s:s, s:s, s:f}", "what",
								   now_w[i].what, "peer", now_w[i].peer,
								   "since", now_w[i].since));
		msg = json_pack("{s:s, s:o}", "type", "waits", "waits", a);
		ws->n_reported = n_logged;
	}
	pthread_mutex_unlock(&f->lock);
	return msg;
}
