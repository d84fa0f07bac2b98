/* test_fabric.c - Check tests of the fabric library's pieces: APPMSG_CTL limits, payload header
 * validation, scheduler command parsing (docs/control.md, the replication commands of docs/replication.md), the aggregator's sum. */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "appmsg.h"
#include "ck_run.h"
#include "dpclient.h"
#include "fabric_agg.h"
#include "fabric_cmd.h"
#include "mlfabric.h"

/* A 16 KiB control text crosses the socket whole and NUL-terminated; 16 KiB + 1 is refused. */
START_TEST(ctl_text_limits)
{
	struct appmsg m, got;
	char *text = malloc(APPMSG_CTL_MAX + 2);
	int sv[2], fd;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	memset(text, 'x', APPMSG_CTL_MAX);
	text[0] = '{';
	text[APPMSG_CTL_MAX] = '\0';
	ck_assert_int_eq(appmsg_ctl(&m, text), 0);
	ck_assert_uint_eq(appmsg_len(&m), offsetof(struct appmsg, u) + APPMSG_CTL_MAX);
	ck_assert_int_eq(appmsg_send(sv[0], &m, -1), 0);
	memset(&got, 0x55, sizeof(got));
	ck_assert_int_eq(appmsg_recv(sv[1], &got, &fd), 1);
	ck_assert_uint_eq(got.type, APPMSG_CTL);
	ck_assert_uint_eq(got.n, APPMSG_CTL_MAX);
	ck_assert_uint_eq(strlen(got.u.text), APPMSG_CTL_MAX);
	text[APPMSG_CTL_MAX] = 'x';
	text[APPMSG_CTL_MAX + 1] = '\0';
	ck_assert_int_eq(appmsg_ctl(&m, text), -EMSGSIZE);
	ck_assert_int_eq(appmsg_ctl(&m, ""), -EMSGSIZE);
	/* a forged CTL with n = 0 or n beyond the limit is refused by the receiver */
	memset(&m, 0, sizeof(m));
	m.type = APPMSG_CTL;
	ck_assert_int_eq(appmsg_send(sv[0], &m, -1), 0);
	ck_assert_int_eq(appmsg_recv(sv[1], &got, &fd), -EPROTO);
	m.n = APPMSG_CTL_MAX + 1;
	ck_assert_int_eq(appmsg_send(sv[0], &m, -1), 0);
	ck_assert_int_eq(appmsg_recv(sv[1], &got, &fd), -EPROTO);
	/* through the client: a short message arrives as a CTL event with the same text */
	ck_assert_int_eq(appmsg_ctl(&m, "{\"type\":\"registered\",\"app\":\"worker@w0\"}"), 0);
	ck_assert_int_eq(appmsg_send(sv[0], &m, -1), 0);
	ck_assert_int_eq(appmsg_recv(sv[1], &got, &fd), 1);
	ck_assert_str_eq(got.u.text, "{\"type\":\"registered\",\"app\":\"worker@w0\"}");
	close(sv[0]);
	close(sv[1]);
	free(text);
}
END_TEST

static void *payload(uint64_t n_floats, uint32_t magic, uint32_t parts)
{
	struct mlf_payload_hdr *h = calloc(1, mlf_payload_bytes(n_floats));
	h->magic = magic;
	h->n_parts = parts;
	h->n_floats = n_floats;
	return h;
}

