/* test_dp_numa.c - Check tests of where the dataplane's memory goes (dataplane/core/nodepick.c). */
#include <check.h>

#include "nodepick.h"
#include "test_dp_main.h"

START_TEST(pool_on_the_port_socket_or_any)
{
	ck_assert_int_eq(nodepick_pool_socket(0), 0);
	ck_assert_int_eq(nodepick_pool_socket(1), 1);
	ck_assert_int_eq(nodepick_pool_socket(-1), NODEPICK_ANY); /* unknown: SOCKET_ID_ANY */
}
END_TEST

START_TEST(binds_only_on_multi_node_hosts)
{
	/* two nodes, port on node 1 or 0: bound there */
	ck_assert_int_eq(nodepick_node(1, 0, 1), 1);
	ck_assert_int_eq(nodepick_node(0, 0, 1), 0);
	ck_assert_int_eq(nodepick_node(3, 0, 7), 3);
	/* one node (this machine): no-op */
	ck_assert_int_eq(nodepick_node(0, 0, 0), NODEPICK_ANY);
	/* no NUMA support in the kernel: no-op */
	ck_assert_int_eq(nodepick_node(1, -1, 1), NODEPICK_ANY);
	/* the port does not know its socket (a vdev): no-op */
	ck_assert_int_eq(nodepick_node(-1, 0, 1), NODEPICK_ANY);
	/* a socket beyond the host's nodes: not trusted */
	ck_assert_int_eq(nodepick_node(2, 0, 1), NODEPICK_ANY);
}
END_TEST

int main(void)
{
	const TTest *tests[] = { pool_on_the_port_socket_or_any, binds_only_on_multi_node_hosts };
	return test_dp_run("numa", tests, 2);
}
