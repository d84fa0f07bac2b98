/* fuzz_ctl.c - libFuzzer harness (docs/fuzzing.md): the control connection's framing and message
 * parser (ctl_read, ctl_next, ctl_type), the code every scheduler and dataplane runs on bytes
 * from the control port: arbitrary bytes arrive in arbitrary pieces through a socket pair. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ctl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int sv[2];
	struct ctl_conn c;
	char err[256];
	size_t off = 0;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		return 0;
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
	ctl_init(&c, sv[1]);
	while (off < size) {
		/* pieces of 1..4096 bytes, their sizes taken from the data itself */
		size_t piece = (size_t)data[off] * 16 + 1;
		if (piece > size - off)
			piece = size - off;
		if (write(sv[0], data + off, piece) != (ssize_t)piece)
			break;
		off += piece;
		for (;;) {
			long r = ctl_read(&c);
			json_t *m;
			int rc;
			while ((rc = ctl_next(&c, &m, err, sizeof(err))) != 0) {
				if (rc == 1) {
					(void)ctl_type(m);
					json_decref(m);
				}
			}
			if (r <= 0)
				break;
		}
	}
	close(sv[0]);
	ctl_close(&c);
	return 0;
}