START_TEST(payload_header_validation)
{
	char err[160];
	struct mlf_payload_hdr *h = payload(100, MLF_PAYLOAD_MAGIC_UPDATE, 1);
	uint64_t bytes = mlf_payload_bytes(100);

	ck_assert_uint_ge(MLF_PAYLOAD_HDR, sizeof(struct mlf_payload_hdr));
	ck_assert_int_eq(fabric_cmd_payload_check(h, bytes, MLF_PAYLOAD_MAGIC_UPDATE, err, sizeof(err)), 0);
	/* a model where an update is expected: bad magic */
	ck_assert_int_eq(fabric_cmd_payload_check(h, bytes, MLF_PAYLOAD_MAGIC_MODEL, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "magic"));
	h->magic = 0xdeadbeef;
	ck_assert_int_eq(fabric_cmd_payload_check(h, bytes, MLF_PAYLOAD_MAGIC_UPDATE, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "0xdeadbeef"));
	h->magic = MLF_PAYLOAD_MAGIC_UPDATE;
	h->n_parts = MLF_PAYLOAD_MAX_PARTS + 1;
	ck_assert_int_eq(fabric_cmd_payload_check(h, bytes, MLF_PAYLOAD_MAGIC_UPDATE, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "n_parts 63"));
	h->n_parts = 0; /* an update names at least itself */
	ck_assert_int_eq(fabric_cmd_payload_check(h, bytes, MLF_PAYLOAD_MAGIC_UPDATE, err, sizeof(err)), -EBADMSG);
	h->n_parts = MLF_PAYLOAD_MAX_PARTS;
	ck_assert_int_eq(fabric_cmd_payload_check(h, bytes, MLF_PAYLOAD_MAGIC_UPDATE, err, sizeof(err)), 0);
	/* truncated: one float short, and shorter than the header */
	ck_assert_int_eq(fabric_cmd_payload_check(h, bytes - 4, MLF_PAYLOAD_MAGIC_UPDATE, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "does not match n_floats 100"));
	ck_assert_int_eq(fabric_cmd_payload_check(h, 512, MLF_PAYLOAD_MAGIC_UPDATE, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "truncated"));
	/* n_floats so large that HDR + 4 n wraps around must not pass */
	h->n_floats = (1ULL << 62) + 25;
	ck_assert_int_eq(fabric_cmd_payload_check(h, bytes, MLF_PAYLOAD_MAGIC_UPDATE, err, sizeof(err)), -EBADMSG);
	free(h);
	h = payload(10, MLF_PAYLOAD_MAGIC_MODEL, 0);
	ck_assert_int_eq(fabric_cmd_payload_check(h, mlf_payload_bytes(10), MLF_PAYLOAD_MAGIC_MODEL, err, sizeof(err)), 0);
	h->n_parts = 1;
	ck_assert_int_eq(fabric_cmd_payload_check(h, mlf_payload_bytes(10), MLF_PAYLOAD_MAGIC_MODEL, err, sizeof(err)), -EBADMSG);
	free(h);
}
END_TEST

#define SEND_OK "{\"type\":\"send\",\"app\":\"worker@w0\",\"what\":\"update\",\"id\":1099511627777," \
		"\"xfer\":1099511627777,\"dst\":\"ps\",\"chan\":1,\"bytes\":4096,\"start\":1700000000.25," \
		"\"steps\":[[0,2.5],[0.5,0],[0.75,1]]}"

