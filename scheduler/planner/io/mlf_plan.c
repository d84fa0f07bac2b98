/* mlf_plan.c - the offline planner: batch document in, plan document (or a readable timeline) out. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "log.h"
#include "plan.h"
#include "planio.h"

/* Exit codes: usage and malformed input are the caller's fault, the rest is ours or the OS's. */
enum { EXIT_PLANNED = 0, EXIT_FAILED = 1, EXIT_BAD_INPUT = 2 };

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mlf-plan [--in FILE] [--out FILE] [--impl fast|simple] [--explain] [--help]\n"
		"Plans one batch of updates the way the MLfabric scheduler does (ordering under the\n"
		"delay bound, dropping, aggregation, replication; sync, sharded and pull batches) and\n"
		"writes the plan document (docs/plan-format.md).\n"
		"  --in FILE       batch document to read (default: standard input)\n"
		"  --out FILE      where to write the plan (default: standard output)\n"
		"  --impl IMPL     fast (default) or simple: the reference planner, identical plans\n"
		"  --explain       write a readable timeline (per link, commits, drops) instead of JSON\n"
		"  --help          this text\n"
		"Exit status: 0 planned, 1 I/O or planning failure, 2 bad usage or malformed batch\n"
		"(one line on stderr naming the field, e.g. updates[3].worker: unknown host \"w9\").\n");
}

/* ---- --explain ---- */

static void explain_rate(FILE *f, const struct plan_transfer *t)
{
	for (int j = 0; j < t->n_rate; j++) {
		if (j == 0)
			fprintf(f, "%.6g Gbit/s", t->rate[j].gbps);
		else
			fprintf(f, ", %.6g from %.6f", t->rate[j].gbps, t->rate[j].from_s);
	}
}

static const char *purpose_name(enum plan_purpose p)
{
	return p == PLAN_PURPOSE_SERVER ? "server" : p == PLAN_PURPOSE_REPLICA ? "replica" : "model";
}

static void explain_links(FILE *f, const struct plan_batch *b, const struct plan *p)
{
	char link[PLAN_NAME_MAX + 8], what[PLAN_NAME_MAX];
	int *idx = calloc((size_t)p->n_transfers + 1, sizeof(int));

	fprintf(f, "links (transfer, what, src -> dst, start - end s, rate Gbit/s):\n");
	for (int h = 0; h < b->n_hosts && idx; h++) {
		for (int d = PLAN_UP; d <= PLAN_DOWN; d++) {
			int n = 0;

			for (int i = 0; i < p->n_transfers; i++) {
				const struct plan_transfer *t = &p->transfers[i];

				if (t->src != t->dst && (d == PLAN_UP ? t->src : t->dst) == h)
					idx[n++] = i;
			}
			if (n == 0)
				continue;
			/* Transfers are listed by start time (stable insertion sort). */
			for (int i = 1; i < n; i++)
				for (int j = i; j > 0 && p->transfers[idx[j]].start_s <
						       p->transfers[idx[j - 1]].start_s; j--) {
					int tmp = idx[j];

					idx[j] = idx[j - 1];
					idx[j - 1] = tmp;
				}
			fprintf(f, "  %s\n", planio_link_name(b, h, (enum plan_link_dir)d, link,
							      sizeof(link)));
			for (int i = 0; i < n; i++) {
				const struct plan_transfer *t = &p->transfers[idx[i]];

				fprintf(f, "    t%-4d %-8s %s -> %s  %.6f - %.6f  ", idx[i],
					planio_carry_name(b, t->kind, t->carries, what, sizeof(what)),
					b->hosts[t->src].name, b->hosts[t->dst].name, t->start_s,
					t->end_s);
				explain_rate(f, t);
				fprintf(f, "  (%.3f MB, %s", t->bytes / 1e6, purpose_name(t->purpose));
				if (t->shard >= 0)
					fprintf(f, ", shard %d", t->shard);
				fprintf(f, ")\n");
			}
		}
	}
	free(idx);
}

/* Commits with their versions; with @delays, each update's delay (version before - v(g)). */
static void explain_commits(FILE *f, const struct plan_batch *b, const struct plan *p,
			    const struct plan_commit *c, int n, const char *title, int delays)
{
	char what[PLAN_NAME_MAX];

	if (n == 0)
		return;
	fprintf(f, "%s (time s, what, version after%s):\n", title,
		delays ? ", delay per update" : ", updates");
	for (int i = 0; i < n; i++) {
		const int *in = &c[i].carries;
		int m = 1;

		if (c[i].kind == PLAN_CARRY_AGGREGATE) {
			in = p->aggregates[c[i].carries].inputs;
			m = p->aggregates[c[i].carries].n_inputs;
		}
		fprintf(f, "  %-6s %.6f  %-8s v%-6lld", b->hosts[c[i].host].name, c[i].at_s,
			planio_carry_name(b, c[i].kind, c[i].carries, what, sizeof(what)),
			(long long)c[i].version);
		for (int j = 0; j < m; j++) {
			fprintf(f, "%s%s", j ? ", " : "  ", b->updates[in[j]].id);
			if (delays)
				fprintf(f, " delay %lld",
					(long long)(c[i].version - m - b->updates[in[j]].version));
		}
		fprintf(f, "\n");
	}
}

static void explain_list(FILE *f, const struct plan_batch *b, const char *title, const int *u,
			 int n)
{
	fprintf(f, "%s:", title);
	for (int i = 0; i < n; i++)
		fprintf(f, " %s", b->updates[u[i]].id);
	fprintf(f, "%s\n", n ? "" : " none");
}

