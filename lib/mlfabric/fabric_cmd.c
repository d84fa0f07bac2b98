/* fabric_cmd.c - scheduler commands (JSON) parsed into structs; payload header validation. */
#include "fabric_cmd.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

static const struct {
	const char *name;
	enum fabric_cmd_kind kind;
} kinds[] = {
	{ "registered", FABRIC_CMD_REGISTERED }, { "error", FABRIC_CMD_ERROR },
	{ "scheduler_lost", FABRIC_CMD_SCHEDULER_LOST }, { "send", FABRIC_CMD_SEND },
	{ "scheduler_back", FABRIC_CMD_SCHEDULER_BACK },
	{ "drop", FABRIC_CMD_DROP }, { "aggregate", FABRIC_CMD_AGGREGATE },
	{ "order", FABRIC_CMD_ORDER }, { "skip", FABRIC_CMD_SKIP },
	{ "release", FABRIC_CMD_RELEASE }, { "replica", FABRIC_CMD_REPLICA },
	{ "promote", FABRIC_CMD_PROMOTE }, { "server_moved", FABRIC_CMD_SERVER_MOVED },
	{ "snapshot", FABRIC_CMD_SNAPSHOT }, { "sync_step", FABRIC_CMD_SYNC_STEP },
	{ "forward", FABRIC_CMD_FORWARD }, { "state", FABRIC_CMD_STATE },
	{ "commit_rate", FABRIC_CMD_COMMIT_RATE },
};

static int get_u64(json_t *o, const char *k, uint64_t *v)
{
	json_t *x = json_object_get(o, k);

	if (!json_is_integer(x) || json_integer_value(x) < 0)
		return -1;
	*v = (uint64_t)json_integer_value(x);
	return 0;
}

/* Optional non-negative integer @k (absent = 0) in *@v, at most 2^31; -1 when mistyped. */
static int get_count(json_t *o, const char *k, int64_t *v)
{
	json_t *x = json_object_get(o, k);

	*v = 0;
	if (!x)
		return 0;
	if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) > INT32_MAX)
		return -1;
	*v = json_integer_value(x);
	return 0;
}

/* Optional integer @k >= -1 (absent = -1) in *@v; -1 when mistyped. */
static int get_opt_i64(json_t *o, const char *k, int64_t *v)
{
	json_t *x = json_object_get(o, k);

	*v = -1;
	if (!x)
		return 0;
	if (!json_is_integer(x) || json_integer_value(x) < -1)
		return -1;
	*v = json_integer_value(x);
	return 0;
}

static int get_num(json_t *o, const char *k, double *v)
{
	json_t *x = json_object_get(o, k);

	if (!json_is_number(x))
		return -1;
	*v = json_number_value(x);
	return 0;
}

static int get_str(json_t *o, const char *k, char *dst, size_t cap)
{
	const char *s = json_string_value(json_object_get(o, k));

	if (!s || !*s || strlen(s) >= cap)
		return -1;
	strcpy(dst, s);
	return 0;
}

static int get_steps(json_t *o, struct fabric_cmd *c)
{
	json_t *a = json_object_get(o, "steps"), *p;
	size_t i;

	if (!json_is_array(a) || json_array_size(a) > APPMSG_MAX_STEPS)
		return -1;
	json_array_foreach(a, i, p) {
		json_t *off = json_array_get(p, 0), *g = json_array_get(p, 1);
		/* offsets in [0, 1e6] s fit the nanoseconds of at_ns; rates up to 1e6 Gbit/s (found
		 * by fuzz_fabric: an offset of 8.9e12 s overflowed the conversion) */
		if (!json_is_array(p) || json_array_size(p) != 2 || !json_is_number(off) ||
		    !json_is_number(g) || !(json_number_value(off) >= 0 && json_number_value(off) <= 1e6) ||
		    !(json_number_value(g) >= 0 && json_number_value(g) <= 1e6))
			return -1;
		c->steps[i].at_ns = (uint64_t)(json_number_value(off) * 1e9 + 0.5);
		c->steps[i].gbps = json_number_value(g);
	}
	c->n_steps = (int)i;
	return 0;
}

