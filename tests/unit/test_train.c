/* test_train.c - Check tests of lib/train: eq. 2 apply, aggregates, stragglers, shards, evaluation, records. */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ck_run.h"
#include "clock.h"
#include "train.h"
#include "vec.h"

#define FMNIST "/usr/share/datasets/fashion-mnist"

/* A two-parameter model with w_t = w_{t-1} = @w0 and momentum @g. */
static void small_model(struct train_model *m, float *w, float *wp, const float *w0, double g)
{
	memset(m, 0, sizeof(*m));
	m->n = 2;
	m->w = w;
	m->w_prev = wp;
	memcpy(w, w0, 2 * sizeof(float));
	memcpy(wp, w0, 2 * sizeof(float));
	m->gamma = g;
}

START_TEST(eq2_matches_hand_computation)
{
	/* gamma 0.5, w0 = (1, 2); by hand:
	 * w1 = w0 + (0.1, -0.2) + 0.5 (w0 - w0)             = (1.1, 1.8)
	 * w2 = w1 + (0.1, 0.1)  + 0.5 (w1 - w0) = (1.1 + 0.1 + 0.05, 1.8 + 0.1 - 0.1) = (1.25, 1.8)
	 * w3 = w2 + (-0.2, 0)   + 0.5 (w2 - w1) = (1.25 - 0.2 + 0.075, 1.8 + 0 + 0) = (1.125, 1.8) */
	static const float w0[2] = { 1, 2 }, u[3][2] = { { 0.1f, -0.2f }, { 0.1f, 0.1f }, { -0.2f, 0 } };
	static const float want[3][2] = { { 1.1f, 1.8f }, { 1.25f, 1.8f }, { 1.125f, 1.8f } };
	float w[2], wp[2];
	struct train_model m;

	small_model(&m, w, wp, w0, 0.5);
	for (int t = 0; t < 3; t++) {
		ck_assert_int_eq(train_apply(&m, u[t], 1), t + 1);
		ck_assert_float_eq_tol(w[0], want[t][0], 1e-6);
		ck_assert_float_eq_tol(w[1], want[t][1], 1e-6);
	}
	ck_assert_int_eq(m.version, 3);
	ck_assert_float_eq_tol(wp[0], 1.25f, 1e-6);
}
END_TEST

START_TEST(aggregate_is_one_step_with_the_sum)
{
	static const float w0[2] = { 0.5f, -1 }, g1[2] = { 0.3f, 0.1f }, g2[2] = { -0.1f, 0.2f },
			   g3[2] = { 0.05f, 0.05f };
	float w[2], wp[2], sum[2] = { 0, 0 }, step[2] = { 0.2f, 0.2f }, before[2];
	struct train_model m;

	small_model(&m, w, wp, w0, 0.9);
	train_apply(&m, step, 1); /* give the model momentum: w - w_prev = (0.2, 0.2) */
	vec_add_f32(sum, g1, 2);
	vec_add_f32(sum, g2, 2);
	vec_add_f32(sum, g3, 2);
	memcpy(before, w, sizeof(before));
	ck_assert_int_eq(train_apply(&m, sum, 3), 4);
	for (int i = 0; i < 2; i++) {
		float expect = before[i] + (g1[i] + g2[i] + g3[i]) + 0.9f * 0.2f;
		ck_assert_float_eq_tol(w[i], expect, 1e-6);
		ck_assert_float_eq(wp[i], before[i]);
	}

	/* three separate steps give a different model (momentum compounds), same version */
	small_model(&m, w, wp, w0, 0.9);
	train_apply(&m, step, 1);
	train_apply(&m, g1, 1);
	train_apply(&m, g2, 1);
	ck_assert_int_eq(train_apply(&m, g3, 1), 4);
	ck_assert(fabsf(w[0] - (before[0] + sum[0] + 0.18f)) > 1e-3);
}
END_TEST

