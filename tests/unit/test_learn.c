/* test_learn.c - Check tests of the learning building blocks: vec kernels, IDX loader, MLP. */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "ck_run.h"
#include "idx.h"
#include "mlp.h"
#include "train.h"
#include "vec.h"

#define FMNIST "/usr/share/datasets/fashion-mnist/"

START_TEST(vec_kernels_match_scalar)
{
	/* odd lengths exercise the scalar tails; offsets exercise unaligned access */
	for (size_t n = 0; n < 70; n += 7) {
		float a[80], b[80], ref[80];
		for (size_t i = 0; i < n + 1; i++) {
			a[i] = (float)i * 0.5f - 3;
			b[i] = (float)(i * i % 11) - 5;
		}
		memcpy(ref, a, sizeof(a));
		vec_add_f32(a + 1, b + 1, n);
		for (size_t i = 1; i < n + 1; i++)
			ck_assert_float_eq(a[i], ref[i] + b[i]);
		ck_assert_float_eq(a[0], ref[0]);
		memcpy(a, ref, sizeof(a));
		vec_axpy_f32(a, -2.0f, b, n);
		for (size_t i = 0; i < n; i++)
			ck_assert_float_eq_tol(a[i], ref[i] - 2.0f * b[i], 1e-5);
		vec_scale_f32(b, 3.0f, n);
		double s = 0;
		for (size_t i = 0; i < n; i++)
			s += (double)b[i] * b[i];
		ck_assert_double_eq_tol(vec_norm2_f32(b, n), sqrt(s), 1e-9);
	}
}
END_TEST

static void write_gz(const char *path, const void *buf, size_t len)
{
	gzFile f = gzopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(gzwrite(f, buf, (unsigned)len), (int)len);
	gzclose(f);
}

START_TEST(idx_reads_and_rejects)
{
	char dir[] = "/tmp/mlf-idx-XXXXXX", ip[64], lp[64], err[256];
	uint8_t img[16 + 3 * 4] = { 0, 0, 8, 3, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 2 };
	uint8_t lab[8 + 3] = { 0, 0, 8, 1, 0, 0, 0, 3, 7, 0, 9 };
	struct idx_dataset d;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	for (int i = 0; i < 12; i++)
		img[16 + i] = (uint8_t)(i * 20);
	snprintf(ip, sizeof(ip), "%s/i.gz", dir);
	snprintf(lp, sizeof(lp), "%s/l.gz", dir);
	write_gz(ip, img, sizeof(img));
	write_gz(lp, lab, sizeof(lab));
	ck_assert_int_eq(idx_load_dataset(ip, lp, 0, &d, err, sizeof(err)), 0);
	ck_assert_int_eq(d.n, 3);
	ck_assert_int_eq(d.rows, 2);
	ck_assert_float_eq_tol(d.pixels[5], 100.0f / 255.0f, 1e-6);
	ck_assert_int_eq(d.labels[2], 9);
	idx_free(&d);
	ck_assert_int_eq(idx_load_dataset(ip, lp, 2, &d, err, sizeof(err)), 0);
	ck_assert_int_eq(d.n, 2);
	idx_free(&d);

	write_gz(ip, img, sizeof(img) - 1); /* truncated pixels */
	ck_assert_int_eq(idx_load_dataset(ip, lp, 0, &d, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "truncated"));
	ck_assert_ptr_nonnull(strstr(err, ip));
	write_gz(ip, lab, sizeof(lab)); /* labels where images are expected */
	ck_assert_int_eq(idx_load_dataset(ip, lp, 0, &d, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "magic"));
	lab[10] = 10; /* label out of range */
	write_gz(ip, img, sizeof(img));
	write_gz(lp, lab, sizeof(lab));
	ck_assert_int_eq(idx_load_dataset(ip, lp, 0, &d, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "label 2"));
	ck_assert_int_eq(idx_load_dataset("/nonexistent.gz", lp, 0, &d, err, sizeof(err)), -ENOENT);
	unlink(ip);
	unlink(lp);
	rmdir(dir);
}
END_TEST

START_TEST(mlp_shape_parsing)
{
	struct mlp_shape s;

	ck_assert_int_eq(mlp_shape_parse("784,128,10", &s), 0);
	ck_assert_int_eq(s.n_layers, 2);
	ck_assert_int_eq(mlp_param_count(&s), 784 * 128 + 128 + 128 * 10 + 10);
	ck_assert_int_eq(mlp_shape_parse("784", &s), -EINVAL);
	ck_assert_int_eq(mlp_shape_parse("784,x,10", &s), -EINVAL);
	ck_assert_int_eq(mlp_shape_parse("784,0,10", &s), -EINVAL);
	ck_assert_int_eq(mlp_shape_parse("1,2,3,4,5,6,7,8,9,10,11", &s), -EINVAL);
}
END_TEST

