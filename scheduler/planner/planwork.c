/* planwork.c - jobs (one leg per shard, eq. 18) and the growing plan arrays of plan_compute(). */
#include "planwork.h"

#include <math.h>
#include <stdarg.h>

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void planwork_update_job(const struct planwork *pw, int u, int dst, struct planwork_job *job)
{
	const struct plan_update *up = &pw->b->updates[u];
	int j;

	job->src = up->worker;
	job->dst = dst;
	job->t0_s = planwork_max(up->ready_s, pw->b->now_s);
	if (up->n_shards == 0) {
		job->bytes[0] = up->bytes;
		return;
	}
	for (j = 0; j < pw->n_legs; j++)
		job->bytes[j] = up->shards[j].bytes;
}

int planwork_leg_dst(const struct planwork *pw, const struct planwork_job *job, int j)
{
	return job->dst >= 0 ? job->dst : pw->b->servers[pw->leg_server[j]];
}

double planwork_job_tend(struct planwork *pw, struct netstate *net,
			 const struct planwork_job *job)
{
	struct netstate_mark m;
	double end;

	if (pw->n_legs == 1)
		return netstate_tend(net, job->src, planwork_leg_dst(pw, job, 0), job->t0_s,
				     job->bytes[0], NULL);
	m = netstate_mark(net);
	end = planwork_job_reserve(pw, net, job, NULL, NULL);
	netstate_undo(net, m);
	return end;
}

int planwork_add_transfer(struct planwork *pw, const struct planwork_tag *tag, int shard,
			  int src, int dst, uint64_t bytes, const struct netstate_profile *prof)
{
	struct plan *o = pw->out;
	struct plan_transfer *t;
	int z = 0;

	/* The transfer starts at its first non-zero rate (the dataplane starts it at start_s). */
	while (z + 1 < prof->n && prof->steps[z].gbps <= 0.0)
		z++;
	if (arr_grow((void **)&o->transfers, &pw->cap_transfers, o->n_transfers + 1,
			  sizeof(*o->transfers)))
		return -ENOMEM;
	t = &o->transfers[o->n_transfers];
	memset(t, 0, sizeof(*t));
	t->kind = tag->kind;
	t->carries = tag->carries;
	t->shard = shard;
	t->src = src;
	t->dst = dst;
	t->bytes = bytes;
	t->purpose = tag->purpose;
	t->start_s = z > 0 ? prof->steps[z].from_s : prof->start_s;
	t->end_s = prof->end_s;
	if (prof->n > 0) {
		t->rate = malloc((size_t)(prof->n - z) * sizeof(*t->rate));
		if (!t->rate)
			return -ENOMEM;
		memcpy(t->rate, prof->steps + z, (size_t)(prof->n - z) * sizeof(*t->rate));
	}
	t->n_rate = prof->n - z;
	o->n_transfers++;
	return 0;
}

double planwork_job_reserve(struct planwork *pw, struct netstate *net,
			    const struct planwork_job *job, const struct planwork_tag *tag,
			    double *arrival)
{
	struct netstate_mark m = netstate_mark(net);
	double last = job->t0_s < net->now_s ? net->now_s : job->t0_s;
	int j;

	for (j = 0; j < pw->n_legs; j++) {
		int dst = planwork_leg_dst(pw, job, j);
		double end;

		if (job->bytes[j] == 0 && pw->n_legs > 1) {
			if (arrival)
				arrival[j] = last;
			continue;
		}
		end = netstate_tend(net, job->src, dst, job->t0_s, job->bytes[j], &pw->prof);
		if (end < 0.0 || end == INFINITY) {
			netstate_undo(net, m);
			return end;
		}
		if (netstate_reserve(net, job->src, dst, &pw->prof)) {
			netstate_undo(net, m);
			return -1.0;
		}
		/* A move within one host needs no network and gets no transfer. */
		if (tag && job->src != dst && planwork_add_transfer(pw, tag, pw->n_legs > 1 && tag->kind != PLAN_CARRY_MODEL ? j : -1, job->src, dst,
						 job->bytes[j], &pw->prof))
			return -1.0;
		if (arrival)
			arrival[j] = end;
		last = planwork_max(last, end);
	}
	return last;
}

static void err_put(char *buf, size_t len, size_t *n, const char *s)
{
	while (*s && *n + 1 < len)
		buf[(*n)++] = *s++;
	buf[*n] = '\0';
}

static void err_int(char *buf, size_t len, size_t *n, long long v)
{
	char d[24];
	int k = 0;
	unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;

	do
		d[k++] = (char)('0' + u % 10);
	while ((u /= 10) && k < 23);
	if (v < 0)
		d[k++] = '-';
	while (k > 0 && *n + 1 < len)
		buf[(*n)++] = d[--k];
	buf[*n] = '\0';
}

static void err_num(char *buf, size_t len, size_t *n, double x)
{
	if (!isfinite(x)) {
		err_put(buf, len, n, x != x ? "nan" : x > 0 ? "inf" : "-inf");
		return;
	}
	if (x == (double)(long long)x && fabs(x) < 9e15) {
		err_int(buf, len, n, (long long)x);
		return;
	}
	if (fabs(x) >= 9e15) {
		err_put(buf, len, n, x < 0 ? "-huge" : "huge");
		return;
	}
	if (x < 0) {
		err_put(buf, len, n, "-");
		x = -x;
	}
	long long ip = (long long)x, fr = llround((x - (double)ip) * 1e6);
	if (fr >= 1000000) {
		ip++;
		fr -= 1000000;
	}
	err_int(buf, len, n, ip);
	if (fr) {
		char d[8];
		int k = 6;
		d[6] = '\0';
		while (k-- > 0) {
			d[k] = (char)('0' + fr % 10);
			fr /= 10;
		}
		for (k = 5; k > 0 && d[k] == '0'; k--)
			d[k] = '\0';
		err_put(buf, len, n, ".");
		err_put(buf, len, n, d);
	}
}

void planwork_err(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	size_t n = 0;

	if (!len)
		return;
	buf[0] = '\0';
	va_start(ap, fmt);
	for (; *fmt; fmt++) {
		if (*fmt == 's')
			err_put(buf, len, &n, va_arg(ap, const char *));
		else if (*fmt == 'g')
			err_num(buf, len, &n, va_arg(ap, double));
		else if (*fmt == 'd')
			err_int(buf, len, &n, va_arg(ap, long long));
	}
	va_end(ap);
}
