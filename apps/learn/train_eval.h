/* train_eval.h - a model's test accuracy and loss. */
#ifndef MLF_TRAIN_EVAL_H
#define MLF_TRAIN_EVAL_H

#include <stddef.h>

#include "idx.h"
#include "mlp.h"

/**
 * train_eval - test accuracy (fraction 0..1) and mean cross-entropy loss (nats) of model @w on
 * the first @k examples of @d (all when @k = 0 or larger than the set).
 * Returns 0, or -ENOMEM when scratch memory cannot be allocated.
 */
int train_eval(const struct mlp_shape *s, const float *w, const struct idx_dataset *d, size_t k,
	       double *accuracy, double *loss);

#endif
