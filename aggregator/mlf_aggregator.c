/* mlf_aggregator.c - mlf-aggregator: serves the scheduler's aggregate commands on one host (paper §4, §5.2). */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "mlfabric.h"

static volatile sig_atomic_t quit;

static void on_signal(int sig)
{
	quit = sig;
}

static void usage(FILE *out, const char *prog)
{
	fprintf(out,
		"usage: %s --cluster FILE --host NAME [options]\n"
		"MLfabric aggregator: receives the updates an aggregate command names (channel 2), sums\n"
		"them (weighted when commanded) and sends the aggregate as commanded (docs/control.md).\n"
		"  --cluster FILE        cluster config (docs/cluster-config.md)\n"
		"  --host NAME           this host's name in the config\n"
		"  --sock PATH           dataplane socket (default /run/mlfabric/<cluster>-<host>.sock)\n"
		"  --input-timeout S     inputs missing S seconds after the commanded start are given up\n"
		"                        and the aggregate is sent without them (default 5)\n"
		"  --timeout S           registration wait, seconds (default 10)\n"
		"  --progress S          print counters every S seconds (default 10, 0 = never)\n"
		"  -v, --verbose         debug logging\n"
		"  -h, --help            this text\n"
		"Counters are printed at exit (SIGINT/SIGTERM).\n", prog);
}

static void print_stats(mlf_t *f, const char *when)
{
	struct mlf_aggregator_stats s;

	mlf_get_aggregator_stats(f, &s);
	printf("aggregator %s: commands=%llu aggregates_sent=%llu inputs_summed=%llu inputs_missing=%llu "
	       "sum_bytes=%llu sum_s=%.3f sum_gbytes_s=%.2f\n", when,
	       (unsigned long long)s.commands, (unsigned long long)s.aggregates_sent,
	       (unsigned long long)s.inputs_summed, (unsigned long long)s.inputs_missing,
	       (unsigned long long)s.sum_bytes, s.sum_seconds,
	       s.sum_seconds > 0 ? (double)s.sum_bytes / s.sum_seconds / 1e9 : 0.0);
	fflush(stdout);
}

static double num_arg(const char *name, const char *v, double lo, double hi)
{
	char *end;
	double x = strtod(v, &end);

	if (*end || end == v || !(x >= lo && x <= hi)) {
		fprintf(stderr, "%s: '%s' must be a number in [%g, %g]\n", name, v, lo, hi);
		exit(2);
	}
	return x;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "cluster", required_argument, NULL, 'c' }, { "host", required_argument, NULL, 'H' },
		{ "sock", required_argument, NULL, 's' }, { "input-timeout", required_argument, NULL, 'i' },
		{ "timeout", required_argument, NULL, 't' }, { "progress", required_argument, NULL, 'p' },
		{ "verbose", no_argument, NULL, 'v' }, { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	struct mlf_opts o = { .mode = MLF_MODE_MLFABRIC_A };
	double progress = 10, last;
	char err[256], comp[64];
	mlf_t *f;
	int c, rc;

	while ((c = getopt_long(argc, argv, "vh", lo, NULL)) != -1) {
		switch (c) {
		case 'c': o.cluster = optarg; break;
		case 'H': o.host = optarg; break;
		case 's': o.sock = optarg; break;
		case 'i': o.agg_input_timeout_s = num_arg("--input-timeout", optarg, 0.001, 3600); break;
		case 't': o.timeout_s = num_arg("--timeout", optarg, 0.001, 3600); break;
		case 'p': progress = num_arg("--progress", optarg, 0, 86400); break;
		case 'v': log_threshold = LOG_DEBUG; break;
		case 'h': usage(stdout, argv[0]); return 0;
		default: usage(stderr, argv[0]); return 2;
		}
	}
	if (optind < argc || !o.cluster || !o.host) {
		fprintf(stderr, optind < argc ? "unexpected argument '%s'\n" : "--cluster and --host are required%s\n",
			optind < argc ? argv[optind] : "");
		usage(stderr, argv[0]);
		return 2;
	}
	snprintf(comp, sizeof(comp), "aggregator[%s]", o.host);
	log_component = comp;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	if (!(f = mlf_open(&o, err, sizeof(err)))) {
		log_err("%s", err);
		return 1;
	}
	if ((rc = mlf_register_as_aggregator(f)) < 0) {
		log_err("%s", mlf_error(f));
		mlf_close(f);
		return 1;
	}
	log_info("registered as aggregator@%s", o.host);
	last = (double)time(NULL);
	while (!quit) {
		struct timespec nap = { 0, 100000000 };
		nanosleep(&nap, NULL);
		if (progress > 0 && (double)time(NULL) - last >= progress) {
			last = (double)time(NULL);
			print_stats(f, "progress");
		}
	}
	print_stats(f, "exit");
	mlf_close(f);
	return 0;
}
