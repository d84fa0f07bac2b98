/* sched_rec.c - JSON-lines record files of the scheduler daemon, flushed line by line. */
#include "sched_rec.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clock.h"
#include "log.h"

static FILE *open_one(const char *dir, const char *name, char *err, size_t errlen)
{
	char path[1024];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "a");
	if (!f)
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
	return f;
}

/*
 * The "batch" of the last complete line of DIR/batches.jsonl (0 when there is none): a
 * restarted scheduler goes on counting from it, so batch numbers and the verification
 * snapshots' tags (docs/replication.md) stay unique across a restart (docs/scheduler.md
 * "Restart"). Reads at most the last 64 KiB.
 */
static int last_batch(const char *dir)
{
	char path[1024], buf[65536];
	int last = 0;

	snprintf(path, sizeof(path), "%s/batches.jsonl", dir);
	FILE *f = fopen(path, "rb");
	if (!f)
		return 0;
	if (fseek(f, 0, SEEK_END) == 0) {
		long end = ftell(f), from = end > (long)sizeof(buf) - 1 ? end - (long)sizeof(buf) + 1 : 0;
		if (end > 0 && fseek(f, from, SEEK_SET) == 0) {
			size_t n = fread(buf, 1, sizeof(buf) - 1, f);
			buf[n] = '\0';
			/* complete lines only: each starts after a newline (or at 0 when read whole) */
			for (char *line = from ? strchr(buf, '\n') : buf; line && *line; ) {
				char *nl = strchr(line + (*line == '\n'), '\n');
				char *b = strstr(line, "\"batch\":");
				if (nl && b && b < nl) {
					long v = strtol(b + 8, NULL, 10);
					if (v > last && v < 1000000000)
						last = (int)v;
				}
				line = nl;
			}
		}
	}
	fclose(f);
	return last;
}

int sched_rec_open(struct sched *s, const char *dir, char *err, size_t errlen)
{
	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		int rc = -errno;
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return rc;
	}
	s->batch_no = last_batch(dir);
	if (s->batch_no > 0)
		log_info("records in %s end at batch %d: counting on from there (a restart)", dir, s->batch_no);
	s->rec_batches = open_one(dir, "batches.jsonl", err, errlen);
	if (s->rec_batches)
		s->rec_updates = open_one(dir, "updates.jsonl", err, errlen);
	if (s->rec_updates)
		s->rec_transfers = open_one(dir, "transfers.jsonl", err, errlen);
	if (s->rec_transfers)
		s->rec_failover = open_one(dir, "failover.jsonl", err, errlen);
	if (s->rec_failover)
		s->rec_clocks = open_one(dir, "clocks.jsonl", err, errlen);
	if (s->rec_clocks)
		s->rec_starts = open_one(dir, "starts.jsonl", err, errlen);
	if (s->rec_starts)
		s->rec_capacity = open_one(dir, "capacity.jsonl", err, errlen);
	if (!s->rec_capacity) {
		int rc = -errno;
		sched_rec_close(s);
		return rc ? rc : -EIO;
	}
	return 0;
}

void sched_rec_close(struct sched *s)
{
	FILE **f[] = { &s->rec_batches, &s->rec_updates, &s->rec_transfers, &s->rec_failover,
			&s->rec_clocks, &s->rec_starts, &s->rec_capacity };

	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		if (*f[i])
			fclose(*f[i]);
		*f[i] = NULL;
	}
}

double sched_rec_ms(double x)
{
	return round(x * 1e6) / 1e3;
}

/* @x rounded to 4 decimals, so records stay readable (jansson prints 17 digits). */
static double r4(double x)
{
	return round(x * 1e4) / 1e4;
}

static void put_line(FILE *f, json_t *o)
{
	if (f && o) {
		char *txt = json_dumps(o, JSON_COMPACT);
		if (txt) {
			fprintf(f, "%s\n", txt);
			fflush(f);
			free(txt);
		}
	}
	json_decref(o);
}

