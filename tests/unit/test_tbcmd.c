/* test_tbcmd.c - Check tests of the testbed's argument-list builders (tools/tbcmd.c); main of test_tbcmd. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "tbcmd.h"

static int find_word(const struct tbcmd_argv *a, const char *w)
{
	for (int i = 0; i < a->n; i++)
		if (strcmp(a->v[i], w) == 0)
			return i;
	return -1;
}

START_TEST(argv_is_null_terminated_and_joins)
{
	struct tbcmd_argv a;
	const char *const w[] = { "ip", "-n", "pair-a", NULL };
	char line[64];

	tbcmd_init(&a);
	ck_assert_int_eq(tbcmd_addv(&a, w), 0);
	ck_assert_int_eq(tbcmd_add(&a, "mtu=%d", 9000), 0);
	ck_assert_int_eq(a.n, 4);
	ck_assert_ptr_null(a.v[4]);
	ck_assert_str_eq(a.v[3], "mtu=9000");
	ck_assert_str_eq(tbcmd_join(&a, line, sizeof(line)), "ip -n pair-a mtu=9000");
	/* a too-small buffer is truncated with an ellipsis, never overrun */
	ck_assert_str_eq(tbcmd_join(&a, line, 10), "ip -n ...");
}
END_TEST

START_TEST(argv_overflow_is_reported)
{
	struct tbcmd_argv a;
	int rc = 0;

	tbcmd_init(&a);
	for (int i = 0; i < TBCMD_MAX_ARGS + 5 && !rc; i++)
		rc = tbcmd_add(&a, "w%d", i);
	ck_assert_int_eq(rc, -ENOSPC);
	ck_assert_int_eq(a.err, 1);
	ck_assert_int_eq(a.n, TBCMD_MAX_ARGS - 1);
	ck_assert_ptr_null(a.v[a.n]);

	/* one word longer than the text buffer */
	char *big = malloc(TBCMD_BUF + 10);
	memset(big, 'x', TBCMD_BUF + 9);
	big[TBCMD_BUF + 9] = '\0';
	tbcmd_init(&a);
	ck_assert_int_eq(tbcmd_add(&a, "%s", big), -ENOSPC);
	ck_assert_int_eq(a.n, 0);
	free(big);
}
END_TEST

START_TEST(tbf_command_for_a_rate)
{
	struct tbcmd_argv a;
	int i;

	ck_assert_int_eq(tbcmd_tbf(&a, "pair-sw", "b", 1.0, 1500), 0);
	ck_assert_str_eq(a.v[0], "tc");
	ck_assert_str_eq(a.v[2], "pair-sw");
	ck_assert_int_ge(find_word(&a, "replace"), 0);
	i = find_word(&a, "dev");
	ck_assert_int_ge(i, 0);
	ck_assert_str_eq(a.v[i + 1], "b");
	i = find_word(&a, "rate");
	ck_assert_int_ge(i, 0);
	ck_assert_str_eq(a.v[i + 1], "1000000000bit");
	i = find_word(&a, "burst");
	ck_assert_int_ge(i, 0);
	ck_assert_uint_eq(strtoul(a.v[i + 1], NULL, 10), tbcmd_tbf_burst(1.0, 1500));
	ck_assert_int_ge(find_word(&a, "latency"), 0);

	ck_assert_int_eq(tbcmd_tbf(&a, "pair-a", "eth0", 2.5, 1500), 0);
	ck_assert_str_eq(a.v[find_word(&a, "rate") + 1], "2500000000bit");

	/* rate 0 removes the shaping */
	ck_assert_int_eq(tbcmd_tbf(&a, "pair-a", "eth0", 0, 1500), 0);
	ck_assert_int_ge(find_word(&a, "del"), 0);
	ck_assert_int_lt(find_word(&a, "tbf"), 0);

	ck_assert_int_eq(tbcmd_tbf(&a, "pair-a", "eth0", -1, 1500), -EINVAL);
	ck_assert_int_eq(tbcmd_tbf(&a, "pair-a", "eth0", 1e6, 1500), -EINVAL);
}
END_TEST

