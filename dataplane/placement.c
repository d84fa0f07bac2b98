/* placement.c - app buffers on the port's NUMA node (libnuma), a no-op on one-node hosts. */
#include "placement.h"

#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <string.h>
#include <sys/mman.h>

#include "log.h"
#include "nodepick.h"

static int node = NODEPICK_ANY;

void placement_init(int port_socket)
{
	int ok = numa_available(), max = ok < 0 ? 0 : numa_max_node();

	node = nodepick_node(port_socket, ok, max);
	if (node != NODEPICK_ANY)
		log_info("NUMA: port on socket %d of %d nodes: mbufs and rings there, app buffers bound to "
			 "node %d", port_socket, max + 1, node);
	else
		log_info("NUMA: port socket %d, %s: mbufs and rings on %s, app buffers not bound", port_socket,
			 ok < 0 ? "no NUMA support" : max == 0 ? "one node" : "socket unknown",
			 port_socket >= 0 ? "that socket" : "any socket");
}

void placement_bind_fd(int fd, uint64_t len)
{
	unsigned long mask[16] = { 0 };
	void *p;

	if (node == NODEPICK_ANY || len == 0 || node >= (int)(8 * sizeof(mask)))
		return;
	mask[node / (8 * sizeof(mask[0]))] = 1UL << (node % (8 * sizeof(mask[0])));
	p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		log_debug("NUMA: cannot map a buffer to bind it: %s", strerror(errno));
		return;
	}
	if (mbind(p, len, MPOL_BIND, mask, 8 * sizeof(mask) + 1, MPOL_MF_MOVE_ALL) < 0 &&
	    mbind(p, len, MPOL_BIND, mask, 8 * sizeof(mask) + 1, MPOL_MF_MOVE) < 0)
		log_debug("NUMA: cannot bind a buffer to node %d: %s", node, strerror(errno));
	munmap(p, len);
}
