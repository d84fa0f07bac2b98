/* test_dp_main.h - the Check runner shared by the dataplane unit tests (one suite, one case). */
#ifndef TEST_DP_MAIN_H
#define TEST_DP_MAIN_H

#include <check.h>

#include "ck_run.h"

/**
 * test_dp_run - run @n tests of suite @name with the default fork mode; returns the exit status
 * (0 when every test passed).
 */
static inline int test_dp_run(const char *name, const TTest *const *tests, int n)
{
	Suite *s = suite_create(name);
	TCase *tc = tcase_create("core");

	for (int i = 0; i < n; i++)
		tcase_add_test(tc, tests[i]);
	suite_add_tcase(s, tc);
	return ck_run(s);
}

#endif
