/* mlf_verify.c - verification mode's checker: pairs server/replica snapshots by tag, prints the true divergence and the planner's bound. */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "mlfabric_verify.h"

#define MAX_TAGS 4096

/* One tag's snapshots: which roles have one. */
struct tag_pair {
	unsigned long long tag;
	int have; /* bit 0 server, bit 1 replica */
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mlf-verify DIR [--div-max D] [--batches batches.jsonl] [--json]\n"
		"Pairs the server and replica snapshots of the same tag in DIR (server-<tag>.f32 and\n"
		"replica-<tag>.f32, written in verification mode, docs/replication.md) and prints per tag:\n"
		"the two model versions, the true divergence ||w_server - w_replica||_2 and the planner's\n"
		"divergence bound of that batch (from the scheduler's batches.jsonl, '-' without it).\n"
		"  --div-max D      exit 1 naming the first tag whose divergence exceeds D\n"
		"  --batches FILE   the scheduler's batches.jsonl (divergence_bound per batch)\n"
		"  --json           one JSON object per tag instead of the table\n"
		"Exit: 0 all within bounds, 1 a divergence over --div-max, 2 bad input (no pairs, a\n"
		"truncated file, n differing between server and replica, unreadable files).\n");
}

static int cmp_tag(const void *a, const void *b)
{
	const struct tag_pair *x = a, *y = b;

	return x->tag < y->tag ? -1 : x->tag > y->tag;
}

/* Collects the tags of DIR's snapshot files into @t (sorted). Returns their count or -1. */
static int scan(const char *dir, struct tag_pair *t)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d) {
		fprintf(stderr, "mlf-verify: %s: %s\n", dir, strerror(errno));
		return -1;
	}
	while ((e = readdir(d))) {
		unsigned long long tag;
		int role, end = 0, k;
		if (sscanf(e->d_name, "server-%llu.f32%n", &tag, &end) == 1 && end && !e->d_name[end])
			role = 1;
		else if ((end = 0, sscanf(e->d_name, "replica-%llu.f32%n", &tag, &end) == 1) && end && !e->d_name[end])
			role = 2;
		else
			continue;
		for (k = 0; k < n && t[k].tag != tag; k++)
			;
		if (k == n) {
			if (n == MAX_TAGS) {
				fprintf(stderr, "mlf-verify: more than %d tags in %s; the rest are ignored\n", MAX_TAGS, dir);
				break;
			}
			t[n++] = (struct tag_pair){ .tag = tag };
		}
		t[k].have |= role;
	}
	closedir(d);
	qsort(t, (size_t)n, sizeof(*t), cmp_tag);
	return n;
}

