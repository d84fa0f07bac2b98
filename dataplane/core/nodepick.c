/* nodepick.c - where a dataplane's memory goes: the NUMA node of its port (DPDK-free decisions). */
#include "nodepick.h"

int nodepick_pool_socket(int port_socket)
{
	return port_socket >= 0 ? port_socket : NODEPICK_ANY;
}

int nodepick_node(int port_socket, int numa_ok, int max_node)
{
	if (numa_ok < 0 || max_node <= 0 || port_socket < 0 || port_socket > max_node)
		return NODEPICK_ANY;
	return port_socket;
}
