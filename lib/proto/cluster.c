/* cluster.c - parse and validate the cluster config with jansson, one table of keys per object. */
#include "cluster.h"
#include "auth.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

static const char *const cluster_keys[] = { "name", "mtu", "prefix_len", "udp_port", "control_port", "hosts",
					     "key_file", "frame_auth", "frame_mac", "insecure", "graph", "launch", NULL };
static const char *const host_keys[] = { "name", "ip", "control_ip", "mac", "up_gbps", "down_gbps", "roles",
					  "dpdk", NULL };
static const char *const dpdk_keys[] = { "pci", "vdev", "lcores", "hugepages", "socket_mem", NULL };
static const char *const launch_keys[] = { "via", "user", "ssh_options", "port", "emulate", NULL };

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

/* An optional string of 1..@max - 1 characters, none of them a space or a quote (they end up on
 * a command line), into @dst; 0, or -EINVAL with @err naming @where@key. */
static int get_word(json_t *obj, const char *key, char *dst, size_t max, const char *origin, const char *where,
		    char *err, size_t errlen)
{
	json_t *j = json_object_get(obj, key);
	const char *s = json_is_string(j) ? json_string_value(j) : NULL;

	if (!j)
		return 0;
	if (!s || !*s || json_string_length(j) >= max || strlen(s) != json_string_length(j) ||
	    strpbrk(s, " \t\n'\"\\")) {
		snprintf(err, errlen, "%s: %s%s: a string of 1..%zu characters without spaces or quotes expected",
			 origin, where, key, max - 1);
		return -EINVAL;
	}
	snprintf(dst, max, "%s", s);
	return 0;
}

/* A host's "dpdk" object (its dataplane's EAL settings) into @d; 0 or -EINVAL. */
static int parse_dpdk(json_t *j, struct cluster_dpdk *d, const char *origin, const char *where, char *err,
		      size_t errlen)
{
	char w[80];
	const char *bad;
	json_t *hp;
	unsigned dom, bus, dev, fn;
	char tail;

	snprintf(w, sizeof(w), "%sdpdk.", where);
	if (!json_is_object(j)) {
		snprintf(err, errlen, "%s: %sdpdk: must be an object {pci|vdev, lcores, hugepages, socket_mem}",
			 origin, where);
		return -EINVAL;
	}
	if ((bad = unknown_key(j, dpdk_keys))) {
		snprintf(err, errlen, "%s: %s%s: unknown key", origin, w, bad);
		return -EINVAL;
	}
	if (get_word(j, "pci", d->pci, sizeof(d->pci), origin, w, err, errlen) ||
	    get_word(j, "vdev", d->vdev, sizeof(d->vdev), origin, w, err, errlen) ||
	    get_word(j, "lcores", d->lcores, sizeof(d->lcores), origin, w, err, errlen) ||
	    get_word(j, "socket_mem", d->socket_mem, sizeof(d->socket_mem), origin, w, err, errlen))
		return -EINVAL;
	if (d->pci[0] && sscanf(d->pci, "%4x:%2x:%2x.%1x%c", &dom, &bus, &dev, &fn, &tail) != 4) {
		snprintf(err, errlen, "%s: %spci: a PCI address like 0000:03:00.0 expected", origin, w);
		return -EINVAL;
	}
	if (!!d->pci[0] == !!d->vdev[0]) {
		snprintf(err, errlen, "%s: %sdpdk: exactly one of pci (a real port) and vdev (a virtual device) "
			 "expected", origin, where);
		return -EINVAL;
	}
	hp = json_object_get(j, "hugepages");
	if (hp && !json_is_boolean(hp)) {
		snprintf(err, errlen, "%s: %shugepages: true or false expected", origin, w);
		return -EINVAL;
	}
	d->hugepages = hp ? json_is_true(hp) : d->pci[0] != '\0';
	if (d->socket_mem[0] && !d->hugepages) {
		snprintf(err, errlen, "%s: %ssocket_mem: needs hugepages (--no-huge memory is not per socket)",
			 origin, w);
		return -EINVAL;
	}
	return 0;
}

