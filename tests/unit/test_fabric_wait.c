/* test_fabric_wait.c - Check tests of libmlfabric's waits on peers (lib/mlfabric/fabric_wait.c,
 * docs/mlf-top.md): logged once past the threshold naming the peer, the `waits` message for the
 * scheduler when the list changes, nothing below the threshold or when turned off. The endpoint
 * is built by hand (no dataplane, no event thread). */
#define _GNU_SOURCE
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ck_run.h"
#include "clock.h"
#include "fabric_int.h"

static const char *cluster_text =
	"{\"name\": \"wt\", \"hosts\": ["
	"{\"name\": \"ps\", \"ip\": \"10.9.0.2\", \"roles\": [\"server\", \"scheduler\"]},"
	"{\"name\": \"w0\", \"ip\": \"10.9.0.3\", \"roles\": [\"worker\"]},"
	"{\"name\": \"w1\", \"ip\": \"10.9.0.4\", \"roles\": [\"worker\"]},"
	"{\"name\": \"a0\", \"ip\": \"10.9.0.5\", \"roles\": [\"aggregator\"]}]}";

static struct mlf *endpoint(enum fabric_role role, const char *app, double threshold_s)
{
	struct mlf *f = calloc(1, sizeof(*f));
	char err[256];

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(cluster_parse(cluster_text, "test", &f->cl, err, sizeof(err)), 0);
	pthread_mutex_init(&f->lock, NULL);
	f->role = role;
	f->mode = MLF_MODE_MLFABRIC_A;
	f->reg_state = 1;
	f->waits.threshold_s = threshold_s;
	snprintf(f->app, sizeof(f->app), "%s", app);
	return f;
}

static void endpoint_free(struct mlf *f)
{
	cluster_free(&f->cl);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

/* fabric_wait_check now (the 0.1 s rate limit reset). */
static json_t *check_now(struct mlf *f)
{
	f->waits.last_check = 0;
	return fabric_wait_check(f);
}

/* Run @fn with stderr in a temporary file; returns the lines logged (malloc'ed). */
static char *captured(json_t *(*fn)(struct mlf *), struct mlf *f, json_t **out)
{
	char path[] = "/tmp/test_fabric_wait.XXXXXX";
	int fd = mkstemp(path), saved = dup(2);
	char *buf = calloc(1, 4096);

	ck_assert_int_ge(fd, 0);
	fflush(stderr);
	dup2(fd, 2);
	*out = fn(f);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	ck_assert_int_ge(pread(fd, buf, 4095, 0), 0);
	close(fd);
	unlink(path);
	return buf;
}

static const char *wait_field(json_t *m, size_t i, const char *k)
{
	return json_string_value(json_object_get(json_array_get(json_object_get(m, "waits"), i), k));
}

/* A worker's get: silent below the threshold, then logged once naming the server, reported;
 * the end of the get reports an empty list. */
START_TEST(worker_get_logged_once_and_reported)
{
	struct mlf *f = endpoint(FABRIC_ROLE_WORKER, "worker@w0", 0 /* default 2 s */);
	json_t *m;

	f->w.get[0].active = 1;
	snprintf(f->w.get[0].server, sizeof(f->w.get[0].server), "ps");
	f->w.get[0].min_version = -1;
	f->w.get[0].since = clock_real_s() - 1.0;
	char *log = captured(check_now, f, &m);
	ck_assert_ptr_null(m);
	ck_assert_str_eq(log, "");
	free(log);
	f->w.get[0].since = clock_real_s() - 2.5;
	log = captured(check_now, f, &m);
	ck_assert_ptr_nonnull(strstr(log, "worker@w0: waiting 2.5 s for model (get) from ps"));
	free(log);
	ck_assert_ptr_nonnull(m);
	ck_assert_str_eq(json_string_value(json_object_get(m, "type")), "waits");
	ck_assert_int_eq(json_array_size(json_object_get(m, "waits")), 1);
	ck_assert_str_eq(wait_field(m, 0, "peer"), "ps");
	ck_assert_str_eq(wait_field(m, 0, "what"), "model (get)");
	json_decref(m);
	/* the same wait: neither logged nor reported again */
	log = captured(check_now, f, &m);
	ck_assert_ptr_null(m);
	ck_assert_str_eq(log, "");
	free(log);
	/* it ends: an empty list */
	f->w.get[0].done = 1;
	m = check_now(f);
	ck_assert_ptr_nonnull(m);
	ck_assert_int_eq(json_array_size(json_object_get(m, "waits")), 0);
	json_decref(m);
	ck_assert_ptr_null(check_now(f));
	endpoint_free(f);
}
END_TEST

/* An aggregator names the worker of each input not arrived; a threshold < 0 turns it off. */
START_TEST(aggregator_names_missing_worker)
{
	struct mlf *f = endpoint(FABRIC_ROLE_AGGREGATOR, "aggregator@a0", 1.0);
	struct fabric_agg_cmd a = { .c = { .id = 77, .start = clock_real_s() - 1.5, .n_ids = 2 } };
	uint64_t ids[2] = { ((uint64_t)3 << 40) | 4, ((uint64_t)2 << 40) | 9 }; /* w1, w0 */
	json_t *m;

	a.c.ids = ids;
	f->agg.cmds = &a;
	char *log = captured(check_now, f, &m);
	ck_assert_ptr_nonnull(strstr(log, "aggregator@a0: waiting 1.5 s for input update 3298534883332 "
				     "of aggregate 77 from w1"));
	ck_assert_ptr_nonnull(strstr(log, "of aggregate 77 from w0"));
	free(log);
	ck_assert_int_eq(json_array_size(json_object_get(m, "waits")), 2);
	ck_assert_str_eq(wait_field(m, 0, "peer"), "w1");
	ck_assert_str_eq(wait_field(m, 1, "peer"), "w0");
	json_decref(m);
	/* a command whose start is in the future waits for nothing yet */
	a.c.start = clock_real_s() + 10;
	m = check_now(f);
	ck_assert_int_eq(json_array_size(json_object_get(m, "waits")), 0);
	json_decref(m);
	a.c.start = clock_real_s() - 5;
	f->waits.threshold_s = -1;
	log = captured(check_now, f, &m);
	ck_assert_ptr_null(m);
	ck_assert_str_eq(log, "");
	free(log);
	f->agg.cmds = NULL;
	endpoint_free(f);
}
END_TEST

/* Without a scheduler (MLF_MODE_DIRECT) a wait is logged, never reported. */
START_TEST(direct_mode_logs_only)
{
	struct mlf *f = endpoint(FABRIC_ROLE_WORKER, "worker@w1", 0.5);
	json_t *m;

	f->mode = MLF_MODE_DIRECT;
	f->w.get[0].active = 1;
	snprintf(f->w.get[0].server, sizeof(f->w.get[0].server), "ps");
	f->w.get[0].since = clock_real_s() - 0.6;
	char *log = captured(check_now, f, &m);
	ck_assert_ptr_null(m);
	ck_assert_ptr_nonnull(strstr(log, "worker@w1: waiting 0.6 s for model (get, min version) from ps"));
	free(log);
	endpoint_free(f);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fabric_wait");
	TCase *tc = tcase_create("waits");

	tcase_add_test(tc, worker_get_logged_once_and_reported);
	tcase_add_test(tc, aggregator_names_missing_worker);
	tcase_add_test(tc, direct_mode_logs_only);
	suite_add_tcase(s, tc);
	return ck_run(s);
}
