/* ck_run.h - the shared main() body of every Check test binary. */
#ifndef MLF_CK_RUN_H
#define MLF_CK_RUN_H

#include <check.h>

/**
 * ck_run - run every test case of @s (CK_NORMAL output) and return the process exit status:
 * 0 when all passed, 1 otherwise. Frees the suite runner.
 */
static inline int ck_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}

#endif
