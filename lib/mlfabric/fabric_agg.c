/* fabric_agg.c - (weighted) float32 sum of k updates with lib/base/vec.h kernels. */
#include "fabric_agg.h"

#include <string.h>

#include "vec.h"

void fabric_agg_sum(float *out, const float *const *in, const double *w, int k, size_t n)
{
	if (k <= 0)
		return;
	if (w) {
		memset(out, 0, n * sizeof(float));
		for (int j = 0; j < k; j++)
			vec_axpy_f32(out, (float)w[j], in[j], n);
		return;
	}
	memcpy(out, in[0], n * sizeof(float));
	for (int j = 1; j < k; j++)
		vec_add_f32(out, in[j], n);
}