START_TEST(command_parsing)
{
	struct fabric_cmd c;
	char err[256];

	ck_assert_int_eq(fabric_cmd_parse(SEND_OK, &c, err, sizeof(err)), 0);
	ck_assert_int_eq(c.kind, FABRIC_CMD_SEND);
	ck_assert_int_eq(c.what_model, 0);
	ck_assert_uint_eq(c.id, (1ULL << 40) | 1);
	ck_assert_str_eq(c.dst, "ps");
	ck_assert_uint_eq(c.chan, 1);
	ck_assert_int_eq(c.n_steps, 3);
	ck_assert_uint_eq(c.steps[1].at_ns, 500000000ULL);
	ck_assert_double_eq(c.steps[0].gbps, 2.5);
	ck_assert_double_eq_tol(c.start, 1700000000.25, 1e-6);
	fabric_cmd_free(&c);
	/* every missing field is named */
	static const char *const fields[] = { "what", "id", "xfer", "dst", "chan", "start", "steps" };
	for (unsigned i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		json_t *o = json_loads(SEND_OK, 0, NULL);
		char *t, want[64];
		json_object_del(o, fields[i]);
		t = json_dumps(o, 0);
		ck_assert_int_eq(fabric_cmd_parse(t, &c, err, sizeof(err)), -EBADMSG);
		snprintf(want, sizeof(want), "command 'send': missing or bad field '%s'", fields[i]);
		ck_assert_str_eq(err, want);
		free(t);
		json_decref(o);
	}
	ck_assert_int_eq(fabric_cmd_parse("{\"type\":\"send\",\"what\":\"update\",\"id\":-1}", &c, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "'id'"));
	ck_assert_int_eq(fabric_cmd_parse("{\"type\":\"order\",\"chan\":64,\"xfers\":[1]}", &c, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "'chan'"));
	ck_assert_int_eq(fabric_cmd_parse("{\"type\":\"aggregate\",\"agg\":7,\"inputs\":[1,2],\"weights\":[1],"
					  "\"dst\":\"ps\",\"chan\":1,\"start\":0,\"steps\":[]}", &c, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "'weights'"));
	ck_assert_int_eq(fabric_cmd_parse("{\"type\":\"aggregate\",\"agg\":7,\"inputs\":[1,2],\"weights\":[0.5,2],"
					  "\"dst\":\"ps\",\"chan\":1,\"start\":0,\"steps\":[]}", &c, err, sizeof(err)), 0);
	ck_assert_int_eq(c.n_ids, 2);
	ck_assert_uint_eq(c.ids[1], 2);
	ck_assert_double_eq(c.weights[0], 0.5);
	ck_assert_int_eq(c.n_steps, 0);
	fabric_cmd_free(&c);
	/* a step offset past 1e6 s (its nanoseconds overflowed; found by fuzz_fabric) is refused */
	ck_assert_int_eq(fabric_cmd_parse("{\"type\":\"send\",\"what\":\"update\",\"id\":2,\"xfer\":9,"
					  "\"dst\":\"ps\",\"chan\":0,\"start\":1,\"steps\":[[8.9e12,1]]}", &c, err,
					  sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "'steps'"));
	/* ADSP's commit rate: checkpoint, ΔC_i, the check period; each bad field named */
	ck_assert_int_eq(fabric_cmd_parse("{\"type\":\"commit_rate\",\"check\":7,\"delta\":3,"
					  "\"period_s\":1.5}", &c, err, sizeof(err)), 0);
	ck_assert_int_eq(c.kind, FABRIC_CMD_COMMIT_RATE);
	ck_assert_int_eq(c.version, 7);
	ck_assert_uint_eq(c.id, 3);
	ck_assert_double_eq(c.start, 1.5);
	fabric_cmd_free(&c);
	ck_assert_int_eq(fabric_cmd_parse("{\"type\":\"commit_rate\",\"check\":7,\"delta\":-1,"
					  "\"period_s\":1}", &c, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "'delta'"));
	ck_assert_int_eq(fabric_cmd_parse("{\"type\":\"commit_rate\",\"check\":7,\"delta\":1,"
					  "\"period_s\":0}", &c, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "'period_s'"));
	ck_assert_int_eq(fabric_cmd_parse("{\"type\":\"commit_rate\",\"delta\":1,\"period_s\":1}", &c,
					  err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "'check'"));
	ck_assert_int_eq(fabric_cmd_parse("{\"type\":\"frobnicate\"}", &c, err, sizeof(err)), -EBADMSG);
	ck_assert_str_eq(err, "unknown command type 'frobnicate'");
	ck_assert_int_eq(fabric_cmd_parse("{\"type\":\"send\"", &c, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "not a JSON object"));
	ck_assert_int_eq(fabric_cmd_parse("{\"type\":\"error\",\"reason\":\"x\",\"no_scheduler\":true}", &c, err, sizeof(err)), 0);
	ck_assert_int_eq(c.no_scheduler, 1);
	ck_assert_str_eq(c.reason, "x");
	/* a steps pair with a negative rate is refused */
	ck_assert_int_eq(fabric_cmd_parse("{\"type\":\"aggregate\",\"agg\":7,\"inputs\":[1],\"dst\":\"ps\",\"chan\":1,"
					  "\"start\":0,\"steps\":[[0,-1]]}", &c, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "'steps'"));
	/* MLfabric-S: sync_step names the iteration's start version and its size (> 0) */
	ck_assert_int_eq(fabric_cmd_parse("{\"type\":\"sync_step\",\"version\":13,\"parts\":2}", &c, err,
					  sizeof(err)), 0);
	ck_assert_int_eq(c.kind, FABRIC_CMD_SYNC_STEP);
	ck_assert_int_eq(c.version, 13);
	ck_assert_uint_eq(c.id, 2);
	fabric_cmd_free(&c);
	ck_assert_int_eq(fabric_cmd_parse("{\"type\":\"sync_step\",\"version\":13,\"parts\":0}", &c, err,
					  sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "'parts'"));
	ck_assert_int_eq(fabric_cmd_parse("{\"type\":\"sync_step\",\"parts\":2}", &c, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "'version'"));
}
END_TEST

