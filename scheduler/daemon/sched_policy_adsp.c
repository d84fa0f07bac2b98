/* sched_policy_adsp.c - ADSP in the running scheduler (adsp-aaai2020 Alg. 1-2; docs/scheduler.md
 * "ADSP's commit rates"): commit rates to the workers at every checkpoint, the server's loss
 * reports into the commit-rate search (sched_adsp.c), one adsp.jsonl line per checkpoint. */
#include "sched_policy.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "sched_rec.h"
#include "sched_state.h"

/* The policy's state. */
struct adsp_run {
	struct adsp a;  /* the commit-rate controller */
	FILE *rec;      /* adsp.jsonl (NULL: records off) */
};

static const char *const phase_name[] = { "eval-r", "eval-2r", "fixed" };

static int live_worker(const struct sched *s, int h)
{
	return s->hosts[h].alive && (s->hosts[h].apps & SCHED_ROLE_WORKER);
}

static int adsp_start(struct sched *s, void **data, char *err, size_t len)
{
	const struct adsp_cfg *c = &s->cfg.adsp;
	struct adsp_run *r = calloc(1, sizeof(*r));

	*data = r;
	if (!r) {
		snprintf(err, len, "ADSP: out of memory");
		return -ENOMEM;
	}
	int rc = sched_rec_open_file(s, "adsp.jsonl", &r->rec, err, len);
	if (!rc && adsp_init(&r->a, c, s->t0 + c->gamma_s)) {
		snprintf(err, len, "--adsp %g s, --adsp-eval %g s, --adsp-epoch %g s, --adsp-rate %d, "
			 "--adsp-max-lag %d: the evaluation window must be at least one check period",
			 c->gamma_s, c->eval_s, c->epoch_s, c->fixed_r, c->max_lag_r);
		rc = -EINVAL;
	}
	if (rc) {
		if (r->rec)
			fclose(r->rec);
		free(r);
		*data = NULL;
	}
	return rc;
}

static void adsp_stop(struct sched *s, void *data)
{
	struct adsp_run *r = data;

	(void)s;
	if (r && r->rec)
		fclose(r->rec);
	free(r);
}

/* Send host @h's worker its commit rate; returns its ΔC_i. */
static int64_t send_rate(struct sched *s, struct adsp_run *r, int h)
{
	int64_t c = (int64_t)s->hosts[h].n_pushed, delta = adsp_delta(&r->a, c);

	sched_to_app(s, "worker", h, json_pack("{s:s, s:I, s:I, s:f, s:i, s:I, s:I}", "type",
					       "commit_rate", "check", (json_int_t)r->a.check,
					       "delta", (json_int_t)delta,
					       "period_s", r->a.cfg.gamma_s, "r", r->a.r,
					       "c_target", (json_int_t)r->a.c_target, "c",
					       (json_int_t)c));
	return delta;
}

static double next_check(const struct sched *s, const void *data)
{
	(void)s;
	return ((const struct adsp_run *)data)->a.next_check;
}

/*
 * A checkpoint at @now: advance the commit-rate search (adsp_checkpoint, with c_i = the updates
 * each live worker announced), send every live worker `commit_rate` {check, delta = ΔC_i,
 * period_s = Γ, r, c_target, c = c_i}, and append a line to adsp.jsonl. Until a worker is live
 * the first checkpoint is put off by one period.
 */
