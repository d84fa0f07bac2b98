/* test_planio.c - Check tests of the batch reader (validation messages), writer and round trip. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ck_run.h"
#include "planio.h"

/* A valid batch using every field of docs/plan-format.md. */
static const char *base_batch =
	"{\"mode\": \"mlfabric-a\", \"now_s\": 0.0,"
	" \"hosts\": [{\"name\": \"w0\", \"up_gbps\": 10.0, \"down_gbps\": 10.0},"
	"             {\"name\": \"w1\", \"up_gbps\": 2.5, \"down_gbps\": 10.0},"
	"             {\"name\": \"w2\", \"up_gbps\": 10.0, \"down_gbps\": 10.0},"
	"             {\"name\": \"ps\", \"up_gbps\": 40.0, \"down_gbps\": 40.0},"
	"             {\"name\": \"rep\", \"up_gbps\": 10.0, \"down_gbps\": 10.0}],"
	" \"capacity_changes\": [{\"link\": \"w1.up\", \"at_s\": 0.5, \"gbps\": 1.25}],"
	" \"servers\": [\"ps\"], \"replica\": \"rep\", \"aggregators\": [\"w2\"],"
	" \"replica_aggregators\": [\"w0\"], \"tau_max\": 30, \"v_init\": 1000,"
	" \"momentum\": 0.9, \"div_max\": 1.5, \"history_norm\": 0.2, \"replica_lag\": 1,"
	" \"updates\": ["
	"   {\"id\": \"u0\", \"worker\": \"w0\", \"bytes\": 100000000, \"version\": 995,"
	"    \"norm\": 0.8, \"ready_s\": 0.0},"
	"   {\"id\": \"u1\", \"worker\": \"w1\", \"bytes\": 5000000, \"version\": 990,"
	"    \"norm\": 0.25, \"ready_s\": 0.125},"
	"   {\"id\": \"r0\", \"worker\": \"w1\", \"bytes\": 7000000, \"version\": 980,"
	"    \"norm\": 0.5, \"ready_s\": 0.0, \"replica_only\": true}],"
	" \"model_bytes\": 100000000,"
	" \"pulls\": [{\"id\": \"p0\", \"worker\": \"w2\", \"ready_s\": 0.01}],"
	" \"distributors\": [\"w0\"]}";

/* Walk a path like "updates[1].worker" to the parent object/array and the last component. */
static json_t *walk(json_t *doc, const char *path, char *last, size_t *idx, int *is_index)
{
	char buf[256], *save = NULL, *tok, *next;
	json_t *cur = doc, *parent = NULL;

	snprintf(buf, sizeof(buf), "%s", path);
	for (tok = strtok_r(buf, ".", &save); tok; tok = next) {
		char *br = strchr(tok, '[');

		next = strtok_r(NULL, ".", &save);
		if (br)
			*br = '\0';
		parent = cur;
		snprintf(last, 64, "%s", tok);
		*is_index = 0;
		if (br) {
			cur = json_object_get(cur, tok);
			parent = cur;
			*idx = strtoul(br + 1, NULL, 10);
			*is_index = 1;
			cur = json_array_get(cur, *idx);
		} else if (next) {
			cur = json_object_get(cur, tok);
		}
	}
	return parent;
}

/* The base batch with @path set to @value (JSON text) or removed (@value NULL), as text. */
static char *mutate(const char *path, const char *value)
{
	json_t *doc = json_loads(base_batch, 0, NULL), *parent, *v = NULL;
	char last[64];
	size_t idx = 0;
	int is_index = 0;
	char *out;

	ck_assert_ptr_nonnull(doc);
	parent = walk(doc, path, last, &idx, &is_index);
	ck_assert_ptr_nonnull(parent);
	if (value) {
		v = json_loads(value, JSON_DECODE_ANY, NULL);
		ck_assert_msg(v != NULL, "bad test value %s", value);
	}
	if (is_index && v)
		json_array_set_new(parent, idx, v);
	else if (is_index)
		json_array_remove(parent, idx);
	else if (v)
		json_object_set_new(parent, last, v);
	else
		json_object_del(parent, last);
	out = json_dumps(doc, JSON_PRESERVE_ORDER);
	json_decref(doc);
	return out;
}