START_TEST(tbf_burst_sizes)
{
	/* 2 ms of traffic at the rate: 0.1 Gbit/s -> 25 kB, 1 -> 250 kB, 10 -> 2.5 MB */
	ck_assert_uint_eq(tbcmd_tbf_burst(0.1, 1500), 25000);
	ck_assert_uint_eq(tbcmd_tbf_burst(1, 1500), 250000);
	ck_assert_uint_eq(tbcmd_tbf_burst(10, 1500), 2500000);
	ck_assert_uint_ge(tbcmd_tbf_burst(400, 9000), 100000000);
	/* at low rates 4 maximal frames, not a fixed floor: at 10 Mbit/s (rate_scale 0.001) a
	 * 203 kB update must not pass an idle link at veth speed (the old 256 KiB floor did) */
	ck_assert_uint_eq(tbcmd_tbf_burst(0.01, 1500), 4 * 1514);
	ck_assert_uint_eq(tbcmd_tbf_burst(0.001, 9000), 4 * 9014);
	ck_assert_uint_lt(tbcmd_tbf_burst(0.01, 1500), 203560 / 20);
}
END_TEST

START_TEST(framesz_is_power_of_two_and_fits)
{
	ck_assert_uint_eq(tbcmd_af_packet_framesz(1500), 2048);
	ck_assert_uint_eq(tbcmd_af_packet_framesz(9000), 16384);
	for (int mtu = 576; mtu <= 9000; mtu += 97) {
		unsigned f = tbcmd_af_packet_framesz(mtu);
		ck_assert_uint_eq(f & (f - 1), 0);
		ck_assert_uint_ge(f, (unsigned)mtu + 14 + 128);
	}
}
END_TEST

START_TEST(eal_args_follow_the_contract)
{
	struct tbcmd_argv a;
	int i;

	tbcmd_init(&a);
	ck_assert_int_eq(tbcmd_eal_args(&a, "pair9k", "b", 9000, 1), 0);
	ck_assert_int_ge(find_word(&a, "--no-huge"), 0);
	ck_assert_int_ge(find_word(&a, "--no-pci"), 0);
	ck_assert_int_ge(find_word(&a, "--file-prefix=pair9k-b"), 0);
	i = find_word(&a, "-l");
	ck_assert_int_ge(i, 0);
	ck_assert_str_eq(a.v[i + 1], "1");
	i = find_word(&a, "-m");
	ck_assert_str_eq(a.v[i + 1], "512");
	ck_assert_int_ge(find_word(&a, "--vdev=net_af_packet0,iface=eth0,qdisc_bypass=0,framecnt=4096,"
				       "blocksz=16384,framesz=16384"), 0);

	tbcmd_init(&a);
	tbcmd_eal_args(&a, "pair", "a", 1500, 0);
	ck_assert_int_ge(find_word(&a, "--vdev=net_af_packet0,iface=eth0,qdisc_bypass=0,framecnt=4096,"
				       "blocksz=4096,framesz=2048"), 0);
}
END_TEST

