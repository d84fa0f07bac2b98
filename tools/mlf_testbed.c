/* mlf_testbed.c - mlf-testbed: build, inspect, shape and tear down an emulated cluster of namespaces. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cluster.h"
#include "log.h"
#include "tbcmd.h"
#include "tbrun.h"

extern char **environ;

#define NS_MAX 80
#define RUN_DIR "/run/mlfabric"

static const char usage[] =
	"usage: mlf-testbed [-v] COMMAND CLUSTER.json [ARGS]\n"
	"Builds an emulated cluster on one machine (docs/testbed.md): per host a network namespace\n"
	"<cluster>-<host> holding eth0 (IP, MAC, MTU from the config), a switch namespace <cluster>-sw\n"
	"with bridge br0 and one veth <host> per host; uplink = tc tbf on the host's eth0 egress,\n"
	"downlink = tc tbf on the switch-side veth egress (rates from up_gbps / down_gbps).\n"
	"\n"
	"commands:\n"
	"  up CLUSTER [--unshaped]        build the testbed (re-creates it when already up);\n"
	"                                 --unshaped: no tbf on any link\n"
	"  down CLUSTER                   stop every process in its namespaces, delete them\n"
	"                                 (idempotent, also after a crash)\n"
	"  status CLUSTER                 per host: namespace, link state, tbf rates, processes;\n"
	"                                 exit 1 when some part is missing\n"
	"  exec CLUSTER HOST CMD [ARGS]   run CMD inside HOST's namespace (exit status is CMD's)\n"
	"  shape CLUSTER HOST up|down GBPS\n"
	"                                 change HOST's uplink or downlink tbf rate now\n"
	"                                 (Gbit/s; 0 removes the shaping)\n"
	"  dataplane CLUSTER HOST [--log FILE] [--core N] [--timeout S] [-- DATAPLANE-ARGS]\n"
	"                                 start mlf-dataplane for HOST in its namespace in the\n"
	"                                 background, wait until its socket exists, print its pid\n"
	"                                 (default log " RUN_DIR "/<cluster>-<host>.log, core =\n"
	"                                 host index mod online cores, timeout 30 s; binary: next to\n"
	"                                 mlf-testbed or $MLF_DATAPLANE; --shaper-gbps = the host's\n"
	"                                 up_gbps when a tbf shapes its uplink, unless\n"
	"                                 DATAPLANE-ARGS set one)\n"
	"  eal-args CLUSTER HOST [--core N]\n"
	"                                 print the EAL arguments a DPDK program of HOST uses in the\n"
	"                                 testbed (one per line), e.g. for bench/mlf-txloop\n"
	"options: -v  verbose (log each command), -h/--help  this text\n";

/* Builds "ip -n NS WORDS..." from a NULL-terminated word list and printf-style last words. */
static void ip_ns(struct tbcmd_argv *a, const char *ns)
{
	tbcmd_init(a);
	tbcmd_add(a, "ip");
	tbcmd_add(a, "-n");
	tbcmd_add(a, "%s", ns);
}

static int run_words(const char *what, const char *ns, const char *const *words)
{
	struct tbcmd_argv a;
	char line[512];

	if (ns)
		ip_ns(&a, ns);
	else
		tbcmd_init(&a);
	tbcmd_addv(&a, words);
	log_debug("%s: %s", what, tbcmd_join(&a, line, sizeof(line)));
	return tbrun_must(what, &a);
}

static int run_argv(const char *what, struct tbcmd_argv *a)
{
	char line[512];

	log_debug("%s: %s", what, tbcmd_join(a, line, sizeof(line)));
	return tbrun_must(what, a);
}

static int host_ns(const struct cluster *c, const char *host, char *ns)
{
	if (tbcmd_ns_name(c->name, host, ns, NS_MAX)) {
		log_err("host %s: namespace name %s-%s is too long", host, c->name, host);
		return -1;
	}
	return 0;
}

/* Deletes one namespace after stopping what runs in it; a missing namespace is not an error. */
static int ns_destroy(const char *ns)
{
	const char *const del[] = { "ip", "netns", "del", ns, NULL };

	if (!tbrun_ns_exists(ns))
		return 0;
	tbrun_ns_kill(ns, 2000);
	return run_words(ns, NULL, del);
}

