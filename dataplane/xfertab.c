/* xfertab.c - (peer, transfer id) -> record tables on librte_hash (DPDK). */
#include "xfertab.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_errno.h>
#include <rte_hash.h>
#include <rte_hash_crc.h>

#include "log.h"

/*
 * The key: 16 bytes, every one set (rte_hash compares and hashes them all). Never all zero:
 * rte_hash (22.11) compares a key whose signature is 0 with the empty slots' dummy key, which is
 * all zero, so an all-zero key that hashes to 0 (rte_hash_crc of zeros does) is never found when
 * added again: put would add a second copy (tests/unit/test_dp_xfertab.c found it).
 */
struct key {
	uint64_t id;
	int32_t peer;
	uint32_t one; /* always 1 */
};

struct xfertab {
	struct rte_hash *h;
};

static inline struct key mkkey(int peer, uint64_t id)
{
	return (struct key){ .id = id, .peer = peer, .one = 1 };
}

struct xfertab *xfertab_new(const char *what, unsigned entries, int socket)
{
	static unsigned seq; /* rte_hash names are process-wide and unique */
	char name[RTE_HASH_NAMESIZE];
	struct rte_hash_parameters p = {
		.name = name, .entries = entries < 8 ? 8 : entries, .key_len = sizeof(struct key),
		.hash_func = rte_hash_crc, .hash_func_init_val = 0, .socket_id = socket,
		.extra_flag = RTE_HASH_EXTRA_FLAGS_EXT_TABLE,
	};
	struct xfertab *t = calloc(1, sizeof(*t));

	if (!t) {
		rte_errno = ENOMEM;
		return NULL;
	}
	snprintf(name, sizeof(name), "mlf_%.16s_%u", what, seq++);
	t->h = rte_hash_create(&p);
	if (!t->h) {
		log_err("cannot create the %s table (%u entries, rte_hash): %s", what, entries,
			rte_strerror(rte_errno));
		free(t);
		return NULL;
	}
	return t;
}

void xfertab_free(struct xfertab *t)
{
	if (!t)
		return;
	rte_hash_free(t->h);
	free(t);
}

int xfertab_put(struct xfertab *t, int peer, uint64_t id, void *v)
{
	struct key k = mkkey(peer, id);

	if (!v)
		return -EINVAL;
	return rte_hash_add_key_data(t->h, &k, v) < 0 ? -ENOSPC : 0;
}

void *xfertab_get(const struct xfertab *t, int peer, uint64_t id)
{
	struct key k = mkkey(peer, id);
	void *v;

	return rte_hash_lookup_data(t->h, &k, &v) >= 0 ? v : NULL;
}

int xfertab_del(struct xfertab *t, int peer, uint64_t id)
{
	struct key k = mkkey(peer, id);

	return rte_hash_del_key(t->h, &k) >= 0 ? 0 : -ENOENT;
}

void xfertab_clear(struct xfertab *t)
{
	rte_hash_reset(t->h);
}

unsigned xfertab_count(const struct xfertab *t)
{
	int n = rte_hash_count(t->h);

	return n > 0 ? (unsigned)n : 0;
}