START_TEST(names_and_paths)
{
	char out[16];
	char longname[80];

	ck_assert_int_eq(tbcmd_ns_name("pair", "a", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "pair-a");
	ck_assert_int_eq(tbcmd_ns_name("pair", TBCMD_SW, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "pair-sw");
	ck_assert_int_eq(tbcmd_ns_name("averyveryverylongcluster", "a", out, sizeof(out)), -ENAMETOOLONG);
	ck_assert_int_eq(tbcmd_sock_path("pair", "b", longname, sizeof(longname)), 0);
	ck_assert_str_eq(longname, "/run/mlfabric/pair-b.sock");
	ck_assert_int_eq(tbcmd_sock_path("pair", "b", out, sizeof(out)), -ENAMETOOLONG);
}
END_TEST

START_TEST(cluster_host_names_checked)
{
	struct cluster c;
	char err[256];
	static const struct { const char *doc, *must_name; } bad[] = {
		{ "{\"name\":\"t\",\"hosts\":[{\"name\":\"sixteen_chars_xx\",\"ip\":\"10.0.0.1\"}]}", "sixteen_chars_xx" },
		{ "{\"name\":\"t\",\"hosts\":[{\"name\":\"sw\",\"ip\":\"10.0.0.1\"}]}", "reserved" },
		{ "{\"name\":\"t\",\"hosts\":[{\"name\":\"a b\",\"ip\":\"10.0.0.1\"}]}", "'a b'" },
		{ "{\"name\":\"t\",\"hosts\":[{\"name\":\"eth0\",\"ip\":\"10.0.0.1\"}]}", "eth0" },
	};

	ck_assert_int_eq(cluster_parse("{\"name\":\"t\",\"hosts\":[{\"name\":\"w-1.x\",\"ip\":\"10.0.0.1\"}]}",
				       "ok", &c, err, sizeof(err)), 0);
	ck_assert_int_eq(tbcmd_check_cluster(&c, err, sizeof(err)), 0);
	cluster_free(&c);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		if (cluster_parse(bad[i].doc, "bad", &c, err, sizeof(err)) != 0)
			continue; /* rejected by the parser already: fine too */
		ck_assert_int_eq(tbcmd_check_cluster(&c, err, sizeof(err)), -EINVAL);
		ck_assert_msg(strstr(err, bad[i].must_name), "error '%s' should name '%s'", err, bad[i].must_name);
		cluster_free(&c);
	}
}
END_TEST

/*
 * Two clusters whose names and host names concatenate alike ("rtc" + host "x-b", "rtc-x" + host
 * "b") shared the namespace rtc-x-b (up of one killed the other's dataplane, down deleted its
 * namespace): a cluster name with '-' is refused by every mlf-testbed command, naming the fix,
 * so the "<cluster>-<host>" names of accepted clusters split at their first '-' and never
 * coincide.
 */
START_TEST(cluster_names_cannot_collide)
{
	struct cluster a, b;
	char err[256], na[32], nb[32];

	ck_assert_int_eq(cluster_parse("{\"name\":\"rtc\",\"hosts\":[{\"name\":\"x-b\",\"ip\":\"10.0.0.1\"}]}",
				       "a", &a, err, sizeof(err)), 0);
	ck_assert_int_eq(cluster_parse("{\"name\":\"rtc-x\",\"hosts\":[{\"name\":\"b\",\"ip\":\"10.0.0.1\"}]}",
				       "b", &b, err, sizeof(err)), 0);
	ck_assert_int_eq(tbcmd_ns_name(a.name, a.hosts[0].name, na, sizeof(na)), 0);
	ck_assert_int_eq(tbcmd_ns_name(b.name, b.hosts[0].name, nb, sizeof(nb)), 0);
	ck_assert_str_eq(na, nb); /* the names alone would collide */
	ck_assert_int_eq(tbcmd_check_cluster(&a, err, sizeof(err)), 0);
	ck_assert_int_eq(tbcmd_check_cluster(&b, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "'rtc-x'") && strstr(err, "no '-'"), "%s", err);
	cluster_free(&a);
	cluster_free(&b);
	/* accepted names: the cluster is what precedes the first '-' */
	const char *ok[][2] = { { "rtc", "x-b" }, { "r.t_c", "b-" }, { "rtc", "-x" } };
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		ck_assert_int_eq(tbcmd_ns_name(ok[i][0], ok[i][1], na, sizeof(na)), 0);
		ck_assert_int_eq(strcspn(na, "-"), strlen(ok[i][0]));
		ck_assert_str_eq(na + strlen(ok[i][0]) + 1, ok[i][1]);
	}
}
END_TEST

Suite *tbrun_suite(void); /* test_tbrun.c */

int main(void)
{
	Suite *s = suite_create("tbcmd");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, argv_is_null_terminated_and_joins);
	tcase_add_test(tc, argv_overflow_is_reported);
	tcase_add_test(tc, tbf_command_for_a_rate);
	tcase_add_test(tc, tbf_burst_sizes);
	tcase_add_test(tc, framesz_is_power_of_two_and_fits);
	tcase_add_test(tc, cluster_names_cannot_collide);
	tcase_add_test(tc, eal_args_follow_the_contract);
	tcase_add_test(tc, names_and_paths);
	tcase_add_test(tc, cluster_host_names_checked);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_add_suite(sr, tbrun_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