static int cmd_down(const struct cluster *c)
{
	char ns[NS_MAX], path[PATH_MAX];
	int rc = 0;

	for (int i = 0; i < c->n_hosts; i++) {
		if (host_ns(c, c->hosts[i].name, ns))
			return 1;
		rc |= ns_destroy(ns);
		/* stale sockets and DPDK runtime files of this cluster's dataplanes */
		if (!tbcmd_sock_path(c->name, c->hosts[i].name, path, sizeof(path)))
			unlink(path);
	}
	if (host_ns(c, TBCMD_SW, ns))
		return 1;
	rc |= ns_destroy(ns);
	return rc ? 1 : 0;
}

static int set_tbf(const char *what, const char *ns, const char *dev, double gbps, int mtu)
{
	struct tbcmd_argv a;

	if (tbcmd_tbf(&a, ns, dev, gbps, mtu)) {
		log_err("%s: bad rate %g Gbit/s (must be in [0, 1000])", what, gbps);
		return -1;
	}
	if (gbps == 0) {
		/* removing a qdisc that is not there is fine: the link is unshaped either way */
		char err[256];
		tbrun_run(&a, NULL, 0, err, sizeof(err));
		return 0;
	}
	return run_argv(what, &a);
}

static int disable_ipv6(const char *what, const char *ns)
{
	/* keeps IPv6 autoconfiguration chatter (RS, MLD, DAD) off the links the tests measure */
	const char *const w[] = { "ip", "netns", "exec", ns, "sysctl", "-q", "-w",
				  "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1",
				  NULL };
	return run_words(what, NULL, w);
}

