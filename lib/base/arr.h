/* arr.h - growable arrays (the one realloc growth helper of every layer) and (value, index) sort keys. */
#ifndef MLF_ARR_H
#define MLF_ARR_H

#include <stddef.h>

/**
 * arr_grow - make room for @need elements of @elem bytes in the array *@p whose capacity is
 * *@cap (doubling, at least 16). Returns 0, or -ENOMEM with *@p left unchanged.
 */
int arr_grow(void **p, int *cap, int need, size_t elem);

/** A sort key: by value ascending, then by index (a stable, deterministic order). */
struct arr_key {
	double v;
	int i;
};

/** arr_sort_keys - sort @n keys by (v, i) ascending. */
void arr_sort_keys(struct arr_key *k, int n);

#endif
