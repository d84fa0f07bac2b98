/* fabric_agg.h - the aggregator's kernel: (weighted) float32 sum of k updates (paper §5.2). */
#ifndef MLF_FABRIC_AGG_H
#define MLF_FABRIC_AGG_H

#include <stddef.h>

/**
 * fabric_agg_sum - out[i] = sum_j w[j] * in[j][i] for i < n (w NULL: weight 1 each, plain sums
 * with vec_add_f32). @in: @k >= 1 vectors of @n float32 values; @out must not overlap them.
 */
void fabric_agg_sum(float *out, const float *const *in, const double *w, int k, size_t n);

#endif