static int host_up(const struct cluster *c, const struct cluster_host *h, const char *sw, int shaped)
{
	char ns[NS_MAX], what[64], mtu[16], mac[32], addr[48], ip[16];
	const uint8_t *m = h->mac;
	const unsigned char *b = (const unsigned char *)&h->ip;

	if (host_ns(c, h->name, ns))
		return -1;
	snprintf(what, sizeof(what), "host %s", h->name);
	snprintf(mtu, sizeof(mtu), "%d", c->mtu);
	snprintf(mac, sizeof(mac), "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
	snprintf(ip, sizeof(ip), "%u.%u.%u.%u", b[0], b[1], b[2], b[3]);
	snprintf(addr, sizeof(addr), "%s/%d", ip, c->prefix_len);
	{
		const char *const add[] = { "ip", "netns", "add", ns, NULL };
		const char *const veth[] = { "link", "add", "name", h->name, "mtu", mtu, "type", "veth",
					     "peer", "name", "eth0", "netns", ns, NULL };
		const char *const eth[] = { "link", "set", "dev", "eth0", "address", mac, "mtu", mtu, NULL };
		const char *const ad[] = { "addr", "add", addr, "dev", "eth0", NULL };
		const char *const eup[] = { "link", "set", "dev", "eth0", "up", NULL };
		const char *const lup[] = { "link", "set", "dev", "lo", "up", NULL };
		const char *const port[] = { "link", "set", "dev", h->name, "master", "br0", "mtu", mtu, "up", NULL };

		if (run_words(what, NULL, add) || disable_ipv6(what, ns) || run_words(what, sw, veth) ||
		    run_words(what, ns, eth) || run_words(what, ns, ad) || run_words(what, ns, lup) ||
		    run_words(what, ns, eup) || run_words(what, sw, port))
			return -1;
	}
	if (!shaped)
		return 0;
	if (set_tbf(what, ns, "eth0", h->up_gbps, c->mtu) || set_tbf(what, sw, h->name, h->down_gbps, c->mtu))
		return -1;
	log_info("host %s: %s in %s, uplink %g Gbit/s, downlink %g Gbit/s", h->name, addr, ns,
		 h->up_gbps, h->down_gbps);
	return 0;
}

static int cmd_up(const struct cluster *c, int shaped)
{
	char sw[NS_MAX], mtu[16];
	const char *const add[] = { "ip", "netns", "add", sw, NULL };
	const char *const br[] = { "link", "add", "br0", "type", "bridge", "stp_state", "0",
				   "forward_delay", "0", NULL };
	const char *const brup[] = { "link", "set", "dev", "br0", "mtu", mtu, "up", NULL };
	const char *const lup[] = { "link", "set", "dev", "lo", "up", NULL };

	if (host_ns(c, TBCMD_SW, sw))
		return 1;
	snprintf(mtu, sizeof(mtu), "%d", c->mtu);
	if (cmd_down(c))
		return 1;
	if (mkdir(RUN_DIR, 0755) < 0 && errno != EEXIST) {
		log_err("cannot create %s: %s", RUN_DIR, strerror(errno));
		return 1;
	}
	if (run_words("switch", NULL, add) || disable_ipv6("switch", sw) || run_words("switch", sw, lup) ||
	    run_words("switch", sw, br))
		goto fail;
	for (int i = 0; i < c->n_hosts; i++)
		if (host_up(c, &c->hosts[i], sw, shaped))
			goto fail;
	if (run_words("switch", sw, brup))
		goto fail;
	log_info("cluster %s: %d hosts up, MTU %d%s", c->name, c->n_hosts, c->mtu, shaped ? "" : ", unshaped");
	return 0;
fail:
	log_err("cluster %s: up failed, removing what was built", c->name);
	cmd_down(c);
	return 1;
}

/* Copies the word after @key in @text (e.g. "rate" -> "1Gbit") into @out, or "-" when absent. */
static void word_after(const char *text, const char *key, char *out, size_t len)
{
	const char *p = strstr(text, key);
	size_t n;

	snprintf(out, len, "-");
	if (!p)
		return;
	p += strlen(key);
	while (*p == ' ')
		p++;
	n = strcspn(p, " \n");
	if (n && n < len) {
		memcpy(out, p, n);
		out[n] = '\0';
	}
}

/* The rate of the root tbf on @dev in @ns as tc prints it (e.g. "1Gbit"), or "-" when unshaped. */
static void tbf_rate(const char *ns, const char *dev, char *rate, size_t len)
{
	const char *const w[] = { "tc", "-n", ns, "qdisc", "show", "dev", dev, "root", NULL };
	struct tbcmd_argv a;
	char out[1024], err[256];

	snprintf(rate, len, "-");
	tbcmd_init(&a);
	tbcmd_addv(&a, w);
	if (tbrun_run(&a, out, sizeof(out), err, sizeof(err)) == 0 && strstr(out, "tbf"))
		word_after(out, " rate", rate, len);
}

static int cmd_status(const struct cluster *c)
{
	char sw[NS_MAX], ns[NS_MAX], out[4096], err[256], up[32], down[32], state[32];
	int missing = 0;

	if (host_ns(c, TBCMD_SW, sw))
		return 1;
	printf("cluster %s: switch namespace %s %s\n", c->name, sw, tbrun_ns_exists(sw) ? "up" : "MISSING");
	missing |= !tbrun_ns_exists(sw);
	printf("%-12s %-18s %-8s %-10s %-10s %s\n", "host", "namespace", "eth0", "uplink", "downlink", "pids");
	for (int i = 0; i < c->n_hosts; i++) {
		const struct cluster_host *h = &c->hosts[i];
		struct tbcmd_argv a;
		pid_t pids[16];
		int n = 0;

		if (host_ns(c, h->name, ns))
			return 1;
		if (!tbrun_ns_exists(ns)) {
			printf("%-12s %-18s MISSING\n", h->name, ns);
			missing = 1;
			continue;
		}
		ip_ns(&a, ns);
		tbcmd_add(&a, "-o");
		tbcmd_add(&a, "link");
		tbcmd_add(&a, "show");
		tbcmd_add(&a, "eth0");
		if (tbrun_run(&a, out, sizeof(out), err, sizeof(err)) == 0)
			word_after(out, " state", state, sizeof(state));
		else
			snprintf(state, sizeof(state), "MISSING");
		missing |= strcmp(state, "UP") != 0;
		tbf_rate(ns, "eth0", up, sizeof(up));
		tbf_rate(sw, h->name, down, sizeof(down));
		printf("%-12s %-18s %-8s %-10s %-10s", h->name, ns, state, up, down);
		n = tbrun_ns_pids(ns, pids, 16);
		for (int k = 0; k < n; k++)
			printf("%s%d", k ? "," : "", (int)pids[k]);
		printf("%s\n", n > 0 ? "" : "-");
	}
	return missing ? 1 : 0;
}

static int find_host(const struct cluster *c, const char *host, char *ns)
{
	if (cluster_find(c, host) < 0) {
		log_err("unknown host '%s' (cluster %s has %d hosts)", host, c->name, c->n_hosts);
		return -1;
	}
	if (host_ns(c, host, ns))
		return -1;
	if (!tbrun_ns_exists(ns)) {
		log_err("host %s: namespace %s does not exist (run 'mlf-testbed up' first)", host, ns);
		return -1;
	}
	return 0;
}

static int cmd_exec(const struct cluster *c, int argc, char **argv)
{
	char ns[NS_MAX];
	char **args;

	if (argc < 2) {
		log_err("exec: need HOST and CMD");
		return 2;
	}
	if (find_host(c, argv[0], ns))
		return 1;
	args = calloc((size_t)argc + 4, sizeof(*args));
	if (!args)
		return 1;
	args[0] = "ip";
	args[1] = "netns";
	args[2] = "exec";
	args[3] = ns;
	for (int i = 1; i < argc; i++)
		args[3 + i] = argv[i];
	fflush(NULL);
	execvp("ip", args);
	log_err("host %s: cannot run ip netns exec: %s", argv[0], strerror(errno));
	free(args);
	return 127;
}

static int cmd_shape(const struct cluster *c, int argc, char **argv)
{
	char ns[NS_MAX], sw[NS_MAX], what[64], *end;
	double gbps;
	int up;

	if (argc != 3 || (strcmp(argv[1], "up") && strcmp(argv[1], "down"))) {
		log_err("shape: need HOST up|down GBPS");
		return 2;
	}
	if (find_host(c, argv[0], ns) || host_ns(c, TBCMD_SW, sw))
		return 1;
	gbps = strtod(argv[2], &end);
	if (end == argv[2] || *end || !(gbps >= 0 && gbps <= 1000)) {
		log_err("shape: host %s: rate '%s' is not a number of Gbit/s in [0, 1000]", argv[0], argv[2]);
		return 2;
	}
	up = strcmp(argv[1], "up") == 0;
	snprintf(what, sizeof(what), "host %s %slink", argv[0], up ? "up" : "down");
	if (set_tbf(what, up ? ns : sw, up ? "eth0" : argv[0], gbps, c->mtu))
		return 1;
	log_info("%s: %s", what, gbps > 0 ? "shaped" : "unshaped");
	if (gbps > 0)
		log_info("%s: %g Gbit/s", what, gbps);
	return 0;
}

/* 1 when a process accepts connections on the Unix socket @path. */
static int sock_alive(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), ok;

	if (fd < 0)
		return 0;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		close(fd);
		return 0;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	ok = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	if (!ok && errno == EPROTOTYPE) {
		close(fd);
		fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		ok = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	}
	if (fd >= 0)
		close(fd);
	return ok;
}

