/* placement.h - app buffers on the port's NUMA node (libnuma), a no-op on one-node hosts. */
#ifndef MLF_PLACEMENT_H
#define MLF_PLACEMENT_H

#include <stdint.h>

/**
 * placement_init - decide where app buffers go from the port's socket @port_socket
 * (portio_socket(); -1 unknown) and the host's nodes (numa_available, numa_max_node:
 * nodepick_node); logs the socket and the decision once. Always succeeds.
 */
void placement_init(int port_socket);

/**
 * placement_bind_fd - bind the first @len bytes of memfd @fd (an app's SEND buffer, a received
 * transfer's buffer) to the port's node: mbind(MPOL_BIND) on a temporary shared mapping sets
 * the memfd's own policy, so pages allocated later (writes, faults) come from that node, and
 * pages already there are moved (MPOL_MF_MOVE_ALL as root, else MPOL_MF_MOVE: pages this
 * process alone maps). Best effort: a failure is logged at debug level, the buffer still works.
 * Nothing when no node was chosen (one node, no NUMA, unknown port socket).
 */
void placement_bind_fd(int fd, uint64_t len);

#endif
