/* planio.c - batch document reader (table-driven validation) and plan document writer. */
#include "planio.h"

/*
 * One file although it is over 1000 lines: the reader and the writer are the two directions of
 * one document format (docs/plan-format.md) and must stay each other's inverse (reading what
 * planio_batch_to_json wrote gives an equal batch; test_planio checks the round trip), so a
 * change of the format is one change in one place. The reader is one table per object type
 * (below) and the generic code that walks the tables; the writer ("writing" below) emits the
 * same keys in the documented order.
 */

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/*
 * Reading is table driven (STYLE.md rule 6): each JSON object type has one table of its keys
 * with type, when the key is required, bounds and where the value goes. read_object() rejects
 * keys that are not in the table, missing required keys, wrong types and out-of-range values;
 * keys of type FT_CUSTOM are only declared known and are read by the caller (arrays, host
 * lists, links). Every error is one line "<path>: <problem>".
 */

enum field_type {
	FT_NUM,    /* JSON number -> double */
	FT_INT,    /* JSON integer -> int64_t */
	FT_BYTES,  /* JSON integer > 0 -> uint64_t */
	FT_BOOL,   /* JSON true/false -> int */
	FT_NAME,   /* non-empty string shorter than PLAN_NAME_MAX -> char[PLAN_NAME_MAX] */
	FT_HOST,   /* string naming a host of batch.hosts -> int host index */
	FT_CUSTOM, /* known key, read by the caller */
};

enum field_need {
	NEED_OPT = 0,   /* optional, the destination keeps its default */
	NEED_ALWAYS,    /* required */
	NEED_ASYNC,     /* required in mode mlfabric-a */
	NEED_REPLICA,   /* required when the batch has a replica */
};

enum bound_kind {
	BOUND_NONE = 0,
	BOUND_GE,       /* value >= lo */
	BOUND_GT,       /* value > lo */
	BOUND_GE_LT,    /* lo <= value < hi */
};

struct field {
	const char *key;
	enum field_type type;
	enum field_need need;
	enum bound_kind bound;
	double lo, hi;
	size_t off;     /* offset into the destination struct (unused for FT_CUSTOM) */
};

struct reader {
	struct plan_batch *b;
	char *err;
	size_t errlen;
	int has_replica;
};

#define NO_OFF 0
#define PLANIO_INT_MAX (1LL << 53) /* integer fields (versions, tau_max, lags) */