static void print_log_tail(const char *log)
{
	char buf[2048];
	FILE *f = fopen(log, "r");
	long size;
	size_t n;

	if (!f)
		return;
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	fseek(f, size > (long)sizeof(buf) - 1 ? size - (long)sizeof(buf) + 1 : 0, SEEK_SET);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	fprintf(stderr, "--- last lines of %s ---\n%s", log, buf);
}

static int dataplane_binary(char *out, size_t len)
{
	const char *env = getenv("MLF_DATAPLANE");
	char self[PATH_MAX - 32];
	ssize_t n;

	if (env && *env) {
		snprintf(out, len, "%s", env);
	} else {
		n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (n < 0)
			return -1;
		self[n] = '\0';
		*strrchr(self, '/') = '\0';
		snprintf(out, len, "%s/mlf-dataplane", self);
	}
	if (access(out, X_OK) != 0) {
		log_err("dataplane binary %s is not executable: %s (build it with make, or set MLF_DATAPLANE)",
			out, strerror(errno));
		return -1;
	}
	return 0;
}

static int cmd_dataplane(const struct cluster *c, const char *cluster_path, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "log", required_argument, NULL, 'l' }, { "core", required_argument, NULL, 'c' },
		{ "timeout", required_argument, NULL, 't' }, { NULL, 0, NULL, 0 }
	};
	char ns[NS_MAX], bin[PATH_MAX], abs_cluster[PATH_MAX], sock[PATH_MAX], log[PATH_MAX];
	const char *host, *log_opt = NULL;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int core, opt, idx, dp_argc = 0, status;
	double timeout_s = 30;
	char **dp_argv = NULL;
	struct tbcmd_argv a;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	pid_t pid;

	if (argc < 1 || argv[0][0] == '-') {
		log_err("dataplane: need HOST");
		return 2;
	}
	host = argv[0];
	if (find_host(c, host, ns))
		return 1;
	idx = cluster_find(c, host);
	core = (int)(idx % (cpus > 0 ? cpus : 1));
	/* split our options from the dataplane's at "--" */
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			dp_argv = argv + i + 1;
			dp_argc = argc - i - 1;
			argc = i;
			break;
		}
	}
	optind = 1;
	while ((opt = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		char *end;
		switch (opt) {
		case 'l':
			log_opt = optarg;
			break;
		case 'c':
			core = (int)strtol(optarg, &end, 10);
			if (*end || core < 0 || core >= cpus) {
				log_err("dataplane: --core %s: must be a core number in [0, %ld)", optarg, cpus);
				return 2;
			}
			break;
		case 't':
			timeout_s = strtod(optarg, &end);
			if (*end || timeout_s <= 0) {
				log_err("dataplane: --timeout %s: must be a positive number of seconds", optarg);
				return 2;
			}
			break;
		default:
			log_err("dataplane: unknown option (see --help)");
			return 2;
		}
	}
	if (optind < argc) {
		log_err("dataplane: unexpected argument '%s' (dataplane arguments go after --)", argv[optind]);
		return 2;
	}
	if (dataplane_binary(bin, sizeof(bin)))
		return 1;
	if (!realpath(cluster_path, abs_cluster)) {
		log_err("cluster file %s: %s", cluster_path, strerror(errno));
		return 1;
	}
	tbcmd_sock_path(c->name, host, sock, sizeof(sock));
	for (int i = 0; i + 1 < dp_argc; i++)
		if (strcmp(dp_argv[i], "--sock") == 0)
			snprintf(sock, sizeof(sock), "%s", dp_argv[i + 1]);
	if (log_opt)
		snprintf(log, sizeof(log), "%s", log_opt);
	else
		snprintf(log, sizeof(log), RUN_DIR "/%s-%s.log", c->name, host);
	if (mkdir(RUN_DIR, 0755) < 0 && errno != EEXIST) {
		log_err("cannot create %s: %s", RUN_DIR, strerror(errno));
		return 1;
	}
	if (sock_alive(sock)) {
		log_err("host %s: a dataplane already serves %s (stop it or run 'mlf-testbed down')", host, sock);
		return 1;
	}
	unlink(sock);

	tbcmd_init(&a);
	tbcmd_add(&a, "ip");
	tbcmd_add(&a, "netns");
	tbcmd_add(&a, "exec");
	tbcmd_add(&a, "%s", ns);
	tbcmd_add(&a, "%s", bin);
	tbcmd_eal_args(&a, c->name, host, c->mtu, core);
	tbcmd_add(&a, "--");
	tbcmd_add(&a, "--cluster");
	tbcmd_add(&a, "%s", abs_cluster);
	tbcmd_add(&a, "--host");
	tbcmd_add(&a, "%s", host);
	/* the dataplane's egress shaper at the host's uplink rate when a tbf shapes that uplink
	 * (not after `up --unshaped`), unless the caller sets one: transfers that overlap beyond
	 * their plan, retransmissions and unscheduled (Async) transfers then queue at the sender
	 * instead of overflowing the tbf. Without it a 0.1 Gbit/s uplink with concurrent model
	 * copies lost most frames (thousands of retransmissions per 2 MB copy, copies failing
	 * 'peer silent' for seconds); mlf-cluster sets the same shaper with the network settings
	 * (docs/testbed.md). */
	int has_shaper = 0;
	char up_tbf[32];
	for (int i = 0; i < dp_argc; i++)
		has_shaper |= !strncmp(dp_argv[i], "--shaper-gbps", 13) && (!dp_argv[i][13] || dp_argv[i][13] == '=');
	tbf_rate(ns, "eth0", up_tbf, sizeof(up_tbf));
	if (!has_shaper && c->hosts[idx].up_gbps > 0 && strcmp(up_tbf, "-")) {
		tbcmd_add(&a, "--shaper-gbps");
		tbcmd_add(&a, "%g", c->hosts[idx].up_gbps);
	}
	for (int i = 0; i < dp_argc; i++)
		tbcmd_add(&a, "%s", dp_argv[i]);
	if (a.err) {
		log_err("host %s: dataplane command line too long", host);
		return 1;
	}
	{
		char line[1024];
		log_info("host %s: starting %s (log %s)", host, tbcmd_join(&a, line, sizeof(line)), log);
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
	posix_spawnattr_init(&attr);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);
	errno = posix_spawnp(&pid, "ip", &fa, &attr, a.v, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	if (errno) {
		log_err("host %s: cannot start the dataplane: %s", host, strerror(errno));
		return 1;
	}
	for (double waited = 0; waited < timeout_s; waited += 0.02) {
		struct timespec ts = { 0, 20 * 1000 * 1000 };
		struct stat st;

		if (waitpid(pid, &status, WNOHANG) == pid) {
			log_err("host %s: mlf-dataplane exited (%s %d) before its socket %s appeared; log: %s",
				host, WIFEXITED(status) ? "status" : "signal",
				WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), sock, log);
			print_log_tail(log);
			return 1;
		}
		if (stat(sock, &st) == 0 && S_ISSOCK(st.st_mode)) {
			printf("%d\n", (int)pid);
			return 0;
		}
		nanosleep(&ts, NULL);
	}
	log_err("host %s: mlf-dataplane (pid %d) did not create %s within %g s; stopped it; log: %s", host,
		(int)pid, sock, timeout_s, log);
	kill(pid, SIGTERM);
	sleep(1);
	kill(pid, SIGKILL);
	print_log_tail(log);
	return 1;
}

