/* cluster.c - parse and validate the cluster config with jansson, one table of keys per object. */
#include "cluster.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

static const char *const cluster_keys[] = { "name", "mtu", "prefix_len", "udp_port", "control_port", "hosts",
					     "key_file", "frame_auth", "insecure", "graph", NULL };
static const char *const host_keys[] = { "name", "ip", "mac", "up_gbps", "down_gbps", "roles", NULL };

static const struct { const char *name; unsigned bit; } role_names[] = {
	{ "worker", CLUSTER_ROLE_WORKER },       { "server", CLUSTER_ROLE_SERVER },
	{ "replica", CLUSTER_ROLE_REPLICA },     { "aggregator", CLUSTER_ROLE_AGGREGATOR },
	{ "scheduler", CLUSTER_ROLE_SCHEDULER },
};

/* Rejects keys not in @allowed; returns the first unknown key or NULL. */
static const char *unknown_key(json_t *obj, const char *const *allowed)
{
	const char *key;
	json_t *val;

	json_object_foreach(obj, key, val) {
		int ok = 0;
		for (const char *const *a = allowed; *a; a++)
			ok |= strcmp(*a, key) == 0;
		if (!ok)
			return key;
	}
	return NULL;
}

/* Reads an optional integer in [lo, hi]; returns 0, or -EINVAL with @err filled. */
static int get_int(json_t *obj, const char *key, long lo, long hi, long *v, const char *where,
		   char *err, size_t errlen)
{
	json_t *j = json_object_get(obj, key);

	if (!j)
		return 0;
	if (!json_is_integer(j) || json_integer_value(j) < lo || json_integer_value(j) > hi) {
		snprintf(err, errlen, "%s%s: must be an integer in [%ld, %ld]", where, key, lo, hi);
		return -EINVAL;
	}
	*v = (long)json_integer_value(j);
	return 0;
}

static int parse_mac(const char *s, uint8_t mac[6])
{
	unsigned b[6];
	char tail;

	if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &tail) != 6)
		return -1;
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)b[i];
	return 0;
}

/* Longest cluster or host name: host names become veth interface names (IFNAMSIZ - 1). */
#define CLUSTER_LABEL_MAX 15

/*
 * check_label() - a cluster or host name usable in namespace and interface names: 1..15
 * characters of [A-Za-z0-9_-] (host names, DOT set: also '.' after the first character), not
 * starting with '-'. Returns 0, or -EINVAL with one line in ERR naming ORIGIN and FIELD (WHERE
 * prefix, e.g. "hosts[2].").
 */
static int check_label(json_t *j, int dot, const char *origin, const char *where, const char *field,
		       char *err, size_t errlen)
{
	const char *s = json_is_string(j) ? json_string_value(j) : NULL;
	size_t n = s ? strlen(s) : 0;
	int ok = s && n >= 1 && n <= CLUSTER_LABEL_MAX && n == json_string_length(j) && s[0] != '-';

	for (size_t i = 0; ok && i < n; i++)
		ok = isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == '-' || (dot && i > 0 && s[i] == '.');
	if (ok)
		return 0;
	snprintf(err, errlen, "%s: %s%s: required string of 1..%d characters [A-Za-z0-9_-%s], not starting "
		 "with '-'%s", origin, where, field, CLUSTER_LABEL_MAX, dot ? "." : "", dot ? " or '.'" : "");
	return -EINVAL;
}