/* The analytic gradient must match central finite differences of the loss. */
START_TEST(mlp_gradient_matches_finite_differences)
{
	struct mlp_shape s;
	float x[4 * 5];
	uint8_t y[4] = { 0, 2, 1, 2 };
	size_t np;
	float *w, *g, *g2;

	ck_assert_int_eq(mlp_shape_parse("5,7,6,3", &s), 0);
	np = mlp_param_count(&s);
	w = malloc(np * sizeof(float));
	g = malloc(np * sizeof(float));
	g2 = malloc(np * sizeof(float));
	mlp_init(&s, 42, w);
	for (size_t i = 0; i < np; i++) /* non-zero biases so every path is exercised */
		w[i] += 0.05f * (float)((int)(i % 7) - 3);
	for (int i = 0; i < 20; i++)
		x[i] = (float)((i * 37) % 17) / 17.0f - 0.3f;
	mlp_grad(&s, w, x, y, 4, g);
	for (size_t i = 0; i < np; i += 3) {
		const float h = 1e-2f;
		float keep = w[i];
		double lp, lm;
		w[i] = keep + h;
		lp = mlp_grad(&s, w, x, y, 4, g2);
		w[i] = keep - h;
		lm = mlp_grad(&s, w, x, y, 4, g2);
		w[i] = keep;
		ck_assert_msg(fabs((lp - lm) / (2 * h) - g[i]) < 2e-3 + 0.05 * fabs(g[i]),
			      "param %zu: numeric %g analytic %g", i, (lp - lm) / (2 * h), g[i]);
	}
	free(w);
	free(g);
	free(g2);
}
END_TEST

/* A few hundred SGD steps on real Fashion-MNIST must lift test accuracy well above chance. */
START_TEST(mlp_learns_fashion_mnist)
{
	struct idx_dataset tr, te;
	struct mlp_shape s;
	char err[256];
	float *w, *g;
	size_t np;
	double acc0, acc1;

	ck_assert_msg(idx_load_dataset(FMNIST "train-images-idx3-ubyte.gz", FMNIST "train-labels-idx1-ubyte.gz",
				       6000, &tr, err, sizeof(err)) == 0, "%s (run tools/install-deps)", err);
	ck_assert_msg(idx_load_dataset(FMNIST "t10k-images-idx3-ubyte.gz", FMNIST "t10k-labels-idx1-ubyte.gz",
				       1000, &te, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(mlp_shape_parse("784,64,10", &s), 0);
	np = mlp_param_count(&s);
	w = malloc(np * sizeof(float));
	g = malloc(np * sizeof(float));
	mlp_init(&s, 1, w);
	acc0 = mlp_accuracy(&s, w, te.pixels, te.labels, te.n);
	for (int step = 0; step < 300; step++) {
		size_t off = (size_t)(step * 32) % (tr.n - 32);
		ck_assert_double_ge(mlp_grad(&s, w, tr.pixels + off * 784, tr.labels + off, 32, g), 0);
		vec_axpy_f32(w, -0.1f, g, np);
	}
	acc1 = mlp_accuracy(&s, w, te.pixels, te.labels, te.n);
	ck_assert_msg(acc1 > 0.6 && acc1 > acc0 + 0.3, "accuracy %.3f -> %.3f", acc0, acc1);
	free(w);
	free(g);
	idx_free(&tr);
	idx_free(&te);
}
END_TEST

/* train_init_weights: the file's floats become w and w_prev (version kept); a file of another
 * size, a missing file and a size not a multiple of 4 are refused, naming the path, and leave the
 * model as it was. */
START_TEST(init_weights_from_file)
{
	struct mlp_shape shape;
	struct train_model m;
	char path[] = "/tmp/mlf-test-initw-XXXXXX", err[256];
	int fd = mkstemp(path);
	size_t n;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(mlp_shape_parse("784,8,10", &shape), 0);
	ck_assert_int_eq(train_model_init(&m, &shape, 1, 0.9), 0);
	n = m.n;
	m.version = 7;
	float *w = malloc(sizeof(float) * n), *before = malloc(sizeof(float) * n);
	for (size_t i = 0; i < n; i++)
		w[i] = (float)i * 0.25f - 3.0f;
	ck_assert_int_eq(write(fd, w, sizeof(float) * (n - 1)), (ssize_t)(sizeof(float) * (n - 1)));
	memcpy(before, m.w, sizeof(float) * n);
	/* one float short */
	ck_assert_int_eq(train_init_weights(&m, path, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, path));
	ck_assert_ptr_nonnull(strstr(err, "floats, the model has"));
	ck_assert_int_eq(memcmp(before, m.w, sizeof(float) * n), 0);
	/* two bytes more: not float32 */
	ck_assert_int_eq(write(fd, "ab", 2), 2);
	ck_assert_int_eq(train_init_weights(&m, path, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "multiple of 4"));
	/* exact */
	ck_assert_int_eq(ftruncate(fd, 0), 0);
	ck_assert_int_eq(pwrite(fd, w, sizeof(float) * n, 0), (ssize_t)(sizeof(float) * n));
	ck_assert_int_eq(train_init_weights(&m, path, err, sizeof(err)), 0);
	ck_assert_int_eq(memcmp(w, m.w, sizeof(float) * n), 0);
	ck_assert_int_eq(memcmp(w, m.w_prev, sizeof(float) * n), 0);
	ck_assert_int_eq(m.version, 7);
	close(fd);
	unlink(path);
	ck_assert_int_eq(train_init_weights(&m, path, err, sizeof(err)), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, path));
	free(w);
	free(before);
	train_model_free(&m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("learn");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, vec_kernels_match_scalar);
	tcase_add_test(tc, idx_reads_and_rejects);
	tcase_add_test(tc, mlp_shape_parsing);
	tcase_add_test(tc, mlp_gradient_matches_finite_differences);
	tcase_add_test(tc, mlp_learns_fashion_mnist);
	tcase_add_test(tc, init_weights_from_file);
	suite_add_tcase(s, tc);
	return ck_run(s);
}
