/* test_hop.c - Check tests of Hop's queue-based synchronization (hop-asplos2019 §4.2-§5; issue
 * 12) on the paper's own cases: the token queue bounds the iteration gap (Theorem 2), backup
 * workers' quorum (§4.3, Fig. 3a), the staleness bound (§4.4, Fig. 3b) and eq. 2's weights,
 * skipping iterations (§5, Fig. 10). */
#include <check.h>
#include <errno.h>
#include <stdlib.h>

#include "ck_run.h"
#include "hop.h"

#define N 4 /* floats of the toy model */

/* parameters all equal to @v (malloc'ed, as mlf_peer_recv hands them over) */
static float *params(float v)
{
	float *w = malloc(N * sizeof(float));
	for (int i = 0; i < N; i++)
		w[i] = v;
	return w;
}

/* Theorem 2: with max_ig 3 and an out-neighbour that stays in iteration 0, the worker enters
 * iterations 1, 2, 3 and then waits; each token the neighbour gives lets it go one further. */
START_TEST(tokens_bound_the_gap)
{
	struct hop h;
	struct hop_cfg c = { .max_ig = 3 };
	int nb[] = { 7 };

	ck_assert_int_eq(hop_init(&h, &c, nb, 1, nb, 1, N), 0);
	for (int k = 0; k < 3; k++) {
		ck_assert(hop_can_advance(&h));
		hop_advance(&h);
	}
	ck_assert_int_eq(h.k, 3);
	ck_assert(!hop_can_advance(&h)); /* Iter(i) - Iter(j) = max_ig */
	ck_assert_int_eq(hop_on_tokens(&h, 7, 1), 0);
	ck_assert(hop_can_advance(&h));
	hop_advance(&h);
	ck_assert(!hop_can_advance(&h));
	ck_assert_int_eq(hop_on_tokens(&h, 5, 1), -EINVAL); /* not an out-neighbour */
	hop_free(&h);
	/* max_ig 0: no token queues, never held */
	c.max_ig = 0;
	ck_assert_int_eq(hop_init(&h, &c, nb, 1, nb, 1, N), 0);
	for (int k = 0; k < 100; k++)
		hop_advance(&h);
	ck_assert(hop_can_advance(&h));
	hop_free(&h);
}
END_TEST

/* Backup workers (Fig. 3a): three in-neighbours; with one backup two fresh updates of
 * iteration k suffice, without it all three are needed; a used update does not count twice. */
START_TEST(backup_worker_quorum)
{
	struct hop h;
	struct hop_cfg c = { .backups = 1, .max_ig = 2 };
	int in[] = { 1, 2, 3 };
	float x[N] = { 0 };

	ck_assert_int_eq(hop_init(&h, &c, in, 3, in, 3, N), 0);
	ck_assert(!hop_can_reduce(&h));
	ck_assert_int_eq(hop_missing(&h), 1);
	ck_assert_int_eq(hop_on_params(&h, 1, 0, params(3), N), 0);
	ck_assert(!hop_can_reduce(&h));
	ck_assert_int_eq(hop_on_params(&h, 2, 0, params(6), N), 0);
	ck_assert(hop_can_reduce(&h)); /* 2 of 3: the third is the backup */
	ck_assert_int_eq(hop_reduce(&h, x), 2);
	ck_assert(x[0] == 3.0f); /* (0 + 3 + 6) / 3 */
	hop_advance(&h);
	ck_assert(!hop_can_reduce(&h)); /* iteration 1: the used updates of 0 do not count */
	ck_assert_int_eq(hop_on_params(&h, 3, 1, params(1), N), 0);
	ck_assert(!hop_can_reduce(&h));
	ck_assert_int_eq(hop_on_params(&h, 1, 2, params(1), N), 0); /* newer than k counts */
	ck_assert(hop_can_reduce(&h));
	hop_free(&h);
	c.backups = 0;
	ck_assert_int_eq(hop_init(&h, &c, in, 3, in, 3, N), 0);
	ck_assert_int_eq(hop_on_params(&h, 1, 0, params(3), N), 0);
	ck_assert_int_eq(hop_on_params(&h, 2, 0, params(6), N), 0);
	ck_assert(!hop_can_reduce(&h));
	ck_assert_int_eq(hop_on_params(&h, 3, 0, params(9), N), 0);
	ck_assert(hop_can_reduce(&h));
	/* an older update than the one held is dropped; a stranger's or a wrong size refused */
	float *old = params(100);
	ck_assert_int_eq(hop_on_params(&h, 1, -1, old, N), 0);
	ck_assert_int_eq(hop_on_params(&h, 9, 5, NULL, N), -EINVAL);
	ck_assert_int_eq(hop_on_params(&h, 1, 5, NULL, N + 1), -EINVAL);
	hop_reduce(&h, x);
	ck_assert(x[0] == (3.0f + 3 + 6 + 9) / 4);
	hop_free(&h);
	/* backups must leave at least one update needed */
	c.backups = 3;
	ck_assert_int_eq(hop_init(&h, &c, in, 3, in, 3, N), -EINVAL);
}
END_TEST