static int parse_host(json_t *jh, int idx, struct cluster_host *h, const char *origin, char *err,
		      size_t errlen)
{
	char where[64];
	json_t *j;
	const char *bad;
	struct in_addr addr;

	snprintf(where, sizeof(where), "hosts[%d].", idx);
	if (!json_is_object(jh)) {
		snprintf(err, errlen, "%s: hosts[%d]: must be an object", origin, idx);
		return -EINVAL;
	}
	if ((bad = unknown_key(jh, host_keys))) {
		snprintf(err, errlen, "%s: %s%s: unknown key", origin, where, bad);
		return -EINVAL;
	}
	j = json_object_get(jh, "name");
	if (check_label(j, 1, origin, where, "name", err, errlen))
		return -EINVAL;
	strcpy(h->name, json_string_value(j));
	j = json_object_get(jh, "ip");
	if (!json_is_string(j) || inet_pton(AF_INET, json_string_value(j), &addr) != 1) {
		snprintf(err, errlen, "%s: %sip: required IPv4 address string", origin, where);
		return -EINVAL;
	}
	h->ip = addr.s_addr;
	if (h->ip == 0 || h->ip == 0xffffffffu || (ntohl(h->ip) >> 28) == 0xe) {
		snprintf(err, errlen, "%s: %sip: must be a unicast address (not 0.0.0.0, 255.255.255.255 "
			 "or multicast 224.0.0.0/4)", origin, where);
		return -EINVAL;
	}
	j = json_object_get(jh, "mac");
	if (j) {
		if (!json_is_string(j) || parse_mac(json_string_value(j), h->mac) != 0) {
			snprintf(err, errlen, "%s: %smac: must look like 02:00:0a:4d:00:0a", origin, where);
			return -EINVAL;
		}
	} else {
		h->mac[0] = 0x02;
		h->mac[1] = 0x00;
		memcpy(&h->mac[2], &h->ip, 4);
	}
	if ((h->mac[0] & 1) || !(h->mac[0] | h->mac[1] | h->mac[2] | h->mac[3] | h->mac[4] | h->mac[5])) {
		snprintf(err, errlen, "%s: %smac: must be a unicast, non-zero address (low bit of the first "
			 "octet clear)", origin, where);
		return -EINVAL;
	}
	h->up_gbps = h->down_gbps = 10.0;
	for (int d = 0; d < 2; d++) {
		const char *key = d ? "down_gbps" : "up_gbps";
		double *dst = d ? &h->down_gbps : &h->up_gbps;
		j = json_object_get(jh, key);
		if (!j)
			continue;
		if (!json_is_number(j) || !(json_number_value(j) >= 0.001) || json_number_value(j) > 400) {
			snprintf(err, errlen, "%s: %s%s: must be a number in [0.001, 400] Gbit/s", origin, where,
				 key);
			return -EINVAL;
		}
		*dst = json_number_value(j);
	}
	j = json_object_get(jh, "roles");
	if (j) {
		size_t i;
		json_t *r;
		if (!json_is_array(j)) {
			snprintf(err, errlen, "%s: %sroles: must be an array of role names", origin, where);
			return -EINVAL;
		}
		json_array_foreach(j, i, r) {
			unsigned bit = 0;
			for (size_t k = 0; k < sizeof(role_names) / sizeof(role_names[0]); k++)
				if (json_is_string(r) && strcmp(json_string_value(r), role_names[k].name) == 0)
					bit = role_names[k].bit;
			if (!bit) {
				snprintf(err, errlen, "%s: %sroles[%zu]: unknown role (worker, server, replica, "
					 "aggregator, scheduler)", origin, where, i);
				return -EINVAL;
			}
			h->roles |= bit;
		}
	}
	return 0;
}

/* "graph": {host: [neighbour, ...]} over worker hosts, undirected and connected; into
 * @out->graph. 0, or -EINVAL / -ENOMEM with @err naming the host. */
static int parse_graph(json_t *g, struct cluster *out, const char *origin, char *err, size_t errlen)
{
	const char *key;
	json_t *val;
	int first = -1;
	size_t n = (size_t)out->n_hosts;

	if (!json_is_object(g) || json_object_size(g) == 0) {
		snprintf(err, errlen, "%s: graph: a non-empty object {host: [neighbours]} expected", origin);
		return -EINVAL;
	}
	out->graph = calloc(n * n, 1);
	if (!out->graph) {
		snprintf(err, errlen, "%s: out of memory", origin);
		return -ENOMEM;
	}
	json_object_foreach(g, key, val) {
		int h = cluster_find(out, key);
		if (h < 0) {
			snprintf(err, errlen, "%s: graph: \"%.64s\" is not a host of the cluster", origin, key);
			return -EINVAL;
		}
		if (!(out->hosts[h].roles & CLUSTER_ROLE_WORKER)) {
			snprintf(err, errlen, "%s: graph: \"%s\" is not a worker (roles)", origin, key);
			return -EINVAL;
		}
		if (!json_is_array(val) || json_array_size(val) == 0) {
			snprintf(err, errlen, "%s: graph.%s: a non-empty list of host names expected", origin, key);
			return -EINVAL;
		}
		for (size_t i = 0; i < json_array_size(val); i++) {
			json_t *x = json_array_get(val, i);
			int k = json_is_string(x) ? cluster_find(out, json_string_value(x)) : -1;
			if (k < 0) {
				snprintf(err, errlen, "%s: graph.%s[%zu]: %s%.64s%s is not the name of a host of the "
					 "cluster", origin, key, i, json_is_string(x) ? "\"" : "",
					 json_is_string(x) ? json_string_value(x) : "a non-string",
					 json_is_string(x) ? "\"" : "");
				return -EINVAL;
			}
			if (k == h) {
				snprintf(err, errlen, "%s: graph.%s: names itself (a worker always counts its own "
					 "model)", origin, key);
				return -EINVAL;
			}
			if (out->graph[h * n + k]) {
				snprintf(err, errlen, "%s: graph.%s: names %s twice", origin, key, out->hosts[k].name);
				return -EINVAL;
			}
			out->graph[h * n + k] = 1;
		}
		if (first < 0)
			first = h;
	}
	for (size_t h = 0; h < n; h++)
		for (size_t k = 0; k < n; k++)
			if (out->graph[h * n + k] && !out->graph[k * n + h]) {
				snprintf(err, errlen, "%s: graph: %s names %s but not the other way round (the graph "
					 "is undirected)", origin, out->hosts[h].name, out->hosts[k].name);
				return -EINVAL;
			}
	/* connected: every host with a neighbour is reached from the first */
	int *stack = malloc(sizeof(int) * n), nt = 0; /* depth-first search from the first host */
	uint8_t *seen = calloc(n, 1);
	if (!stack || !seen) {
		free(stack);
		free(seen);
		snprintf(err, errlen, "%s: out of memory", origin);
		return -ENOMEM;
	}
	seen[first] = 1;
	stack[nt++] = first;
	while (nt) {
		int h = stack[--nt];
		for (size_t k = 0; k < n; k++)
			if (out->graph[h * n + k] && !seen[k]) {
				seen[k] = 1;
				stack[nt++] = (int)k;
			}
	}
	int rc = 0;
	for (size_t h = 0; h < n && !rc; h++) {
		if (!seen[h] && cluster_neighbours(out, (int)h, NULL, 0) > 0) {
			snprintf(err, errlen, "%s: graph: not connected (%s cannot reach %s)", origin,
				 out->hosts[first].name, out->hosts[h].name);
			rc = -EINVAL;
		}
	}
	free(stack);
	free(seen);
	return rc;
}

