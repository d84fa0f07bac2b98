/* main.c - mlf-dataplane: EAL and option parsing, ordered start-up, the run-to-completion loop. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <poll.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>

#include "appif.h"
#include "clock.h"
#include "coreshare.h"
#include "ctlrelay.h"
#include "dp.h"
#include "log.h"
#include "monitor.h"
#include "neigh.h"
#include "placement.h"
#include "portio.h"
#include "transport.h"

#define MAX_XFERS 1024
#define ORDER_HOLD_FACTOR 10    /* commit-order hold timeout, in --timeout units */
#define SLOW_PATH_NS 100000     /* timers, app socket and monitor every 100 us */
#define MONITOR_NS 10000000     /* snapshot for telemetry every 10 ms */
/*
 * Sleeping between events (CPU follows traffic; docs/dataplane.md "Idle behaviour").
 * The loop polls while the next transfer event is due within SPIN_NS (on a core of its own), and
 * otherwise sleeps in ppoll() on the app and scheduler sockets (a request wakes it at once) and
 * the port's rx interrupt where there is one, until the next transfer event is due
 * (transport_next_due_ns), at most IDLE_SLEEP_MAX_NS: frames from a peer wait in the rx ring
 * meanwhile (4096 frames; a sender keeps at most 2048 unacknowledged).
 */
#define IDLE_SLEEP_MIN_NS 1000
#define IDLE_SLEEP_MAX_NS 5000000   /* nothing in progress: ~200 wake-ups per second */
#define PACE_GRAIN_NS 2000000       /* a paced or incoming transfer: served at least every 2 ms, in bursts */
#define POLL_NS 20000               /* an unpaced transfer waiting for SACKs or the shaper */
#define SPIN_NS 100000              /* something due sooner than this: poll on, do not sleep */
#define RX_WAKE_FRAMES 64           /* incoming frames per wake-up the rx sleep aims at */
#define WAIT_FDS 80                 /* app clients (64), their listener, the scheduler */
#define BACKOFF_IDLE_NS 500000      /* --sleep backoff (the earlier polling loop): idle cap */
#define BACKOFF_ACTIVE_NS 20000     /* ... and its cap while a transfer is in progress */

static int sleep_backoff; /* --sleep backoff: kept as the baseline of `make bench-dataplane` */

static volatile sig_atomic_t force_quit;

/* What the app interface passes up to the control relay (struct appif_ops). */
static const struct appif_ops relay_ops = {
	.ctl_from_app = ctlrelay_from_app,
	.client_gone = ctlrelay_client_gone,
};

static void on_signal(int sig)
{
	force_quit = sig;
}

static void usage(FILE *out, const char *prog)
{
	fprintf(out,
		"usage: %s [EAL ARGS] -- --cluster FILE --host NAME [options]\n"
		"MLfabric dataplane: carries out transfers (paced, reliable, ordered) for local apps.\n"
		"  --cluster FILE      cluster config (docs/cluster-config.md)\n"
		"  --host NAME         this host's name in the config\n"
		"  --sock PATH         app socket (default %s/<cluster>-<host>.sock), mode 0660\n"
		"  --app-group NAME    group of the app socket (default: the dataplane's own group);\n"
		"                      only root, the dataplane's uid and members of NAME are served\n"
		"                      (SO_PEERCRED); buffers must be memfds sealed with F_SEAL_SHRINK\n"
		"                      and F_SEAL_GROW; a channel's listener is the first app to LISTEN\n"
		"                      until it closes; an app leaving 4 MiB of replies unread is\n"
		"                      disconnected (docs/dataplane.md \"App socket trust\")\n"
		"  --port N            DPDK port id (default 0)\n"
		"  --link-timeout S    wait this long for the port's link at start, then fail naming\n"
		"                      the port (default %.0f; 0 = do not wait)\n"
		"  --timeout S         peer silence that fails a transfer, seconds (default 3)\n"
		"  --busy-poll         never sleep (a dedicated core per dataplane, bare metal)\n"
		"  --sleep frugal|backoff  how the loop waits (default frugal: poll while something is\n"
		"                      due within 100 us on a core of its own, else sleep on the app\n"
		"                      and scheduler sockets (and rx interrupts where the port has them)\n"
		"                      until the next frame, start or timer is due, idle at most 5 ms;\n"
		"                      backoff: the earlier exponential back-off from 1 us, capped at\n"
		"                      20 us while a transfer is in progress; for comparisons)\n"
		"  --fault SPEC        fault injection, e.g. rx_drop=0.01,dup=0.01,reorder=0.01,cut=b\n"
		"  --shaper-gbps R     egress token bucket rate in Gbit/s (0 = off, default)\n"
		"  --scheduler A|none  scheduler IP:PORT (default: the control_ip, else ip, of the host\n"
		"                      with role scheduler, control_port; none = no control connection)\n"
		"  --t-report S        link report period to the scheduler, seconds (default 0.1)\n"
		"  -v, --verbose       debug logging\n"
		"  -h, --help          this text\n"
		"Testbed EAL args: --no-huge -m 512 --no-pci --file-prefix=<cluster>-<host> -l <core>\n"
		"  --vdev=net_af_packet0,iface=eth0,qdisc_bypass=0,framecnt=4096,blocksz=2048,framesz=2048\n"
		"Run-time control: dpdk-telemetry.py -f <file-prefix>, commands /mlfabric/stats,\n"
		"  /mlfabric/faults[,SPEC], /mlfabric/shaper[,GBPS], /mlfabric/capacity[,UP,DOWN].\n"
		"  See docs/dataplane.md.\n",
		prog, MLFABRIC_SOCK_DIR, PORTIO_LINK_TIMEOUT_S);
}

