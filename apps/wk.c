/* wk.c - what mlf-worker's training algorithms share: fabric errors, progress lines, the model get, option numbers, a round's push. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "wk.h"

volatile sig_atomic_t wk_stop;

int wk_fail(struct wk_run *R, const char *what, int64_t rc)
{
	const struct wk_opts *o = R->o;

	if (rc == -ETIMEDOUT)
		log_err("server %s stopped answering: %s timed out (%.1f s without progress) (%s)", o->server,
			what, o->timeout, mlf_error(R->f));
	else
		log_err("%s to server %s failed: %s (%s)", what, o->server, strerror((int)-rc), mlf_error(R->f));
	return WK_ERR;
}

int wk_progress_due(struct wk_run *R)
{
	if (clock_real_s() < R->next_progress)
		return 0;
	R->next_progress += 2;
	return 1;
}

int wk_get(struct wk_run *R, double *get_s)
{
	double tg = clock_real_s();
	int64_t r = mlf_get(R->f, R->o->server, R->w, R->n, &R->version, R->o->timeout);

	*get_s = clock_real_s() - tg;
	return r ? wk_fail(R, "model get", r) : WK_GO;
}

int wk_pull_first(struct wk_run *R, double *get_s)
{
	return R->it ? WK_GO : wk_get(R, get_s);
}

int wk_alloc_wr(struct wk_run *R)
{
	if (!(R->wr = malloc(sizeof(float) * R->n)))
		return log_err("no memory for a second model buffer (%zu floats)", R->n), 1;
	return 0;
}

int wk_parse_int(const char *name, const char *arg, long lo, long hi, const char *what, long *v)
{
	char *end;

	*v = strtol(arg, &end, 10);
	if (*end || end == arg || *v < lo || *v > hi)
		return fprintf(stderr, "mlf-worker: bad --%s '%s': %s\n", name, arg, what), -1;
	return 0;
}

int wk_parse_real(const char *name, const char *arg, double lo, int lo_incl, double hi,
		  const char *what, double *v)
{
	char *end;

	*v = strtod(arg, &end);
	if (*end || end == arg || !((lo_incl ? *v >= lo : *v > lo) && *v <= hi))
		return fprintf(stderr, "mlf-worker: bad --%s '%s': %s\n", name, arg, what), -1;
	return 0;
}

int wk_round_push(struct wk_run *R, double scale, const struct wk_round *rd)
{
	const struct wk_opts *o = R->o;
	double norm = train_local_delta(R->wr, R->w, scale, R->u, R->n);
	int64_t v_g = R->version, r;
	double t_ar = clock_real_s();

	r = mlf_push_get(R->f, o->server, R->u, R->n, norm, R->version, R->w, &R->version, o->timeout);
	if (r)
		return wk_fail(R, "allreduce", r);
	double allreduce_s = clock_real_s() - t_ar;
	R->it++;
	/* how the round waited on the State Server: blocked in queries (query_wait_s), or
	 * (non-blocking) in local iterations a READY aborted (aborted, aborted_s) */
	train_rec_line(R->pushes, json_pack("{s:f,s:o,s:I,s:f,s:f,s:i,s:f,s:f,s:I,s:f,s:f,s:f}",
					    "t", clock_real_s(), "id", json_null(),
					    "version", (json_int_t)v_g, "norm", norm,
					    "round_s", clock_real_s() - rd->t_start, "local_steps", rd->steps,
					    "c", rd->c, "query_wait_s", rd->query_wait_s,
					    "aborted", (json_int_t)rd->aborted, "aborted_s", rd->aborted_s,
					    "rtt_s", rd->rtt_s, "allreduce_s", allreduce_s));
	if (wk_progress_due(R))
		log_info("t=%.1fs round %ld (%d local iterations) model version %lld loss %.4f",
			 clock_real_s() - R->t0, R->it, rd->steps, (long long)R->version, R->L.loss);
	return WK_GO;
}
