/* test_cluster.c - Check tests of the cluster config parser (lib/cluster.c). */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "auth.h"
#include "ck_run.h"
#include "cluster.h"

static const char *good =
	"{\"name\":\"t\",\"mtu\":9000,\"hosts\":["
	"{\"name\":\"a\",\"ip\":\"10.0.0.1\",\"up_gbps\":2.5,\"roles\":[\"worker\",\"aggregator\"]},"
	"{\"name\":\"b\",\"ip\":\"10.0.0.2\",\"mac\":\"02:aa:bb:cc:dd:ee\"}]}";

START_TEST(parses_valid_config)
{
	struct cluster c;
	char err[256] = "";

	ck_assert_int_eq(cluster_parse(good, "good.json", &c, err, sizeof(err)), 0);
	ck_assert_int_eq(c.n_hosts, 2);
	ck_assert_int_eq(c.mtu, 9000);
	ck_assert_int_eq(c.udp_port, 47000);
	ck_assert_double_eq(c.hosts[0].up_gbps, 2.5);
	ck_assert_double_eq(c.hosts[0].down_gbps, 10.0);
	ck_assert_uint_eq(c.hosts[0].roles, CLUSTER_ROLE_WORKER | CLUSTER_ROLE_AGGREGATOR);
	ck_assert_uint_eq(c.hosts[0].ip, inet_addr("10.0.0.1"));
	/* default MAC derives from the address: 02:00:0a:00:00:01 */
	ck_assert_uint_eq(c.hosts[0].mac[0], 0x02);
	ck_assert_uint_eq(c.hosts[0].mac[5], 0x01);
	ck_assert_uint_eq(c.hosts[1].mac[1], 0xaa);
	ck_assert_int_eq(cluster_find(&c, "b"), 1);
	ck_assert_int_eq(cluster_find(&c, "zz"), -1);
	ck_assert_int_eq(cluster_find_ip(&c, inet_addr("10.0.0.2")), 1);
	cluster_free(&c);
}
END_TEST

/* A bare-metal config: control addresses, per-host EAL settings, launch over ssh. */
static const char *metal =
	"{\"name\":\"m\",\"launch\":{\"via\":\"ssh\",\"user\":\"mlf\",\"ssh_options\":[\"-o\",\"BatchMode=yes\"],"
	"\"port\":2222},\"hosts\":["
	"{\"name\":\"ps\",\"ip\":\"10.79.0.1\",\"control_ip\":\"192.168.1.1\",\"roles\":[\"server\",\"scheduler\"],"
	"\"dpdk\":{\"pci\":\"0000:03:00.0\",\"lcores\":\"2-3\",\"socket_mem\":\"1024,0\"}},"
	"{\"name\":\"w0\",\"ip\":\"10.79.0.2\",\"dpdk\":{\"vdev\":\"net_af_packet0,iface=eth1\"}}]}";