/* The replication commands of docs/replication.md parse into the fields the library uses. */
START_TEST(replication_command_parsing)
{
	static const char *const bad[] = {
		"{\"type\":\"release\"}", "{\"type\":\"release\",\"id\":-3}",
		"{\"type\":\"promote\"}", "{\"type\":\"promote\",\"version\":1.5}",
		"{\"type\":\"server_moved\"}", "{\"type\":\"server_moved\",\"server\":\"\"}",
		"{\"type\":\"snapshot\"}", "{\"type\":\"snapshot\",\"tag\":\"7\"}",
		"{\"type\":\"replica\"}", "{\"type\":\"replica\",\"host\":\"r\",\"replication\":\"raid\"}",
		"{\"type\":\"send\",\"what\":\"update\",\"id\":1,\"xfer\":1,\"dst\":\"ps\",\"chan\":1,"
		"\"start\":0,\"steps\":[],\"keep\":1}",
		"{\"type\":\"send\",\"what\":\"status\",\"id\":0,\"xfer\":1,\"dst\":\"r\",\"chan\":4,"
		"\"start\":0,\"steps\":[]}",
	};
	static const char *const field[] = { "id", "id", "version", "version", "server", "server", "tag", "tag",
					     "host", "replication", "keep", "what" };
	struct fabric_cmd c;
	char err[256];

	ck_assert_int_eq(fabric_cmd_parse("{\"type\":\"send\",\"app\":\"worker@w0\",\"what\":\"update\",\"id\":9,"
					  "\"xfer\":9,\"dst\":\"ps\",\"chan\":1,\"start\":1,\"steps\":[],\"keep\":true}",
					  &c, err, sizeof(err)), 0);
	ck_assert_int_eq(c.kind, FABRIC_CMD_SEND);
	ck_assert_int_eq(c.keep, 1);
	ck_assert_int_eq(c.what_model + c.what_state, 0);
	fabric_cmd_free(&c);
	ck_assert_int_eq(fabric_cmd_parse(SEND_OK, &c, err, sizeof(err)), 0);
	ck_assert_int_eq(c.keep, 0); /* default */
	fabric_cmd_free(&c);
	ck_assert_int_eq(fabric_cmd_parse("{\"type\":\"send\",\"what\":\"state\",\"id\":0,\"xfer\":4611686018427387905,"
					  "\"dst\":\"r\",\"chan\":4,\"bytes\":9,\"start\":2,\"steps\":[]}", &c, err, sizeof(err)), 0);
	ck_assert_int_eq(c.what_state, 1);
	ck_assert_int_eq(c.what_model, 0);
	ck_assert_uint_eq(c.xfer, 4611686018427387905ULL);
	ck_assert_uint_eq(c.chan, 4);
	ck_assert_str_eq(c.dst, "r");
	fabric_cmd_free(&c);
	ck_assert_int_eq(fabric_cmd_parse("{\"type\":\"release\",\"id\":1099511627779}", &c, err, sizeof(err)), 0);
	ck_assert_int_eq(c.kind, FABRIC_CMD_RELEASE);
	ck_assert_uint_eq(c.id, 1099511627779ULL);
	ck_assert_int_eq(fabric_cmd_parse("{\"type\":\"promote\",\"version\":42}", &c, err, sizeof(err)), 0);
	ck_assert_int_eq(c.kind, FABRIC_CMD_PROMOTE);
	ck_assert_int_eq(c.version, 42);
	ck_assert_int_eq(fabric_cmd_parse("{\"type\":\"server_moved\",\"server\":\"r1\"}", &c, err, sizeof(err)), 0);
	ck_assert_int_eq(c.kind, FABRIC_CMD_SERVER_MOVED);
	ck_assert_str_eq(c.dst, "r1");
	ck_assert_int_eq(fabric_cmd_parse("{\"type\":\"snapshot\",\"tag\":17}", &c, err, sizeof(err)), 0);
	ck_assert_int_eq(c.kind, FABRIC_CMD_SNAPSHOT);
	ck_assert_uint_eq(c.id, 17);
	ck_assert_int_eq(fabric_cmd_parse("{\"type\":\"replica\",\"host\":\"r1\",\"replication\":\"chain\"}", &c, err, sizeof(err)), 0);
	ck_assert_int_eq(c.kind, FABRIC_CMD_REPLICA);
	ck_assert_str_eq(c.dst, "r1");
	ck_assert_int_eq(c.chain, 1);
	ck_assert_int_eq(fabric_cmd_parse("{\"type\":\"replica\",\"host\":\"\",\"replication\":\"chain\"}", &c, err, sizeof(err)), 0);
	ck_assert_str_eq(c.dst, "");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char want[64];
		ck_assert_int_eq(fabric_cmd_parse(bad[i], &c, err, sizeof(err)), -EBADMSG);
		snprintf(want, sizeof(want), "missing or bad field '%s'", field[i]);
		ck_assert_msg(strstr(err, want), "%s: got '%s', want '%s'", bad[i], err, want);
	}
}
END_TEST

