/* test_tbrun.c - Check tests of the testbed's command runner (tools/tbrun.c): exit codes, captured output. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tbrun.h"

static void words(struct tbcmd_argv *a, const char *const *w)
{
	tbcmd_init(a);
	tbcmd_addv(a, w);
}

START_TEST(captures_stdout_and_stderr_separately)
{
	const char *const w[] = { "sh", "-c", "printf out; printf err >&2; exit 0", NULL };
	struct tbcmd_argv a;
	char out[16], err[16];

	words(&a, w);
	ck_assert_int_eq(tbrun_run(&a, out, sizeof(out), err, sizeof(err)), 0);
	ck_assert_str_eq(out, "out");
	ck_assert_str_eq(err, "err");
}
END_TEST

START_TEST(reports_exit_status_and_signal)
{
	const char *const fail3[] = { "sh", "-c", "exit 3", NULL };
	const char *const killed[] = { "sh", "-c", "kill -TERM $$", NULL };
	struct tbcmd_argv a;
	char err[64];

	words(&a, fail3);
	ck_assert_int_eq(tbrun_run(&a, NULL, 0, err, sizeof(err)), 3);
	words(&a, killed);
	ck_assert_int_eq(tbrun_run(&a, NULL, 0, err, sizeof(err)), 128 + 15);
}
END_TEST

START_TEST(missing_program_is_an_error_naming_it)
{
	const char *const w[] = { "mlf-no-such-program", "x", NULL };
	struct tbcmd_argv a;
	char err[128];

	words(&a, w);
	ck_assert_int_eq(tbrun_run(&a, NULL, 0, err, sizeof(err)), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, "mlf-no-such-program"));
	ck_assert_int_eq(tbrun_must("host x", &a), -1);
}
END_TEST

START_TEST(long_output_is_truncated_not_overrun)
{
	const char *const w[] = { "sh", "-c", "yes 0123456789 | head -c 100000", NULL };
	struct tbcmd_argv a;
	char out[32 + 8];

	memset(out, 'Z', sizeof(out));
	words(&a, w);
	ck_assert_int_eq(tbrun_run(&a, out, 32, NULL, 0), 0);
	ck_assert_uint_eq(strlen(out), 31);
	ck_assert_int_eq(out[32], 'Z'); /* nothing written past the given length */
}
END_TEST

START_TEST(unknown_namespace_does_not_exist)
{
	ck_assert_int_eq(tbrun_ns_exists("mlf-test-no-such-namespace"), 0);
}
END_TEST

/* Runs as part of build/tests/test_tbcmd (its main adds this suite). */
Suite *tbrun_suite(void)
{
	Suite *s = suite_create("tbrun");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, captures_stdout_and_stderr_separately);
	tcase_add_test(tc, reports_exit_status_and_signal);
	tcase_add_test(tc, missing_program_is_an_error_naming_it);
	tcase_add_test(tc, long_output_is_truncated_not_overrun);
	tcase_add_test(tc, unknown_namespace_does_not_exist);
	suite_add_tcase(s, tc);
	return s;
}
