/* test_dp_fault.c - Check tests of fault-injection specs and decisions (fault.c). */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <string.h>

#include "ck_run.h"

#include "fault.h"

START_TEST(parses_and_formats)
{
	struct fault_spec f, g;
	char err[256] = "", buf[256];

	ck_assert_int_eq(fault_parse("rx_drop=0.01,tx_drop=0,dup=0.02,reorder=0.03,delay_us=5,cut=b",
				     &f, err, sizeof(err)), 0);
	ck_assert_double_eq(f.rx.drop, 0.01);
	ck_assert_double_eq(f.tx.drop, 0);
	ck_assert_double_eq(f.rx.dup, 0.02);
	ck_assert_double_eq(f.tx.dup, 0.02);
	ck_assert_double_eq(f.tx.reorder, 0.03);
	ck_assert_uint_eq(f.rx.delay_us, 5);
	ck_assert_str_eq(f.cut, "b");
	fault_format(&f, buf, sizeof(buf));
	ck_assert_int_eq(fault_parse(buf, &g, err, sizeof(err)), 0);
	ck_assert_mem_eq(&f, &g, sizeof(f));
	ck_assert_int_eq(fault_parse("none", &f, err, sizeof(err)), 0);
	ck_assert_int_eq(fault_active(&f.rx) | fault_active(&f.tx), 0);
	fault_format(&f, buf, sizeof(buf));
	ck_assert_str_eq(buf, "none");
}
END_TEST

static const struct { const char *spec, *must_name; } bad_specs[] = {
	{ "rx_drop=1.5", "rx_drop" },
	{ "dup=abc", "dup" },
	{ "loss=0.1", "loss" },
	{ "rx_drop", "rx_drop" },
	{ "delay_us=-4", "delay_us" },
	{ "tx_reorder=0.1,tx_dup=nan", "tx_dup" },
};

START_TEST(rejects_bad_specs)
{
	struct fault_spec f;
	char err[256] = "";

	ck_assert_int_eq(fault_parse(bad_specs[_i].spec, &f, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, bad_specs[_i].must_name), "error '%s' does not name '%s'", err,
		      bad_specs[_i].must_name);
}
END_TEST

/* Over 200000 frames the drawn fractions match the probabilities within 10% of their value. */
START_TEST(decisions_match_probabilities)
{
	struct fault_dir d = { .drop = 0.01, .dup = 0.02, .reorder = 0.05 };
	uint64_t rng = 12345, n = 200000, count[4] = { 0 };

	for (uint64_t i = 0; i < n; i++)
		count[fault_decide(&d, &rng)]++;
	ck_assert_double_eq_tol((double)count[FAULT_DROP] / n, 0.01, 0.001);
	ck_assert_double_eq_tol((double)count[FAULT_DUP] / n, 0.99 * 0.02, 0.002);
	ck_assert_double_eq_tol((double)count[FAULT_REORDER] / n, 0.99 * 0.98 * 0.05, 0.005);
	d = (struct fault_dir){ 0 };
	for (int i = 0; i < 1000; i++)
		ck_assert_int_eq(fault_decide(&d, &rng), FAULT_PASS);
	d.drop = 1;
	ck_assert_int_eq(fault_decide(&d, &rng), FAULT_DROP);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fault");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, parses_and_formats);
	tcase_add_loop_test(tc, rejects_bad_specs, 0, (int)(sizeof(bad_specs) / sizeof(bad_specs[0])));
	tcase_add_test(tc, decisions_match_probabilities);
	suite_add_tcase(s, tc);
	return ck_run(s);
}