static int fail(struct reader *rd, const char *path, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Format "<path>.<key>: <message>" (either part may be empty) into rd->err; returns -EINVAL. */
static int fail(struct reader *rd, const char *path, const char *key, const char *fmt, ...)
{
	char msg[PLANIO_ERR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(rd->err, rd->errlen, "%s%s%s: %s", path, (*path && key && *key) ? "." : "",
		 key ? key : "", msg);
	return -EINVAL;
}

static const char *json_kind(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a real number";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	default: return "null";
	}
}

/* Host index of @name, or -1. */
static int host_index(const struct plan_batch *b, const char *name)
{
	for (int i = 0; i < b->n_hosts; i++)
		if (strcmp(b->hosts[i].name, name) == 0)
			return i;
	return -1;
}

static int check_bound(struct reader *rd, const char *path, const struct field *f, double v)
{
	switch (f->bound) {
	case BOUND_GE:
		if (!(v >= f->lo))
			return fail(rd, path, f->key, "must be >= %g, got %g", f->lo, v);
		break;
	case BOUND_GT:
		if (!(v > f->lo))
			return fail(rd, path, f->key, "must be > %g, got %g", f->lo, v);
		break;
	case BOUND_GE_LT:
		if (!(v >= f->lo && v < f->hi))
			return fail(rd, path, f->key, "must be in [%g, %g), got %g", f->lo, f->hi, v);
		break;
	case BOUND_NONE:
		break;
	}
	return 0;
}

static int read_name(struct reader *rd, const char *path, const char *key, const json_t *v,
		     char *dst)
{
	const char *s;

	if (!json_is_string(v))
		return fail(rd, path, key, "expected a string, got %s", json_kind(v));
	s = json_string_value(v);
	if (*s == '\0')
		return fail(rd, path, key, "must not be empty");
	if (strlen(s) >= PLAN_NAME_MAX)
		return fail(rd, path, key, "longer than %d characters", PLAN_NAME_MAX - 1);
	strcpy(dst, s);
	return 0;
}

static int read_host(struct reader *rd, const char *path, const char *key, const json_t *v,
		     int *dst)
{
	char name[PLAN_NAME_MAX];
	int rc = read_name(rd, path, key, v, name);

	if (rc)
		return rc;
	*dst = host_index(rd->b, name);
	if (*dst < 0)
		return fail(rd, path, key, "unknown host \"%s\"", name);
	return 0;
}

static int read_value(struct reader *rd, const char *path, const struct field *f,
		      const json_t *v, void *dst)
{
	char *at = (char *)dst + f->off;

	switch (f->type) {
	case FT_NUM:
		if (!json_is_number(v))
			return fail(rd, path, f->key, "expected a number, got %s", json_kind(v));
		*(double *)at = json_number_value(v);
		return check_bound(rd, path, f, *(double *)at);
	case FT_INT:
		if (!json_is_integer(v))
			return fail(rd, path, f->key, "expected an integer, got %s", json_kind(v));
		/* versions are added and subtracted (order.c: version + tau_max - v_init): keep
		 * every integer within 2^53 so no sum can overflow */
		if (json_integer_value(v) > PLANIO_INT_MAX || json_integer_value(v) < -PLANIO_INT_MAX)
			return fail(rd, path, f->key, "magnitude must be <= 2^53, got %" JSON_INTEGER_FORMAT,
				    json_integer_value(v));
		*(int64_t *)at = json_integer_value(v);
		return check_bound(rd, path, f, (double)*(int64_t *)at);
	case FT_BYTES:
		if (!json_is_integer(v))
			return fail(rd, path, f->key, "expected an integer number of bytes, got %s",
				    json_kind(v));
		if (json_integer_value(v) <= 0)
			return fail(rd, path, f->key, "must be > 0 bytes, got %" JSON_INTEGER_FORMAT,
				    json_integer_value(v));
		*(uint64_t *)at = (uint64_t)json_integer_value(v);
		return 0;
	case FT_BOOL:
		if (!json_is_boolean(v))
			return fail(rd, path, f->key, "expected true or false, got %s", json_kind(v));
		*(int *)at = json_is_true(v);
		return 0;
	case FT_NAME:
		return read_name(rd, path, f->key, v, at);
	case FT_HOST:
		return read_host(rd, path, f->key, v, (int *)at);
	case FT_CUSTOM:
		return 0;
	}
	return 0;
}

static int is_needed(const struct reader *rd, enum field_need need)
{
	switch (need) {
	case NEED_ALWAYS: return 1;
	case NEED_ASYNC: return rd->b->mode == PLAN_MLFABRIC_A;
	case NEED_REPLICA: return rd->has_replica;
	case NEED_OPT: return 0;
	}
	return 0;
}

/* Check @obj against @tab (n entries) and store every non-custom value into @dst. */
static int read_object(struct reader *rd, const char *path, const json_t *obj,
		       const struct field *tab, int n, void *dst)
{
	const char *key;
	json_t *v;
	int rc;

	if (!json_is_object(obj))
		return fail(rd, path, NULL, "expected an object, got %s", json_kind(obj));
	json_object_foreach((json_t *)obj, key, v) {
		int known = 0;

		for (int i = 0; i < n && !known; i++)
			known = strcmp(tab[i].key, key) == 0;
		if (!known)
			return fail(rd, path, key, "unknown key");
	}
	for (int i = 0; i < n; i++) {
		v = json_object_get(obj, tab[i].key);
		if (!v) {
			if (is_needed(rd, tab[i].need))
				return fail(rd, path, tab[i].key, "missing required field");
			continue;
		}
		rc = read_value(rd, path, &tab[i], v, dst);
		if (rc)
			return rc;
	}
	return 0;
}

/* Array at key @key of @obj (NULL when absent); an error when present but not an array. */
static int get_array(struct reader *rd, const char *path, const json_t *obj, const char *key,
		     json_t **out)
{
	*out = json_object_get(obj, key);
	if (*out && !json_is_array(*out))
		return fail(rd, path, key, "expected an array, got %s", json_kind(*out));
	return 0;
}

/* calloc that counts 0 elements as 1 so a NULL return always means out of memory. */
static void *alloc_array(size_t n, size_t size)
{
	return calloc(n ? n : 1, size);
}

#define FIELD(k, t, need, bound, lo, hi, type, member) \
	{ k, t, need, bound, lo, hi, offsetof(type, member) }
#define CUSTOM(k, need) { k, FT_CUSTOM, need, BOUND_NONE, 0, 0, NO_OFF }

static const struct field batch_fields[] = {
	CUSTOM("mode", NEED_OPT),
	FIELD("now_s", FT_NUM, NEED_OPT, BOUND_NONE, 0, 0, struct plan_batch, now_s),
	CUSTOM("hosts", NEED_ALWAYS),
	CUSTOM("capacity_changes", NEED_OPT),
	CUSTOM("servers", NEED_ALWAYS),
	CUSTOM("replica", NEED_OPT),
	CUSTOM("aggregators", NEED_OPT),
	CUSTOM("replica_aggregators", NEED_OPT),
	FIELD("tau_max", FT_INT, NEED_ASYNC, BOUND_GE, 0, 0, struct plan_batch, tau_max),
	FIELD("v_init", FT_INT, NEED_ASYNC, BOUND_NONE, 0, 0, struct plan_batch, v_init),
	FIELD("momentum", FT_NUM, NEED_OPT, BOUND_GE_LT, 0, 1, struct plan_batch, momentum),
	FIELD("div_max", FT_NUM, NEED_REPLICA, BOUND_GE, 0, 0, struct plan_batch, div_max),
	FIELD("history_norm", FT_NUM, NEED_OPT, BOUND_GE, 0, 0, struct plan_batch, history_norm),
	FIELD("replica_lag", FT_INT, NEED_OPT, BOUND_GE, 0, 0, struct plan_batch, replica_lag),
	CUSTOM("updates", NEED_ALWAYS),
	FIELD("model_bytes", FT_BYTES, NEED_OPT, BOUND_NONE, 0, 0, struct plan_batch, model_bytes),
	CUSTOM("pulls", NEED_OPT),
	CUSTOM("distributors", NEED_OPT),
};

static const struct field host_fields[] = {
	FIELD("name", FT_NAME, NEED_ALWAYS, BOUND_NONE, 0, 0, struct plan_host, name),
	FIELD("up_gbps", FT_NUM, NEED_ALWAYS, BOUND_GT, 0, 0, struct plan_host, up_gbps),
	FIELD("down_gbps", FT_NUM, NEED_ALWAYS, BOUND_GT, 0, 0, struct plan_host, down_gbps),
};

static const struct field change_fields[] = {
	CUSTOM("link", NEED_ALWAYS),
	FIELD("at_s", FT_NUM, NEED_ALWAYS, BOUND_NONE, 0, 0, struct plan_capacity_change, at_s),
	FIELD("gbps", FT_NUM, NEED_ALWAYS, BOUND_GE, 0, 0, struct plan_capacity_change, gbps),
};

static const struct field update_fields[] = {
	FIELD("id", FT_NAME, NEED_ALWAYS, BOUND_NONE, 0, 0, struct plan_update, id),
	FIELD("worker", FT_HOST, NEED_ALWAYS, BOUND_NONE, 0, 0, struct plan_update, worker),
	FIELD("bytes", FT_BYTES, NEED_OPT, BOUND_NONE, 0, 0, struct plan_update, bytes),
	CUSTOM("shards", NEED_OPT),
	FIELD("version", FT_INT, NEED_ASYNC, BOUND_NONE, 0, 0, struct plan_update, version),
	FIELD("norm", FT_NUM, NEED_OPT, BOUND_GE, 0, 0, struct plan_update, norm),
	FIELD("ready_s", FT_NUM, NEED_OPT, BOUND_NONE, 0, 0, struct plan_update, ready_s),
	FIELD("replica_only", FT_BOOL, NEED_OPT, BOUND_NONE, 0, 0, struct plan_update, replica_only),
	FIELD("inflight_s", FT_NUM, NEED_OPT, BOUND_NONE, 0, 0, struct plan_update, inflight_s),
};

static const struct field shard_fields[] = {
	CUSTOM("server", NEED_ALWAYS),
	FIELD("bytes", FT_BYTES, NEED_ALWAYS, BOUND_NONE, 0, 0, struct plan_shard, bytes),
};

static const struct field pull_fields[] = {
	FIELD("id", FT_NAME, NEED_ALWAYS, BOUND_NONE, 0, 0, struct plan_pull, id),
	FIELD("worker", FT_HOST, NEED_ALWAYS, BOUND_NONE, 0, 0, struct plan_pull, worker),
	FIELD("ready_s", FT_NUM, NEED_OPT, BOUND_NONE, 0, 0, struct plan_pull, ready_s),
	CUSTOM("server", NEED_OPT),
	FIELD("bytes", FT_BYTES, NEED_OPT, BOUND_NONE, 0, 0, struct plan_pull, bytes),
};

#define NFIELDS(t) ((int)(sizeof(t) / sizeof((t)[0])))

static int is_server(const struct plan_batch *b, int host)
{
	for (int i = 0; i < b->n_servers; i++)
		if (b->servers[i] == host)
			return 1;
	return 0;
}

/*
 * A list of distinct host names (a JSON array of strings; with @allow_string also a single
 * string) into a malloc'ed index array. @not_server rejects server hosts, @not_host (>= 0)
 * rejects that host (role named @not_role).
 */
static int read_host_list(struct reader *rd, const json_t *top, const char *key, int allow_string,
			  int not_server, int not_host, const char *not_role, int *n_out,
			  int **out)
{
	json_t *v = json_object_get(top, key), *e;
	char path[64];
	size_t i;
	int rc, n;

	*n_out = 0;
	if (!v)
		return 0;
	if (allow_string && json_is_string(v)) {
		*out = alloc_array(1, sizeof(int));
		if (!*out)
			return -ENOMEM;
		rc = read_host(rd, "", key, v, &(*out)[0]);
		if (rc)
			return rc;
		*n_out = 1;
		return 0;
	}
	if (!json_is_array(v))
		return fail(rd, "", key, "expected an array of host names, got %s", json_kind(v));
	*out = alloc_array(json_array_size(v), sizeof(int));
	if (!*out)
		return -ENOMEM;
	json_array_foreach(v, i, e) {
		n = (int)i;
		snprintf(path, sizeof(path), "%s[%d]", key, n);
		rc = read_host(rd, path, NULL, e, &(*out)[n]);
		if (rc)
			return rc;
		for (int j = 0; j < n; j++)
			if ((*out)[j] == (*out)[n])
				return fail(rd, path, NULL, "host \"%s\" listed twice",
					    rd->b->hosts[(*out)[n]].name);
		if (not_server && is_server(rd->b, (*out)[n]))
			return fail(rd, path, NULL, "host \"%s\" is a server",
				    rd->b->hosts[(*out)[n]].name);
		if ((*out)[n] == not_host)
			return fail(rd, path, NULL, "host \"%s\" is the %s",
				    rd->b->hosts[(*out)[n]].name, not_role);
		*n_out = n + 1;
	}
	return 0;
}

/*
 * One array of objects of the batch ("hosts", "updates", ...): each element is checked against
 * @tab into a zeroed slot of @size bytes; @init sets defaults before, @finish checks what the
 * table cannot (references, duplicates) after. *@n counts the elements read so far, so that
 * planio_batch_free() sees what a failed read allocated.
 */
struct array_spec {
	const char *key;
	int nonempty;     /* an empty or missing array is an error */
	size_t size;
	const struct field *tab;
	int ntab;
	void (*init)(struct reader *rd, void *elem);
	int (*finish)(struct reader *rd, const char *path, const json_t *obj, void *elem, int i);
};

static int read_array(struct reader *rd, const json_t *top, const struct array_spec *as,
		      void **out, int *n)
{
	json_t *arr, *e;
	char path[64];
	size_t i;
	int rc = get_array(rd, "", top, as->key, &arr);

	if (rc)
		return rc;
	if (as->nonempty && json_array_size(arr) == 0)
		return fail(rd, "", as->key, "must not be empty");
	if (!arr)
		return 0;
	*out = alloc_array(json_array_size(arr), as->size);
	if (!*out)
		return -ENOMEM;
	json_array_foreach(arr, i, e) {
		void *elem = (char *)*out + i * as->size;

		snprintf(path, sizeof(path), "%s[%zu]", as->key, i);
		*n = (int)i + 1;
		if (as->init)
			as->init(rd, elem);
		rc = read_object(rd, path, e, as->tab, as->ntab, elem);
		if (!rc && as->finish)
			rc = as->finish(rd, path, e, elem, (int)i);
		if (rc)
			return rc;
	}
	return 0;
}

static int finish_host(struct reader *rd, const char *path, const json_t *obj, void *elem,
		       int i)
{
	const struct plan_host *h = elem;

	/* host_index() finds the first host of that name: an earlier one means a duplicate. */
	if (host_index(rd->b, h->name) != i)
		return fail(rd, path, "name", "duplicate host \"%s\"", h->name);
	return 0;
}

static int read_link(struct reader *rd, const char *path, const json_t *v,
		     struct plan_capacity_change *c)
{
	char name[PLAN_NAME_MAX + 8];
	const char *s, *dot;

	if (!json_is_string(v))
		return fail(rd, path, "link", "expected a string, got %s", json_kind(v));
	s = json_string_value(v);
	dot = strrchr(s, '.');
	if (!dot || (strcmp(dot, ".up") != 0 && strcmp(dot, ".down") != 0) ||
	    (size_t)(dot - s) >= PLAN_NAME_MAX)
		return fail(rd, path, "link", "\"%s\" is not <host>.up or <host>.down", s);
	memcpy(name, s, (size_t)(dot - s));
	name[dot - s] = '\0';
	c->host = host_index(rd->b, name);
	if (c->host < 0)
		return fail(rd, path, "link", "unknown host \"%s\"", name);
	c->dir = strcmp(dot, ".up") == 0 ? PLAN_UP : PLAN_DOWN;
	return 0;
}

static int finish_change(struct reader *rd, const char *path, const json_t *obj, void *elem,
			 int i)
{
	return read_link(rd, path, json_object_get(obj, "link"), elem);
}

static int shard_cmp(const void *a, const void *b)
{
	return ((const struct plan_shard *)a)->server - ((const struct plan_shard *)b)->server;
}

/* The "shards" of update @u at @path: exactly one shard per server. */
static int read_shards(struct reader *rd, const char *upath, const json_t *uobj,
		       struct plan_update *u)
{
	struct plan_batch *b = rd->b;
	json_t *arr, *e;
	char path[128];
	size_t i;
	int host, rc = get_array(rd, upath, uobj, "shards", &arr);

	if (rc)
		return rc;
	if (b->n_servers == 1) {
		if (arr)
			return fail(rd, upath, "shards", "only allowed with several servers");
		if (!json_object_get(uobj, "bytes"))
			return fail(rd, upath, "bytes", "missing required field");
		return 0;
	}
	if (json_object_get(uobj, "bytes"))
		return fail(rd, upath, "bytes", "not allowed with several servers (use shards)");
	if (!arr)
		return fail(rd, upath, "shards", "missing required field (model sharded over %d "
			    "servers)", b->n_servers);
	u->shards = alloc_array((size_t)b->n_servers, sizeof(*u->shards));
	if (!u->shards)
		return -ENOMEM;
	json_array_foreach(arr, i, e) {
		struct plan_shard *sh;

		snprintf(path, sizeof(path), "%s.shards[%zu]", upath, i);
		if (i >= (size_t)b->n_servers)
			return fail(rd, path, NULL, "more shards than servers (%d)", b->n_servers);
		sh = &u->shards[i];
		rc = read_object(rd, path, e, shard_fields, NFIELDS(shard_fields), sh);
		if (rc)
			return rc;
		rc = read_host(rd, path, "server", json_object_get(e, "server"), &host);
		if (rc)
			return rc;
		sh->server = -1;
		for (int s = 0; s < b->n_servers; s++)
			if (b->servers[s] == host)
				sh->server = s;
		if (sh->server < 0)
			return fail(rd, path, "server", "host \"%s\" is not a server",
				    b->hosts[host].name);
		for (size_t j = 0; j < i; j++)
			if (u->shards[j].server == sh->server)
				return fail(rd, path, "server", "second shard for \"%s\"",
					    b->hosts[host].name);
		u->bytes += sh->bytes;
		u->n_shards = (int)i + 1;
	}
	if (u->n_shards != b->n_servers)
		return fail(rd, upath, "shards", "has %d shards, the model has %d servers",
			    u->n_shards, b->n_servers);
	/* One shard per server, so ordering them by server gives every update the same layout. */
	qsort(u->shards, (size_t)u->n_shards, sizeof(*u->shards), shard_cmp);
	return 0;
}

static void init_update(struct reader *rd, void *elem)
{
	struct plan_update *u = elem;

	u->version = rd->b->v_init;
	u->ready_s = rd->b->now_s;
}

static int finish_update(struct reader *rd, const char *path, const json_t *obj, void *elem,
			 int i)
{
	struct plan_batch *b = rd->b;
	struct plan_update *u = elem;
	int rc = read_shards(rd, path, obj, u);

	if (rc)
		return rc;
	for (int j = 0; j < i; j++)
		if (strcmp(b->updates[j].id, u->id) == 0)
			return fail(rd, path, "id", "duplicate update id \"%s\"", u->id);
	if (is_server(b, u->worker))
		return fail(rd, path, "worker", "host \"%s\" is a server", b->hosts[u->worker].name);
	if (u->worker == b->replica)
		return fail(rd, path, "worker", "host \"%s\" is the replica",
			    b->hosts[u->worker].name);
	if (u->replica_only && b->replica < 0)
		return fail(rd, path, "replica_only", "the batch has no replica");
	if (json_object_get(obj, "inflight_s")) {
		if (!u->replica_only)
			return fail(rd, path, "inflight_s", "only for a carried copy (replica_only true)");
		u->inflight = 1;
	}
	return 0;
}

static void init_pull(struct reader *rd, void *elem)
{
	((struct plan_pull *)elem)->ready_s = rd->b->now_s;
}

static int finish_pull(struct reader *rd, const char *path, const json_t *obj, void *elem, int i)
{
	const struct plan_batch *b = rd->b;
	const struct plan_pull *p = elem;

	for (int j = 0; j < i; j++)
		if (strcmp(b->pulls[j].id, p->id) == 0)
			return fail(rd, path, "id", "duplicate pull id \"%s\"", p->id);
	const json_t *sv = json_object_get(obj, "server");
	int host, rc;

	if (is_server(b, p->worker))
		return fail(rd, path, "worker", "host \"%s\" is a server", b->hosts[p->worker].name);
	/* A sharded model (§10.2): each pull entry asks for one shard's copy, from its server. */
	if (!sv && b->n_servers > 1)
		return fail(rd, path, "server", "missing required field (model sharded over %d "
			    "servers: the shard this pull asks for)", b->n_servers);
	if (!sv)
		return 0;
	rc = read_host(rd, path, "server", sv, &host);
	if (rc)
		return rc;
	for (int s = 0; s < b->n_servers; s++)
		if (b->servers[s] == host) {
			((struct plan_pull *)elem)->server = s;
			return 0;
		}
	return fail(rd, path, "server", "host \"%s\" is not a server", b->hosts[host].name);
}

#define ARRAY(k, nonempty, type, tab, init, finish) \
	{ k, nonempty, sizeof(type), tab, NFIELDS(tab), init, finish }

static const struct array_spec hosts_spec =
	ARRAY("hosts", 1, struct plan_host, host_fields, NULL, finish_host);
static const struct array_spec changes_spec =
	ARRAY("capacity_changes", 0, struct plan_capacity_change, change_fields, NULL,
	      finish_change);
static const struct array_spec updates_spec =
	ARRAY("updates", 0, struct plan_update, update_fields, init_update, finish_update);
static const struct array_spec pulls_spec =
	ARRAY("pulls", 0, struct plan_pull, pull_fields, init_pull, finish_pull);

static int read_mode(struct reader *rd, const json_t *top)
{
	json_t *v = json_object_get(top, "mode");
	const char *s;

	rd->b->mode = PLAN_MLFABRIC_A;
	if (!v)
		return 0;
	if (!json_is_string(v))
		return fail(rd, "", "mode", "expected \"mlfabric-a\" or \"mlfabric-s\", got %s", json_kind(v));
	s = json_string_value(v);
	if (strcmp(s, "mlfabric-s") == 0)
		rd->b->mode = PLAN_MLFABRIC_S;
	else if (strcmp(s, "async") == 0 || strcmp(s, "sync") == 0)
		return fail(rd, "", "mode", "\"%s\" is the old spelling: write \"%s\"", s,
			    s[0] == 'a' ? "mlfabric-a" : "mlfabric-s");
	else if (strcmp(s, "mlfabric-a") != 0)
		return fail(rd, "", "mode", "expected \"mlfabric-a\" or \"mlfabric-s\", got \"%s\"", s);
	return 0;
}

static int read_batch(struct reader *rd, const json_t *top)
{
	struct plan_batch *b = rd->b;
	int rc;

	if (!json_is_object(top))
		return fail(rd, "", "batch", "expected an object, got %s", json_kind(top));
	b->replica = -1;
	b->momentum = 0.9;
	rc = read_mode(rd, top);
	if (rc)
		return rc;
	rd->has_replica = json_object_get(top, "replica") != NULL;
	rc = read_object(rd, "", top, batch_fields, NFIELDS(batch_fields), b);
	if (rc)
		return rc;
	rc = read_array(rd, top, &hosts_spec, (void **)&b->hosts, &b->n_hosts);
	if (!rc)
		rc = read_array(rd, top, &changes_spec, (void **)&b->changes, &b->n_changes);
	if (!rc)
		rc = read_host_list(rd, top, "servers", 1, 0, -1, NULL, &b->n_servers, &b->servers);
	if (rc)
		return rc;
	if (b->n_servers == 0)
		return fail(rd, "", "servers", "must name at least one server");
	if (rd->has_replica) {
		rc = read_host(rd, "", "replica", json_object_get(top, "replica"), &b->replica);
		if (rc)
			return rc;
		if (is_server(b, b->replica))
			return fail(rd, "", "replica", "host \"%s\" is also a server",
				    b->hosts[b->replica].name);
	}
	rc = read_host_list(rd, top, "aggregators", 0, 1, b->replica, "replica",
			    &b->n_aggregators, &b->aggregators);
	if (!rc)
		rc = read_host_list(rd, top, "replica_aggregators", 0, 1, b->replica, "replica",
				    &b->n_replica_aggregators, &b->replica_aggregators);
	if (!rc && b->n_replica_aggregators > 0 && b->replica < 0)
		rc = fail(rd, "", "replica_aggregators", "the batch has no replica");
	if (!rc)
		rc = read_host_list(rd, top, "distributors", 0, 1, -1, NULL, &b->n_distributors,
				    &b->distributors);
	if (!rc)
		rc = read_array(rd, top, &updates_spec, (void **)&b->updates, &b->n_updates);
	if (!rc)
		rc = read_array(rd, top, &pulls_spec, (void **)&b->pulls, &b->n_pulls);
	if (rc)
		return rc;
	if (b->n_pulls > 0 && b->model_bytes == 0)
		return fail(rd, "", "model_bytes", "missing required field (the batch has pulls)");
	if (b->n_updates == 0 && b->n_pulls == 0)
		return fail(rd, "", "updates", "the batch has neither updates nor pulls");
	return 0;
}

int planio_read_string(const char *json, struct plan_batch *out, char *err, size_t errlen)
{
	struct reader rd = { .b = out, .err = err, .errlen = errlen };
	json_error_t jerr;
	json_t *top;
	int rc;

	memset(out, 0, sizeof(*out));
	top = json_loads(json, JSON_REJECT_DUPLICATES, &jerr);
	if (!top) {
		snprintf(err, errlen, "line %d column %d: %s", jerr.line, jerr.column, jerr.text);
		return -EINVAL;
	}
	rc = read_batch(&rd, top);
	json_decref(top);
	if (rc == -ENOMEM)
		snprintf(err, errlen, "out of memory reading the batch");
	if (rc)
		planio_batch_free(out);
	return rc;
}

int planio_read_file(const char *path, struct plan_batch *out, char *err, size_t errlen)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
	char *buf = NULL;
	size_t len = 0, cap = 0, got;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!f) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return rc;
	}
	do {
		if (len + 4096 + 1 > cap) {
			char *nb = realloc(buf, cap = (cap ? cap * 2 : 65536));

			if (!nb) {
				free(buf);
				if (f != stdin)
					fclose(f);
				snprintf(err, errlen, "%s: out of memory", path);
				return -ENOMEM;
			}
			buf = nb;
		}
		got = fread(buf + len, 1, cap - len - 1, f);
		len += got;
	} while (got > 0);
	rc = ferror(f) ? -EIO : 0;
	if (f != stdin)
		fclose(f);
	if (rc) {
		free(buf);
		snprintf(err, errlen, "%s: read error", path);
		return rc;
	}
	buf[len] = '\0';
	rc = planio_read_string(buf, out, err, errlen);
	free(buf);
	return rc;
}