START_TEST(stragglers_binomial_and_deterministic)
{
	struct train_straggle a, b, c;
	const int N = 20000;
	int slow = 0, same = 1, differ = 0;

	ck_assert_int_eq(train_straggle_parse("0.1,4", 7, &a), 0);
	ck_assert_int_eq(train_straggle_parse("0.1,4", 7, &b), 0);
	ck_assert_int_eq(train_straggle_parse("0.1,4", 8, &c), 0);
	for (int i = 0; i < N; i++) {
		double fa = train_straggle_next(&a), fb = train_straggle_next(&b), fc = train_straggle_next(&c);
		ck_assert(fa == 1.0 || fa == 4.0);
		slow += fa > 1;
		same &= fa == fb;
		differ += fa != fc;
	}
	/* Binomial(20000, 0.1): mean 2000, sd 42.4; 5 sd either side */
	ck_assert_int_ge(slow, 2000 - 212);
	ck_assert_int_le(slow, 2000 + 212);
	ck_assert(same);
	ck_assert_int_gt(differ, 100);

	ck_assert_int_eq(train_straggle_parse("C2", 1, &a), 0);
	ck_assert(a.rate == 0.10 && a.factor == 4);
	ck_assert_int_eq(train_straggle_parse("c3", 1, &a), 0);
	ck_assert(a.rate == 0.04 && a.factor == 2);
	ck_assert_int_eq(train_straggle_parse("none", 1, &a), 0);
	for (int i = 0; i < 100; i++)
		ck_assert(train_straggle_next(&a) == 1.0);
	ck_assert_int_eq(train_straggle_parse("1.5,2", 1, &a), -EINVAL);
	ck_assert_int_eq(train_straggle_parse("0.1,0.5", 1, &a), -EINVAL);
	ck_assert_int_eq(train_straggle_parse("0.1", 1, &a), -EINVAL);
	ck_assert_int_eq(train_straggle_parse("0.1,2x", 1, &a), -EINVAL);
	ck_assert(train_straggle_sleep(0.01, 1.0) == 0);
	ck_assert_double_eq_tol(train_straggle_sleep(0.01, 2.0), 0.01, 1e-12);
}
END_TEST

START_TEST(shards_cover_every_image_once)
{
	static const int ns[] = { 1, 2, 3, 7, 16, 64 };
	static unsigned char seen[60000];

	for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
		size_t next = 0, lo = 60000, hi = 0;
		memset(seen, 0, sizeof(seen));
		for (int i = 0; i < ns[k]; i++) {
			size_t b, e;
			train_shard_range(60000, i, ns[k], &b, &e);
			ck_assert_uint_eq(b, next);
			ck_assert_uint_le(e, 60000);
			for (size_t j = b; j < e; j++)
				seen[j]++;
			lo = e - b < lo ? e - b : lo;
			hi = e - b > hi ? e - b : hi;
			next = e;
		}
		ck_assert_uint_eq(next, 60000);
		ck_assert_uint_le(hi - lo, 1);
		for (size_t j = 0; j < 60000; j++)
			ck_assert_int_eq(seen[j], 1);
	}
	int i, n;
	ck_assert_int_eq(train_shard_parse("2/3", &i, &n), 0);
	ck_assert(i == 2 && n == 3);
	ck_assert_int_eq(train_shard_parse("3/3", &i, &n), -EINVAL);
	ck_assert_int_eq(train_shard_parse("-1/3", &i, &n), -EINVAL);
	ck_assert_int_eq(train_shard_parse("1/0", &i, &n), -EINVAL);
	ck_assert_int_eq(train_shard_parse("1", &i, &n), -EINVAL);
	ck_assert_int_eq(train_shard_parse("1/2x", &i, &n), -EINVAL);
}
END_TEST

START_TEST(shard_load_keeps_only_the_shard)
{
	struct idx_dataset all, sh;
	char err[256];

	ck_assert_int_eq(train_load(FMNIST, 0, 3000, &all, err, sizeof(err)), 0);
	ck_assert_int_eq(train_load_shard(FMNIST, 3000, 1, 3, &sh, err, sizeof(err)), 0);
	ck_assert_uint_eq(sh.n, 1000);
	ck_assert_int_eq(memcmp(sh.pixels, all.pixels + 1000 * 784, 1000 * 784 * sizeof(float)), 0);
	ck_assert_int_eq(memcmp(sh.labels, all.labels + 1000, 1000), 0);
	idx_free(&sh);
	ck_assert_int_eq(train_load_shard(FMNIST, 70000, 1, 2, &sh, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "fewer"));
	ck_assert_int_eq(train_load_shard(FMNIST, 3000, 3, 3, &sh, err, sizeof(err)), -EINVAL);
	idx_free(&all);
}
END_TEST

