/* test_dp_xfertab.c - the dataplane's transfer tables on rte_hash (dataplane/xfertab.c) and the
 * finished-transfer ring (dataplane/xferring.c) against the linear scans they replaced: the same
 * answers for every lookup, including keys repeated in the ring and records overwritten when it
 * is full. Needs DPDK's EAL (no hugepages, PCI or shared config): linked with DPDK. */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include <rte_eal.h>
#include <rte_memory.h>

#include "test_dp_main.h"
#include "xfertab.h"

static uint64_t rng = 0x2545f4914f6cdd1dULL;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

START_TEST(put_get_del_by_peer_and_id)
{
	struct xfertab *t = xfertab_new("t1", 16, SOCKET_ID_ANY);
	int a, b, c;

	ck_assert_ptr_nonnull(t);
	ck_assert_ptr_null(xfertab_get(t, 1, 42));
	ck_assert_int_eq(xfertab_put(t, 1, 42, &a), 0);
	ck_assert_int_eq(xfertab_put(t, 2, 42, &b), 0); /* same id, other peer: another key */
	ck_assert_ptr_eq(xfertab_get(t, 1, 42), &a);
	ck_assert_ptr_eq(xfertab_get(t, 2, 42), &b);
	ck_assert_ptr_null(xfertab_get(t, 1, 43));
	ck_assert_int_eq(xfertab_put(t, 1, 42, &c), 0); /* replaces */
	ck_assert_ptr_eq(xfertab_get(t, 1, 42), &c);
	ck_assert_uint_eq(xfertab_count(t), 2);
	ck_assert_int_eq(xfertab_put(t, 1, 44, NULL), -EINVAL);
	ck_assert_int_eq(xfertab_del(t, 1, 42), 0);
	ck_assert_int_eq(xfertab_del(t, 1, 42), -ENOENT);
	ck_assert_ptr_null(xfertab_get(t, 1, 42));
	ck_assert_ptr_eq(xfertab_get(t, 2, 42), &b);
	xfertab_clear(t);
	ck_assert_uint_eq(xfertab_count(t), 0);
	ck_assert_ptr_null(xfertab_get(t, 2, 42));
	/* peer 0, id 0 beside a deleted key: replaced, not added twice (an all-zero key was) */
	ck_assert_int_eq(xfertab_put(t, 0, 3, &a), 0);
	ck_assert_int_eq(xfertab_put(t, 0, 0, &b), 0);
	ck_assert_int_eq(xfertab_del(t, 0, 3), 0);
	ck_assert_int_eq(xfertab_put(t, 0, 0, &c), 0);
	ck_assert_uint_eq(xfertab_count(t), 1);
	ck_assert_int_eq(xfertab_del(t, 0, 0), 0);
	ck_assert_ptr_null(xfertab_get(t, 0, 0));
	xfertab_free(t);
}
END_TEST

/* Every one of `entries` keys fits (the extendable bucket table), at the sizes the dataplane uses. */
START_TEST(holds_its_size)
{
	static const unsigned sizes[] = { 1024, 16384 };

	for (unsigned s = 0; s < 2; s++) {
		unsigned n = sizes[s];
		struct xfertab *t = xfertab_new("t2", n, SOCKET_ID_ANY);
		uint64_t *ids = malloc(n * sizeof(*ids));

		ck_assert_ptr_nonnull(t);
		for (unsigned i = 0; i < n; i++) {
			ids[i] = next();
			ck_assert_int_eq(xfertab_put(t, (int)(i % 7), ids[i], &ids[i]), 0);
		}
		for (unsigned i = 0; i < n; i++)
			ck_assert_ptr_eq(xfertab_get(t, (int)(i % 7), ids[i]), &ids[i]);
		ck_assert_uint_eq(xfertab_count(t), n);
		free(ids);
		xfertab_free(t);
	}
}
END_TEST