void planio_batch_free(struct plan_batch *b)
{
	if (b->updates)
		for (int i = 0; i < b->n_updates; i++)
			free(b->updates[i].shards);
	free(b->hosts);
	free(b->changes);
	free(b->servers);
	free(b->aggregators);
	free(b->replica_aggregators);
	free(b->updates);
	free(b->pulls);
	free(b->distributors);
	memset(b, 0, sizeof(*b));
}

/* ---- writing ---- */

const char *planio_link_name(const struct plan_batch *b, int host, enum plan_link_dir dir,
			     char *buf, size_t len)
{
	snprintf(buf, len, "%s.%s", b->hosts[host].name, dir == PLAN_UP ? "up" : "down");
	return buf;
}

const char *planio_carry_name(const struct plan_batch *b, enum plan_carry_kind kind, int carries,
			      char *buf, size_t len)
{
	switch (kind) {
	case PLAN_CARRY_UPDATE:
		snprintf(buf, len, "%s", b->updates[carries].id);
		break;
	case PLAN_CARRY_AGGREGATE:
		snprintf(buf, len, "a%d", carries);
		break;
	case PLAN_CARRY_MODEL:
		snprintf(buf, len, "%s", b->pulls[carries].id);
		break;
	}
	return buf;
}

/* Append to @obj; the reference to @v is stolen. Records allocation failure in *@ok. */
static void put(json_t *obj, const char *key, json_t *v, int *ok)
{
	if (!v || json_object_set_new(obj, key, v))
		*ok = 0;
}