static void explain(FILE *f, const struct plan_batch *b, const struct plan *p, const char *impl)
{
	char what[PLAN_NAME_MAX];

	fprintf(f, "batch: %s, %d hosts, %d updates, %d pulls, tau_max %lld, v_init %lld; "
		"planned in %.3f ms (%s)\n", b->mode == PLAN_MLFABRIC_S ? "mlfabric-s" : "mlfabric-a",
		b->n_hosts, b->n_updates, b->n_pulls, (long long)b->tau_max, (long long)b->v_init,
		p->plan_ms, impl);
	if (p->origin_s != 0.0)
		fprintf(f, "times: seconds after origin_s %.0f (the batch's now_s is %.6f)\n",
			p->origin_s, b->now_s);
	explain_list(f, b, "order", p->order, p->n_order);
	explain_list(f, b, "dropped", p->dropped, p->n_dropped);
	for (int i = 0; i < p->n_aggregates; i++) {
		const struct plan_aggregate *a = &p->aggregates[i];

		fprintf(f, "aggregate %s at %s for %s:",
			planio_carry_name(b, PLAN_CARRY_AGGREGATE, i, what, sizeof(what)),
			b->hosts[a->host].name, b->hosts[a->target].name);
		for (int j = 0; j < a->n_inputs; j++)
			fprintf(f, " %s", b->updates[a->inputs[j]].id);
		fprintf(f, "\n");
	}
	explain_links(f, b, p);
	explain_commits(f, b, p, p->commits, p->n_commits, "commits",
			b->mode == PLAN_MLFABRIC_A);
	explain_commits(f, b, p, p->replica_commits, p->n_replica_commits, "replica commits",
			0);
	if (b->n_pulls > 0) {
		fprintf(f, "unanswered pulls (no model copy can reach them):");
		for (int i = 0; i < p->n_unanswered; i++)
			fprintf(f, " %s", b->pulls[p->unanswered[i]].id);
		fprintf(f, "%s\n", p->n_unanswered ? "" : " none");
	}
	if (b->replica >= 0) {
		explain_list(f, b, "punted", p->punted, p->n_punted);
		fprintf(f, "in flight to the replica after the last server commit:");
		for (int i = 0; i < p->n_inflight; i++)
			fprintf(f, " %s (commits %.6f)", b->updates[p->inflight[i]].id, p->inflight_s[i]);
		fprintf(f, "%s\n", p->n_inflight ? "" : " none");
		fprintf(f, "divergence bound: %.6g (div_max %.6g)\n", p->divergence_bound,
			b->div_max);
	}
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "in", required_argument, NULL, 'i' },
		{ "out", required_argument, NULL, 'o' },
		{ "impl", required_argument, NULL, 'm' },
		{ "explain", no_argument, NULL, 'e' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *in = "-", *out = NULL, *impl_name = "fast";
	enum plan_impl impl = PLAN_IMPL_FAST;
	int do_explain = 0, c, rc;
	char err[PLANIO_ERR_MAX];
	struct plan_batch batch;
	struct plan plan;
	double t0;
	FILE *f;

	log_component = "mlf-plan";
	while ((c = getopt_long(argc, argv, "i:o:m:eh", opts, NULL)) != -1) {
		switch (c) {
		case 'i': in = optarg; break;
		case 'o': out = optarg; break;
		case 'e': do_explain = 1; break;
		case 'h': usage(stdout); return EXIT_PLANNED;
		case 'm':
			impl_name = optarg;
			if (strcmp(optarg, "fast") == 0) {
				impl = PLAN_IMPL_FAST;
			} else if (strcmp(optarg, "simple") == 0) {
				impl = PLAN_IMPL_SIMPLE;
			} else {
				fprintf(stderr, "mlf-plan: --impl: expected fast or simple, got "
					"\"%s\"\n", optarg);
				return EXIT_BAD_INPUT;
			}
			break;
		default:
			usage(stderr);
			return EXIT_BAD_INPUT;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "mlf-plan: unexpected argument \"%s\" (use --in FILE)\n",
			argv[optind]);
		return EXIT_BAD_INPUT;
	}

	rc = planio_read_file(in, &batch, err, sizeof(err));
	if (rc == -EINVAL) {
		fprintf(stderr, "mlf-plan: %s: %s\n", strcmp(in, "-") ? in : "stdin", err);
		return EXIT_BAD_INPUT;
	}
	if (rc) {
		fprintf(stderr, "mlf-plan: %s\n", err);
		return EXIT_FAILED;
	}
	t0 = 1e3 * clock_mono_s();
	rc = plan_compute(&batch, impl, &plan);
	if (rc) {
		fprintf(stderr, "mlf-plan: %s: %s\n", strcmp(in, "-") ? in : "stdin", plan.error[0] ? plan.error :
			strerror(-rc));
		planio_batch_free(&batch);
		return rc == -EINVAL ? EXIT_BAD_INPUT : EXIT_FAILED;
	}
	plan.plan_ms = 1e3 * clock_mono_s() - t0;

	f = out ? fopen(out, "w") : stdout;
	if (!f) {
		fprintf(stderr, "mlf-plan: %s: %s\n", out, strerror(errno));
		rc = -errno;
	} else if (do_explain) {
		explain(f, &batch, &plan, impl_name);
	} else {
		json_t *doc = planio_plan_to_json(&batch, &plan);

		rc = doc ? planio_write_json(f, doc) : -ENOMEM;
		json_decref(doc);
	}
	if (f && ((f != stdout && fclose(f)) || (f == stdout && fflush(f))) && !rc)
		rc = -EIO;
	if (rc && f)
		fprintf(stderr, "mlf-plan: writing the plan to %s: %s\n", out ? out : "stdout",
			strerror(-rc));
	plan_free(&plan);
	planio_batch_free(&batch);
	return rc ? EXIT_FAILED : EXIT_PLANNED;
}
