/* vec.c - float32 kernels written with GCC vector extensions: 4-lane SSE vectors, scalar tail. */
#include "vec.h"

#include <math.h>
#include <string.h>

/* 16-byte vectors are native on every x86-64 (SSE2), so no -mavx is needed; GCC widens the
 * unrolled steps when the build enables AVX. */
typedef float v4f __attribute__((vector_size(16)));

/* Unaligned loads and stores through memcpy compile to single vector moves. */
static inline v4f load4(const float *p)
{
	v4f v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static inline void store4(float *p, v4f v)
{
	memcpy(p, &v, sizeof(v));
}

void vec_add_f32(float *restrict dst, const float *restrict src, size_t n)
{
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		store4(dst + i, load4(dst + i) + load4(src + i));
		store4(dst + i + 4, load4(dst + i + 4) + load4(src + i + 4));
	}
	for (; i < n; i++)
		dst[i] += src[i];
}

void vec_axpy_f32(float *restrict dst, float a, const float *restrict src, size_t n)
{
	v4f va = { a, a, a, a };
	size_t i = 0;

	for (; i + 4 <= n; i += 4)
		store4(dst + i, load4(dst + i) + va * load4(src + i));
	for (; i < n; i++)
		dst[i] += a * src[i];
}

void vec_scale_f32(float *dst, float a, size_t n)
{
	v4f va = { a, a, a, a };
	size_t i = 0;

	for (; i + 4 <= n; i += 4)
		store4(dst + i, load4(dst + i) * va);
	for (; i < n; i++)
		dst[i] *= a;
}

double vec_norm2_f32(const float *x, size_t n)
{
	double s = 0.0;

	for (size_t i = 0; i < n; i++)
		s += (double)x[i] * x[i];
	return sqrt(s);
}