static void push(json_t *arr, json_t *v, int *ok)
{
	if (!v || json_array_append_new(arr, v))
		*ok = 0;
}

static json_t *host_array(const struct plan_batch *b, const int *idx, int n, int *ok)
{
	json_t *a = json_array();

	for (int i = 0; a && i < n; i++)
		push(a, json_string(b->hosts[idx[i]].name), ok);
	return a;
}

static const char *const kind_names[] = { "update", "aggregate", "model" };
static const char *const purpose_names[] = { "server", "replica", "model" };

json_t *planio_batch_to_json(const struct plan_batch *b)
{
	json_t *doc = json_object(), *a, *o, *s = NULL;
	char link[PLAN_NAME_MAX + 8];
	int ok = doc != NULL;

	if (!ok)
		return NULL;
	put(doc, "mode", json_string(b->mode == PLAN_MLFABRIC_S ? "mlfabric-s" : "mlfabric-a"), &ok);
	put(doc, "now_s", json_real(b->now_s), &ok);
	put(doc, "hosts", a = json_array(), &ok);
	for (int i = 0; a && i < b->n_hosts; i++) {
		push(a, o = json_object(), &ok);
		if (!o)
			break;
		put(o, "name", json_string(b->hosts[i].name), &ok);
		put(o, "up_gbps", json_real(b->hosts[i].up_gbps), &ok);
		put(o, "down_gbps", json_real(b->hosts[i].down_gbps), &ok);
	}
	put(doc, "capacity_changes", a = json_array(), &ok);
	for (int i = 0; a && i < b->n_changes; i++) {
		const struct plan_capacity_change *c = &b->changes[i];

		push(a, o = json_object(), &ok);
		if (!o)
			break;
		put(o, "link", json_string(planio_link_name(b, c->host, c->dir, link,
							    sizeof(link))), &ok);
		put(o, "at_s", json_real(c->at_s), &ok);
		put(o, "gbps", json_real(c->gbps), &ok);
	}
	put(doc, "servers", host_array(b, b->servers, b->n_servers, &ok), &ok);
	if (b->replica >= 0)
		put(doc, "replica", json_string(b->hosts[b->replica].name), &ok);
	put(doc, "aggregators", host_array(b, b->aggregators, b->n_aggregators, &ok), &ok);
	if (b->replica >= 0)
		put(doc, "replica_aggregators", host_array(b, b->replica_aggregators,
							   b->n_replica_aggregators, &ok), &ok);
	put(doc, "tau_max", json_integer(b->tau_max), &ok);
	put(doc, "v_init", json_integer(b->v_init), &ok);
	put(doc, "momentum", json_real(b->momentum), &ok);
	if (b->replica >= 0) {
		put(doc, "div_max", json_real(b->div_max), &ok);
		put(doc, "history_norm", json_real(b->history_norm), &ok);
		put(doc, "replica_lag", json_integer(b->replica_lag), &ok);
	}
	put(doc, "updates", a = json_array(), &ok);
	for (int i = 0; a && i < b->n_updates; i++) {
		const struct plan_update *u = &b->updates[i];

		push(a, o = json_object(), &ok);
		if (!o)
			break;
		put(o, "id", json_string(u->id), &ok);
		put(o, "worker", json_string(b->hosts[u->worker].name), &ok);
		if (u->n_shards == 0)
			put(o, "bytes", json_integer((json_int_t)u->bytes), &ok);
		else
			put(o, "shards", s = json_array(), &ok);
		for (int j = 0; j < u->n_shards && s; j++) {
			json_t *so = json_object();

			push(s, so, &ok);
			if (!so)
				break;
			put(so, "server", json_string(b->hosts[b->servers[u->shards[j].server]].name),
			    &ok);
			put(so, "bytes", json_integer((json_int_t)u->shards[j].bytes), &ok);
		}
		put(o, "version", json_integer(u->version), &ok);
		put(o, "norm", json_real(u->norm), &ok);
		put(o, "ready_s", json_real(u->ready_s), &ok);
		if (u->replica_only)
			put(o, "replica_only", json_true(), &ok);
		if (u->inflight)
			put(o, "inflight_s", json_real(u->inflight_s), &ok);
	}
	if (b->n_pulls > 0) {
		put(doc, "model_bytes", json_integer((json_int_t)b->model_bytes), &ok);
		put(doc, "pulls", a = json_array(), &ok);
		for (int i = 0; a && i < b->n_pulls; i++) {
			push(a, o = json_object(), &ok);
			if (!o)
				break;
			put(o, "id", json_string(b->pulls[i].id), &ok);
			put(o, "worker", json_string(b->hosts[b->pulls[i].worker].name), &ok);
			put(o, "ready_s", json_real(b->pulls[i].ready_s), &ok);
			if (b->n_servers > 1)
				put(o, "server", json_string(b->hosts[b->servers[b->pulls[i].server]].name),
				    &ok);
			if (b->pulls[i].bytes)
				put(o, "bytes", json_integer((json_int_t)b->pulls[i].bytes), &ok);
		}
		put(doc, "distributors", host_array(b, b->distributors, b->n_distributors, &ok),
		    &ok);
	}
	if (!ok) {
		json_decref(doc);
		return NULL;
	}
	return doc;
}

