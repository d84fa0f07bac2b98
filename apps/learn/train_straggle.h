/* train_straggle.h - stragglers (paper §7, compute settings C1..C3), the emulated accelerator and the deterministic generator. */
#ifndef MLF_TRAIN_STRAGGLE_H
#define MLF_TRAIN_STRAGGLE_H

#include <stdint.h>

/**
 * train_rng_next - splitmix64, the deterministic generator of stragglers and mini-batch
 * sampling: advances @state and returns the next 64 random bits.
 */
uint64_t train_rng_next(uint64_t *state);

/** A straggler process: each iteration is slowed down by @factor with probability @rate. */
struct train_straggle {
	double rate;     /* probability per iteration, 0..1 */
	double factor;   /* slowdown factor s >= 1: the iteration takes s x its compute time */
	uint64_t state;  /* generator state (deterministic per seed) */
};

/**
 * train_straggle_parse - "R,S" (e.g. "0.1,2"), "C1" (0.10, 2), "C2" (0.10, 4), "C3" (0.04, 2),
 * or "none" (0, 1), seeded with @seed. Returns 0, or -EINVAL when R is outside [0, 1] or S < 1.
 */
int train_straggle_parse(const char *spec, uint64_t seed, struct train_straggle *st);

/**
 * train_straggle_next - draw this iteration's slowdown: returns @st->factor with probability
 * @st->rate, else 1. The sequence depends only on the seed.
 */
double train_straggle_next(struct train_straggle *st);

/**
 * train_straggle_sleep - sleep (factor - 1) x @compute_s seconds (the straggler's extra time).
 * Returns the seconds slept.
 */
double train_straggle_sleep(double compute_s, double factor);

/**
 * train_compute_pad - emulate an accelerator whose gradient computation takes at least
 * @min_s seconds (the paper's workers are GPUs; ours compute on shared CPU cores): sleep until
 * @t_start + @min_s (CLOCK_REALTIME seconds, clock_real_s()). Returns the iteration's compute
 * time, max(elapsed, @min_s) seconds; @min_s <= 0 only measures.
 */
double train_compute_pad(double t_start, double min_s);

#endif