/*
 * Non-i.i.d. shards by label (esync.txt Fig. 3): 4 shards of the first 3000 images hold only
 * their classes (l % 4 == i), are disjoint, together hold every image once, in the set's order.
 */
START_TEST(label_shards_partition_by_class)
{
	struct idx_dataset all, sh;
	char err[256];
	size_t total = 0;

	ck_assert_int_eq(train_load(FMNIST, 0, 3000, &all, err, sizeof(err)), 0);
	for (int i = 0; i < 4; i++) {
		size_t k = 0;

		ck_assert_int_eq(train_load_shard_by_label(FMNIST, 3000, i, 4, &sh, err, sizeof(err)), 0);
		for (size_t j = 0; j < all.n; j++) {
			if (all.labels[j] % 4 != i)
				continue;
			ck_assert_uint_lt(k, sh.n);
			ck_assert_int_eq(sh.labels[k], all.labels[j]);
			ck_assert_int_eq(memcmp(sh.pixels + k * 784, all.pixels + j * 784, 784 * sizeof(float)), 0);
			k++;
		}
		ck_assert_uint_eq(k, sh.n);
		ck_assert_uint_gt(sh.n, 0);
		total += sh.n;
		idx_free(&sh);
	}
	ck_assert_uint_eq(total, 3000);
	ck_assert_int_eq(train_load_shard_by_label(FMNIST, 3000, 0, 11, &sh, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "1 to 10 shards"));
	idx_free(&all);
}
END_TEST

START_TEST(trained_tiny_model_beats_chance)
{
	struct idx_dataset tr, te;
	struct mlp_shape s;
	struct train_model m;
	char err[256];
	double acc0, loss0, acc, loss;
	uint64_t rng = 3;

	ck_assert_int_eq(train_load(FMNIST, 0, 6000, &tr, err, sizeof(err)), 0);
	ck_assert_int_eq(train_load(FMNIST, 1, 500, &te, err, sizeof(err)), 0);
	ck_assert_int_eq(mlp_shape_parse("784,32,10", &s), 0);
	ck_assert_int_eq(train_model_init(&m, &s, 1, 0.9), 0);
	ck_assert_int_eq(train_eval(&s, m.w, &te, 0, &acc0, &loss0), 0);

	float *x = malloc(sizeof(float) * 32 * 784), *g = malloc(sizeof(float) * m.n);
	uint8_t y[32];
	for (int it = 0; it < 300; it++) {
		train_sample_batch(&tr, 0, tr.n, 32, &rng, x, y);
		ck_assert(mlp_grad(&s, m.w, x, y, 32, g) >= 0);
		vec_scale_f32(g, -0.01f, m.n); /* u = -lr * gradient, eq. 1 */
		train_apply(&m, g, 1);
	}
	ck_assert_int_eq(train_eval(&s, m.w, &te, 0, &acc, &loss), 0);
	ck_assert_double_gt(acc, 0.5);
	ck_assert_double_lt(loss, loss0);
	/* the evaluation agrees with mlp_accuracy; k limits the examples */
	ck_assert_double_eq_tol(acc, mlp_accuracy(&s, m.w, te.pixels, te.labels, te.n), 1e-12);
	ck_assert_int_eq(train_eval(&s, m.w, &te, 100, &acc, &loss), 0);
	ck_assert_double_eq_tol(acc, mlp_accuracy(&s, m.w, te.pixels, te.labels, 100), 1e-12);
	idx_free(&te);
	/* the error of a missing data directory names the file */
	ck_assert_int_eq(train_load("/nonexistent", 1, 0, &te, err, sizeof(err)), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, "/nonexistent/t10k-images"));
	free(x);
	free(g);
	idx_free(&tr);
	train_model_free(&m);
	idx_free(&tr);
	idx_free(&te);
}
END_TEST

/* train_local's wait: counts its calls and returns @ret (1 aborts the step). */
struct wait_probe {
	int calls, ret;
	double until;
};

