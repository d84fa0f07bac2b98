/* fuzz_cluster.c - libFuzzer harness (docs/fuzzing.md): a cluster config (conf/cluster-*.json,
 * read by every program) through cluster_parse. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), err[512];
	struct cluster c;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (cluster_parse(text, "fuzz", &c, err, sizeof(err)) == 0)
		cluster_free(&c);
	free(text);
	return 0;
}