/* Is every index that the writer dereferences within range? */
static int plan_indexes_ok(const struct plan_batch *b, const struct plan *p)
{
	int limit[3] = { b->n_updates, p->n_aggregates, b->n_pulls };

#define IN(x, n) ((x) >= 0 && (x) < (n))
	for (int i = 0; i < p->n_order; i++)
		if (!IN(p->order[i], b->n_updates))
			return 0;
	for (int i = 0; i < p->n_dropped; i++)
		if (!IN(p->dropped[i], b->n_updates))
			return 0;
	for (int i = 0; i < p->n_punted; i++)
		if (!IN(p->punted[i], b->n_updates))
			return 0;
	for (int i = 0; i < p->n_unanswered; i++)
		if (!IN(p->unanswered[i], b->n_pulls))
			return 0;
	for (int i = 0; i < p->n_inflight; i++)
		if (!IN(p->inflight[i], b->n_updates))
			return 0;
	for (int i = 0; i < p->n_aggregates; i++) {
		const struct plan_aggregate *a = &p->aggregates[i];

		if (!IN(a->host, b->n_hosts) || !IN(a->target, b->n_hosts) ||
		    !IN((int)a->purpose, 3))
			return 0;
		for (int j = 0; j < a->n_inputs; j++)
			if (!IN(a->inputs[j], b->n_updates))
				return 0;
	}
	for (int i = 0; i < p->n_transfers; i++) {
		const struct plan_transfer *t = &p->transfers[i];

		if (!IN((int)t->kind, 3) || !IN(t->carries, limit[t->kind]) ||
		    !IN(t->src, b->n_hosts) || !IN(t->dst, b->n_hosts) || !IN((int)t->purpose, 3))
			return 0;
	}
	for (int i = 0; i < p->n_commits + p->n_replica_commits; i++) {
		const struct plan_commit *c = i < p->n_commits ? &p->commits[i]
				: &p->replica_commits[i - p->n_commits];

		if (!IN(c->host, b->n_hosts) || !IN((int)c->kind, 2) ||
		    !IN(c->carries, limit[c->kind]))
			return 0;
	}
#undef IN
	return 1;
}

