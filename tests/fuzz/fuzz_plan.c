/* fuzz_plan.c - libFuzzer harness (docs/fuzzing.md): a plan document (what mlf-plan reads from
 * a file) through planio_read_string; a document it accepts is planned (plan_compute, the fast
 * planner), so the planner meets every batch the reader lets through. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "planio.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), err[PLANIO_ERR_MAX];
	struct plan_batch b;
	struct plan p;

	if (!text || size > 65536) {
		free(text);
		return 0;
	}
	memcpy(text, data, size);
	text[size] = '\0';
	if (planio_read_string(text, &b, err, sizeof(err)) == 0) {
		if (b.n_updates <= 16 && b.n_pulls <= 16 && plan_compute(&b, PLAN_IMPL_FAST, &p) == 0)
			plan_free(&p);
		planio_batch_free(&b);
	}
	free(text);
	return 0;
}