static int get_ids(json_t *o, const char *k, struct fabric_cmd *c)
{
	json_t *a = json_object_get(o, k), *x;
	size_t i;

	if (!json_is_array(a) || json_array_size(a) == 0 || json_array_size(a) > 65536)
		return -1;
	c->ids = calloc(json_array_size(a), sizeof(*c->ids));
	if (!c->ids)
		return -1;
	json_array_foreach(a, i, x) {
		if (!json_is_integer(x) || json_integer_value(x) < 0)
			return -1;
		c->ids[i] = (uint64_t)json_integer_value(x);
	}
	c->n_ids = (int)i;
	return 0;
}

static int get_weights(json_t *o, struct fabric_cmd *c)
{
	json_t *a = json_object_get(o, "weights"), *x;
	size_t i;

	if (!a)
		return 0;
	if (!json_is_array(a) || (int)json_array_size(a) != c->n_ids)
		return -1;
	c->weights = calloc((size_t)c->n_ids, sizeof(double));
	if (!c->weights)
		return -1;
	json_array_foreach(a, i, x) {
		if (!json_is_number(x))
			return -1;
		c->weights[i] = json_number_value(x);
	}
	return 0;
}

static int get_chan(json_t *o, struct fabric_cmd *c)
{
	uint64_t v;

	if (get_u64(o, "chan", &v) < 0 || v >= 64)
		return -1;
	c->chan = (uint16_t)v;
	return 0;
}

/* dst, chan, start, steps of a send or aggregate: the first missing or bad one, or NULL. */
static const char *parse_route(json_t *o, struct fabric_cmd *c)
{
	if (get_str(o, "dst", c->dst, sizeof(c->dst)) < 0)
		return "dst";
	if (get_chan(o, c) < 0)
		return "chan";
	if (get_num(o, "start", &c->start) < 0)
		return "start";
	if (get_steps(o, c) < 0)
		return "steps";
	return NULL;
}

