/* arr.c - growable arrays and deterministic (value, index) sorting (lib/base: planner and libmlfabric). */
#include "arr.h"

#include <errno.h>
#include <stdlib.h>

int arr_grow(void **p, int *cap, int need, size_t elem)
{
	int ncap;
	void *np;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap : 16;
	while (ncap < need)
		ncap *= 2;
	np = realloc(*p, (size_t)ncap * elem);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = ncap;
	return 0;
}

static int cmp_key(const void *a, const void *b)
{
	const struct arr_key *x = a, *y = b;

	if (x->v < y->v)
		return -1;
	if (x->v > y->v)
		return 1;
	return (x->i > y->i) - (x->i < y->i);
}

void arr_sort_keys(struct arr_key *k, int n)
{
	if (n > 1)
		qsort(k, (size_t)n, sizeof(*k), cmp_key);
}
