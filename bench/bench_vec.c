/* bench_vec.c - aggregator sum throughput (vec_add_f32) against memcpy of the same bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "vec.h"

/* Best of @reps runs, in seconds; best-of filters out the other core's interference. */
#define BEST_OF(reps, stmt) ({ double best_ = 1e9; for (int r_ = 0; r_ < (reps); r_++) { \
	double t0_ = clock_mono_s(); stmt; double t_ = clock_mono_s() - t0_; if (t_ < best_) best_ = t_; } best_; })

int main(int argc, char **argv)
{
	size_t n = (size_t)64 << 20; /* 64 M floats = 256 MB per vector, as in TESTBED.md */
	float *a, *b, *c;
	double t_copy, t_add, t_axpy, gb;

	if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		printf("usage: bench-vec [MFLOATS]\n  Times memcpy, vec_add_f32 and vec_axpy_f32 over MFLOATS"
		       " million float32 (default 64)\n  on one core and prints GB/s of input consumed.\n");
		return 0;
	}
	if (argc > 1)
		n = (size_t)atol(argv[1]) << 20;
	a = malloc(n * 4);
	b = malloc(n * 4);
	c = malloc(n * 4);
	if (!a || !b || !c || n == 0) {
		fprintf(stderr, "bench-vec: cannot allocate 3 x %zu MB\n", n * 4 >> 20);
		return 1;
	}
	for (size_t i = 0; i < n; i++) {
		a[i] = (float)(i & 1023);
		b[i] = 1.0f;
		c[i] = 0.0f;
	}
	gb = n * 4 / 1e9;
	t_copy = BEST_OF(5, memcpy(c, b, n * 4));
	t_add = BEST_OF(5, vec_add_f32(a, b, n));
	t_axpy = BEST_OF(5, vec_axpy_f32(a, 0.5f, b, n));
	printf("bytes per vector: %.0f MB (one core, best of 5)\n", gb * 1e3);
	printf("%-28s %8.2f GB/s\n", "memcpy", gb / t_copy);
	printf("%-28s %8.2f GB/s  (%.2f x memcpy)\n", "vec_add_f32 (a += b)", gb / t_add, t_copy / t_add);
	printf("%-28s %8.2f GB/s  (%.2f x memcpy)\n", "vec_axpy_f32 (a += w*b)", gb / t_axpy, t_copy / t_axpy);
	printf("check: a[3] = %.1f\n", a[3]); /* keeps the work observable */
	free(a);
	free(b);
	free(c);
	return 0;
}
