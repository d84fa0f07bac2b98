/* nodepick.h - where a dataplane's memory goes: the NUMA node of its port (DPDK-free decisions). */
#ifndef MLF_NODEPICK_H
#define MLF_NODEPICK_H

#define NODEPICK_ANY (-1) /* no particular node (DPDK's SOCKET_ID_ANY) */

/**
 * nodepick_pool_socket - the socket for the port's mbuf pool and rx/tx rings given
 * @port_socket, what rte_eth_dev_socket_id() returned: that socket, or NODEPICK_ANY when the
 * port does not know its own (-1: a virtual device, or a platform without NUMA information).
 */
int nodepick_pool_socket(int port_socket);

/**
 * nodepick_node - the node the app buffers (memfds) are bound to, or NODEPICK_ANY for none.
 * @port_socket: rte_eth_dev_socket_id() of the port (-1 unknown);
 * @numa_ok:     numa_available() (< 0: the kernel has no NUMA support);
 * @max_node:    numa_max_node() (0: one node).
 * Binding happens only where it can matter: NUMA available, more than one node, and the port on
 * a node in 0..@max_node. Pure: a function of its arguments (docs/dataplane.md "NUMA").
 */
int nodepick_node(int port_socket, int numa_ok, int max_node);

#endif