struct opts {
	const char *cluster, *host, *sock, *fault, *scheduler;
	gid_t app_group; /* (gid_t)-1 = the dataplane's own group */
	double shaper, timeout, t_report, link_timeout;
	unsigned port;
};

static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "cluster", required_argument, NULL, 'c' }, { "host", required_argument, NULL, 'H' },
		{ "sock", required_argument, NULL, 's' },    { "port", required_argument, NULL, 'p' },
		{ "app-group", required_argument, NULL, 'g' },
		{ "timeout", required_argument, NULL, 't' }, { "busy-poll", no_argument, NULL, 'b' },
		{ "sleep", required_argument, NULL, 'L' },
		{ "fault", required_argument, NULL, 'f' },   { "shaper-gbps", required_argument, NULL, 'r' },
		{ "verbose", no_argument, NULL, 'v' },       { "help", no_argument, NULL, 'h' },
		{ "scheduler", required_argument, NULL, 'S' }, { "t-report", required_argument, NULL, 'R' },
		{ "link-timeout", required_argument, NULL, 'l' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	char *end;

	optind = 1;
	while ((c = getopt_long(argc, argv, "vh", lo, NULL)) != -1) {
		switch (c) {
		case 'c': o->cluster = optarg; break;
		case 'H': o->host = optarg; break;
		case 's': o->sock = optarg; break;
		case 'g': {
			struct group *g = getgrnam(optarg);
			if (!g) {
				fprintf(stderr, "--app-group: no group named '%s'\n", optarg);
				return -1;
			}
			o->app_group = g->gr_gid;
			break;
		}
		case 'f': o->fault = optarg; break;
		case 'S': o->scheduler = optarg; break;
		case 'R':
			o->t_report = strtod(optarg, &end);
			if (*end || !(o->t_report >= 0.001 && o->t_report <= 60)) {
				fprintf(stderr, "--t-report: '%s' must be seconds in [0.001, 60]\n", optarg);
				return -1;
			}
			break;
		case 'l':
			o->link_timeout = strtod(optarg, &end);
			if (*end || end == optarg || !(o->link_timeout >= 0 && o->link_timeout <= 600)) {
				fprintf(stderr, "--link-timeout: '%s' must be seconds in [0, 600]\n", optarg);
				return -1;
			}
			break;
		case 'b': dp.busy_poll = 1; break;
		case 'L':
			if (strcmp(optarg, "frugal") && strcmp(optarg, "backoff")) {
				fprintf(stderr, "--sleep: '%s' is not frugal or backoff\n", optarg);
				return -1;
			}
			sleep_backoff = !strcmp(optarg, "backoff");
			break;
		case 'v': log_threshold = LOG_DEBUG; break;
		case 'p':
			o->port = (unsigned)strtoul(optarg, &end, 10);
			if (*end || end == optarg) {
				fprintf(stderr, "--port: '%s' is not a port number\n", optarg);
				return -1;
			}
			break;
		case 't':
			o->timeout = strtod(optarg, &end);
			if (*end || !(o->timeout > 0 && o->timeout <= 3600)) {
				fprintf(stderr, "--timeout: '%s' must be seconds in (0, 3600]\n", optarg);
				return -1;
			}
			break;
		case 'r':
			o->shaper = strtod(optarg, &end);
			if (*end || !(o->shaper >= 0 && o->shaper <= 1000)) {
				fprintf(stderr, "--shaper-gbps: '%s' must be Gbit/s in [0, 1000]\n", optarg);
				return -1;
			}
			break;
		case 'h': usage(stdout, argv[0]); exit(0);
		default: return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	if (!o->cluster || !o->host) {
		fprintf(stderr, "--cluster and --host are required\n");
		return -1;
	}
	return 0;
}

/*
 * The loop's clock, from the TSC alone on the per-iteration path (a clock_gettime per iteration
 * was most of a busy loop's time, issue 35): CLOCK_REALTIME is read once per REAL_ANCHOR_NS and
 * extended by TSC ticks in between (the calibrated rate is within ~0.01%: < 0.1 us off per anchor).
 */
#define REAL_ANCHOR_NS 1000000
static struct {
	double ns_per_tick;
	uint64_t anchor_tsc, anchor_real, anchor_ticks;
} clk;

static void clock_anchor(void)
{
	clk.anchor_tsc = rte_rdtsc();
	clk.anchor_real = clock_real_ns(); /* with the host's MLF_CLOCK_SKEW_MS, like its apps */
}

static void clock_sample(void)
{
	uint64_t d;

	dp.clk.tsc = rte_rdtsc();
	d = dp.clk.tsc - clk.anchor_tsc;
	if (d >= clk.anchor_ticks) {
		clock_anchor();
		dp.clk.tsc = clk.anchor_tsc;
		d = 0;
	}
	dp.clk.mono_ns = (uint64_t)((double)dp.clk.tsc * clk.ns_per_tick);
	/* never backwards within an anchor; a new anchor follows CLOCK_REALTIME (NTP steps too) */
	dp.clk.real_ns = clk.anchor_real + (uint64_t)((double)d * clk.ns_per_tick);
}

static void clock_init(double hz)
{
	clk.ns_per_tick = 1e9 / hz;
	clk.anchor_ticks = (uint64_t)(hz * REAL_ANCHOR_NS / 1e9);
	clock_anchor();
	clock_sample();
}

/*
 * The kernel sees our UDP frames too (af_packet does not steal them) and would answer with ICMP
 * port unreachable: hold the port with a socket that has a tiny buffer and is never read.
 */
static int hold_udp_port(uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		log_warn("cannot bind kernel UDP port %u (%s): the kernel may answer our frames with "
			 "ICMP port unreachable", port, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * rte_get_tsc_hz() can be off by ~0.1% in a VM, which would skew every commanded rate:
 * measure the TSC against CLOCK_MONOTONIC over 100 ms instead.
 */
static double calibrate_tsc_hz(void)
{
	struct timespec a, b, nap = { 0, 100000000 };
	uint64_t t0, t1;
	double dt;

	clock_gettime(CLOCK_MONOTONIC, &a);
	t0 = rte_rdtsc();
	nanosleep(&nap, NULL);
	clock_gettime(CLOCK_MONOTONIC, &b);
	t1 = rte_rdtsc();
	dt = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
	if (dt <= 0 || t1 <= t0)
		return (double)rte_get_tsc_hz();
	log_debug("TSC %.0f Hz measured, DPDK says %llu", (double)(t1 - t0) / dt,
		  (unsigned long long)rte_get_tsc_hz());
	return (double)(t1 - t0) / dt;
}

/*
 * Sleep up to @ns in ppoll() on the app and scheduler sockets and, where the port has rx
 * interrupts, on its rx event fd; returns 1 if a socket woke it (frames waking it return 0: the
 * loop polls the port first anyway).
 */
static int wait_next(uint64_t ns)
{
	struct pollfd p[WAIT_FDS + 1];
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000ULL),
			       .tv_nsec = (long)(ns % 1000000000ULL) };
	int n = appif_wait_fds(p, WAIT_FDS), rxfd = portio_rx_wake_fd(), r, sock = 0;

	n += ctlrelay_wait_fds(p + n, WAIT_FDS - n);
	if (rxfd >= 0)
		p[n++] = (struct pollfd){ .fd = rxfd, .events = POLLIN };
	r = ppoll(p, (nfds_t)n, &ts, NULL);
	for (int i = 0; r > 0 && i < n - (rxfd >= 0); i++)
		sock |= p[i].revents != 0;
	return sock;
}

/* Is the loop's core shared with threads that want it? (coreshare.h) Sampled every MONITOR_NS. */
static struct {
	int fd;           /* /proc/thread-self/schedstat, -1 = not available */
	struct coreshare cs;
} core = { .fd = -1 };

static void core_watch(void)
{
	char buf[128];
	unsigned long long run, wait;
	ssize_t n;

	if (core.fd < 0)
		return;
	n = pread(core.fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return;
	buf[n] = '\0';
	if (sscanf(buf, "%llu %llu", &run, &wait) == 2 && coreshare_sample(&core.cs, run, wait, dp.clk.mono_ns))
		log_debug("loop core %s (waited %.1f%% of the time it wanted the core)", core.cs.shared ?
			  "shared: sleeping between events" : "our own: polling while transfers are due",
			  core.cs.frac * 100);
}

static void core_watch_init(void)
{
	core.fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
	if (core.fd < 0)
		log_info("no /proc/thread-self/schedstat (%s): the loop polls while transfers are due "
			 "whether or not its core is shared", strerror(errno));
	core_watch();
}

/*
 * Incoming frame rate, for how long the loop may sleep while a transfer arrives: frames counted
 * over windows of at least RX_WINDOW_NS of loop time (polling and sleeping alike).
 */
#define RX_WINDOW_NS 200000
struct rx_rate {
	uint64_t win_start, frames;
	uint64_t sleep_ns;      /* ~RX_WAKE_FRAMES arrivals at the last window's rate */
};

static void rx_rate_update(struct rx_rate *r, unsigned frames, uint64_t now_ns)
{
	uint64_t el = now_ns - r->win_start;

	r->frames += frames;
	if (el < RX_WINDOW_NS)
		return;
	r->sleep_ns = r->frames ? el * RX_WAKE_FRAMES / r->frames : PACE_GRAIN_NS;
	if (r->sleep_ns < POLL_NS)
		r->sleep_ns = POLL_NS;
	if (r->sleep_ns > PACE_GRAIN_NS)
		r->sleep_ns = PACE_GRAIN_NS;
	r->win_start = now_ns;
	r->frames = 0;
}

static void run(void)
{
	const uint8_t *data[2 * PORTIO_BURST];
	uint16_t len[2 * PORTIO_BURST];
	struct rte_mbuf *frames[2 * PORTIO_BURST];
	uint64_t last_slow = 0, last_mon = 0, due, backoff_ns = IDLE_SLEEP_MIN_NS;
	struct rx_rate rxr = { .win_start = dp.clk.mono_ns, .sleep_ns = PACE_GRAIN_NS };
	int rx_intr = portio_rx_wake_fd() >= 0;

	core_watch_init();

	while (!force_quit) {
		int work = 0;
		unsigned n;

		clock_sample();
		n = portio_rx(data, len, frames, dp.clk.tsc);
		for (unsigned i = 0; i < n; i++)
			transport_rx(data[i], len[i]);
		transport_rx_flush(); /* the payload still points into the frames */
		portio_rx_free(frames, n);
		work |= n > 0;
		work |= transport_tx() > 0;
		if (dp.clk.mono_ns - last_slow >= SLOW_PATH_NS) {
			last_slow = dp.clk.mono_ns;
			work |= transport_timers();
			work |= appif_poll();
			work |= ctlrelay_poll();
			work |= neigh_poll();
			appif_check_order(ORDER_HOLD_FACTOR * dp.timeout_ns);
			if (dp.clk.mono_ns - last_mon >= MONITOR_NS) {
				last_mon = dp.clk.mono_ns;
				monitor_step();
				core_watch();
			}
		}
		work |= portio_flush(dp.clk.tsc) > 0;
		if (!sleep_backoff)
			rx_rate_update(&rxr, n, dp.clk.mono_ns);
		if (work || dp.busy_poll) {
			backoff_ns = IDLE_SLEEP_MIN_NS;
			continue;
		}
		if (sleep_backoff) {
			struct timespec ts = { 0, (long)backoff_ns };
			uint64_t cap = transport_active() ? BACKOFF_ACTIVE_NS : BACKOFF_IDLE_NS;
			nanosleep(&ts, NULL);
			backoff_ns = backoff_ns * 2 > cap ? cap : backoff_ns * 2;
			continue;
		}
		due = transport_next_due_ns(PACE_GRAIN_NS, rxr.sleep_ns, POLL_NS);
		/*
		 * Something due within SPIN_NS (an unpaced transfer waiting for SACKs, a paced one at
		 * Gbit/s rates, frames arriving at a high rate) on a core of our own: poll on without
		 * sleeping. A sleep this short overshoots (timer and wake-up latency), and every
		 * wake-up costs more than the polls it saves (issue 35: 1-20 us sleeps carried 0.19x
		 * of testpmd over memif). On a core other threads want (core_watch), polling would
		 * spend our share of it on nothing and leave us waiting behind them when frames come
		 * (measured over memif on 2 loaded cores: 2.2 against 3.4 Gbit/s, 5 Gbit/s paced
		 * -59% against -12%): there the loop sleeps 1-20 us as before.
		 */
		if (due <= SPIN_NS && !core.cs.shared) {
			rte_pause();
			continue;
		}
		if (due > IDLE_SLEEP_MAX_NS)
			due = IDLE_SLEEP_MAX_NS;
		if (due <= POLL_NS) {
			/* a shared core at line rate: a short sleep overshoots, so back off from 1 us */
			if (due > backoff_ns)
				due = backoff_ns;
			backoff_ns = backoff_ns * 2 > POLL_NS ? POLL_NS : backoff_ns * 2;
		}
		if (due < IDLE_SLEEP_MIN_NS)
			due = IDLE_SLEEP_MIN_NS;
		if (rx_intr) {
			/* a frame wakes the sleep: idle or slow transfers sleep until the next timer */
			portio_rx_arm(1);
			n = portio_rx(data, len, frames, dp.clk.tsc); /* arrived before arming? */
			if (n) {
				portio_rx_arm(0);
				for (unsigned i = 0; i < n; i++)
					transport_rx(data[i], len[i]);
				transport_rx_flush();
				portio_rx_free(frames, n);
				rx_rate_update(&rxr, n, dp.clk.mono_ns);
				continue;
			}
		}
		if (wait_next(due))
			last_slow = 0; /* a socket is ready: serve it now, not at the next slow tick */
		portio_rx_arm(0);
	}
}

int main(int argc, char **argv)
{
	struct opts o = { .timeout = 3.0, .t_report = 0.1, .link_timeout = PORTIO_LINK_TIMEOUT_S,
			  .app_group = (gid_t)-1 };
	struct portio_conf pconf;
	struct fault_spec faults = { 0 };
	char err[512], sock[256], comp[64], sched[64];
	int ret, udp_fd;

	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout, argv[0]);
			return 0;
		}
	/* before any set-up: a signal during start-up still ends in the clean-up below run() */
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	ret = rte_eal_init(argc, argv);
	if (ret < 0)
		rte_exit(EXIT_FAILURE, "EAL initialisation failed: %s (see --help for testbed EAL args)\n",
			 rte_strerror(rte_errno));
	argc -= ret;
	argv += ret;
	argv[0] = "mlf-dataplane";
	if (parse_opts(argc, argv, &o) < 0) {
		usage(stderr, argv[0]);
		rte_eal_cleanup();
		return 2;
	}
	if (cluster_load(o.cluster, &dp.cluster, err, sizeof(err)) < 0)
		rte_exit(EXIT_FAILURE, "%s\n", err);
	dp.me = cluster_find(&dp.cluster, o.host);
	if (dp.me < 0)
		rte_exit(EXIT_FAILURE, "%s: no host named '%s'\n", o.cluster, o.host);
	snprintf(comp, sizeof(comp), "dataplane[%s]", o.host);
	log_component = comp;
	if (o.fault && fault_parse(o.fault, &faults, err, sizeof(err)) < 0)
		rte_exit(EXIT_FAILURE, "--fault: %s\n", err);
	if (!o.sock) {
		snprintf(sock, sizeof(sock), "%s/%s-%s.sock", MLFABRIC_SOCK_DIR, dp.cluster.name, o.host);
		o.sock = sock;
	}
	dp.hz = calibrate_tsc_hz();
	dp.timeout_ns = (uint64_t)(o.timeout * 1e9);
	prctl(PR_SET_TIMERSLACK, 1UL); /* idle sleeps of a few us must not become 50 us */
	clock_init(dp.hz);

	pconf = (struct portio_conf){ .port = (uint16_t)o.port, .mtu = dp.cluster.mtu,
				      .link_timeout_s = o.link_timeout,
				      .cfg_mac = dp.cluster.hosts[dp.me].mac_given ? dp.cluster.hosts[dp.me].mac : NULL };
	if ((ret = portio_init(&pconf, dp.my_mac, err, sizeof(err))) < 0)
		rte_exit(EXIT_FAILURE, "%s\n", err);
	if (dp.cluster.hosts[dp.me].mac_given && memcmp(dp.my_mac, dp.cluster.hosts[dp.me].mac, 6) != 0)
		log_warn("port MAC %02x:%02x:%02x:%02x:%02x:%02x is not %s's mac in %s: peers drop its frames "
			 "(they accept a host's frames only from its configured MAC)", dp.my_mac[0], dp.my_mac[1],
			 dp.my_mac[2], dp.my_mac[3], dp.my_mac[4], dp.my_mac[5], o.host, o.cluster);
	placement_init(portio_socket());
	if (neigh_init() < 0)
		rte_exit(EXIT_FAILURE, "out of memory for the neighbour table\n");
	if (!dp.cluster.key_file[0])
		log_warn("cluster %s has no key_file%s: frames and control connections are not "
			 "authenticated (docs/security.md)", o.cluster, dp.cluster.insecure ?
			 " (\"insecure\": true)" : " and does not say \"insecure\": true");
	if (dp.cluster.frame_auth) {
		uint8_t key[AUTH_KEY_BYTES];
		if (auth_key_load(dp.cluster.key_file, key, err, sizeof(err)) < 0)
			rte_exit(EXIT_FAILURE, "frame_auth: %s\n", err);
		dp.frame_auth = auth_frame_new(key, dp.cluster.frame_mac, err, sizeof(err));
		explicit_bzero(key, sizeof(key));
		if (!dp.frame_auth)
			rte_exit(EXIT_FAILURE, "frame_auth: %s\n", err);
	}
	udp_fd = hold_udp_port(dp.cluster.udp_port);
	if (transport_init(MAX_XFERS, &appif_transport_ops) < 0)
		rte_exit(EXIT_FAILURE, "out of memory for transfer tables\n");
	transport_set_shaper(o.shaper);
	if (monitor_init(&faults, o.shaper) < 0)
		rte_exit(EXIT_FAILURE, "cannot set up telemetry commands or faults\n");
	if (appif_init(o.sock, o.app_group, &relay_ops, err, sizeof(err)) < 0)
		rte_exit(EXIT_FAILURE, "%s\n", err);
	if (!o.scheduler) {
		int s = cluster_find_role(&dp.cluster, CLUSTER_ROLE_SCHEDULER);
		struct in_addr a = { .s_addr = s >= 0 ? cluster_control_ip(&dp.cluster, s) : 0 };
		if (s >= 0) {
			snprintf(sched, sizeof(sched), "%s:%u", inet_ntoa(a), dp.cluster.control_port);
			o.scheduler = sched;
		} else {
			log_info("no host with role scheduler in %s: no control connection", o.cluster);
			o.scheduler = "none";
		}
	}
	if (ctlrelay_init(strcmp(o.scheduler, "none") ? o.scheduler : NULL, o.t_report, err, sizeof(err)) < 0)
		rte_exit(EXIT_FAILURE, "%s\n", err);
	log_info("TSC at %.6f GHz (DPDK estimate %.6f)", dp.hz / 1e9, (double)rte_get_tsc_hz() / 1e9);
	log_info("up: %s (cluster %s) MTU %d, UDP port %u, %u bytes per segment, frames %s%s%s, app socket %s, %s",
		 o.host, dp.cluster.name, dp.cluster.mtu, dp.cluster.udp_port,
		 wire_seg_payload(dp.cluster.mtu) - wire_tag_len(dp_tx_flags()),
		 dp.frame_auth ? "tagged (frame_auth, frame_mac " : "untagged",
		 dp.frame_auth ? auth_frame_alg_name(dp.cluster.frame_mac) : "", dp.frame_auth ? ")" : "", o.sock, dp.busy_poll ? "busy polling" :
		 sleep_backoff ? "sleep back-off" : "frugal sleeps");

	run();

	log_info("signal %d: stopping, failing unfinished transfers", (int)force_quit);
	clock_sample();
	transport_shutdown();
	ctlrelay_close();
	appif_close();
	portio_close();
	neigh_close();
	auth_frame_free(dp.frame_auth);
	if (udp_fd >= 0)
		close(udp_fd);
	cluster_free(&dp.cluster);
	rte_eal_cleanup();
	return 0;
}
