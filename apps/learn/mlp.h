/* mlp.h - a multi-layer perceptron (ReLU, softmax cross-entropy) over one flat float32 model. */
#ifndef MLF_MLP_H
#define MLF_MLP_H

#include <stddef.h>
#include <stdint.h>

#define MLP_MAX_LAYERS 8

/**
 * The network shape: sizes[0] inputs, sizes[1..n_layers-1] hidden ReLU units, sizes[n_layers]
 * outputs (softmax). The model is one flat float32 vector, so that a parameter server, an
 * aggregator and the fabric see updates as plain byte buffers: for each layer l = 1..n_layers,
 * W_l (sizes[l] x sizes[l-1], row-major) followed by b_l (sizes[l]).
 */
struct mlp_shape {
	int n_layers;                   /* number of weight layers, 1..MLP_MAX_LAYERS */
	int sizes[MLP_MAX_LAYERS + 1];
};

/**
 * mlp_shape_parse - parse "784,1024,10" into a shape.
 * Returns 0, or -EINVAL when a size is not a positive integer or there are < 2 / too many sizes.
 */
int mlp_shape_parse(const char *spec, struct mlp_shape *out);

/** mlp_param_count - number of float32 parameters of the model (bytes = 4 x this). */
size_t mlp_param_count(const struct mlp_shape *s);

/** mlp_init - He-initialised weights, zero biases, from a deterministic @seed. @w: param_count floats. */
void mlp_init(const struct mlp_shape *s, uint64_t seed, float *w);

/**
 * mlp_grad - mean cross-entropy loss and its gradient over a mini-batch.
 * @w:    the model (param_count floats).
 * @x:    batch rows of sizes[0] floats each.
 * @y:    batch labels in [0, sizes[n_layers]).
 * @grad: out, param_count floats: d(mean loss)/dw.
 * Returns the mean loss (nats), or a negative value when scratch memory cannot be allocated.
 */
double mlp_grad(const struct mlp_shape *s, const float *w, const float *x, const uint8_t *y,
		int batch, float *grad);

/**
 * mlp_accuracy - fraction in [0, 1] of the @n examples (@x rows, @y labels) whose arg-max output
 * equals the label. Returns a negative value when scratch memory cannot be allocated.
 */
double mlp_accuracy(const struct mlp_shape *s, const float *w, const float *x, const uint8_t *y, size_t n);

#endif