/* Bounded staleness s = 5 (Fig. 3b): a neighbour still at iteration 0 satisfies iterations up to
 * 5 (also with an update already used), not 6; eq. 2 weighs an update by Iter(u) - (k - s) + 1. */
START_TEST(staleness_bound_and_weights)
{
	struct hop h;
	struct hop_cfg c = { .staleness = 5 };
	int in[] = { 1 };
	float x[N] = { 0 };

	ck_assert_int_eq(hop_init(&h, &c, in, 1, in, 1, N), 0);
	ck_assert_int_eq(hop_on_params(&h, 1, 0, params(6), N), 0);
	for (int k = 0; k <= 5; k++) {
		ck_assert_msg(hop_can_reduce(&h), "iteration %d", k);
		hop_reduce(&h, x);
		hop_advance(&h);
	}
	ck_assert_int_eq(h.k, 6);
	ck_assert(!hop_can_reduce(&h)); /* 0 < 6 - 5: blocks for a newer update */
	hop_free(&h);
	/* weights: s = 2, k = 4: x weight 3, an update of iteration 4 weight 3, of iteration 2 weight 1 */
	int in2[] = { 1, 2 };
	c.staleness = 2;
	ck_assert_int_eq(hop_init(&h, &c, in2, 2, in2, 2, N), 0);
	for (int k = 0; k < 4; k++)
		hop_advance(&h);
	ck_assert_int_eq(hop_on_params(&h, 1, 4, params(7), N), 0);
	ck_assert_int_eq(hop_on_params(&h, 2, 2, params(14), N), 0);
	float y[N] = { 0 };
	ck_assert_int_eq(hop_reduce(&h, y), 2);
	ck_assert_float_eq_tol(y[0], (3 * 0 + 3 * 7 + 1 * 14) / 7.0f, 1e-5);
	hop_free(&h);
}
END_TEST

/* Skipping iterations (Fig. 10b): max_ig 5, the worker at 0 while both out-neighbours are at
 * 10 (tokens 10 - 0 + 5 = 15): behind by 10; it jumps 10 with max_jump 10, 2 with max_jump 2,
 * and not at all when the trigger asks for more than 10 behind. */
START_TEST(skipping_iterations)
{
	struct hop h;
	struct hop_cfg c = { .max_ig = 5, .max_jump = 10, .jump_behind = 1 };
	int nb[] = { 1, 2 };

	ck_assert_int_eq(hop_init(&h, &c, nb, 2, nb, 2, N), 0);
	ck_assert_int_eq(hop_jump(&h), 0); /* level: not behind */
	hop_on_tokens(&h, 1, 10);
	hop_on_tokens(&h, 2, 10);
	ck_assert_int_eq(hop_jump(&h), 10);
	hop_skip(&h, 10);
	ck_assert_int_eq(h.k, 10);
	ck_assert_int_eq(h.jumped, 10);
	ck_assert_int_eq(hop_jump(&h), 0);
	ck_assert_int_eq(h.out[0].tokens, 5); /* level again: max_ig tokens */
	hop_free(&h);
	c.max_jump = 2;
	ck_assert_int_eq(hop_init(&h, &c, nb, 2, nb, 2, N), 0);
	hop_on_tokens(&h, 1, 10);
	hop_on_tokens(&h, 2, 3);
	ck_assert_int_eq(hop_jump(&h), 2); /* min(max_jump, behind the nearer neighbour: 3) */
	hop_free(&h);
	c.max_jump = 10;
	c.jump_behind = 11;
	ck_assert_int_eq(hop_init(&h, &c, nb, 2, nb, 2, N), 0);
	hop_on_tokens(&h, 1, 10);
	hop_on_tokens(&h, 2, 10);
	ck_assert_int_eq(hop_jump(&h), 0);
	hop_free(&h);
	/* skipping needs token queues (it measures how far behind by them) */
	c.max_ig = 0;
	ck_assert_int_eq(hop_init(&h, &c, nb, 2, nb, 2, N), -EINVAL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("hop");
	TCase *tc = tcase_create("queues");

	tcase_add_test(tc, tokens_bound_the_gap);
	tcase_add_test(tc, backup_worker_quorum);
	tcase_add_test(tc, staleness_bound_and_weights);
	tcase_add_test(tc, skipping_iterations);
	suite_add_tcase(s, tc);
	return ck_run(s);
}
