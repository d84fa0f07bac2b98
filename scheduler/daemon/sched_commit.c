/* sched_commit.c - ADSP in the running scheduler (adsp-aaai2020 Alg. 1-2): commit rates to the
 * workers at every checkpoint, loss reports from the server into the commit-rate search. */
#include "sched_commit.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "sched_rec.h"

static const char *const phase_name[] = { "eval-r", "eval-r+1", "fixed" };

static int live_worker(const struct sched *s, int h)
{
	return s->hosts[h].alive && (s->hosts[h].apps & SCHED_ROLE_WORKER);
}

/* Send host @h's worker its commit rate; returns its ΔC_i. */
static int64_t send_rate(struct sched *s, int h)
{
	int64_t c = (int64_t)s->hosts[h].n_pushed, delta = adsp_delta(&s->adsp, c);

	sched_to_app(s, "worker", h, json_pack("{s:s, s:I, s:I, s:f, s:i, s:I, s:I}", "type",
					       "commit_rate", "check", (json_int_t)s->adsp.check,
					       "delta", (json_int_t)delta,
					       "period_s", s->adsp.cfg.gamma_s, "r", s->adsp.r,
					       "c_target", (json_int_t)s->adsp.c_target, "c",
					       (json_int_t)c));
	return delta;
}

void sched_adsp_tick(struct sched *s, double now)
{
	int64_t c_max = 0;
	int live = 0;

	if (!(s->cfg.adsp.gamma_s > 0))
		return;
	for (int h = 0; h < s->cl.n_hosts; h++)
		if (live_worker(s, h)) {
			live++;
			if ((int64_t)s->hosts[h].n_pushed > c_max)
				c_max = (int64_t)s->hosts[h].n_pushed;
		}
	if (!live && !s->adsp.started) {
		/* the first checkpoint (and the first evaluation window) waits for a worker */
		s->adsp.next_check = now + s->adsp.cfg.gamma_s;
		return;
	}
	int r_before = s->adsp.r;
	if (adsp_checkpoint(&s->adsp, now, c_max))
		log_info("ADSP checkpoint %lld: commit rate %d -> %d per %.2f s (%s; rewards %.4g vs %.4g)",
			 (long long)s->adsp.check, r_before, s->adsp.r, s->adsp.cfg.gamma_s,
			 phase_name[s->adsp.phase], s->adsp.last_r1, s->adsp.last_r2);
	json_t *deltas = json_object(), *counts = json_object();
	for (int h = 0; h < s->cl.n_hosts; h++) {
		if (!live_worker(s, h))
			continue;
		json_object_set_new(deltas, s->cl.hosts[h].name, json_integer(send_rate(s, h)));
		json_object_set_new(counts, s->cl.hosts[h].name,
				    json_integer((json_int_t)s->hosts[h].n_pushed));
	}
	sched_rec_adsp(s, json_pack("{s:f, s:I, s:i, s:s, s:I, s:o, s:o, s:f, s:f, s:i, s:i, s:i}", "t",
				    now, "check", (json_int_t)s->adsp.check, "r", s->adsp.r, "phase",
				    phase_name[s->adsp.phase], "c_target", (json_int_t)s->adsp.c_target,
				    "delta", deltas, "c", counts, "r1", s->adsp.last_r1, "r2",
				    s->adsp.last_r2, "losses_a", s->adsp.n_a, "losses", s->adsp.n_b,
				    "decisions", s->adsp.decisions));
}

void sched_adsp_joined(struct sched *s, int h)
{
	if (s->cfg.adsp.gamma_s > 0 && s->adsp.started)
		(void)send_rate(s, h);
}

int sched_adsp_loss(struct sched *s, int h, const char *app, json_t *m, char *err, size_t len)
{
	json_t *t = json_object_get(m, "t"), *l = json_object_get(m, "loss");

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
	if (s->cfg.adsp.gamma_s > 0 && h == s->server.host)
		adsp_loss(&s->adsp, json_number_value(t), json_number_value(l));
	return 0;
}