static int probe_wait(void *ctx, double until)
{
	struct wait_probe *p = ctx;

	p->calls++;
	p->until = until;
	return p->ret;
}

/* Local SGD steps on a copy (ESync, ADSP, Hop): a step is wr += -lr x the gradient of
 * the mini-batch the same random state draws; the deterministic straggler slows steps only from
 * its start time; an abort (ESync non-blocking) leaves the copy alone and counts apart; a wait
 * error is kept and the step applied; the delta is scale x (copy - w) with its norm, in place too. */
START_TEST(local_steps_on_a_copy)
{
	struct idx_dataset tr;
	struct mlp_shape s;
	struct train_straggle st;
	char err[256];
	uint64_t rng = 5, rng2 = 5;

	ck_assert_int_eq(train_load(FMNIST, 0, 600, &tr, err, sizeof(err)), 0);
	ck_assert_int_eq(mlp_shape_parse("784,16,10", &s), 0);
	ck_assert_int_eq(train_straggle_parse("none", 1, &st), 0);
	size_t n = mlp_param_count(&s);
	float *w = malloc(sizeof(float) * n), *wr = malloc(sizeof(float) * n), *want = malloc(sizeof(float) * n);
	float *u = malloc(sizeof(float) * n), *g = malloc(sizeof(float) * n), *x = malloc(sizeof(float) * 8 * 784);
	uint8_t y[8];
	mlp_init(&s, 7, w);
	memcpy(wr, w, sizeof(float) * n);
	struct train_local L = { .shape = &s, .shard = &tr, .st = &st, .rng = &rng, .batch = 8, .lr = 0.1,
				 .compute_min = 0, .speed = 1, .speed_at = 0, .x = x, .u = u, .y = y, .n = n,
				 .t0 = clock_real_s() };

	/* two steps, against the same draws done by hand */
	memcpy(want, w, sizeof(float) * n);
	for (int k = 0; k < 2; k++) {
		train_sample_batch(&tr, 0, tr.n, 8, &rng2, x, y);
		ck_assert(mlp_grad(&s, want, x, y, 8, g) >= 0);
		for (size_t j = 0; j < n; j++)
			want[j] -= 0.1f * g[j];
	}
	for (int k = 0; k < 2; k++)
		ck_assert_double_ge(train_local_step(&L, wr), 0);
	for (size_t j = 0; j < n; j++)
		ck_assert_float_eq_tol(wr[j], want[j], 1e-6);
	ck_assert_int_eq(L.steps, 2);
	ck_assert_int_eq(L.straggled, 0);
	ck_assert_double_gt(L.loss, 0);

	/* the delta: 0.5 x (copy - w), its norm; in place gives the same */
	double norm = train_local_delta(wr, w, 0.5, u, n), sq = 0;
	for (size_t j = 0; j < n; j++) {
		ck_assert_float_eq_tol(u[j], 0.5f * (wr[j] - w[j]), 1e-7);
		sq += (double)u[j] * u[j];
	}
	ck_assert_double_gt(norm, 0);
	ck_assert_double_eq_tol(norm, sqrt(sq), 1e-6 * norm);
	memcpy(g, wr, sizeof(float) * n);
	ck_assert_double_eq_tol(train_local_delta(g, w, 0.5, g, n), norm, 1e-9 * norm);

	/* the deterministic straggler: 1 before speed_at, speed after */
	L.speed = 4;
	L.speed_at = 1000;
	ck_assert_double_eq(train_local_slowdown(&L), 1);
	L.speed_at = 0;
	ck_assert_double_eq(train_local_slowdown(&L), 4);
	L.speed = 1;

	/* an abort leaves the copy as it was and counts apart; the wait is asked for the compute's end */
	struct wait_probe p = { .ret = 1 };
	L.wait = probe_wait;
	L.wait_ctx = &p;
	L.compute_min = 0.01;
	memcpy(want, wr, sizeof(float) * n);
	double t_before = clock_real_s();
	ck_assert_double_ge(train_local_step(&L, wr), 0);
	ck_assert_int_eq(p.calls, 1);
	ck_assert_double_ge(p.until, t_before + 0.01);
	ck_assert_int_eq(memcmp(wr, want, sizeof(float) * n), 0);
	ck_assert_int_eq(L.aborted, 1);
	ck_assert_int_eq(L.n_aborted, 1);
	ck_assert_int_eq(L.steps, 2);
	/* a wait error is kept, and the step applied */
	p.ret = -ETIMEDOUT;
	ck_assert_double_ge(train_local_step(&L, wr), 0);
	ck_assert_int_eq(L.wait_err, -ETIMEDOUT);
	ck_assert_int_eq(L.aborted, 0);
	ck_assert_int_eq(L.steps, 3);
	ck_assert_int_ne(memcmp(wr, want, sizeof(float) * n), 0);

	free(w);
	free(wr);
	free(want);
	free(u);
	free(g);
	free(x);
	idx_free(&tr);
}
END_TEST