int cluster_parse(const char *text, const char *origin, struct cluster *out, char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *root, *hosts, *j;
	const char *bad;
	long v;
	int rc = -EINVAL;

	memset(out, 0, sizeof(*out));
	root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		snprintf(err, errlen, "%s: line %d: malformed JSON: %s", origin, jerr.line, jerr.text);
		return -EINVAL;
	}
	if (!json_is_object(root)) {
		snprintf(err, errlen, "%s: the document must be a JSON object", origin);
		goto out;
	}
	if ((bad = unknown_key(root, cluster_keys))) {
		snprintf(err, errlen, "%s: %s: unknown key", origin, bad);
		goto out;
	}
	j = json_object_get(root, "name");
	if (j && check_label(j, 0, origin, "", "name", err, errlen))
		goto out;
	snprintf(out->name, sizeof(out->name), "%s", j ? json_string_value(j) : "cluster");
	out->mtu = 1500;
	out->prefix_len = 24;
	out->udp_port = 47000;
	v = out->mtu;
	if (get_int(root, "mtu", 576, 9000, &v, "", err, errlen))
		goto prefix_err;
	out->mtu = (int)v;
	v = out->prefix_len;
	if (get_int(root, "prefix_len", 8, 30, &v, "", err, errlen))
		goto prefix_err;
	out->prefix_len = (int)v;
	v = out->udp_port;
	if (get_int(root, "udp_port", 1, 65535, &v, "", err, errlen))
		goto prefix_err;
	out->udp_port = (uint16_t)v;
	v = 7070;
	if (get_int(root, "control_port", 1, 65535, &v, "", err, errlen))
		goto prefix_err;
	out->control_port = (uint16_t)v;
	j = json_object_get(root, "key_file");
	if (j && (!json_is_string(j) || !json_string_length(j) ||
		  json_string_length(j) >= sizeof(out->key_file) - 256)) {
		snprintf(err, errlen, "%s: key_file: a non-empty path of at most %zu characters expected",
			 origin, sizeof(out->key_file) - 257);
		goto out;
	}
	if (j)
		snprintf(out->key_file, sizeof(out->key_file), "%s", json_string_value(j));
	j = json_object_get(root, "frame_auth");
	if (j && !json_is_boolean(j)) {
		snprintf(err, errlen, "%s: frame_auth: true or false expected", origin);
		goto out;
	}
	out->frame_auth = j ? json_is_true(j) : out->key_file[0] != '\0';
	if (out->frame_auth && !out->key_file[0]) {
		snprintf(err, errlen, "%s: frame_auth: true needs key_file (the frame key is derived from the "
			 "cluster secret)", origin);
		goto out;
	}

	j = json_object_get(root, "insecure");
	if (j && !json_is_boolean(j)) {
		snprintf(err, errlen, "%s: insecure: true or false expected", origin);
		goto out;
	}
	out->insecure = json_is_true(j);
	if (out->insecure && out->key_file[0]) {
		snprintf(err, errlen, "%s: insecure: true with key_file (drop one: a cluster with a key is "
			 "not insecure)", origin);
		goto out;
	}

	hosts = json_object_get(root, "hosts");
	if (!json_is_array(hosts) || json_array_size(hosts) == 0) {
		snprintf(err, errlen, "%s: hosts: required non-empty array", origin);
		goto out;
	}
	out->n_hosts = (int)json_array_size(hosts);
	out->hosts = calloc((size_t)out->n_hosts, sizeof(*out->hosts));
	if (!out->hosts) {
		rc = -ENOMEM;
		snprintf(err, errlen, "%s: out of memory", origin);
		goto out;
	}
	for (int i = 0; i < out->n_hosts; i++) {
		if (parse_host(json_array_get(hosts, (size_t)i), i, &out->hosts[i], origin, err, errlen))
			goto out;
		for (int k = 0; k < i; k++) {
			if (strcmp(out->hosts[k].name, out->hosts[i].name) == 0 ||
			    out->hosts[k].ip == out->hosts[i].ip) {
				snprintf(err, errlen, "%s: hosts[%d]: name or ip repeats hosts[%d]", origin, i, k);
				goto out;
			}
			if (memcmp(out->hosts[k].mac, out->hosts[i].mac, 6) == 0) {
				snprintf(err, errlen, "%s: hosts[%d].mac: repeats hosts[%d].mac", origin, i, k);
				goto out;
			}
		}
		{
			uint32_t hostmask = 0xffffffffu >> out->prefix_len, a = ntohl(out->hosts[i].ip);
			if ((a & hostmask) == 0 || (a & hostmask) == hostmask) {
				snprintf(err, errlen, "%s: hosts[%d].ip: the network or broadcast address of its "
					 "/%d subnet", origin, i, out->prefix_len);
				goto out;
			}
		}
	}
	j = json_object_get(root, "graph");
	if (j && (rc = parse_graph(j, out, origin, err, errlen)))
		goto out;
	rc = 0;
	goto out;
