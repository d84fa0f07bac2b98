/* vec.h - float32 vector kernels for aggregation and model updates (explicitly vectorised). */
#ifndef MLF_VEC_H
#define MLF_VEC_H

#include <stddef.h>

/**
 * vec_add_f32 - dst[i] += src[i] for i < n: the aggregator's sum of dense updates (paper §5.2).
 * @dst, @src: n float32 values each; may be unaligned; must not overlap.
 */
void vec_add_f32(float *restrict dst, const float *restrict src, size_t n);

/**
 * vec_axpy_f32 - dst[i] += a * src[i]: the weighted sum of an aggregator, and SGD steps.
 * @a: the weight (dimensionless).
 */
void vec_axpy_f32(float *restrict dst, float a, const float *restrict src, size_t n);

/** vec_scale_f32 - dst[i] *= a. */
void vec_scale_f32(float *dst, float a, size_t n);

/** vec_norm2_f32 - the L2 norm sqrt(sum x[i]^2), accumulated in double (the update norm of Table 1). */
double vec_norm2_f32(const float *x, size_t n);

#endif