START_TEST(test_reads_every_field)
{
	struct plan_batch b;
	char err[PLANIO_ERR_MAX];

	ck_assert_int_eq(planio_read_string(base_batch, &b, err, sizeof(err)), 0);
	ck_assert_int_eq(b.mode, PLAN_MLFABRIC_A);
	ck_assert_int_eq(b.n_hosts, 5);
	ck_assert_str_eq(b.hosts[1].name, "w1");
	ck_assert_double_eq(b.hosts[1].up_gbps, 2.5);
	ck_assert_int_eq(b.n_changes, 1);
	ck_assert_int_eq(b.changes[0].host, 1);
	ck_assert_int_eq(b.changes[0].dir, PLAN_UP);
	ck_assert_double_eq(b.changes[0].gbps, 1.25);
	ck_assert_int_eq(b.n_servers, 1);
	ck_assert_int_eq(b.servers[0], 3);
	ck_assert_int_eq(b.replica, 4);
	ck_assert_int_eq(b.n_aggregators, 1);
	ck_assert_int_eq(b.aggregators[0], 2);
	ck_assert_int_eq(b.replica_aggregators[0], 0);
	ck_assert_int_eq(b.tau_max, 30);
	ck_assert_int_eq(b.v_init, 1000);
	ck_assert_double_eq(b.div_max, 1.5);
	ck_assert_int_eq(b.replica_lag, 1);
	ck_assert_int_eq(b.n_updates, 3);
	ck_assert_int_eq(b.updates[1].worker, 1);
	ck_assert_uint_eq(b.updates[1].bytes, 5000000);
	ck_assert_int_eq(b.updates[1].version, 990);
	ck_assert_double_eq(b.updates[1].ready_s, 0.125);
	ck_assert_int_eq(b.updates[0].replica_only, 0);
	ck_assert_int_eq(b.updates[2].replica_only, 1);
	ck_assert_uint_eq(b.model_bytes, 100000000);
	ck_assert_int_eq(b.n_pulls, 1);
	ck_assert_int_eq(b.pulls[0].worker, 2);
	ck_assert_int_eq(b.n_distributors, 1);
	planio_batch_free(&b);
	ck_assert_ptr_null(b.hosts);
}
END_TEST