/* The "launch" object: how the hosts are reached (via local, ssh or slurm); its other keys are
 * the launcher's (tools/mlfcluster/launcher.py) and only checked for type here. 0 or -EINVAL. */
static int parse_launch(json_t *j, struct cluster *out, const char *origin, char *err, size_t errlen)
{
	const char *bad, *via;
	json_t *x, *o;
	size_t i;
	char user[CLUSTER_NAME_MAX];

	if (!json_is_object(j)) {
		snprintf(err, errlen, "%s: launch: must be an object {via, user, ssh_options, port, emulate}", origin);
		return -EINVAL;
	}
	if ((bad = unknown_key(j, launch_keys))) {
		snprintf(err, errlen, "%s: launch.%s: unknown key", origin, bad);
		return -EINVAL;
	}
	x = json_object_get(j, "via");
	via = json_is_string(x) ? json_string_value(x) : "";
	if (strcmp(via, "local") == 0)
		out->launch_via = CLUSTER_LAUNCH_LOCAL;
	else if (strcmp(via, "ssh") == 0)
		out->launch_via = CLUSTER_LAUNCH_SSH;
	else if (strcmp(via, "slurm") == 0)
		out->launch_via = CLUSTER_LAUNCH_SLURM;
	else {
		snprintf(err, errlen, "%s: launch.via: one of \"local\", \"ssh\", \"slurm\" expected", origin);
		return -EINVAL;
	}
	if (get_word(j, "user", user, sizeof(user), origin, "launch.", err, errlen))
		return -EINVAL;
	x = json_object_get(j, "ssh_options");
	if (x && !json_is_array(x)) {
		snprintf(err, errlen, "%s: launch.ssh_options: an array of strings expected", origin);
		return -EINVAL;
	}
	json_array_foreach(x, i, o) {
		if (!json_is_string(o) || !json_string_length(o)) {
			snprintf(err, errlen, "%s: launch.ssh_options[%zu]: a non-empty string expected", origin, i);
			return -EINVAL;
		}
	}
	x = json_object_get(j, "emulate");
	if (x && (!json_is_boolean(x) || (json_is_true(x) && out->launch_via != CLUSTER_LAUNCH_SSH &&
					   out->launch_via != CLUSTER_LAUNCH_SLURM))) {
		snprintf(err, errlen, "%s: launch.emulate: true (with via ssh or slurm: the hosts are this machine's "
			 "testbed namespaces, each with its own sshd or slurmd) or false expected", origin);
		return -EINVAL;
	}
	x = json_object_get(j, "port");
	if (x && (!json_is_integer(x) || json_integer_value(x) < 1 || json_integer_value(x) > 65535)) {
		snprintf(err, errlen, "%s: launch.port: must be an integer in [1, 65535]", origin);
		return -EINVAL;
	}
	return 0;
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
	j = json_object_get(jh, "control_ip");
	if (j) {
		if (!json_is_string(j) || inet_pton(AF_INET, json_string_value(j), &addr) != 1 || addr.s_addr == 0 ||
		    addr.s_addr == 0xffffffffu || (ntohl(addr.s_addr) >> 28) == 0xe) {
			snprintf(err, errlen, "%s: %scontrol_ip: a unicast IPv4 address string expected (the "
				 "host's management interface)", origin, where);
			return -EINVAL;
		}
		h->control_ip = addr.s_addr;
	}
	j = json_object_get(jh, "dpdk");
	if (j && parse_dpdk(j, &h->dpdk, origin, where, err, errlen))
		return -EINVAL;
	j = json_object_get(jh, "mac");
	if (j) {
		if (!json_is_string(j) || parse_mac(json_string_value(j), h->mac) != 0) {
			snprintf(err, errlen, "%s: %smac: must look like 02:00:0a:4d:00:0a", origin, where);
			return -EINVAL;
		}
		h->mac_given = 1;
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

/*
 * check_subnet() - host @i's address lies in the /prefix_len subnet of hosts[0] and is neither
 * its network nor its broadcast address. Returns 0, or -EINVAL with one line in @err.
 */
static int check_subnet(const struct cluster *c, int i, const char *origin, char *err, size_t errlen)
{
	uint32_t hostmask = 0xffffffffu >> c->prefix_len, a = ntohl(c->hosts[i].ip);
	uint32_t first = ntohl(c->hosts[0].ip);
	struct in_addr net = { .s_addr = htonl(first & ~hostmask) };
	char buf[INET_ADDRSTRLEN];

	if ((a & ~hostmask) != (first & ~hostmask)) {
		snprintf(err, errlen, "%s: hosts[%d].ip: outside the cluster's subnet %s/%d (hosts[0]'s, "
			 "prefix_len)", origin, i, inet_ntop(AF_INET, &net, buf, sizeof(buf)), c->prefix_len);
		return -EINVAL;
	}
	if ((a & hostmask) == 0 || (a & hostmask) == hostmask) {
		snprintf(err, errlen, "%s: hosts[%d].ip: the network or broadcast address of its /%d subnet",
			 origin, i, c->prefix_len);
		return -EINVAL;
	}
	return 0;
}

/*
 * check_roles() - hosts[0..@i] hold at most one scheduler and at most CLUSTER_SERVERS_MAX servers
 * (the shard servers, docs/experiments.md "shards"). Returns 0, or -EINVAL naming hosts[@i].roles.
 */
static int check_roles(const struct cluster *c, int i, const char *origin, char *err, size_t errlen)
{
	int servers = 0;

	for (int k = 0; k <= i; k++)
		servers += !!(c->hosts[k].roles & CLUSTER_ROLE_SERVER);
	if (servers > CLUSTER_SERVERS_MAX) {
		snprintf(err, errlen, "%s: hosts[%d].roles: more than %d hosts with role server (at most one "
			 "per shard)", origin, i, CLUSTER_SERVERS_MAX);
		return -EINVAL;
	}
	if (!(c->hosts[i].roles & CLUSTER_ROLE_SCHEDULER))
		return 0;
	for (int k = 0; k < i; k++)
		if (c->hosts[k].roles & CLUSTER_ROLE_SCHEDULER) {
			snprintf(err, errlen, "%s: hosts[%d].roles: a second scheduler (hosts[%d] is one; at most "
				 "one per cluster)", origin, i, k);
			return -EINVAL;
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

/* Control addresses: unique, and the scheduler's kernel reachable: a scheduler host whose data
 * port is a real PCI port bound to DPDK (the kernel no longer owns its address) needs a
 * control_ip. 0, or -EINVAL with @err saying what to add. */
static int check_control(const struct cluster *c, const char *origin, char *err, size_t errlen)
{
	for (int i = 0; i < c->n_hosts; i++) {
		const struct cluster_host *h = &c->hosts[i];
		char ip[INET_ADDRSTRLEN];

		for (int k = 0; h->control_ip && k < i; k++)
			if (c->hosts[k].control_ip == h->control_ip) {
				snprintf(err, errlen, "%s: hosts[%d].control_ip: repeats hosts[%d].control_ip", origin, i,
					 k);
				return -EINVAL;
			}
		if (!(h->roles & CLUSTER_ROLE_SCHEDULER) || !h->dpdk.pci[0] ||
		    (h->control_ip && h->control_ip != h->ip))
			continue;
		inet_ntop(AF_INET, &h->ip, ip, sizeof(ip));
		snprintf(err, errlen, "%s: hosts[%d] (%s): the scheduler would listen on %s, the address of DPDK "
			 "port %s, which the kernel does not own once the port is bound to DPDK: add "
			 "\"control_ip\": the address of %s's management interface (docs/deploy.md)", origin, i,
			 h->name, ip, h->dpdk.pci, h->name);
		return -EINVAL;
	}
	return 0;
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
	if (get_int(root, "mtu", CLUSTER_MTU_MIN, CLUSTER_MTU_MAX, &v, "", err, errlen)) {
		snprintf(err, errlen, "%s: mtu: must be an integer in [%d, %d] (the minimum: IPv4 %d + UDP %d + "
			 "MLfabric %d + frame tag %d (stamp %d, nonce %d, MAC %d) header bytes and a %d-byte body, "
			 "the largest SACK bitmap)", origin, CLUSTER_MTU_MIN, CLUSTER_MTU_MAX, WIRE_IP_LEN, WIRE_UDP_LEN,
			 WIRE_MLF_LEN, WIRE_TAG_LEN, WIRE_STAMP_LEN, WIRE_NONCE_LEN, WIRE_MAC_LEN, WIRE_SACK_MAX_BYTES);
		goto out;
	}
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
	j = json_object_get(root, "frame_mac");
	out->frame_mac = !j ? AUTH_FRAME_AES256GCM : json_is_string(j) ? auth_frame_alg_parse(json_string_value(j)) : -1;
	if (out->frame_mac < 0) {
		snprintf(err, errlen, "%s: frame_mac: \"%s\" or \"%s\" expected", origin,
			 auth_frame_alg_name(AUTH_FRAME_AES256GCM), auth_frame_alg_name(AUTH_FRAME_CHACHA20POLY1305));
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
	if (!json_is_array(hosts) || json_array_size(hosts) == 0 || json_array_size(hosts) > CLUSTER_HOSTS_MAX) {
		snprintf(err, errlen, "%s: hosts: required array of 1..%d hosts", origin, CLUSTER_HOSTS_MAX);
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
				const char *key = out->hosts[k].ip == out->hosts[i].ip ? "ip" : "name";
				snprintf(err, errlen, "%s: hosts[%d].%s: repeats hosts[%d].%s", origin, i, key, k, key);
				goto out;
			}
			if (memcmp(out->hosts[k].mac, out->hosts[i].mac, 6) == 0) {
				snprintf(err, errlen, "%s: hosts[%d].mac: repeats hosts[%d].mac", origin, i, k);
				goto out;
			}
		}
		if (check_subnet(out, i, origin, err, errlen) || check_roles(out, i, origin, err, errlen))
			goto out;
	}
	j = json_object_get(root, "graph");
	if (j && (rc = parse_graph(j, out, origin, err, errlen)))
		goto out;
	j = json_object_get(root, "launch");
	if (j && parse_launch(j, out, origin, err, errlen))
		goto out;
	if (check_control(out, origin, err, errlen))
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
	json_t *root;
	struct stat st;
	char *text;
	int rc, fd;
	FILE *f;

	memset(out, 0, sizeof(*out));
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return -ENOENT;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > CLUSTER_FILE_MAX) {
		snprintf(err, errlen, "%s: a regular file of at most %d bytes expected", path, CLUSTER_FILE_MAX);
		close(fd);
		return -EINVAL;
	}
	f = fdopen(fd, "r");
	if (!f) {
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		close(fd);
		return -ENOENT;
	}
	root = json_loadf(f, JSON_REJECT_DUPLICATES, &jerr);
	fclose(f);
	if (!root) {
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

uint32_t cluster_control_ip(const struct cluster *c, int h)
{
	return c->hosts[h].control_ip ? c->hosts[h].control_ip : c->hosts[h].ip;
}

int cluster_find_role(const struct cluster *c, unsigned role)
{
	for (int i = 0; i < c->n_hosts; i++)
		if (c->hosts[i].roles & role)
			return i;
	return -1;
}
