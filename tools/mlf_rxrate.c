/* mlf_rxrate.c - mlf-rxrate: measure a transfer's rate from outside, from an interface's rx counters. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "log.h"

static const char usage[] =
	"usage: mlf-rxrate [--iface IF] [--interval-ms MS] [--quiet-ms MS] [--timeout S] [--min-bytes N]\n"
	"                  [--min-step N] [--trace FILE]\n"
	"Samples /sys/class/net/IF/statistics/rx_bytes and rx_packets every MS (default 1) ms and\n"
	"reports the receive rate over the active window: from the first sample that saw at least\n"
	"--min-step (default 3000) new bytes, so stray ARP frames do not open the window, to the last\n"
	"such sample, once nothing arrived for --quiet-ms (default 300) after at least --min-bytes\n"
	"(default 100000) arrived, or at --timeout (default 60 s). Prints one line:\n"
	"  rxrate bytes=<L2 bytes> packets=<n> first_ns=<CLOCK_REALTIME ns> last_ns=<ns> seconds=<s>\n"
	"         gbps=<L2 Gbit/s over the window>\n"
	"--trace FILE writes every sample as: <realtime ns> <bytes since start> <packets since start>.\n"
	"Bytes are L2 frame bytes including the 14-byte Ethernet header (what tbf and the dataplane's\n"
	"pacer count). Run it in the receiver's namespace (mlf-testbed exec CLUSTER HOST mlf-rxrate).\n"
	"Exit status 1 when fewer than --min-bytes arrived before the timeout.\n";

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int read_counter(const char *path, uint64_t *v)
{
	FILE *f = fopen(path, "r");
	unsigned long long x;
	int ok;

	if (!f)
		return -errno;
	ok = fscanf(f, "%llu", &x) == 1;
	fclose(f);
	if (!ok)
		return -EIO;
	*v = x;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "iface", required_argument, NULL, 'i' },    { "interval-ms", required_argument, NULL, 'n' },
		{ "quiet-ms", required_argument, NULL, 'q' }, { "timeout", required_argument, NULL, 't' },
		{ "min-bytes", required_argument, NULL, 'm' }, { "min-step", required_argument, NULL, 's' },
		{ "trace", required_argument, NULL, 'r' }, { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const char *iface = "eth0";
	FILE *trace = NULL;
	double interval_ms = 1, quiet_ms = 300, timeout_s = 60;
	uint64_t min_bytes = 100000, min_step = 3000, b0, p0, b, p, fb = 0, lb = 0, lp = 0, prev, t0, ft = 0, lt = 0;
	char bpath[256], ppath[256];
	int opt, active = 0;

	log_component = "mlf-rxrate";
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		char *end = NULL;
		double v = 0;

		if (opt != 'i' && opt != 'h' && opt != 'r' && optarg) {
			v = strtod(optarg, &end);
			if (*end || v <= 0) {
				log_err("option value '%s' must be a positive number (see --help)", optarg);
				return 2;
			}
		}
		switch (opt) {
		case 'i': iface = optarg; break;
		case 'r':
			trace = fopen(optarg, "w");
			if (!trace) {
				log_err("--trace %s: %s", optarg, strerror(errno));
				return 2;
			}
			break;
		case 'n': interval_ms = v; break;
		case 'q': quiet_ms = v; break;
		case 't': timeout_s = v; break;
		case 'm': min_bytes = (uint64_t)v; break;
		case 's': min_step = (uint64_t)v; break;
		case 'h': fputs(usage, stdout); return 0;
		default: fputs(usage, stderr); return 2;
		}
	}
	snprintf(bpath, sizeof(bpath), "/sys/class/net/%s/statistics/rx_bytes", iface);
	snprintf(ppath, sizeof(ppath), "/sys/class/net/%s/statistics/rx_packets", iface);
	if (read_counter(bpath, &b0) || read_counter(ppath, &p0)) {
		log_err("interface %s: cannot read %s (wrong namespace or interface name?)", iface, bpath);
		return 2;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	prev = b0;
	t0 = clock_real_ns();
	while (!stop) {
		struct timespec ts = { 0, (long)(interval_ms * 1e6) };
		uint64_t t;

		nanosleep(&ts, NULL);
		t = clock_real_ns();
		if (read_counter(bpath, &b) || read_counter(ppath, &p)) {
			log_err("interface %s: counters vanished", iface);
			return 2;
		}
		if (trace)
			fprintf(trace, "%llu %llu %llu\n", (unsigned long long)t, (unsigned long long)(b - b0),
				(unsigned long long)(p - p0));
		if (b - prev >= min_step) {
			if (!active) {
				active = 1;
				ft = t;
				fb = b;
			}
			lt = t;
			lb = b;
			lp = p;
		}
		prev = b;
		if (active && lb - b0 >= min_bytes && (double)(t - lt) >= quiet_ms * 1e6)
			break;
		if ((double)(t - t0) >= timeout_s * 1e9)
			break;
	}
	if (trace)
		fclose(trace);
	if (!active) {
		printf("rxrate bytes=0 packets=0 first_ns=0 last_ns=0 seconds=0 gbps=0\n");
		return 1;
	}
	{
		double s = (double)(lt - ft) / 1e9;
		printf("rxrate bytes=%llu packets=%llu first_ns=%llu last_ns=%llu seconds=%.6f gbps=%.6f\n",
		       (unsigned long long)(lb - b0), (unsigned long long)(lp - p0), (unsigned long long)ft,
		       (unsigned long long)lt, s, s > 0 ? (double)(lb - fb) * 8 / s / 1e9 : 0.0);
	}
	return lb - b0 >= min_bytes ? 0 : 1;
}