/* The first missing or bad field of a command of kind @c->kind, or NULL when all are fine. */
static const char *parse_fields(json_t *o, struct fabric_cmd *c)
{
	char what[16];
	int64_t v = 0;

	switch (c->kind) {
	case FABRIC_CMD_SEND: {
		json_t *keep = json_object_get(o, "keep");
		if (get_str(o, "what", what, sizeof(what)) < 0 ||
		    (strcmp(what, "update") && strcmp(what, "model") && strcmp(what, "state")))
			return "what";
		c->what_model = !strcmp(what, "model");
		c->what_state = !strcmp(what, "state");
		if (get_u64(o, "id", &c->id) < 0)
			return "id";
		if (get_u64(o, "xfer", &c->xfer) < 0)
			return "xfer";
		if (keep && !json_is_boolean(keep))
			return "keep";
		c->keep = json_is_true(keep);
		if (c->what_model && get_count(o, "batch", &c->batch) < 0)
			return "batch";
		if (c->what_model && get_count(o, "forwards", &v) < 0)
			return "forwards";
		c->n_fwd = (int)v;
		if (get_opt_i64(o, "offset", &c->shard_off) < 0)
			return "offset";
		if (c->shard_off >= 0 && (c->what_model || c->what_state ||
					  get_u64(o, "n_floats", &c->shard_n) < 0 || c->shard_n == 0))
			return "n_floats";
		if (get_opt_i64(o, "at_version", &c->at_version) < 0)
			return "at_version";
		if (get_opt_i64(o, "version", &c->label) < 0)
			return "version";
		return parse_route(o, c);
	}
	case FABRIC_CMD_FORWARD:
		if (get_u64(o, "xfer_in", &c->xfer_in) < 0)
			return "xfer_in";
		if (get_u64(o, "xfer", &c->xfer) < 0)
			return "xfer";
		if (get_u64(o, "id", &c->id) < 0)
			return "id";
		if (get_count(o, "forwards", &v) < 0 || v < 1)
			return "forwards";
		c->n_fwd = (int)v;
		return parse_route(o, c);
	case FABRIC_CMD_RELEASE:
		return get_u64(o, "id", &c->id) < 0 ? "id" : NULL;
	case FABRIC_CMD_STATE: {
		json_t *r = json_object_get(o, "ready");
		if (get_u64(o, "seq", &c->id) < 0)
			return "seq";
		if (!json_is_boolean(r))
			return "ready";
		c->keep = json_is_true(r);
		return NULL;
	}
	case FABRIC_CMD_COMMIT_RATE: {
		json_t *p = json_object_get(o, "period_s"), *k = json_object_get(o, "check");
		if (!json_is_integer(k) || json_integer_value(k) < 0)
			return "check";
		c->version = json_integer_value(k);
		if (get_u64(o, "delta", &c->id) < 0 || c->id > (1u << 30))
			return "delta";
		if (!json_is_number(p) || !(json_number_value(p) > 0 && json_number_value(p) <= 3600))
			return "period_s";
		c->start = json_number_value(p);
		return NULL;
	}
	case FABRIC_CMD_SNAPSHOT:
		return get_u64(o, "tag", &c->id) < 0 ? "tag" : NULL;
	case FABRIC_CMD_SERVER_MOVED:
		return get_str(o, "server", c->dst, sizeof(c->dst)) < 0 ? "server" : NULL;
	case FABRIC_CMD_SYNC_STEP: {
		json_t *v = json_object_get(o, "version");
		if (!json_is_integer(v))
			return "version";
		c->version = json_integer_value(v);
		return get_u64(o, "parts", &c->id) < 0 || c->id == 0 ? "parts" : NULL;
	}
	case FABRIC_CMD_PROMOTE: {
		json_t *v = json_object_get(o, "version");
		if (!json_is_integer(v))
			return "version";
		c->version = json_integer_value(v);
		return NULL;
	}
	case FABRIC_CMD_REPLICA: {
		const char *h = json_string_value(json_object_get(o, "host"));
		const char *r = json_string_value(json_object_get(o, "replication"));
		if (!h || strlen(h) >= sizeof(c->dst))
			return "host";
		if (r && strcmp(r, "chain") && strcmp(r, "mlfabric"))
			return "replication";
		strcpy(c->dst, h);
		c->chain = !r || !strcmp(r, "chain");
		return NULL;
	}
	case FABRIC_CMD_DROP:
		if (get_u64(o, "id", &c->id) < 0)
			return "id";
		snprintf(c->reason, sizeof(c->reason), "%s", json_string_value(json_object_get(o, "reason")) ?: "");
		return NULL;
	case FABRIC_CMD_AGGREGATE:
		if (get_u64(o, "agg", &c->id) < 0)
			return "agg";
		if (get_ids(o, "inputs", c) < 0)
			return "inputs";
		if (get_weights(o, c) < 0)
			return "weights";
		if (get_opt_i64(o, "offset", &c->shard_off) < 0)
			return "offset";
		return parse_route(o, c);
	case FABRIC_CMD_ORDER:
	case FABRIC_CMD_SKIP:
		if (get_chan(o, c) < 0)
			return "chan";
		if (get_ids(o, "xfers", c) < 0)
			return "xfers";
		return NULL;
	case FABRIC_CMD_ERROR:
		snprintf(c->reason, sizeof(c->reason), "%s", json_string_value(json_object_get(o, "reason")) ?: "(no reason)");
		c->no_scheduler = json_is_true(json_object_get(o, "no_scheduler"));
		return NULL;
	default:
		return NULL;
	}
}

