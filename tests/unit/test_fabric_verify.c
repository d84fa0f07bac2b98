/* test_fabric_verify.c - Check tests of verification mode: snapshot files (include/mlfabric/mlfabric_verify.h) and build/mlf-verify on hand-made snapshots. */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ck_run.h"
#include "mlfabric_verify.h"

#define N 100

static char dir[64], verify[PATH_MAX + 32], out[128];

/* Runs mlf-verify on the test directory with @args; returns its exit status, output in @out's file. */
static int run_verify(const char *args)
{
	char cmd[PATH_MAX + 512];
	int rc;

	snprintf(cmd, sizeof(cmd), "%s %s %s >%s 2>&1", verify, dir, args, out);
	rc = system(cmd);
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* The whole output of the last run_verify. */
static char *output(void)
{
	static char buf[8192];
	FILE *f = fopen(out, "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

	buf[n] = '\0';
	if (f)
		fclose(f);
	return buf;
}

static void snap(const char *role, int tag, const float *w, uint64_t n, int64_t v)
{
	char p[128];

	snprintf(p, sizeof(p), "%s/%s-%d.f32", dir, role, tag);
	ck_assert_int_eq(mlf_verify_write(p, w, n, v), 0);
}

static void setup(void)
{
	char exe[PATH_MAX];
	ssize_t k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	ck_assert_int_gt(k, 0);
	exe[k] = '\0';
	*strrchr(exe, '/') = '\0'; /* build/tests */
	snprintf(verify, sizeof(verify), "%s/../mlf-verify", exe);
	ck_assert_msg(access(verify, X_OK) == 0, "%s not built", verify);
	snprintf(dir, sizeof(dir), "/tmp/mlf-verify-test.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(out, sizeof(out), "%s/out.txt", dir);
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* A snapshot file round-trips; a truncated one and a wrong size are refused with the path named. */
START_TEST(snapshot_file_round_trip)
{
	float w[N], *r;
	uint64_t n;
	int64_t v;
	char p[128], err[256];

	for (int i = 0; i < N; i++)
		w[i] = (float)i * 0.25f - 3;
	snap("server", 7, w, N, 41);
	snprintf(p, sizeof(p), "%s/server-7.f32", dir);
	ck_assert_int_eq(mlf_verify_read(p, &r, &n, &v, err, sizeof(err)), 0);
	ck_assert_uint_eq(n, N);
	ck_assert_int_eq(v, 41);
	ck_assert_int_eq(memcmp(r, w, sizeof(w)), 0);
	ck_assert_double_eq(mlf_verify_divergence(r, w, N), 0);
	free(r);
	ck_assert_int_eq(truncate(p, 16 + 4 * N - 1), 0);
	ck_assert_int_eq(mlf_verify_read(p, &r, &n, &v, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "server-7.f32"));
	ck_assert_ptr_nonnull(strstr(err, "truncated"));
	ck_assert_ptr_null(r);
	ck_assert_int_eq(truncate(p, 10), 0);
	ck_assert_int_eq(mlf_verify_read(p, &r, &n, &v, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "header"));
	ck_assert_int_eq(mlf_verify_read("/nonexistent/x.f32", &r, &n, &v, err, sizeof(err)), -ENOENT);
}
END_TEST

/* Tag 1 identical, tag 2 differs by (3, 4) in two floats: divergence 5 exactly; bounds from batches.jsonl. */
START_TEST(verify_known_divergence)
{
	float a[N], b[N];
	char p[128], *o;
	FILE *f;

	for (int i = 0; i < N; i++)
		a[i] = b[i] = (float)(i % 7) - 2.5f;
	snap("server", 1, a, N, 10);
	snap("replica", 1, b, N, 10);
	b[3] += 3;
	b[50] -= 4;
	snap("server", 2, a, N, 20);
	snap("replica", 2, b, N, 18);
	snap("server", 3, a, N, 30); /* no replica snapshot of tag 3: left out */
	snprintf(p, sizeof(p), "%s/batches.jsonl", dir);
	f = fopen(p, "w");
	fprintf(f, "{\"batch\":1,\"t\":1.0,\"divergence_bound\":0.5}\n{\"batch\":2,\"t\":2.0,\"divergence_bound\":7.5}\n");
	fclose(f);

	ck_assert_int_eq(run_verify("--div-max 5.01"), 0);
	o = output();
	ck_assert_msg(strstr(o, "       1         10         10              0              -"), "%s", o);
	ck_assert_msg(strstr(o, "       2         20         18              5              -"), "%s", o);
	ck_assert_msg(strstr(o, "only one of the two snapshots"), "%s", o);

	snprintf(p, sizeof(p), "--div-max 4.99 --batches %s/batches.jsonl", dir);
	ck_assert_int_eq(run_verify(p), 1);
	o = output();
	ck_assert_msg(strstr(o, "       2         20         18              5            7.5"), "%s", o);
	ck_assert_msg(strstr(o, "tag 2: divergence over --div-max 4.99"), "%s", o);

	ck_assert_int_eq(run_verify("--json"), 0);
	o = output();
	ck_assert_msg(strstr(o, "{\"tag\":2,\"server_version\":20,\"replica_version\":18,\"divergence\":5.0,\"bound\":null}"), "%s", o);
}
END_TEST

/* Bad input exits 2: a truncated snapshot, n differing, no pairs, a malformed batches file. */
START_TEST(verify_bad_input)
{
	float a[N] = { 0 };
	char p[128], *o;
	FILE *f;

	ck_assert_int_eq(run_verify(""), 2);
	ck_assert_msg(strstr(output(), "no tag with both"), "%s", output());
	snap("server", 4, a, N, 1);
	snap("replica", 4, a, N - 1, 1);
	ck_assert_int_eq(run_verify(""), 2);
	o = output();
	ck_assert_msg(strstr(o, "tag 4: the server's model has 100 floats, the replica's 99"), "%s", o);
	snap("replica", 4, a, N, 1);
	ck_assert_int_eq(run_verify(""), 0);
	snprintf(p, sizeof(p), "%s/replica-4.f32", dir);
	ck_assert_int_eq(truncate(p, 16 + 4 * N - 8), 0);
	ck_assert_int_eq(run_verify("--div-max 1"), 2);
	o = output();
	ck_assert_msg(strstr(o, "replica-4.f32") && strstr(o, "truncated"), "%s", o);
	snap("replica", 4, a, N, 1);
	snprintf(p, sizeof(p), "%s/batches.jsonl", dir);
	f = fopen(p, "w");
	fprintf(f, "{\"batch\":4,\n");
	fclose(f);
	snprintf(p, sizeof(p), "--batches %s/batches.jsonl", dir);
	ck_assert_int_eq(run_verify(p), 2);
	ck_assert_msg(strstr(output(), "line 1: not JSON"), "%s", output());
	ck_assert_int_eq(run_verify("--div-max x"), 2);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fabric_verify");
	TCase *tc = tcase_create("verify");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, snapshot_file_round_trip);
	tcase_add_test(tc, verify_known_divergence);
	tcase_add_test(tc, verify_bad_input);
	suite_add_tcase(s, tc);
	return ck_run(s);
}