static void checkpoint(struct sched *s, void *data, double now)
{
	struct adsp_run *r = data;
	int64_t c_max = 0;
	int live = 0;

	for (int h = 0; h < s->cl.n_hosts; h++)
		if (live_worker(s, h)) {
			live++;
			if ((int64_t)s->hosts[h].n_pushed > c_max)
				c_max = (int64_t)s->hosts[h].n_pushed;
		}
	if (!live && !r->a.started) {
		/* the first checkpoint (and the first evaluation window) waits for a worker */
		r->a.next_check = now + r->a.cfg.gamma_s;
		return;
	}
	int r_before = r->a.r;
	if (adsp_checkpoint(&r->a, now, c_max))
		log_info("ADSP checkpoint %lld: commit rate %d -> %d per %.2f s (%s; last comparison: "
			 "speed %.4g at rate %d vs %.4g at %d)", (long long)r->a.check, r_before, r->a.r,
			 r->a.cfg.gamma_s, phase_name[r->a.phase], r->a.last_r1, r->a.last_ra, r->a.last_r2,
			 r->a.last_rb);
	json_t *deltas = json_object(), *counts = json_object();
	for (int h = 0; h < s->cl.n_hosts; h++) {
		if (!live_worker(s, h))
			continue;
		json_object_set_new(deltas, s->cl.hosts[h].name, json_integer(send_rate(s, r, h)));
		json_object_set_new(counts, s->cl.hosts[h].name,
				    json_integer((json_int_t)s->hosts[h].n_pushed));
	}
	json_t *speeds = json_array(), *reports = json_array();
	for (int i = 0; i < r->a.n_win; i++) {
		json_array_append_new(speeds, isfinite(r->a.win_v[i]) ? json_real(r->a.win_v[i]) : json_null());
		json_array_append_new(reports, json_integer(r->a.win_n[i]));
	}
	sched_rec_put(r->rec, json_pack("{s:f, s:I, s:i, s:s, s:i, s:i, s:I, s:o, s:o, s:f, s:f, s:o, s:o, "
					"s:i, s:i, s:i}",
					"t", now, "check", (json_int_t)r->a.check, "r", r->a.r,
					"phase", phase_name[r->a.phase], "r_a", r->a.r_a, "r_b", r->a.r_b,
					"c_target", (json_int_t)r->a.c_target, "delta", deltas, "c", counts,
					"r1", r->a.last_r1, "r2", r->a.last_r2, "speeds", speeds,
					"window_losses", reports, "losses", r->a.n_b,
					"decisions", r->a.decisions, "retries", r->a.retries));
}

/* A worker registered: once the first checkpoint passed it gets the current `commit_rate` at
 * once (before it, the first checkpoint reaches it). */
static void joined(struct sched *s, void *data, int h, unsigned role)
{
	struct adsp_run *r = data;

	if (role == SCHED_ROLE_WORKER && r->a.started)
		(void)send_rate(s, r, h);
}

/*
 * A `loss` report {t (CLOCK_REALTIME s), loss (> 0, finite), version} from the server app @app
 * on host @h: the global model's test loss, the input of ADSP's reward. Checked whether or not
 * ADSP runs (the server reports its loss whatever the scheduler runs); recorded only when it
 * runs (@data).
 */
static int on_loss(struct sched *s, void *data, int h, const char *app, const char *type,
		   json_t *m, double now, char *err, size_t len)
{
	struct adsp_run *r = data;
	json_t *t = json_object_get(m, "t"), *l = json_object_get(m, "loss");

	(void)type;
	(void)now;
	if (strncmp(app, "server@", 7) && strncmp(app, "replica@", 8)) {
		snprintf(err, len, "loss: only the server reports the model's loss");
		return -EINVAL;
	}
	if (!json_is_number(t) || !isfinite(json_number_value(t)) || json_number_value(t) < 0) {
		snprintf(err, len, "loss: field \"t\" must be CLOCK_REALTIME seconds");
		return -EINVAL;
	}
	if (!json_is_number(l) || !isfinite(json_number_value(l)) || !(json_number_value(l) > 0)) {
		snprintf(err, len, "loss: field \"loss\" must be a finite number > 0");
		return -EINVAL;
	}
	/* a replica's loss (before its promotion) is not the global model's */
	if (r && h == s->server.host)
		adsp_loss(&r->a, json_number_value(t), json_number_value(l));
	return 0;
}

/* For mlf-top: where the commit-rate search stands. */
static void adsp_status(const struct sched *s, const void *data, json_t *o, double now)
{
	const struct adsp_run *r = data;

	json_object_set_new(o, "check", json_integer((json_int_t)r->a.check));
	json_object_set_new(o, "r", json_integer(r->a.r));
	json_object_set_new(o, "phase", json_string(phase_name[r->a.phase]));
	json_object_set_new(o, "c_target", json_integer((json_int_t)r->a.c_target));
	json_object_set_new(o, "next_check_s", json_real(r->a.next_check - now));
}

static const char *const adsp_types[] = { "loss", NULL };

const struct sched_policy_ops sched_policy_adsp = {
	.name = "adsp",
	.msg_types = adsp_types,
	.init = adsp_start,
	.fini = adsp_stop,
	.on_register = joined,
	.on_msg = on_loss,
	.next_deadline = next_check,
	.on_tick = checkpoint,
	.status = adsp_status,
};