/* Divergence bounds per batch from the scheduler's batches.jsonl: @bound[i] for @batch[i]. */
static int load_bounds(const char *path, long long **batch, double **bound)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	int n = 0, alloc = 0, lineno = 0;

	if (!f) {
		fprintf(stderr, "mlf-verify: --batches %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (getline(&line, &cap, f) > 0) {
		json_error_t je;
		json_t *o = json_loads(line, 0, &je), *b, *d;
		lineno++;
		if (!o) {
			fprintf(stderr, "mlf-verify: %s line %d: not JSON: %s\n", path, lineno, je.text);
			n = -1;
			break;
		}
		b = json_object_get(o, "batch");
		d = json_object_get(o, "divergence_bound");
		if (json_is_integer(b) && json_is_number(d)) {
			if (n == alloc) {
				alloc = alloc ? 2 * alloc : 256;
				*batch = realloc(*batch, (size_t)alloc * sizeof(**batch));
				*bound = realloc(*bound, (size_t)alloc * sizeof(**bound));
			}
			(*batch)[n] = json_integer_value(b);
			(*bound)[n++] = json_number_value(d);
		}
		json_decref(o);
	}
	free(line);
	fclose(f);
	return n;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "div-max", 1, NULL, 'd' }, { "batches", 1, NULL, 'b' }, { "json", 0, NULL, 'j' },
		{ "help", 0, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	static struct tag_pair tags[MAX_TAGS];
	const char *dir, *batches = NULL;
	double div_max = -1, worst = 0;
	long long *bb = NULL;
	double *bd = NULL;
	int c, n, nb = 0, json = 0, pairs = 0, unpaired = 0, rc = 0;
	unsigned long long first_over = 0;
	char *end;

	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'd':
			div_max = strtod(optarg, &end);
			if (*end || div_max < 0) {
				fprintf(stderr, "mlf-verify: --div-max '%s' is not a number >= 0\n", optarg);
				return 2;
			}
			break;
		case 'b': batches = optarg; break;
		case 'j': json = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return 2;
	}
	dir = argv[optind];
	if ((n = scan(dir, tags)) < 0)
		return 2;
	if (batches && (nb = load_bounds(batches, &bb, &bd)) < 0)
		return 2;
	if (!json)
		printf("%8s %10s %10s %14s %14s\n", "tag", "server_v", "replica_v", "divergence", "bound");
	for (int i = 0; i < n && rc != 2; i++) {
		char ps[4200], pr[4200], err[4400];
		float *ws = NULL, *wr = NULL;
		uint64_t ns, nr;
		int64_t vs, vr;
		double dv, bound = -1;
		if (tags[i].have != 3) {
			unpaired++;
			continue;
		}
		snprintf(ps, sizeof(ps), "%s/server-%llu.f32", dir, tags[i].tag);
		snprintf(pr, sizeof(pr), "%s/replica-%llu.f32", dir, tags[i].tag);
		if (mlf_verify_read(ps, &ws, &ns, &vs, err, sizeof(err)) < 0 ||
		    mlf_verify_read(pr, &wr, &nr, &vr, err, sizeof(err)) < 0) {
			fprintf(stderr, "mlf-verify: %s\n", err);
			rc = 2;
		} else if (ns != nr) {
			fprintf(stderr, "mlf-verify: tag %llu: the server's model has %llu floats, the replica's %llu\n",
				tags[i].tag, (unsigned long long)ns, (unsigned long long)nr);
			rc = 2;
		} else {
			dv = mlf_verify_divergence(ws, wr, ns);
			for (int k = 0; k < nb; k++)
				if ((unsigned long long)bb[k] == tags[i].tag)
					bound = bd[k];
			pairs++;
			if (dv > worst)
				worst = dv;
			if (json) {
				json_t *o = json_pack("{s:I, s:I, s:I, s:f, s:o}", "tag", (json_int_t)tags[i].tag,
						      "server_version", (json_int_t)vs, "replica_version", (json_int_t)vr,
						      "divergence", dv, "bound", bound < 0 ? json_null() : json_real(bound));
				char *t = json_dumps(o, JSON_COMPACT);
				printf("%s\n", t ? t : "{}");
				free(t);
				json_decref(o);
			} else if (bound >= 0)
				printf("%8llu %10lld %10lld %14.6g %14.6g\n", tags[i].tag, (long long)vs, (long long)vr, dv, bound);
			else
				printf("%8llu %10lld %10lld %14.6g %14s\n", tags[i].tag, (long long)vs, (long long)vr, dv, "-");
			if (div_max >= 0 && dv > div_max && !rc) {
				rc = 1;
				first_over = tags[i].tag;
			}
		}
		free(ws);
		free(wr);
	}
	free(bb);
	free(bd);
	fflush(stdout);
	if (rc == 2)
		return 2;
	if (!pairs) {
		fprintf(stderr, "mlf-verify: %s: no tag with both a server and a replica snapshot\n", dir);
		return 2;
	}
	if (unpaired)
		fprintf(stderr, "mlf-verify: %d tag(s) with only one of the two snapshots left out\n", unpaired);
	fprintf(stderr, "mlf-verify: %d pair(s), largest divergence %.6g\n", pairs, worst);
	if (rc == 1)
		fprintf(stderr, "mlf-verify: tag %llu: divergence over --div-max %g\n", first_over, div_max);
	return rc;
}
