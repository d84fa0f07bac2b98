/* fuzz_appmsg.c - libFuzzer harness (docs/fuzzing.md): one application-socket datagram of
 * arbitrary bytes (SOCK_SEQPACKET, as from a local app) through appmsg_recv, which must accept
 * only a well-formed message of the protocol or refuse it (-EPROTO) without reading past it. */
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

#include "appmsg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int sv[2], fd;
	struct appmsg m;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) < 0)
		return 0;
	if (size && send(sv[0], data, size, 0) == (ssize_t)size && appmsg_recv(sv[1], &m, &fd) == 1) {
		(void)appmsg_len(&m);
		if (fd >= 0)
			close(fd);
	}
	close(sv[0]);
	close(sv[1]);
	return 0;
}
