/* vec.h - growable arrays and (value, index) sort keys shared by the planner modules. */
#ifndef MLF_VEC_H
#define MLF_VEC_H

#include <stddef.h>

/**
 * vec_grow - make room for @need elements of @elem bytes in the array *@p whose capacity is
 * *@cap (doubling, at least 16). Returns 0, or -ENOMEM with *@p left unchanged.
 */
int vec_grow(void **p, int *cap, int need, size_t elem);

/** A sort key: by value ascending, then by index (a stable, deterministic order). */
struct vec_key {
	double v;
	int i;
};

/** vec_sort_keys - sort @n keys by (v, i) ascending. */
void vec_sort_keys(struct vec_key *k, int n);

#endif