void sched_rec_batch(struct sched *s, const struct sched_rec_batch *r)
{
	if (!s->rec_batches)
		return;
	json_t *o = json_pack("{s:f, s:i, s:i, s:i, s:i, s:i, s:f, s:f, s:I, s:I}",
		"t", r->t, "batch", r->batch, "n_updates", r->n_updates, "dropped", r->dropped,
		"aggregated", r->aggregated, "pulls", r->pulls, "plan_ms", r4(r->plan_ms),
		"mean_delay", r4(r->mean_delay), "max_delay", (json_int_t)r->max_delay,
		"v_init", (json_int_t)r->v_init);
	if (o && r->replica) {
		json_object_set_new(o, "divergence_bound", json_real(r->divergence_bound));
		json_object_set_new(o, "replica_commits", json_integer(r->replica_commits));
		json_object_set_new(o, "punted", json_integer(r->punted));
		json_object_set_new(o, "replica_version", json_integer((json_int_t)r->replica_version));
	}
	put_line(s->rec_batches, o);
}

void sched_rec_update(struct sched *s, const struct sched_update *u, const char *fate,
		      const char *reason)
{
	static const char *const rep[] = { NULL, "committed", "committed", "punted", "lost" };

	if (!s->rec_updates)
		return;
	json_t *o = json_pack("{s:I, s:s, s:s, s:i, s:s, s:I, s:f}",
		"id", (json_int_t)u->id, "worker", s->cl.hosts[u->worker].name, "fate", fate,
		"batch", u->batch, "reason", reason ? reason : "", "version", (json_int_t)u->version,
		"t", clock_real_s());
	if (o && rep[u->rstate])
		json_object_set_new(o, "replica", json_string(rep[u->rstate]));
	put_line(s->rec_updates, o);
}

void sched_rec_transfer(struct sched *s, const struct sched_xfer *x)
{
	static const char *const what[] = { "update", "aggregate", "model", "state" };

	if (!s->rec_transfers)
		return;
	json_t *o = json_pack("{s:I, s:s, s:s, s:s, s:I, s:f, s:f, s:i}",
		"xfer", (json_int_t)x->xfer, "src", s->cl.hosts[x->src].name,
		"dst", s->cl.hosts[x->dst].name, "what", what[x->what], "bytes", (json_int_t)x->bytes,
		"start", s->t0 + x->start, "end", s->t0 + x->end, "chan", x->chan);
	if (o && x->what == SCHED_WHAT_MODEL) {
		/* distribution trees (§10.3): who forwarded a copy, and from which incoming one */
		json_object_set_new(o, "pull", json_integer((json_int_t)x->id));
		if (x->from_xfer) {
			json_object_set_new(o, "forwarded_by", json_string(s->cl.hosts[x->src].name));
			json_object_set_new(o, "from_xfer", json_integer((json_int_t)x->from_xfer));
		}
		if (x->n_fwd)
			json_object_set_new(o, "forwards", json_integer(x->n_fwd));
	}
	put_line(s->rec_transfers, o);
}

/* A CLOCK_REALTIME time, or JSON null when it did not happen (0). */
static json_t *when(double t)
{
	return t > 0 ? json_real(t) : json_null();
}

void sched_rec_failover(struct sched *s)
{
	const struct sched_failover *fo = &s->fo;

	if (!s->rec_failover)
		return;
	put_line(s->rec_failover, json_pack("{s:o, s:o, s:o, s:s, s:s, s:I, s:i, s:i}",
		"t_gone", when(fo->t_gone), "t_promoted", when(fo->t_promoted),
		"t_first_commit", when(fo->t_first_commit), "old_server",
		s->cl.hosts[fo->old_server].name, "new_server", fo->new_server >= 0 ?
		s->cl.hosts[fo->new_server].name : "", "version", (json_int_t)fo->version,
		"lost_committed", fo->lost_committed, "lost_planned", fo->lost_planned));
}

int sched_rec_open_file(const struct sched *s, const char *name, FILE **f, char *err,
			size_t errlen)
{
	*f = NULL;
	if (!s->cfg.records[0])
		return 0;
	*f = open_one(s->cfg.records, name, err, errlen);
	return *f ? 0 : (errno ? -errno : -EIO);
}

void sched_rec_put(FILE *f, json_t *o)
{
	put_line(f, o);
}
