/*
 * test_sched_policy.c - Check tests of the scheduler's policy layer (sched_policy.c; docs/
 * architecture.md "Scheduler policies") on a hand-made daemon state: which policies
 * sched_policy_choose runs for the options and the server's mode (a policy that keeps running
 * keeps its state), the plan mode and the pull gate through the hooks, policy messages routed
 * to a policy that does not run, and the "policies" object of a status reply.
 */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "ck_run.h"
#include "sched_daemon.h"
#include "sched_policy.h"
#include "sched_state.h"

static struct sched_host hosts[4];
static struct sched s;

/* A server host and three live workers; options at their defaults (no SSP, no ADSP). */
static void fresh(void)
{
	memset(&s, 0, sizeof(s));
	memset(hosts, 0, sizeof(hosts));
	sched_daemon_defaults(&s.cfg);
	s.cl.n_hosts = 4;
	s.hosts = hosts;
	s.server.host = 0;
	s.t0 = 1000.0;
	hosts[0] = (struct sched_host){ .alive = 1, .apps = SCHED_ROLE_SERVER, .conn = -1 };
	for (int i = 1; i < 4; i++)
		hosts[i] = (struct sched_host){ .alive = 1, .apps = SCHED_ROLE_WORKER, .conn = -1 };
}

/* The running policies' names, comma-separated. */
static const char *names(void)
{
	static char buf[128];

	buf[0] = '\0';
	for (int i = 0; i < s.pol.n; i++) {
		strcat(buf, i ? "," : "");
		strcat(buf, s.pol.ops[i]->name);
	}
	return buf;
}

static int index_of(const struct sched_policy_ops *ops)
{
	for (int i = 0; i < s.pol.n; i++)
		if (s.pol.ops[i] == ops)
			return i;
	return -1;
}

START_TEST(choose_follows_options_and_mode)
{
	char err[256];

	fresh();
	ck_assert_int_eq(sched_policy_choose(&s, err, sizeof(err)), 0);
	ck_assert_str_eq(names(), "mlfabric-a,esync");
	ck_assert_int_eq(sched_policy_plan_mode(&s), PLAN_MLFABRIC_A);
	void *esync_state = s.pol.data[index_of(&sched_policy_esync)];
	ck_assert_ptr_nonnull(esync_state);
	/* the server registers in mode mlfabric-s: the planning policy changes, ESync keeps its state */
	s.server.sync = 1;
	ck_assert_int_eq(sched_policy_choose(&s, err, sizeof(err)), 0);
	ck_assert_str_eq(names(), "mlfabric-s,esync");
	ck_assert_int_eq(sched_policy_plan_mode(&s), PLAN_MLFABRIC_S);
	ck_assert_ptr_eq(s.pol.data[index_of(&sched_policy_esync)], esync_state);
	sched_policy_free(&s);
	ck_assert_int_eq(s.pol.n, 0);

	fresh();
	s.cfg.ssp_s = 2;
	s.cfg.adsp = (struct adsp_cfg){ .gamma_s = 0.5, .eval_s = 1, .max_lag_r = 4 };
	ck_assert_int_eq(sched_policy_choose(&s, err, sizeof(err)), 0);
	ck_assert_str_eq(names(), "mlfabric-a,ssp,esync,adsp");
	sched_policy_free(&s);

	/* a policy whose init fails (ADSP's window shorter than a period) leaves the set alone */
	fresh();
	s.cfg.adsp = (struct adsp_cfg){ .gamma_s = 2, .eval_s = 1, .max_lag_r = 4 };
	ck_assert_int_eq(sched_policy_choose(&s, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "--adsp-eval"));
	ck_assert_int_eq(s.pol.n, 0);
}
END_TEST

/* The SSP gate through sched_policy_pull_ready: a worker 3 ahead waits with S = 2. */
START_TEST(pull_gate_is_the_ssp_hook)
{
	char err[256];

	fresh();
	hosts[1].n_pushed = 5;
	hosts[2].n_pushed = 2;
	hosts[3].n_pushed = 3;
	ck_assert_int_eq(sched_policy_choose(&s, err, sizeof(err)), 0);
	ck_assert_int_eq(sched_policy_pull_ready(&s, 1), 1); /* no --ssp: no gate */
	sched_policy_free(&s);
	s.cfg.ssp_s = 2;
	ck_assert_int_eq(sched_policy_choose(&s, err, sizeof(err)), 0);
	ck_assert_int_eq(sched_policy_pull_ready(&s, 1), 0);
	ck_assert_int_eq(sched_policy_pull_ready(&s, 3), 1);
	hosts[2].alive = 0; /* the slowest died: it holds nobody back */
	ck_assert_int_eq(sched_policy_pull_ready(&s, 1), 1);
	sched_policy_free(&s);
}
END_TEST

/* `loss` belongs to ADSP: checked even when ADSP does not run, then ignored. */
START_TEST(policy_message_without_its_policy)
{
	char err[256];
	json_t *m = json_pack("{s:s, s:f, s:f, s:i}", "type", "loss", "t", 1.7e9, "loss", 0.5,
			      "version", 3);

	fresh();
	ck_assert_int_eq(sched_policy_choose(&s, err, sizeof(err)), 0);
	ck_assert_int_eq(sched_policy_owns_msg("loss"), 1);
	ck_assert_int_eq(sched_policy_owns_msg("state_query"), 1);
	ck_assert_int_eq(sched_policy_owns_msg("update"), 0);
	ck_assert_int_eq(sched_policy_on_msg(&s, 0, "server@h0", "loss", m, 1.7e9, err,
					     sizeof(err)), 0);
	ck_assert_int_eq(sched_policy_on_msg(&s, 1, "worker@h1", "loss", m, 1.7e9, err,
					     sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "only the server"));
	json_decref(m);
	sched_policy_free(&s);
}
END_TEST

/* The status reply's "policies": one object per running policy, with its hook's fields. */
START_TEST(status_names_every_running_policy)
{
	char err[256];

	fresh();
	s.cfg.ssp_s = 4;
	ck_assert_int_eq(sched_policy_choose(&s, err, sizeof(err)), 0);
	json_t *st = sched_policy_status(&s, 1001.0);
	ck_assert_ptr_nonnull(st);
	ck_assert_int_eq(json_object_size(st), 3);
	ck_assert_ptr_nonnull(json_object_get(st, "mlfabric-a"));
	ck_assert_ptr_nonnull(json_object_get(st, "esync"));
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(st, "ssp"),
							    "threshold")), 4);
	json_decref(st);
	sched_policy_free(&s);
}
END_TEST

int main(void)
{
	Suite *su = suite_create("sched_policy");
	TCase *tc = tcase_create("policy");

	tcase_add_test(tc, choose_follows_options_and_mode);
	tcase_add_test(tc, pull_gate_is_the_ssp_hook);
	tcase_add_test(tc, policy_message_without_its_policy);
	tcase_add_test(tc, status_names_every_running_policy);
	suite_add_tcase(su, tc);
	return ck_run(su);
}