static int cmd_eal_args(const struct cluster *c, int argc, char **argv)
{
	struct tbcmd_argv a;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int idx, core;
	char *end = NULL;

	if (argc != 1 && !(argc == 3 && !strcmp(argv[1], "--core"))) {
		log_err("eal-args: need HOST [--core N]");
		return 2;
	}
	idx = cluster_find(c, argv[0]);
	if (idx < 0) {
		log_err("unknown host '%s' (cluster %s has %d hosts)", argv[0], c->name, c->n_hosts);
		return 1;
	}
	core = (int)(idx % (cpus > 0 ? cpus : 1));
	if (argc == 3) {
		core = (int)strtol(argv[2], &end, 10);
		if (*end || core < 0 || core >= cpus) {
			log_err("eal-args: --core %s: must be a core number in [0, %ld)", argv[2], cpus);
			return 2;
		}
	}
	tbcmd_init(&a);
	if (tbcmd_eal_args(&a, c->name, argv[0], c->mtu, core))
		return 1;
	for (int i = 0; i < a.n; i++)
		printf("%s\n", a.v[i]);
	return 0;
}

int main(int argc, char **argv)
{
	struct cluster c = { 0 };
	char err[512];
	const char *cmd, *path;
	int rc, argi = 1;

	log_component = "mlf-testbed";
	for (; argi < argc && argv[argi][0] == '-'; argi++) {
		if (!strcmp(argv[argi], "-h") || !strcmp(argv[argi], "--help")) {
			fputs(usage, stdout);
			return 0;
		} else if (!strcmp(argv[argi], "-v")) {
			log_threshold = LOG_DEBUG;
		} else {
			fprintf(stderr, "mlf-testbed: unknown option %s\n%s", argv[argi], usage);
			return 2;
		}
	}
	if (argc - argi < 2) {
		fputs(usage, stderr);
		return 2;
	}
	cmd = argv[argi];
	path = argv[argi + 1];
	argi += 2;
	if (cluster_load(path, &c, err, sizeof(err))) {
		log_err("%s", err);
		return 1;
	}
	if (tbcmd_check_cluster(&c, err, sizeof(err))) {
		log_err("%s: %s", path, err);
		cluster_free(&c);
		return 1;
	}
	if (!strcmp(cmd, "up")) {
		int shaped = 1;
		for (; argi < argc; argi++) {
			if (!strcmp(argv[argi], "--unshaped")) {
				shaped = 0;
			} else {
				log_err("up: unknown argument '%s'", argv[argi]);
				cluster_free(&c);
				return 2;
			}
		}
		rc = cmd_up(&c, shaped);
	} else if (!strcmp(cmd, "down")) {
		rc = cmd_down(&c);
	} else if (!strcmp(cmd, "status")) {
		rc = cmd_status(&c);
	} else if (!strcmp(cmd, "exec")) {
		rc = cmd_exec(&c, argc - argi, argv + argi);
	} else if (!strcmp(cmd, "shape")) {
		rc = cmd_shape(&c, argc - argi, argv + argi);
	} else if (!strcmp(cmd, "eal-args")) {
		rc = cmd_eal_args(&c, argc - argi, argv + argi);
	} else if (!strcmp(cmd, "dataplane")) {
		rc = cmd_dataplane(&c, path, argc - argi, argv + argi);
	} else {
		log_err("unknown command '%s' (up, down, status, exec, shape, dataplane, eal-args; see --help)", cmd);
		rc = 2;
	}
	cluster_free(&c);
	return rc;
}