START_TEST(test_defaults)
{
	const char *doc = "{\"hosts\": [{\"name\": \"w0\", \"up_gbps\": 1, \"down_gbps\": 1},"
			  " {\"name\": \"ps\", \"up_gbps\": 1, \"down_gbps\": 1}],"
			  " \"servers\": \"ps\", \"mode\": \"mlfabric-s\","
			  " \"updates\": [{\"id\": \"u0\", \"worker\": \"w0\", \"bytes\": 10}]}";
	struct plan_batch b;
	char err[PLANIO_ERR_MAX];

	ck_assert_msg(planio_read_string(doc, &b, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(b.mode, PLAN_MLFABRIC_S);
	ck_assert_int_eq(b.replica, -1);
	ck_assert_int_eq(b.n_servers, 1);
	ck_assert_double_eq(b.momentum, 0.9);
	ck_assert_double_eq(b.updates[0].ready_s, 0.0);
	ck_assert_int_eq(b.updates[0].version, 0);
	planio_batch_free(&b);
}
END_TEST

/* One bad document per row: the path to change, its new JSON value (NULL: delete), the error. */
static const struct bad_case {
	const char *path;
	const char *value;
	const char *error;
} bad_cases[] = {
	{ "hosts", NULL, "hosts: missing required field" },
	{ "servers", NULL, "servers: missing required field" },
	{ "updates", NULL, "updates: missing required field" },
	{ "tau_max", NULL, "tau_max: missing required field" },
	{ "v_init", NULL, "v_init: missing required field" },
	{ "div_max", NULL, "div_max: missing required field" },
	{ "mode", "\"fast\"", "mode: expected \"mlfabric-a\" or \"mlfabric-s\", got \"fast\"" },
	{ "mode", "3", "mode: expected \"mlfabric-a\" or \"mlfabric-s\", got an integer" },
	{ "mode", "\"async\"", "mode: \"async\" is the old spelling: write \"mlfabric-a\"" },
	{ "mode", "\"sync\"", "mode: \"sync\" is the old spelling: write \"mlfabric-s\"" },
	{ "now_s", "\"zero\"", "now_s: expected a number, got a string" },
	{ "tau_max", "2.5", "tau_max: expected an integer, got a real number" },
	{ "tau_max", "-1", "tau_max: must be >= 0, got -1" },
	{ "tau_max", "9223372036854775807",
	  "tau_max: magnitude must be <= 2^53, got 9223372036854775807" },
	{ "v_init", "-9223372036854775807",
	  "v_init: magnitude must be <= 2^53, got -9223372036854775807" },
	{ "v_init", "9007199254740992", NULL }, /* 2^53 itself is fine */
	{ "updates[1].version", "9007199254740993",
	  "updates[1].version: magnitude must be <= 2^53, got 9007199254740993" },
	{ "momentum", "1.0", "momentum: must be in [0, 1), got 1" },
	{ "div_max", "-0.5", "div_max: must be >= 0, got -0.5" },
	{ "replica_lag", "-2", "replica_lag: must be >= 0, got -2" },
	{ "colour", "1", "colour: unknown key" },
	{ "hosts", "{}", "hosts: expected an array, got an object" },
	{ "hosts", "[]", "hosts: must not be empty" },
	{ "hosts[0]", "7", "hosts[0]: expected an object, got an integer" },
	{ "hosts[0].name", NULL, "hosts[0].name: missing required field" },
	{ "hosts[0].name", "\"\"", "hosts[0].name: must not be empty" },
	{ "hosts[0].name", "\"w1\"", "hosts[1].name: duplicate host \"w1\"" },
	{ "hosts[1].up_gbps", "0", "hosts[1].up_gbps: must be > 0, got 0" },
	{ "hosts[1].down_gbps", "\"fast\"", "hosts[1].down_gbps: expected a number, got a string" },
	{ "hosts[2].speed", "1", "hosts[2].speed: unknown key" },
	{ "capacity_changes[0].link", "\"w1.side\"",
	  "capacity_changes[0].link: \"w1.side\" is not <host>.up or <host>.down" },
	{ "capacity_changes[0].link", "\"w7.up\"", "capacity_changes[0].link: unknown host \"w7\"" },
	{ "capacity_changes[0].gbps", "-1", "capacity_changes[0].gbps: must be >= 0, got -1" },
	{ "capacity_changes[0].at_s", NULL, "capacity_changes[0].at_s: missing required field" },
	{ "servers", "[]", "servers: must name at least one server" },
	{ "servers", "[\"ps\", \"ps\"]", "servers[1]: host \"ps\" listed twice" },
	{ "servers", "[\"nope\"]", "servers[0]: unknown host \"nope\"" },
	{ "replica", "\"ps\"", "replica: host \"ps\" is also a server" },
	{ "replica", "\"zz\"", "replica: unknown host \"zz\"" },
	{ "aggregators", "[\"ps\"]", "aggregators[0]: host \"ps\" is a server" },
	{ "aggregators", "[\"rep\"]", "aggregators[0]: host \"rep\" is the replica" },
	{ "aggregators", "\"w2\"", "aggregators: expected an array of host names, got a string" },
	{ "replica_aggregators", "[\"w9\"]", "replica_aggregators[0]: unknown host \"w9\"" },
	{ "updates", "[]", NULL /* checked below: pulls remain, so this one is valid */ },
	{ "updates[0].id", NULL, "updates[0].id: missing required field" },
	{ "updates[1].id", "\"u0\"", "updates[1].id: duplicate update id \"u0\"" },
	{ "updates[1].worker", "\"w9\"", "updates[1].worker: unknown host \"w9\"" },
	{ "updates[1].worker", "\"ps\"", "updates[1].worker: host \"ps\" is a server" },
	{ "updates[1].worker", "\"rep\"", "updates[1].worker: host \"rep\" is the replica" },
	{ "updates[0].bytes", NULL, "updates[0].bytes: missing required field" },
	{ "updates[0].bytes", "-5", "updates[0].bytes: must be > 0 bytes, got -5" },
	{ "updates[0].bytes", "0", "updates[0].bytes: must be > 0 bytes, got 0" },
	{ "updates[0].bytes", "1.5", "updates[0].bytes: expected an integer number of bytes, got a real number" },
	{ "updates[0].version", NULL, "updates[0].version: missing required field" },
	{ "updates[0].version", "\"995\"", "updates[0].version: expected an integer, got a string" },
	{ "updates[0].norm", "-1", "updates[0].norm: must be >= 0, got -1" },
	{ "updates[0].ready_s", "null", "updates[0].ready_s: expected a number, got null" },
	{ "updates[0].replica_only", "1", "updates[0].replica_only: expected true or false, got an integer" },
	{ "updates[0].priority", "1", "updates[0].priority: unknown key" },
	{ "updates[0].shards", "[]", "updates[0].shards: only allowed with several servers" },
	{ "updates[2]", "\"u2\"", "updates[2]: expected an object, got a string" },
	{ "updates[0].inflight_s", "0.1", "updates[0].inflight_s: only for a carried copy (replica_only true)" },
	{ "updates[2].inflight_s", "0.3", NULL /* a carried copy under way: valid */ },
	{ "updates[2].inflight_s", "\"x\"", "updates[2].inflight_s: expected a number, got a string" },
	{ "pulls[0].worker", "\"w5\"", "pulls[0].worker: unknown host \"w5\"" },
	{ "pulls[0].worker", "\"ps\"", "pulls[0].worker: host \"ps\" is a server" },
	{ "pulls[0].server", "\"w1\"", "pulls[0].server: host \"w1\" is not a server" },
	{ "pulls[0].server", "\"zz\"", "pulls[0].server: unknown host \"zz\"" },
	{ "pulls[0].server", "\"ps\"", NULL /* the one server: valid */ },
	{ "pulls[0].bytes", "0", "pulls[0].bytes: must be > 0 bytes, got 0" },
	{ "model_bytes", NULL, "model_bytes: missing required field (the batch has pulls)" },
	{ "distributors", "[\"w0\", \"w0\"]", "distributors[1]: host \"w0\" listed twice" },
};

START_TEST(test_bad_input_names_field)
{
	const struct bad_case *bc = &bad_cases[_i];
	char *doc = mutate(bc->path, bc->value);
	struct plan_batch b;
	char err[PLANIO_ERR_MAX] = "";
	int rc = planio_read_string(doc, &b, err, sizeof(err));

	free(doc);
	if (!bc->error) {
		ck_assert_msg(rc == 0, "%s: %s", bc->path, err);
		planio_batch_free(&b);
		return;
	}
	ck_assert_int_eq(rc, -EINVAL);
	ck_assert_str_eq(err, bc->error);
	ck_assert_ptr_null(strchr(err, '\n'));
	ck_assert_ptr_null(b.hosts); /* left zeroed */
}
END_TEST

/* Every required field of the base batch, deleted, is named as missing. */
static const char *const required_paths[] = {
	"hosts", "servers", "updates", "tau_max", "v_init", "div_max", "hosts[2].name",
	"hosts[2].up_gbps", "hosts[2].down_gbps", "capacity_changes[0].link",
	"capacity_changes[0].at_s", "capacity_changes[0].gbps", "updates[1].id",
	"updates[1].worker", "updates[1].bytes", "updates[1].version", "pulls[0].id",
	"pulls[0].worker",
};

START_TEST(test_each_required_field_missing)
{
	char *doc = mutate(required_paths[_i], NULL), want[128];
	struct plan_batch b;
	char err[PLANIO_ERR_MAX];

	ck_assert_int_eq(planio_read_string(doc, &b, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "%s: missing required field", required_paths[_i]);
	ck_assert_str_eq(err, want);
	free(doc);
}
END_TEST

/* Every optional field of the base batch may be left out. */
static const char *const optional_paths[] = {
	"mode", "now_s", "capacity_changes", "aggregators", "momentum", "history_norm",
	"replica_lag", "updates[0].norm", "updates[0].ready_s", "updates[2].replica_only",
	"pulls[0].ready_s", "distributors", "replica_aggregators",
};

START_TEST(test_each_optional_field_missing)
{
	char *doc = mutate(optional_paths[_i], NULL);
	struct plan_batch b;
	char err[PLANIO_ERR_MAX];

	ck_assert_msg(planio_read_string(doc, &b, err, sizeof(err)) == 0, "%s: %s",
		      optional_paths[_i], err);
	planio_batch_free(&b);
	free(doc);
}
END_TEST

/* Collect the path of every value in @v (objects and arrays included) below @prefix. */
static int collect_paths(const json_t *v, const char *prefix, char paths[][96], int n, int max)
{
	const char *key;
	json_t *e;
	size_t i;

	if (json_is_object(v)) {
		json_object_foreach((json_t *)v, key, e) {
			if (n >= max)
				break;
			snprintf(paths[n], 96, "%s%s%s", prefix, *prefix ? "." : "", key);
			n = collect_paths(e, paths[n], paths, n + 1, max);
		}
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, e) {
			if (n >= max)
				break;
			snprintf(paths[n], 96, "%s[%zu]", prefix, i);
			n = collect_paths(e, paths[n], paths, n + 1, max);
		}
	}
	return n;
}

/* Every value of the base batch replaced by one of the wrong JSON type is an error naming it. */
START_TEST(test_each_field_ill_typed)
{
	static char paths[256][96];
	json_t *doc = json_loads(base_batch, 0, NULL);
	int n = collect_paths(doc, "", paths, 0, 256);

	ck_assert_int_gt(n, 60);
	for (int i = 0; i < n; i++) {
		json_t *parent, *v;
		char last[64], *text, err[PLANIO_ERR_MAX], prefix[100];
		size_t idx;
		int is_index, rc;
		struct plan_batch b;

		/* The value now at that path, to pick a type it is not. */
		parent = walk(doc, paths[i], last, &idx, &is_index);
		v = is_index ? json_array_get(parent, idx) : json_object_get(parent, last);
		text = mutate(paths[i], json_is_string(v) ? "[7]" : "\"x\"");
		rc = planio_read_string(text, &b, err, sizeof(err));
		free(text);
		ck_assert_msg(rc == -EINVAL, "%s: wrong type accepted", paths[i]);
		snprintf(prefix, sizeof(prefix), "%.95s: ", paths[i]);
		ck_assert_msg(strncmp(err, prefix, strlen(prefix)) == 0, "%s: error '%s'",
			      paths[i], err);
	}
	json_decref(doc);
}
END_TEST

START_TEST(test_malformed_json)
{
	struct plan_batch b;
	char err[PLANIO_ERR_MAX];

	ck_assert_int_eq(planio_read_string("{\"hosts\": [1, 2,}", &b, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strncmp(err, "line 1 column", 13) == 0, "%s", err);
	ck_assert_int_eq(planio_read_string("[1, 2]", &b, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "batch: expected an object, got an array");
	ck_assert_int_eq(planio_read_string("{\"now_s\": 1, \"now_s\": 2}", &b, err, sizeof(err)),
			 -EINVAL);
	ck_assert_msg(strstr(err, "duplicate") != NULL, "%s", err);
}
END_TEST

START_TEST(test_sharded_updates)
{
	const char *doc = "{\"hosts\": [{\"name\": \"w0\", \"up_gbps\": 1, \"down_gbps\": 1},"
			  " {\"name\": \"ps0\", \"up_gbps\": 1, \"down_gbps\": 1},"
			  " {\"name\": \"ps1\", \"up_gbps\": 1, \"down_gbps\": 1}],"
			  " \"servers\": [\"ps0\", \"ps1\"], \"tau_max\": 3, \"v_init\": 0,"
			  " \"updates\": [{\"id\": \"u0\", \"worker\": \"w0\", \"version\": 0,"
			  "   \"shards\": [{\"server\": \"ps1\", \"bytes\": 5},"
			  "                {\"server\": \"ps0\", \"bytes\": 7}]}]}";
	struct plan_batch b;
	char err[PLANIO_ERR_MAX], *bad;

	ck_assert_msg(planio_read_string(doc, &b, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(b.updates[0].n_shards, 2);
	ck_assert_int_eq(b.updates[0].shards[0].server, 0); /* sorted by server */
	ck_assert_uint_eq(b.updates[0].shards[0].bytes, 7);
	ck_assert_int_eq(b.updates[0].shards[1].server, 1);
	ck_assert_uint_eq(b.updates[0].shards[1].bytes, 5);
	ck_assert_uint_eq(b.updates[0].bytes, 12);
	planio_batch_free(&b);

	bad = strdup(doc);
	memcpy(strstr(bad, "\"ps1\", \"bytes\": 5"), "\"ps0\"", 5);
	ck_assert_int_eq(planio_read_string(bad, &b, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "updates[0].shards[1].server: second shard for \"ps0\"");
	free(bad);
	bad = strdup(doc);
	memcpy(strstr(bad, "\"ps1\", \"bytes\": 5"), "\"w0\" ", 5);
	ck_assert_int_eq(planio_read_string(bad, &b, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "updates[0].shards[0].server: host \"w0\" is not a server");
	free(bad);
}
END_TEST

START_TEST(test_read_file_errors)
{
	struct plan_batch b;
	char err[PLANIO_ERR_MAX];

	ck_assert_int_eq(planio_read_file("/nonexistent/batch.json", &b, err, sizeof(err)),
			 -ENOENT);
	ck_assert_str_eq(err, "/nonexistent/batch.json: No such file or directory");
}
END_TEST

static void assert_batches_equal(const struct plan_batch *a, const struct plan_batch *b)
{
	ck_assert_int_eq(a->mode, b->mode);
	ck_assert_double_eq(a->now_s, b->now_s);
	ck_assert_int_eq(a->n_hosts, b->n_hosts);
	ck_assert_mem_eq(a->hosts, b->hosts, sizeof(*a->hosts) * (size_t)a->n_hosts);
	ck_assert_int_eq(a->n_changes, b->n_changes);
	if (a->n_changes)
		ck_assert_mem_eq(a->changes, b->changes, sizeof(*a->changes) * (size_t)a->n_changes);
	ck_assert_int_eq(a->n_servers, b->n_servers);
	ck_assert_mem_eq(a->servers, b->servers, sizeof(int) * (size_t)a->n_servers);
	ck_assert_int_eq(a->replica, b->replica);
	ck_assert_int_eq(a->n_aggregators, b->n_aggregators);
	ck_assert_int_eq(a->n_replica_aggregators, b->n_replica_aggregators);
	ck_assert_int_eq(a->tau_max, b->tau_max);
	ck_assert_int_eq(a->v_init, b->v_init);
	ck_assert_double_eq(a->momentum, b->momentum);
	ck_assert_double_eq(a->div_max, b->div_max);
	ck_assert_double_eq(a->history_norm, b->history_norm);
	ck_assert_int_eq(a->replica_lag, b->replica_lag);
	ck_assert_int_eq(a->n_updates, b->n_updates);
	for (int i = 0; i < a->n_updates; i++) {
		const struct plan_update *x = &a->updates[i], *y = &b->updates[i];

		ck_assert_str_eq(x->id, y->id);
		ck_assert_int_eq(x->worker, y->worker);
		ck_assert_uint_eq(x->bytes, y->bytes);
		ck_assert_int_eq(x->version, y->version);
		ck_assert_double_eq(x->norm, y->norm);
		ck_assert_double_eq(x->ready_s, y->ready_s);
		ck_assert_int_eq(x->replica_only, y->replica_only);
		ck_assert_int_eq(x->n_shards, y->n_shards);
		if (x->n_shards)
			ck_assert_mem_eq(x->shards, y->shards, sizeof(*x->shards) * (size_t)x->n_shards);
	}
	ck_assert_uint_eq(a->model_bytes, b->model_bytes);
	ck_assert_int_eq(a->n_pulls, b->n_pulls);
	if (a->n_pulls)
		ck_assert_mem_eq(a->pulls, b->pulls, sizeof(*a->pulls) * (size_t)a->n_pulls);
	ck_assert_int_eq(a->n_distributors, b->n_distributors);
}

START_TEST(test_batch_round_trip)
{
	struct plan_batch a, b;
	char err[PLANIO_ERR_MAX], *text;
	json_t *doc;

	ck_assert_int_eq(planio_read_string(base_batch, &a, err, sizeof(err)), 0);
	doc = planio_batch_to_json(&a);
	ck_assert_ptr_nonnull(doc);
	text = json_dumps(doc, JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
	json_decref(doc);
	ck_assert_msg(planio_read_string(text, &b, err, sizeof(err)) == 0, "%s", err);
	assert_batches_equal(&a, &b);
	free(text);
	planio_batch_free(&a);
	planio_batch_free(&b);
}
END_TEST

/* A two-update plan: u0 direct, u1 through aggregate a0 at w2, one replica copy. */
START_TEST(test_plan_writer)
{
	struct plan_batch b;
	char err[PLANIO_ERR_MAX];
	int order[] = { 0, 1 }, inputs[] = { 1 }, punted[] = { 1 };
	struct plan_rate_step r0[] = { { 0.0, 10.0 }, { 0.05, 5.0 } }, r1[] = { { 0.1, 10.0 } };
	struct plan_aggregate ag = { .host = 2, .target = 3, .purpose = PLAN_PURPOSE_SERVER,
				     .n_inputs = 1, .inputs = inputs };
	struct plan_transfer tr[] = {
		{ .kind = PLAN_CARRY_UPDATE, .carries = 0, .shard = -1, .src = 0, .dst = 3,
		  .bytes = 93750000, .purpose = PLAN_PURPOSE_SERVER, .start_s = 0.0, .end_s = 0.1,
		  .n_rate = 2, .rate = r0 },
		{ .kind = PLAN_CARRY_AGGREGATE, .carries = 0, .shard = -1, .src = 2, .dst = 3,
		  .bytes = 5000000, .purpose = PLAN_PURPOSE_SERVER, .start_s = 0.1, .end_s = 0.104,
		  .n_rate = 1, .rate = r1 },
	};
	struct plan_commit cm[] = { { .host = 3, .kind = PLAN_CARRY_UPDATE, .carries = 0,
				      .at_s = 0.1, .version = 1001 },
				    { .host = 3, .kind = PLAN_CARRY_AGGREGATE, .carries = 0,
				      .at_s = 0.104, .version = 1002 } };
	struct plan p = { .n_order = 2, .order = order, .n_aggregates = 1, .aggregates = &ag,
			  .n_transfers = 2, .transfers = tr, .n_commits = 2, .commits = cm,
			  .n_punted = 1, .punted = punted, .divergence_bound = 0.7, .plan_ms = 0.5 };
	const char *keys[] = { "order", "dropped", "aggregates", "transfers", "commits",
			       "replica_commits", "punted", "inflight", "unanswered", "divergence_bound",
			       "plan_ms" };
	json_t *doc, *t0, *v;
	const char *key;
	size_t k = 0;

	ck_assert_int_eq(planio_read_string(base_batch, &b, err, sizeof(err)), 0);
	doc = planio_plan_to_json(&b, &p);
	ck_assert_ptr_nonnull(doc);
	json_object_foreach(doc, key, v) {
		ck_assert_uint_lt(k, sizeof(keys) / sizeof(keys[0]));
		ck_assert_str_eq(key, keys[k++]);
	}
	ck_assert_uint_eq(k, sizeof(keys) / sizeof(keys[0]));
	ck_assert_str_eq(json_string_value(json_array_get(json_object_get(doc, "order"), 1)), "u1");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(
		json_object_get(doc, "aggregates"), 0), "id")), "a0");
	t0 = json_array_get(json_object_get(doc, "transfers"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(t0, "id")), "t0");
	ck_assert_str_eq(json_string_value(json_object_get(t0, "carries")), "u0");
	ck_assert_str_eq(json_string_value(json_object_get(t0, "src")), "w0");
	ck_assert_str_eq(json_string_value(json_object_get(t0, "dst")), "ps");
	ck_assert_str_eq(json_string_value(json_object_get(t0, "purpose")), "server");
	ck_assert_ptr_null(json_object_get(t0, "shard"));
	ck_assert_int_eq(json_integer_value(json_object_get(t0, "bytes")), 93750000);
	ck_assert_double_eq(json_real_value(json_object_get(json_array_get(
		json_object_get(t0, "rate"), 1), "gbps")), 5.0);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(
		json_object_get(doc, "transfers"), 1), "carries")), "a0");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(
		json_object_get(doc, "commits"), 1), "carries")), "a0");
	ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(
		json_object_get(doc, "commits"), 1), "version")), 1002);
	ck_assert_str_eq(json_string_value(json_array_get(json_object_get(doc, "punted"), 0)),
			 "u1");
	ck_assert_double_eq(json_real_value(json_object_get(doc, "divergence_bound")), 0.7);
	json_decref(doc);

	tr[1].dst = 99; /* an index out of range is refused, not dereferenced */
	ck_assert_ptr_null(planio_plan_to_json(&b, &p));
	planio_batch_free(&b);
}
END_TEST

static Suite *planio_suite(void)
{
	Suite *s = suite_create("planio");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_reads_every_field);
	tcase_add_test(tc, test_defaults);
	tcase_add_loop_test(tc, test_bad_input_names_field, 0,
			    (int)(sizeof(bad_cases) / sizeof(bad_cases[0])));
	tcase_add_loop_test(tc, test_each_required_field_missing, 0,
			    (int)(sizeof(required_paths) / sizeof(required_paths[0])));
	tcase_add_loop_test(tc, test_each_optional_field_missing, 0,
			    (int)(sizeof(optional_paths) / sizeof(optional_paths[0])));
	tcase_add_test(tc, test_each_field_ill_typed);
	tcase_add_test(tc, test_malformed_json);
	tcase_add_test(tc, test_sharded_updates);
	tcase_add_test(tc, test_read_file_errors);
	tcase_add_test(tc, test_batch_round_trip);
	tcase_add_test(tc, test_plan_writer);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run(planio_suite()) ? EXIT_FAILURE : EXIT_SUCCESS;
}