/* The emulated accelerator pads a fast computation to its minimum and leaves a slow one alone. */
START_TEST(compute_pad_is_a_minimum)
{
	double t0 = clock_real_s();
	double c = train_compute_pad(t0, 0.05);
	double waited = clock_real_s() - t0;

	ck_assert(c == 0.05);
	ck_assert(waited >= 0.049);
	t0 = clock_real_s() - 0.2; /* a computation that already took 0.2 s */
	c = train_compute_pad(t0, 0.05);
	ck_assert(c >= 0.2 && c < 0.3);
	ck_assert(clock_real_s() - t0 < 0.3); /* no extra sleep */
	c = train_compute_pad(clock_real_s(), 0);
	ck_assert(c >= 0 && c < 0.01);
}
END_TEST

/* State get/set (replication) and checkpoints: h = w_t - w_{t-1} is eq. 2's history, in the update's units. */
START_TEST(state_and_checkpoint)
{
	static const float w0[2] = { 1, 2 }, u1[2] = { 0.5f, -1 }, u2[2] = { 0.25f, 0.25f };
	float w[2], wp[2], w2[2], wp2[2], sw[2], sh[2];
	struct train_model m, r;
	char path[] = "/tmp/train-ckpt-XXXXXX", err[256];
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	close(fd);
	small_model(&m, w, wp, w0, 0.5);
	train_apply(&m, u1, 1);
	train_apply(&m, u2, 1);
	/* h1 = u1 = (0.5, -1); h2 = 0.5 h1 + u2 = (0.5, -0.25); w2 = w0 + h1 + h2 = (2, 0.75) */
	ck_assert_int_eq(train_state_get(&m, sw, sh), 2);
	ck_assert_float_eq(sw[0], 2.0f);
	ck_assert_float_eq(sw[1], 0.75f);
	ck_assert_float_eq(sh[0], 0.5f);
	ck_assert_float_eq(sh[1], -0.25f);
	ck_assert_double_eq_tol(train_history_norm(&m), sqrt(0.25 + 0.0625), 1e-9);
	/* a replica installing the state then applying the same update ends where the server does */
	small_model(&r, w2, wp2, (const float[2]){ 9, 9 }, 0.5);
	train_state_set(&r, sw, sh, 2);
	train_apply(&m, u1, 1);
	ck_assert_int_eq(train_apply(&r, u1, 1), 3);
	ck_assert_float_eq(w2[0], w[0]);
	ck_assert_float_eq(w2[1], w[1]);
	/* checkpoint round trip, then the refusals */
	ck_assert_int_eq(train_checkpoint_write(&m, path, err, sizeof(err)), 0);
	small_model(&r, w2, wp2, (const float[2]){ 0, 0 }, 0.5);
	ck_assert_int_eq(train_checkpoint_read(&r, path, err, sizeof(err)), 0);
	ck_assert_int_eq(r.version, 3);
	ck_assert_float_eq(w2[0], w[0]);
	ck_assert_float_eq(w2[1] - wp2[1], w[1] - wp[1]);
	ck_assert_int_eq(truncate(path, 24 + 8 + 4), 0);
	ck_assert_int_eq(train_checkpoint_read(&r, path, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "truncated"));
	r.n = 3;
	ck_assert_int_eq(train_checkpoint_write(&m, path, err, sizeof(err)), 0);
	ck_assert_int_eq(train_checkpoint_read(&r, path, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "2 parameters, the model has 3"));
	unlink(path);
	ck_assert_int_eq(train_checkpoint_read(&r, path, err, sizeof(err)), -ENOENT);
}
END_TEST