START_TEST(control_and_launch)
{
	struct cluster c;
	char err[512] = "";

	ck_assert_msg(cluster_parse(metal, "metal.json", &c, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(c.launch_via, CLUSTER_LAUNCH_SSH);
	ck_assert_uint_eq(cluster_control_ip(&c, 0), inet_addr("192.168.1.1"));
	ck_assert_uint_eq(cluster_control_ip(&c, 1), inet_addr("10.79.0.2")); /* none: its ip */
	ck_assert_str_eq(c.hosts[0].dpdk.pci, "0000:03:00.0");
	ck_assert_str_eq(c.hosts[0].dpdk.lcores, "2-3");
	ck_assert_str_eq(c.hosts[0].dpdk.socket_mem, "1024,0");
	ck_assert_int_eq(c.hosts[0].dpdk.hugepages, 1); /* default with a PCI port */
	ck_assert_str_eq(c.hosts[1].dpdk.vdev, "net_af_packet0,iface=eth1");
	ck_assert_int_eq(c.hosts[1].dpdk.hugepages, 0); /* default with a vdev: --no-huge */
	cluster_free(&c);
	/* a local Slurm per namespace (docs/deploy.md "Slurm") */
	ck_assert_msg(cluster_parse("{\"launch\":{\"via\":\"slurm\",\"emulate\":true},\"hosts\":[{\"name\":\"a\","
				    "\"ip\":\"10.0.0.1\"}]}", "s.json", &c, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(c.launch_via, CLUSTER_LAUNCH_SLURM);
	cluster_free(&c);
	ck_assert_int_eq(cluster_parse(good, "good.json", &c, err, sizeof(err)), 0);
	ck_assert_int_eq(c.launch_via, CLUSTER_LAUNCH_LOCAL);
	ck_assert_uint_eq(c.hosts[0].control_ip, 0);
	cluster_free(&c);
}
END_TEST

/* The scheduler on a DPDK-owned port without a management address: refused, saying what to add. */
START_TEST(scheduler_on_dpdk_port_refused)
{
	static const char *doc = "{\"hosts\":[{\"name\":\"ps\",\"ip\":\"10.79.0.1\",\"roles\":[\"scheduler\"],"
				 "\"dpdk\":{\"pci\":\"0000:03:00.0\"}}]}";
	static const char *vdev = "{\"hosts\":[{\"name\":\"ps\",\"ip\":\"10.79.0.1\",\"roles\":[\"scheduler\"],"
				  "\"dpdk\":{\"vdev\":\"net_af_packet0,iface=eth0\"}}]}";
	struct cluster c;
	char err[512] = "";

	ck_assert_int_eq(cluster_parse(doc, "s.json", &c, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "s.json: hosts[0] (ps)") && strstr(err, "0000:03:00.0") &&
		      strstr(err, "add \"control_ip\""), "%s", err);
	/* the emulation's vdev leaves the address to the kernel: accepted */
	ck_assert_msg(cluster_parse(vdev, "v.json", &c, err, sizeof(err)) == 0, "%s", err);
	cluster_free(&c);
}
END_TEST

/* Each bad document must be rejected with an error line that names the offending key. */
static const struct { const char *doc, *must_name; } bad_docs[] = {
	{ "{\"hosts\":[", "malformed JSON" },
	{ "[]", "object" },
	{ "{\"hosts\":[]}", "hosts" },
	{ "{\"hostz\":[]}", "hostz" },
	{ "{\"mtu\":100000,\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\"}]}", "mtu" },
	{ "{\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.300\"}]}", "hosts[0].ip" },
	{ "{\"hosts\":[{\"ip\":\"10.0.0.1\"}]}", "hosts[0].name" },
	{ "{\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\",\"up_gbps\":-1}]}", "hosts[0].up_gbps" },
	{ "{\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\",\"mac\":\"zz\"}]}", "hosts[0].mac" },
	{ "{\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\",\"roles\":[\"chef\"]}]}", "hosts[0].roles[0]" },
	{ "{\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\",\"colour\":1}]}", "hosts[0].colour" },
	{ "{\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\"},{\"name\":\"a\",\"ip\":\"10.0.0.2\"}]}", "hosts[1]" },
	{ "{\"name\":\"\",\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\"}]}", "bad.json: name" },
	{ "{\"name\":\"abcdefghijklmnop\",\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\"}]}", "bad.json: name" },
	{ "{\"name\":\"../etc\",\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\"}]}", "bad.json: name" },
	{ "{\"name\":\"-x\",\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\"}]}", "bad.json: name" },
	{ "{\"name\":7,\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\"}]}", "bad.json: name" },
	{ "{\"hosts\":[{\"name\":\"a/b\",\"ip\":\"10.0.0.1\"}]}", "hosts[0].name" },
	{ "{\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\",\"control_ip\":\"x\"}]}", "hosts[0].control_ip" },
	{ "{\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\",\"control_ip\":\"192.168.0.1\"},"
	  "{\"name\":\"b\",\"ip\":\"10.0.0.2\",\"control_ip\":\"192.168.0.1\"}]}", "hosts[1].control_ip" },
	{ "{\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\",\"dpdk\":{\"pci\":\"3:0\"}}]}", "hosts[0].dpdk.pci" },
	{ "{\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\",\"dpdk\":{}}]}", "hosts[0].dpdk" },
	{ "{\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\",\"dpdk\":{\"vdev\":\"v\",\"numa\":1}}]}",
	  "hosts[0].dpdk.numa" },
	{ "{\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\",\"dpdk\":{\"vdev\":\"v\",\"lcores\":\"1 2\"}}]}",
	  "hosts[0].dpdk.lcores" },
	{ "{\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\",\"dpdk\":{\"vdev\":\"v\",\"socket_mem\":\"512\"}}]}",
	  "hosts[0].dpdk.socket_mem" },
	{ "{\"launch\":{\"via\":\"rsh\"},\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\"}]}", "launch.via" },
	{ "{\"launch\":{\"via\":\"ssh\",\"ssh_options\":\"-v\"},\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\"}]}",
	  "launch.ssh_options" },
	{ "{\"launch\":{\"via\":\"ssh\",\"port\":0},\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\"}]}",
	  "launch.port" },
	{ "{\"launch\":{\"via\":\"ssh\",\"pw\":1},\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\"}]}",
	  "launch.pw" },
	{ "{\"launch\":{\"via\":\"local\",\"emulate\":true},\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\"}]}",
	  "launch.emulate" },
	{ "{\"hosts\":[{\"name\":\"$(id)\",\"ip\":\"10.0.0.1\"}]}", "hosts[0].name" },
	{ "{\"hosts\":[{\"name\":\"a b\",\"ip\":\"10.0.0.1\"}]}", "hosts[0].name" },
	{ "{\"hosts\":[{\"name\":\".a\",\"ip\":\"10.0.0.1\"}]}", "hosts[0].name" },
	{ "{\"name\":\"a.b\",\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\"}]}", "bad.json: name" },
	{ "{\"hosts\":[{\"name\":\"-a\",\"ip\":\"10.0.0.1\"}]}", "hosts[0].name" },
	{ "{\"hosts\":[{\"name\":\"a1234567890123456\",\"ip\":\"10.0.0.1\"}]}", "hosts[0].name" },
	{ "{\"name\":\"x\",\"name\":\"y\",\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\"}]}", "duplicate" },
	{ "{\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\",\"mac\":\"02:00:00:00:00:01\"},{\"name\":\"b\",\"ip\":\"10.0.0.2\",\"mac\":\"02:00:00:00:00:01\"}]}", "hosts[1].mac" },
	{ "{\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\",\"mac\":\"01:00:5e:00:00:01\"}]}", "hosts[0].mac" },
	{ "{\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\",\"mac\":\"00:00:00:00:00:00\"}]}", "hosts[0].mac" },
	{ "{\"hosts\":[{\"name\":\"a\",\"ip\":\"0.0.0.0\"}]}", "hosts[0].ip" },
	{ "{\"hosts\":[{\"name\":\"a\",\"ip\":\"255.255.255.255\"}]}", "hosts[0].ip" },
	{ "{\"hosts\":[{\"name\":\"a\",\"ip\":\"224.0.0.5\"}]}", "hosts[0].ip" },
	{ "{\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.0\"}]}", "hosts[0].ip" },
	{ "{\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.255\"}]}", "hosts[0].ip" },
	{ "{\"prefix_len\":16,\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.255.255\"}]}", "hosts[0].ip" },
	{ "{\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\",\"up_gbps\":1e-300}]}", "hosts[0].up_gbps" },
	{ "{\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\",\"down_gbps\":401}]}", "hosts[0].down_gbps" },
	{ "{\"mtu\":100,\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\"}]}", "mtu" },
	{ "{\"mtu\":1127,\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\"}]}", "mtu: must be an integer in [1128, 9000]" },
	{ "{\"frame_mac\":\"hmac-sha256\",\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\"}]}", "frame_mac: \"aes256-gcm\" or \"chacha20-poly1305\" expected" },
	{ "{\"frame_mac\":1,\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\"}]}", "frame_mac: \"aes256-gcm\" or \"chacha20-poly1305\" expected" },
	{ "{\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\"},{\"name\":\"b\",\"ip\":\"10.0.1.2\"}]}", "hosts[1].ip: outside the cluster's subnet 10.0.0.0/24" },
	{ "{\"prefix_len\":16,\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\"},{\"name\":\"b\",\"ip\":\"10.1.0.2\"}]}", "hosts[1].ip: outside the cluster's subnet 10.0.0.0/16" },
	{ "{\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\",\"roles\":[\"scheduler\"]},{\"name\":\"b\",\"ip\":\"10.0.0.2\",\"roles\":[\"worker\",\"scheduler\"]}]}", "hosts[1].roles: a second scheduler" },
	{ "{\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\",\"up_gbps\":0,\"roles\":[\"worker\"]}]}", "hosts[0].up_gbps" },
	{ "{\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\",\"down_gbps\":0,\"roles\":[\"server\"]}]}", "hosts[0].down_gbps" },
	/* Hop's graph: hosts a, b, c workers, s a server */
	{ "{\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\",\"roles\":[\"worker\"]},{\"name\":\"b\",\"ip\":\"10.0.0.2\",\"roles\":[\"worker\"]},{\"name\":\"c\",\"ip\":\"10.0.0.3\",\"roles\":[\"worker\"]},{\"name\":\"s\",\"ip\":\"10.0.0.4\",\"roles\":[\"server\"]}],\"graph\":{\"a\":[\"x\"],\"x\":[\"a\"]}}", "graph.a[0]: \"x\" is not the name of a host" },
	{ "{\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\",\"roles\":[\"worker\"]},{\"name\":\"b\",\"ip\":\"10.0.0.2\",\"roles\":[\"worker\"]},{\"name\":\"c\",\"ip\":\"10.0.0.3\",\"roles\":[\"worker\"]},{\"name\":\"s\",\"ip\":\"10.0.0.4\",\"roles\":[\"server\"]}],\"graph\":{\"zz\":[\"a\"]}}", "graph: \"zz\" is not a host" },
	{ "{\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\",\"roles\":[\"worker\"]},{\"name\":\"b\",\"ip\":\"10.0.0.2\",\"roles\":[\"worker\"]},{\"name\":\"c\",\"ip\":\"10.0.0.3\",\"roles\":[\"worker\"]},{\"name\":\"s\",\"ip\":\"10.0.0.4\",\"roles\":[\"server\"]}],\"graph\":{\"a\":[\"s\"],\"s\":[\"a\"]}}", "\"s\" is not a worker" },
	{ "{\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\",\"roles\":[\"worker\"]},{\"name\":\"b\",\"ip\":\"10.0.0.2\",\"roles\":[\"worker\"]},{\"name\":\"c\",\"ip\":\"10.0.0.3\",\"roles\":[\"worker\"]},{\"name\":\"s\",\"ip\":\"10.0.0.4\",\"roles\":[\"server\"]}],\"graph\":{\"a\":[\"a\"]}}", "graph.a: names itself" },
	{ "{\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\",\"roles\":[\"worker\"]},{\"name\":\"b\",\"ip\":\"10.0.0.2\",\"roles\":[\"worker\"]},{\"name\":\"c\",\"ip\":\"10.0.0.3\",\"roles\":[\"worker\"]},{\"name\":\"s\",\"ip\":\"10.0.0.4\",\"roles\":[\"server\"]}],\"graph\":{\"a\":[\"b\",\"b\"],\"b\":[\"a\"]}}", "graph.a: names b twice" },
	{ "{\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\",\"roles\":[\"worker\"]},{\"name\":\"b\",\"ip\":\"10.0.0.2\",\"roles\":[\"worker\"]},{\"name\":\"c\",\"ip\":\"10.0.0.3\",\"roles\":[\"worker\"]},{\"name\":\"s\",\"ip\":\"10.0.0.4\",\"roles\":[\"server\"]}],\"graph\":{\"a\":[\"b\"],\"b\":[\"c\"],\"c\":[\"b\"]}}", "a names b but not the other way round" },
	{ "{\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\",\"roles\":[\"worker\"]},{\"name\":\"b\",\"ip\":\"10.0.0.2\",\"roles\":[\"worker\"]},{\"name\":\"c\",\"ip\":\"10.0.0.3\",\"roles\":[\"worker\"]},{\"name\":\"s\",\"ip\":\"10.0.0.4\",\"roles\":[\"server\"]}],\"graph\":{\"a\":[\"b\"],\"b\":[\"a\"],\"c\":[]}}", "graph.c: a non-empty list" },
	{ "{\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\",\"roles\":[\"worker\"]},{\"name\":\"b\",\"ip\":\"10.0.0.2\",\"roles\":[\"worker\"]},{\"name\":\"c\",\"ip\":\"10.0.0.3\",\"roles\":[\"worker\"]},{\"name\":\"s\",\"ip\":\"10.0.0.4\",\"roles\":[\"server\"]}],\"graph\":[\"a\"]}", "graph: a non-empty object" },
	{ "{\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\",\"roles\":[\"worker\"]},{\"name\":\"b\",\"ip\":\"10.0.0.2\",\"roles\":[\"worker\"]},{\"name\":\"c\",\"ip\":\"10.0.0.3\",\"roles\":[\"worker\"]},{\"name\":\"s\",\"ip\":\"10.0.0.4\",\"roles\":[\"server\"]}],\"graph\":{\"a\":\"b\"}}", "graph.a: a non-empty list" },
};

/* A 4-worker cluster (a, b, c, d) whose graph is two pairs, a-b and c-d: not connected. */
static const char *graph_split =
	"{\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\",\"roles\":[\"worker\"]},"
	"{\"name\":\"b\",\"ip\":\"10.0.0.2\",\"roles\":[\"worker\"]},"
	"{\"name\":\"c\",\"ip\":\"10.0.0.3\",\"roles\":[\"worker\"]},"
	"{\"name\":\"d\",\"ip\":\"10.0.0.4\",\"roles\":[\"worker\"]}],"
	"\"graph\":{\"a\":[\"b\"],\"b\":[\"a\"],\"c\":[\"d\"],\"d\":[\"c\"]}}";

/* The graph (Hop): a ring of four workers gives each its two ring neighbours, in the
 * order of hosts; a host outside the graph has none; no graph is -ENOENT; two pairs are not
 * connected, and the error names who cannot reach whom. */
START_TEST(graph_neighbours)
{
	struct cluster c;
	char err[256] = "", ring[1024];
	int nb[4];

	snprintf(ring, sizeof(ring), "%s", graph_split);
	char *g = strstr(ring, "\"graph\"");
	snprintf(g, sizeof(ring) - (size_t)(g - ring), "\"graph\":{\"a\":[\"b\",\"d\"],\"b\":[\"c\",\"a\"],"
		 "\"c\":[\"b\",\"d\"],\"d\":[\"c\",\"a\"]}}");
	ck_assert_msg(cluster_parse(ring, "ring.json", &c, err, sizeof(err)) == 0, "%s", err);
	for (int h = 0; h < 4; h++) /* every host of the ring is in the graph, with 2 neighbours */
		ck_assert_int_eq(cluster_neighbours(&c, h, nb, 4), 2);
	ck_assert_int_eq(cluster_neighbours(&c, 1, nb, 4), 2); /* b: a and c */
	ck_assert_int_eq(nb[0], 0);
	ck_assert_int_eq(nb[1], 2);
	ck_assert_int_eq(cluster_neighbours(&c, 3, nb, 1), 2); /* d: a (and c, not written) */
	ck_assert_int_eq(nb[0], 0);
	cluster_free(&c);
	ck_assert_ptr_null(c.graph);

	ck_assert_int_eq(cluster_parse(good, "good.json", &c, err, sizeof(err)), 0);
	ck_assert_int_eq(cluster_neighbours(&c, 0, nb, 4), -ENOENT);
	cluster_free(&c);

	ck_assert_int_eq(cluster_parse(graph_split, "split.json", &c, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "split.json: graph: not connected (a cannot reach c)") != NULL, "%s", err);
	ck_assert_ptr_null(c.graph);
}
END_TEST

START_TEST(rejects_bad_config)
{
	struct cluster c;
	char err[256] = "";

	ck_assert_int_eq(cluster_parse(bad_docs[_i].doc, "bad.json", &c, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, bad_docs[_i].must_name) != NULL, "error '%s' does not name '%s'", err,
		      bad_docs[_i].must_name);
	ck_assert_msg(strncmp(err, "bad.json", 8) == 0, "error '%s' does not name the file", err);
	ck_assert_ptr_null(strchr(err, '\n'));
	ck_assert_ptr_null(c.hosts);
}
END_TEST

START_TEST(load_names_missing_file)
{
	struct cluster c;
	char err[256] = "";

	ck_assert_int_eq(cluster_load("/nonexistent/c.json", &c, err, sizeof(err)), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, "/nonexistent/c.json"));
	ck_assert_int_eq(cluster_load("conf/cluster-mini.json", &c, err, sizeof(err)), 0);
	ck_assert_int_eq(c.n_hosts, 6);
	cluster_free(&c);
	/* not a regular file: refused without reading it */
	ck_assert_int_eq(cluster_load("/dev/zero", &c, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "/dev/zero: a regular file of at most 4194304 bytes expected"));
	ck_assert_int_eq(cluster_load("conf", &c, err, sizeof(err)), -EINVAL);
}
END_TEST

/* key_file (docs/security.md): relative to the config's directory, absolute kept, bad values refused */
START_TEST(key_file_resolved)
{
	struct cluster c;
	char err[256] = "", path[64];
	const char *docs[] = {
		"{\"key_file\": \"k.key\", \"hosts\": [{\"name\": \"a\", \"ip\": \"10.1.0.2\"}]}",
		"{\"key_file\": \"/etc/k.key\", \"hosts\": [{\"name\": \"a\", \"ip\": \"10.1.0.2\"}]}",
		"{\"key_file\": \"\", \"hosts\": [{\"name\": \"a\", \"ip\": \"10.1.0.2\"}]}",
		"{\"key_file\": 3, \"hosts\": [{\"name\": \"a\", \"ip\": \"10.1.0.2\"}]}",
	};
	const char *want[] = { "/tmp/k.key", "/etc/k.key", NULL, NULL };

	snprintf(path, sizeof(path), "/tmp/test_cluster.%d.json", (int)getpid());
	for (int i = 0; i < 4; i++) {
		FILE *f = fopen(path, "w");
		ck_assert_ptr_nonnull(f);
		fputs(docs[i], f);
		fclose(f);
		int rc = cluster_load(path, &c, err, sizeof(err));
		if (want[i]) {
			ck_assert_int_eq(rc, 0);
			ck_assert_str_eq(c.key_file, want[i]);
			cluster_free(&c);
		} else {
			ck_assert_int_eq(rc, -EINVAL);
			ck_assert_ptr_nonnull(strstr(err, "key_file"));
		}
	}
	unlink(path);
	ck_assert_int_eq(cluster_load("conf/cluster-mini.json", &c, err, sizeof(err)), 0);
	ck_assert_str_eq(c.key_file, ""); /* no key: not authenticated */
	ck_assert_int_eq(c.insecure, 1);  /* and it says so (docs/security.md "Keys by default") */
	cluster_free(&c);
}
END_TEST

/* Writes a cluster of @n hosts, the first @servers of them with role server, to @buf. */
static void many_hosts(char *buf, size_t len, int n, int servers)
{
	size_t o = (size_t)snprintf(buf, len, "{\"prefix_len\":16,\"hosts\":[");

	for (int i = 0; i < n && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s{\"name\":\"h%d\",\"ip\":\"10.0.%d.%d\"%s}",
				      i ? "," : "", i, 1 + i / 200, 1 + i % 200,
				      i < servers ? ",\"roles\":[\"server\"]" : "");
	snprintf(buf + o, len - o, "]}");
}

/* The bounds of docs/cluster-config.md: CLUSTER_HOSTS_MAX hosts and CLUSTER_SERVERS_MAX servers are
 * accepted, one more is refused naming the key; CLUSTER_MTU_MIN (1128) is accepted. */
START_TEST(bounds)
{
	static char buf[96 * 1100];
	struct cluster c;
	char err[256] = "";

	ck_assert_int_eq(CLUSTER_MTU_MIN, 1128);
	many_hosts(buf, sizeof(buf), CLUSTER_HOSTS_MAX, CLUSTER_SERVERS_MAX);
	ck_assert_msg(cluster_parse(buf, "max.json", &c, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(c.n_hosts, CLUSTER_HOSTS_MAX);
	cluster_free(&c);
	many_hosts(buf, sizeof(buf), CLUSTER_HOSTS_MAX + 1, 1);
	ck_assert_int_eq(cluster_parse(buf, "big.json", &c, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "big.json: hosts: required array of 1..1024 hosts") != NULL, "%s", err);
	many_hosts(buf, sizeof(buf), 40, CLUSTER_SERVERS_MAX + 1);
	ck_assert_int_eq(cluster_parse(buf, "srv.json", &c, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "srv.json: hosts[32].roles: more than 32 hosts with role server") != NULL, "%s",
		      err);
	ck_assert_int_eq(cluster_parse("{\"mtu\":1128,\"hosts\":[{\"name\":\"a\",\"ip\":\"10.0.0.1\"}]}", "m.json",
				       &c, err, sizeof(err)), 0);
	ck_assert_int_eq(c.mtu, 1128);
	ck_assert_int_eq(c.frame_mac, AUTH_FRAME_AES256GCM); /* the default */
	cluster_free(&c);
	ck_assert_int_eq(cluster_parse("{\"frame_mac\":\"chacha20-poly1305\",\"hosts\":[{\"name\":\"a\",\"ip\":"
				       "\"10.0.0.1\"}]}", "m.json", &c, err, sizeof(err)), 0);
	ck_assert_int_eq(c.frame_mac, AUTH_FRAME_CHACHA20POLY1305);
	cluster_free(&c);
}
END_TEST

/* "insecure": a boolean, refused with key_file (docs/security.md "Keys by default"). */
START_TEST(insecure_opt_out)
{
	struct cluster c;
	char err[256] = "";

	ck_assert_int_eq(cluster_parse("{\"insecure\": true, \"hosts\": [{\"name\": \"a\", \"ip\": "
				       "\"10.1.0.2\"}]}", "x", &c, err, sizeof(err)), 0);
	ck_assert_int_eq(c.insecure, 1);
	cluster_free(&c);
	ck_assert_int_eq(cluster_parse("{\"hosts\": [{\"name\": \"a\", \"ip\": \"10.1.0.2\"}]}", "x",
				       &c, err, sizeof(err)), 0);
	ck_assert_int_eq(c.insecure, 0);
	cluster_free(&c);
	ck_assert_int_eq(cluster_parse("{\"insecure\": 1, \"hosts\": [{\"name\": \"a\", \"ip\": "
				       "\"10.1.0.2\"}]}", "x", &c, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "insecure: true or false"));
	ck_assert_int_eq(cluster_parse("{\"insecure\": true, \"key_file\": \"k\", \"hosts\": [{\"name\": "
				       "\"a\", \"ip\": \"10.1.0.2\"}]}", "x", &c, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "insecure: true with key_file"));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cluster");
	TCase *tc = tcase_create("parse");

	tcase_add_test(tc, parses_valid_config);
	tcase_add_test(tc, graph_neighbours);
	tcase_add_test(tc, control_and_launch);
	tcase_add_test(tc, scheduler_on_dpdk_port_refused);
	tcase_add_loop_test(tc, rejects_bad_config, 0, sizeof(bad_docs) / sizeof(bad_docs[0]));
	tcase_add_test(tc, load_names_missing_file);
	tcase_add_test(tc, key_file_resolved);
	tcase_add_test(tc, bounds);
	tcase_add_test(tc, insecure_opt_out);
	suite_add_tcase(s, tc);
	return ck_run(s);
}