static json_t *update_array(const struct plan_batch *b, const int *idx, int n, int *ok)
{
	json_t *a = json_array();

	for (int i = 0; a && i < n; i++)
		push(a, json_string(b->updates[idx[i]].id), ok);
	return a;
}

static json_t *commit_array(const struct plan_batch *b, const struct plan_commit *c, int n,
			    int *ok)
{
	json_t *a = json_array(), *o;
	char name[PLAN_NAME_MAX];

	for (int i = 0; a && i < n; i++) {
		push(a, o = json_object(), ok);
		if (!o)
			break;
		put(o, "host", json_string(b->hosts[c[i].host].name), ok);
		put(o, "carries", json_string(planio_carry_name(b, c[i].kind, c[i].carries, name,
								sizeof(name))), ok);
		put(o, "kind", json_string(kind_names[c[i].kind]), ok);
		put(o, "at_s", json_real(c[i].at_s), ok);
		put(o, "version", json_integer(c[i].version), ok);
	}
	return a;
}

json_t *planio_plan_to_json(const struct plan_batch *b, const struct plan *p)
{
	json_t *doc, *a, *o, *r;
	char name[PLAN_NAME_MAX];
	int ok = 1;

	if (!plan_indexes_ok(b, p) || !(doc = json_object()))
		return NULL;
	put(doc, "order", update_array(b, p->order, p->n_order, &ok), &ok);
	put(doc, "dropped", update_array(b, p->dropped, p->n_dropped, &ok), &ok);
	put(doc, "aggregates", a = json_array(), &ok);
	for (int i = 0; a && i < p->n_aggregates; i++) {
		const struct plan_aggregate *ag = &p->aggregates[i];

		push(a, o = json_object(), &ok);
		if (!o)
			break;
		snprintf(name, sizeof(name), "a%d", i);
		put(o, "id", json_string(name), &ok);
		put(o, "host", json_string(b->hosts[ag->host].name), &ok);
		put(o, "target", json_string(b->hosts[ag->target].name), &ok);
		put(o, "purpose", json_string(purpose_names[ag->purpose]), &ok);
		put(o, "inputs", update_array(b, ag->inputs, ag->n_inputs, &ok), &ok);
	}
	put(doc, "transfers", a = json_array(), &ok);
	for (int i = 0; a && i < p->n_transfers; i++) {
		const struct plan_transfer *t = &p->transfers[i];

		push(a, o = json_object(), &ok);
		if (!o)
			break;
		snprintf(name, sizeof(name), "t%d", i);
		put(o, "id", json_string(name), &ok);
		put(o, "carries", json_string(planio_carry_name(b, t->kind, t->carries, name,
								sizeof(name))), &ok);
		put(o, "kind", json_string(kind_names[t->kind]), &ok);
		if (t->shard >= 0)
			put(o, "shard", json_integer(t->shard), &ok);
		put(o, "src", json_string(b->hosts[t->src].name), &ok);
		put(o, "dst", json_string(b->hosts[t->dst].name), &ok);
		put(o, "bytes", json_integer((json_int_t)t->bytes), &ok);
		put(o, "purpose", json_string(purpose_names[t->purpose]), &ok);
		put(o, "start_s", json_real(t->start_s), &ok);
		put(o, "end_s", json_real(t->end_s), &ok);
		put(o, "rate", r = json_array(), &ok);
		for (int j = 0; r && j < t->n_rate; j++) {
			json_t *step = json_object();

			push(r, step, &ok);
			if (!step)
				break;
			put(step, "from_s", json_real(t->rate[j].from_s), &ok);
			put(step, "gbps", json_real(t->rate[j].gbps), &ok);
		}
	}
	put(doc, "commits", commit_array(b, p->commits, p->n_commits, &ok), &ok);
	put(doc, "replica_commits", commit_array(b, p->replica_commits, p->n_replica_commits, &ok),
	    &ok);
	put(doc, "punted", update_array(b, p->punted, p->n_punted, &ok), &ok);
	if (b->replica >= 0) {
		put(doc, "inflight", a = json_array(), &ok);
		for (int i = 0; a && i < p->n_inflight; i++) {
			push(a, o = json_object(), &ok);
			if (!o)
				break;
			put(o, "carries", json_string(b->updates[p->inflight[i]].id), &ok);
			put(o, "at_s", json_real(p->inflight_s[i]), &ok);
		}
	}
	if (b->n_pulls > 0) {
		put(doc, "unanswered", a = json_array(), &ok);
		for (int i = 0; a && i < p->n_unanswered; i++)
			push(a, json_string(b->pulls[p->unanswered[i]].id), &ok);
	}
	if (p->origin_s != 0.0)
		put(doc, "origin_s", json_real(p->origin_s), &ok);
	put(doc, "divergence_bound", json_real(p->divergence_bound), &ok);
	put(doc, "plan_ms", json_real(p->plan_ms), &ok);
	if (!ok) {
		json_decref(doc);
		return NULL;
	}
	return doc;
}

int planio_write_json(FILE *f, const json_t *doc)
{
	if (json_dumpf(doc, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15)))
		return -EIO;
	if (fputc('\n', f) == EOF)
		return -EIO;
	return 0;
}