/* The receiver's ring before the hash: the newest-first scan over the n newest records. */
struct ref_ring {
	int peer[64];
	uint64_t id[64];
	unsigned cap, head, n;
};

static int ref_find(const struct ref_ring *r, int peer, uint64_t id)
{
	for (unsigned k = 1; k <= r->n; k++) {
		unsigned slot = (r->head + r->cap - k) % r->cap;
		if (r->id[slot] == id && r->peer[slot] == peer)
			return (int)slot;
	}
	return -1;
}

static unsigned ref_push(struct ref_ring *r, int peer, uint64_t id)
{
	unsigned slot = r->head;

	r->peer[slot] = peer;
	r->id[slot] = id;
	r->head = (slot + 1) % r->cap;
	if (r->n < r->cap)
		r->n++;
	return slot;
}

/* Random pushes from a small key space (so keys repeat and records get overwritten): the hashed
 * ring answers every lookup as the scan did, for rings of several sizes. */
START_TEST(ring_answers_as_the_scan)
{
	static const unsigned caps[] = { 1, 2, 5, 64 };

	for (unsigned c = 0; c < 4; c++) {
		struct ref_ring ref = { .cap = caps[c] };
		struct xferring r;

		ck_assert_int_eq(xferring_init(&r, "ring", caps[c], SOCKET_ID_ANY), 0);
		for (int step = 0; step < 20000; step++) {
			int peer = (int)(next() % 3);
			uint64_t id = next() % (caps[c] * 2 + 1);
			if (next() % 2)
				ck_assert_uint_eq(xferring_push(&r, peer, id), ref_push(&ref, peer, id));
			ck_assert_int_eq(xferring_find(&r, peer, id), ref_find(&ref, peer, id));
		}
		/* and every key of the space at the end */
		for (int peer = 0; peer < 3; peer++)
			for (uint64_t id = 0; id <= caps[c] * 2; id++)
				ck_assert_int_eq(xferring_find(&r, peer, id), ref_find(&ref, peer, id));
		xferring_free(&r);
		ck_assert_int_eq(xferring_find(&r, 0, 0), -1); /* freed: empty */
	}
}
END_TEST

/* A key pushed twice: the newer record answers; overwriting the older keeps the newer found;
 * overwriting the newer forgets the key. */
START_TEST(ring_repeated_key_and_overwrite)
{
	struct xferring r;

	ck_assert_int_eq(xferring_init(&r, "ring2", 3, SOCKET_ID_ANY), 0);
	ck_assert_uint_eq(xferring_push(&r, 1, 7), 0);
	ck_assert_uint_eq(xferring_push(&r, 1, 7), 1);
	ck_assert_int_eq(xferring_find(&r, 1, 7), 1);
	ck_assert_uint_eq(xferring_push(&r, 2, 8), 2);
	ck_assert_uint_eq(xferring_push(&r, 2, 9), 0); /* overwrites the older (1, 7) */
	ck_assert_int_eq(xferring_find(&r, 1, 7), 1);
	ck_assert_uint_eq(xferring_push(&r, 2, 10), 1); /* overwrites the newer (1, 7) */
	ck_assert_int_eq(xferring_find(&r, 1, 7), -1);
	ck_assert_int_eq(xferring_find(&r, 2, 8), 2);
	xferring_free(&r);
}
END_TEST

int main(void)
{
	char *eal[] = { "test_dp_xfertab", "--no-huge", "-m", "64", "--no-pci", "--no-shconf",
			"--no-telemetry", "-l", "0", "--log-level=*:error", NULL };
	const TTest *tests[] = { put_get_del_by_peer_and_id, holds_its_size, ring_answers_as_the_scan,
				 ring_repeated_key_and_overwrite };

	if (rte_eal_init(10, eal) < 0) {
		fprintf(stderr, "test_dp_xfertab: cannot initialise DPDK's EAL (no hugepages, no shared config)\n");
		return 1;
	}
	return test_dp_run("xfertab", tests, 4);
}