prefix_err:
	{
		char tmp[256];
		snprintf(tmp, sizeof(tmp), "%s", err);
		snprintf(err, errlen, "%s: %s", origin, tmp);
	}
out:
	json_decref(root);
	if (rc)
		cluster_free(out);
	return rc;
}

int cluster_neighbours(const struct cluster *c, int h, int *out, int max)
{
	int m = 0;

	if (!c->graph)
		return -ENOENT;
	if (h < 0 || h >= c->n_hosts)
		return 0;
	for (int k = 0; k < c->n_hosts; k++)
		if (c->graph[h * c->n_hosts + k]) {
			if (m < max)
				out[m] = k;
			m++;
		}
	return m;
}

int cluster_load(const char *path, struct cluster *out, char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
	char *text;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!root) {
		FILE *f = fopen(path, "r");
		if (!f) {
			snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
			return -ENOENT;
		}
		fclose(f);
		snprintf(err, errlen, "%s: line %d: malformed JSON: %s", path, jerr.line, jerr.text);
		return -EINVAL;
	}
	text = json_dumps(root, 0);
	json_decref(root);
	if (!text)
		return -ENOMEM;
	rc = cluster_parse(text, path, out, err, errlen);
	free(text);
	if (rc == 0 && out->key_file[0] && out->key_file[0] != '/') {
		/* relative to the directory of the config file */
		const char *slash = strrchr(path, '/');
		char rel[sizeof(out->key_file)];
		snprintf(rel, sizeof(rel), "%s", out->key_file);
		size_t dl = slash ? (size_t)(slash - path) : 0;
		if (slash && dl + 1 + strlen(rel) < sizeof(out->key_file)) {
			memcpy(out->key_file, path, dl);
			out->key_file[dl] = '/';
			memcpy(out->key_file + dl + 1, rel, strlen(rel) + 1);
		}
	}
	return rc;
}

int cluster_find(const struct cluster *c, const char *name)
{
	for (int i = 0; i < c->n_hosts; i++)
		if (strcmp(c->hosts[i].name, name) == 0)
			return i;
	return -1;
}

int cluster_find_ip(const struct cluster *c, uint32_t ip)
{
	for (int i = 0; i < c->n_hosts; i++)
		if (c->hosts[i].ip == ip)
			return i;
	return -1;
}

void cluster_free(struct cluster *c)
{
	free(c->hosts);
	free(c->graph);
	memset(c, 0, sizeof(*c));
}

int cluster_find_role(const struct cluster *c, unsigned role)
{
	for (int i = 0; i < c->n_hosts; i++)
		if (c->hosts[i].roles & role)
			return i;
	return -1;
}