START_TEST(flat_model_momentum_state_and_file)
{
	/* a flat model of an odd size (no MLP shape), gamma 0.5, from version 5 */
	enum { N = 7 };
	float w0[N], u1[N], u2[N], sw[N], sh[N], sw2[N], sh2[N], zero[N] = { 0 }, *rd;
	struct train_model m, r;
	char path[] = "/tmp/train-f32-XXXXXX", err[256];
	size_t n;
	FILE *f;
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	close(fd);
	for (int i = 0; i < N; i++) {
		w0[i] = 0.25f * (float)i - 1;
		u1[i] = 0.5f - 0.125f * (float)i;
		u2[i] = 0.0625f * (float)(i % 3);
	}
	ck_assert_int_eq(train_model_init_flat(&m, w0, N, 5, 0.5), 0);
	w0[0] = 100; /* the model holds its own copy */
	ck_assert_float_eq(m.w[0], -1.0f);
	w0[0] = -1;
	ck_assert_int_eq(m.n, N);
	ck_assert(train_history_norm(&m) == 0); /* w_prev = w: no momentum yet */
	/* eq. 2: h1 = u1, w1 = w0 + u1; h2 = 0.5 h1 + u2, w2 = w1 + h2 (all exact in binary) */
	ck_assert_int_eq(train_apply(&m, u1, 1), 6);
	ck_assert_int_eq(train_apply(&m, u2, 2), 8);
	for (int i = 0; i < N; i++) {
		float h2 = 0.5f * u1[i] + u2[i];
		ck_assert_float_eq(m.w[i], w0[i] + u1[i] + h2);
		ck_assert_float_eq(m.w[i] - m.w_prev[i], h2);
	}
	/* state round trip into another flat model, which then steps exactly as the original */
	ck_assert_int_eq(train_state_get(&m, sw, sh), 8);
	ck_assert_int_eq(train_model_init_flat(&r, zero, N, 0, 0.5), 0);
	train_state_set(&r, sw, sh, 8);
	ck_assert_int_eq(train_state_get(&r, sw2, sh2), 8);
	ck_assert_mem_eq(sw2, sw, sizeof(sw));
	ck_assert_mem_eq(sh2, sh, sizeof(sh));
	ck_assert_int_eq(train_apply(&m, u1, 1), 9);
	ck_assert_int_eq(train_apply(&r, u1, 1), 9);
	ck_assert_mem_eq(r.w, m.w, sizeof(sw));
	/* checkpoint round trip of a flat model */
	ck_assert_int_eq(train_checkpoint_write(&m, path, err, sizeof(err)), 0);
	train_model_free(&r);
	ck_assert_int_eq(train_model_init_flat(&r, zero, N, 0, 0.5), 0);
	ck_assert_int_eq(train_checkpoint_read(&r, path, err, sizeof(err)), 0);
	ck_assert_int_eq(r.version, 9);
	ck_assert_mem_eq(r.w, m.w, sizeof(sw));
	ck_assert_mem_eq(r.w_prev, m.w_prev, sizeof(sw));
	train_model_free(&r);
	/* refusals */
	ck_assert_int_eq(train_model_init_flat(&r, w0, 0, 0, 0.5), -EINVAL);
	ck_assert_int_eq(train_model_init_flat(&r, w0, N, 0, 1.0), -EINVAL);
	/* raw float32 files (mlf-ps --init-file) */
	ck_assert_ptr_nonnull(f = fopen(path, "wb"));
	ck_assert_int_eq(fwrite(m.w, sizeof(float), N, f), N);
	fclose(f);
	ck_assert_int_eq(train_f32_read(path, &rd, &n, err, sizeof(err)), 0);
	ck_assert_int_eq(n, N);
	ck_assert_mem_eq(rd, m.w, sizeof(sw));
	free(rd);
	ck_assert_int_eq(truncate(path, 4 * N - 2), 0);
	ck_assert_int_eq(train_f32_read(path, &rd, &n, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, path));
	ck_assert_ptr_nonnull(strstr(err, "multiple of 4"));
	ck_assert_ptr_null(rd);
	ck_assert_int_eq(truncate(path, 0), 0);
	ck_assert_int_eq(train_f32_read(path, &rd, &n, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "empty"));
	unlink(path);
	ck_assert_int_eq(train_f32_read(path, &rd, &n, err, sizeof(err)), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, path));
	train_model_free(&m);
}
END_TEST