/* A state payload is 2n floats (w then h) with 0 parts; odd sizes, parts and truncation fail. */
START_TEST(state_payload_validation)
{
	char err[160];
	struct mlf_payload_hdr *h = payload(20, MLF_PAYLOAD_MAGIC_STATE, 0);

	ck_assert_int_eq(fabric_cmd_payload_check(h, mlf_payload_bytes(20), MLF_PAYLOAD_MAGIC_STATE, err, sizeof(err)), 0);
	/* a state is no update, and an update no state */
	ck_assert_int_eq(fabric_cmd_payload_check(h, mlf_payload_bytes(20), MLF_PAYLOAD_MAGIC_UPDATE, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "magic"));
	h->n_parts = 1;
	ck_assert_int_eq(fabric_cmd_payload_check(h, mlf_payload_bytes(20), MLF_PAYLOAD_MAGIC_STATE, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "a state has 0"));
	h->n_parts = 0;
	ck_assert_int_eq(fabric_cmd_payload_check(h, mlf_payload_bytes(20) - 4, MLF_PAYLOAD_MAGIC_STATE, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "does not match"));
	free(h);
	h = payload(21, MLF_PAYLOAD_MAGIC_STATE, 0);
	ck_assert_int_eq(fabric_cmd_payload_check(h, mlf_payload_bytes(21), MLF_PAYLOAD_MAGIC_STATE, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "2n floats"));
	free(h);
}
END_TEST

START_TEST(aggregate_sum)
{
	enum { N = 1003 };
	float a[N], b[N], c[N], out[N];
	const float *in[3] = { a, b, c };
	double w[3] = { 0.5, 2, -1 };

	for (int i = 0; i < N; i++) {
		a[i] = (float)i;
		b[i] = 1.0f;
		c[i] = (float)(i % 7);
	}
	fabric_agg_sum(out, in, NULL, 3, N);
	for (int i = 0; i < N; i++)
		ck_assert_float_eq(out[i], (float)i + 1.0f + (float)(i % 7));
	fabric_agg_sum(out, in, w, 3, N);
	for (int i = 0; i < N; i++)
		ck_assert_float_eq_tol(out[i], 0.5f * (float)i + 2.0f - (float)(i % 7), 1e-3f);
}
END_TEST

START_TEST(mode_names)
{
	enum mlf_mode m;

	ck_assert_int_eq(mlf_mode_parse("mlfabric-a", &m), 0);
	ck_assert_int_eq(m, MLF_MODE_MLFABRIC_A);
	ck_assert_int_eq(mlf_mode_parse("MLfabric-S", &m), 0);
	ck_assert_int_eq(m, MLF_MODE_MLFABRIC_S);
	ck_assert_int_eq(mlf_mode_parse("async", &m), 0);
	ck_assert_int_eq(m, MLF_MODE_DIRECT);
	ck_assert_int_eq(mlf_mode_parse("sync", &m), -EINVAL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fabric");
	TCase *tc = tcase_create("fabric");

	tcase_add_test(tc, ctl_text_limits);
	tcase_add_test(tc, payload_header_validation);
	tcase_add_test(tc, command_parsing);
	tcase_add_test(tc, aggregate_sum);
	tcase_add_test(tc, replication_command_parsing);
	tcase_add_test(tc, state_payload_validation);
	tcase_add_test(tc, mode_names);
	suite_add_tcase(s, tc);
	return ck_run(s);
}
