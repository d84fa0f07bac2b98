/* fuzz_fabric.c - libFuzzer harness (docs/fuzzing.md): libmlfabric's parsers of what reaches an
 * application: the scheduler's commands (fabric_cmd_parse, JSON text from the control
 * connection) and the payload header of every transfer a dataplane hands over
 * (fabric_cmd_payload_check for each magic: updates, models, states, a neighbour's parameters
 * and tokens). The first byte picks the parser; the rest is its input. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fabric_cmd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t magics[] = { MLF_PAYLOAD_MAGIC_UPDATE, MLF_PAYLOAD_MAGIC_MODEL,
					   MLF_PAYLOAD_MAGIC_STATE, MLF_PAYLOAD_MAGIC_PEER,
					   MLF_PAYLOAD_MAGIC_TOKEN };
	char err[256];

	if (size < 1)
		return 0;
	if (data[0] & 1) {
		/* a command: NUL-terminated copy of the rest */
		char *text = malloc(size);
		struct fabric_cmd c;
		if (!text)
			return 0;
		memcpy(text, data + 1, size - 1);
		text[size - 1] = '\0';
		if (fabric_cmd_parse(text, &c, err, sizeof(err)) == 0)
			fabric_cmd_free(&c);
		free(text);
		return 0;
	}
	/* a payload: an aligned copy, as the dataplane maps it; the header is 1024 bytes */
	void *buf = malloc(size - 1 ? size - 1 : 1);
	if (!buf)
		return 0;
	memcpy(buf, data + 1, size - 1);
	(void)fabric_cmd_payload_check(buf, size - 1, magics[(data[0] >> 1) % 5], err, sizeof(err));
	free(buf);
	return 0;
}