START_TEST(records_are_json_lines)
{
	char dir[] = "/tmp/mlf-rec-XXXXXX", sub[64], path[96], err[256];
	FILE *f;
	json_error_t je;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(sub, sizeof(sub), "%s/run", dir);
	f = train_rec_open(sub, "x.jsonl", err, sizeof(err));
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(train_rec_line(f, json_pack("{s:i,s:f}", "id", 1, "t", 1.5)), 0);
	ck_assert_int_eq(train_rec_line(f, json_pack("{s:i}", "id", 2)), 0);
	/* flushed per line: readable before close */
	snprintf(path, sizeof(path), "%s/x.jsonl", sub);
	json_t *all = json_load_file(path, JSON_DISABLE_EOF_CHECK, &je);
	ck_assert_ptr_nonnull(all);
	ck_assert_int_eq(json_integer_value(json_object_get(all, "id")), 1);
	json_decref(all);
	fclose(f);
	ck_assert_int_eq(train_rec_file(sub, "s.json", json_pack("{s:i}", "applied", 9), err, sizeof(err)), 0);
	snprintf(path, sizeof(path), "%s/s.json", sub);
	all = json_load_file(path, 0, &je);
	ck_assert_int_eq(json_integer_value(json_object_get(all, "applied")), 9);
	json_decref(all);
	ck_assert_ptr_null(train_rec_open("/proc/nonexistent/x", "y", err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "/proc/nonexistent/x"));
	unlink(path);
	snprintf(path, sizeof(path), "%s/x.jsonl", sub);
	unlink(path);
	rmdir(sub);
	rmdir(dir);
}
END_TEST

/*
 * ADSP's commit timer (adsp-aaai2020 Alg. 2): ΔC = 4 commits in a 2 s check period from t = 100,
 * commits taking O = 0.1 s: due at 100.4, 100.9, 101.4, 101.9 (evenly Γ/ΔC apart, each O early so
 * it ends on the tick); a fifth is never due; O longer than Γ/ΔC is due at once; ΔC = 0 never.
 */
START_TEST(adsp_commit_timer)
{
	ck_assert_double_eq_tol(train_adsp_commit_due(100, 1, 4, 2, 0.1), 100.4, 1e-9);
	ck_assert_double_eq_tol(train_adsp_commit_due(100, 2, 4, 2, 0.1), 100.9, 1e-9);
	ck_assert_double_eq_tol(train_adsp_commit_due(100, 4, 4, 2, 0.1), 101.9, 1e-9);
	ck_assert(isinf(train_adsp_commit_due(100, 5, 4, 2, 0.1)));
	ck_assert_double_eq(train_adsp_commit_due(100, 1, 4, 2, 0.9), 100);
	ck_assert(isinf(train_adsp_commit_due(100, 1, 0, 2, 0.1)));
	ck_assert(isinf(train_adsp_commit_due(100, 0, 4, 2, 0.1)));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("train");
	TCase *tc = tcase_create("train");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, eq2_matches_hand_computation);
	tcase_add_test(tc, aggregate_is_one_step_with_the_sum);
	tcase_add_test(tc, stragglers_binomial_and_deterministic);
	tcase_add_test(tc, shards_cover_every_image_once);
	tcase_add_test(tc, shard_load_keeps_only_the_shard);
	tcase_add_test(tc, label_shards_partition_by_class);
	tcase_add_test(tc, trained_tiny_model_beats_chance);
	tcase_add_test(tc, compute_pad_is_a_minimum);
	tcase_add_test(tc, state_and_checkpoint);
	tcase_add_test(tc, flat_model_momentum_state_and_file);
	tcase_add_test(tc, records_are_json_lines);
	tcase_add_test(tc, adsp_commit_timer);
	tcase_add_test(tc, local_steps_on_a_copy);
	suite_add_tcase(s, tc);
	return ck_run(s);
}