int fabric_cmd_parse(const char *text, struct fabric_cmd *c, char *err, size_t errlen)
{
	json_error_t je;
	json_t *o = json_loads(text, 0, &je);
	const char *type, *bad;

	memset(c, 0, sizeof(*c));
	if (!o || !json_is_object(o)) {
		snprintf(err, errlen, "control message is not a JSON object: %s", o ? "(other value)" : je.text);
		json_decref(o);
		return -EBADMSG;
	}
	type = json_string_value(json_object_get(o, "type"));
	for (size_t i = 0; type && i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(type, kinds[i].name))
			c->kind = kinds[i].kind;
	if (!c->kind) {
		snprintf(err, errlen, type ? "unknown command type '%s'" : "control message has no string \"type\"%s",
			 type ? type : "");
		json_decref(o);
		return -EBADMSG;
	}
	snprintf(c->app, sizeof(c->app), "%s", json_string_value(json_object_get(o, "app")) ?: "");
	if ((bad = parse_fields(o, c))) {
		snprintf(err, errlen, "command '%s': missing or bad field '%s'", type, bad);
		fabric_cmd_free(c);
		json_decref(o);
		return -EBADMSG;
	}
	json_decref(o);
	return 0;
}

void fabric_cmd_free(struct fabric_cmd *c)
{
	free(c->ids);
	free(c->weights);
	c->ids = NULL;
	c->weights = NULL;
	c->n_ids = 0;
}

int fabric_cmd_payload_check(const void *data, uint64_t bytes, uint32_t magic, char *err, size_t errlen)
{
	const struct mlf_payload_hdr *h = data;

	if (bytes < MLF_PAYLOAD_HDR || !data) {
		snprintf(err, errlen, "truncated payload: %llu bytes, the header alone is %u",
			 (unsigned long long)bytes, MLF_PAYLOAD_HDR);
		return -EBADMSG;
	}
	if (h->magic != magic) {
		snprintf(err, errlen, "bad magic 0x%08x (expected 0x%08x, %s)", h->magic, magic,
			 magic == MLF_PAYLOAD_MAGIC_MODEL ? "a model" :
			 magic == MLF_PAYLOAD_MAGIC_STATE ? "a state" :
			 magic == MLF_PAYLOAD_MAGIC_PEER ? "a neighbour's parameters" :
			 magic == MLF_PAYLOAD_MAGIC_TOKEN ? "tokens" : "an update");
		return -EBADMSG;
	}
	if (h->n_parts > MLF_PAYLOAD_MAX_PARTS || (magic == MLF_PAYLOAD_MAGIC_UPDATE && h->n_parts == 0) ||
	    (magic != MLF_PAYLOAD_MAGIC_UPDATE && h->n_parts != 0)) {
		snprintf(err, errlen, "n_parts %u out of range (%s)", h->n_parts,
			 magic == MLF_PAYLOAD_MAGIC_UPDATE ? "an update has 1..62" :
			 magic == MLF_PAYLOAD_MAGIC_MODEL ? "a model has 0" : "a state has 0");
		return -EBADMSG;
	}
	if ((magic == MLF_PAYLOAD_MAGIC_TOKEN || magic == MLF_PAYLOAD_MAGIC_PEER) &&
	    ((magic == MLF_PAYLOAD_MAGIC_TOKEN) != (h->n_floats == 0) || h->version < 0)) {
		snprintf(err, errlen, "%s with %llu floats and version %lld", magic == MLF_PAYLOAD_MAGIC_TOKEN ?
			 "tokens carry no floats" : "an empty payload", (unsigned long long)h->n_floats,
			 (long long)h->version);
		return -EBADMSG;
	}
	if (magic == MLF_PAYLOAD_MAGIC_STATE && (h->n_floats == 0 || h->n_floats % 2)) {
		snprintf(err, errlen, "a state has 2n floats (w then h), not %llu", (unsigned long long)h->n_floats);
		return -EBADMSG;
	}
	if (h->n_floats > (bytes - MLF_PAYLOAD_HDR) / 4 || mlf_payload_bytes(h->n_floats) != bytes) {
		snprintf(err, errlen, "size %llu bytes does not match n_floats %llu (expected %llu bytes)",
			 (unsigned long long)bytes, (unsigned long long)h->n_floats,
			 h->n_floats > (1ULL << 60) ? 0ULL : (unsigned long long)mlf_payload_bytes(h->n_floats));
		return -EBADMSG;
	}
	return 0;
}
