/* mlf_scheduler.c - mlf-scheduler: the MLfabric scheduler daemon (paper §4, §5, §6). */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "mlf_payload.h"
#include "sched_daemon.h"

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mlf-scheduler --cluster C.json [options]\n"
		"The MLfabric scheduler: accepts every host's dataplane (docs/control.md), plans\n"
		"pending updates and pulls as they arrive (ordering, delay bound,\n"
		"aggregation, replication; paper 5 and 6) and commands the transfers; catches a\n"
		"replica up and fails over to it (docs/replication.md). docs/scheduler.md.\n"
		"  --cluster FILE       cluster config (required)\n"
		"  --listen IP:PORT     control address (default: scheduler host's control_ip, else\n"
		"                       its ip, and control_port)\n"
		"  --batch-ms MS        longest an arrival waits to be planned with others, and the\n"
		"                       period of the fallback tick (default 100)\n"
		"  --replan-ms MS       plans on arrival start at least MS apart; an arrival waits\n"
		"                       MS for others to share its plan (default 2)\n"
		"  --lead-ms MS         largest and initial lead of a plan; the lead follows the\n"
		"                       measured command latency, at least 1 (default 10)\n"
		"  --t-lag S            a link report is used from t + t_lag on (default 0.2)\n"
		"  --clock-warn-ms MS   warn when a host's clock offset to ours is uncertain by\n"
		"                       more than MS (default 5; docs/control.md \"Clocks\")\n"
		"  --clock-max-ms MS    refuse such a host above MS (default 100)\n"
		"  --clock-correct M    on (default): commanded start times in each host's clock;\n"
		"                       off: in ours (offsets are still measured and recorded)\n"
		"  --capacity M         declared (default): plan with the capacities the dataplanes\n"
		"                       declare; measured: with the estimates derived from what\n"
		"                       transfers achieved (docs/scheduler.md \"Measured capacities\")\n"
		"  --peer-timeout S     a dataplane silent this long is dead (default 2)\n"
		"  --sync-timeout S     MLfabric-S: plan without missing workers after S (default 30)\n"
		"  --sync-batching M    MLfabric-S: eager (plan each update of an iteration as it is\n"
		"                       ready, default) or all (once every worker reported)\n"
		"  --xfer-timeout S     a transfer with no done S after its planned end is lost (10)\n"
		"  --aggregators H,H    only these hosts may aggregate (default: every registered one)\n"
		"  --headroom F         plan capacity = link capacity x F (default 0.95)\n"
		"  --copy-wait M        sharded servers: a model copy is planned to start after the\n"
		"                       legs in flight to its shard: updates (their planned ends),\n"
		"                       legs (updates and aggregates) or learned (legs plus the\n"
		"                       shard's measured lateness; default)\n"
		"  --max-batch N        most updates per batch, 1..62 (default 62)\n"
		"  --records DIR        write batches/updates/transfers/failover.jsonl into DIR\n"
		"  --replica-aggregators H,H  hosts that may aggregate replica copies (default:\n"
		"                       the aggregators in use)\n"
		"  --verify-every N     snapshot server and replica after every N-th batch (0 = off)\n"
		"  --catchup-timeout S  catch-up waits at most S for the server's commits (10)\n"
		"  --distributors N     most worker hosts forwarding the model to other pulls\n"
		"                       (distribution trees, §10.3; default: all; 0 = off)\n"
		"  --max-updates-per-host N  updates of one host the scheduler holds; more are\n"
		"                       dropped at once with a reason (default 4096)\n"
		"  --max-pulls-per-host N    pulls of one host waiting; more are refused (1024)\n"
		"  --ssp S              stale-synchronous parallel: a worker's pull (its next\n"
		"                       iteration) waits while it is more than S iterations ahead\n"
		"                       of the slowest live worker (default off)\n"
		"  --asp                adaptive SSP: the threshold follows the workers' iteration\n"
		"                       rates, --asp-weak W while they are similar, up to --ssp S\n"
		"  --asp-weak W         ASP's weak threshold (default 1)\n"
		"  --adsp GAMMA         ADSP (adsp-aaai2020): every GAMMA seconds (the check period)\n"
		"                       send each worker its commit rate: commits to make by the\n"
		"                       next checkpoint; workers run mlf-worker --system adsp\n"
		"                       (default off)\n"
		"  --adsp-eval S        ADSP's search runs each commit rate S seconds (default 6)\n"
		"  --adsp-epoch S       ADSP's search starts over every S seconds (default 0: once)\n"
		"  --adsp-rate R        no search: R commits per check period throughout\n"
		"  --adsp-max-lag K     a worker owes at most K x the rate per period (default 4)\n"
		"  -v, --verbose        debug logging\n"
		"  -h, --help           this text\n");
}

static int num_arg(const char *name, const char *v, double lo, double hi, double *out)
{
	char *end;
	double d = strtod(v, &end);
	if (*v == 0 || *end || !(d >= lo && d <= hi)) {
		fprintf(stderr, "mlf-scheduler: %s: '%s' is not a number in [%g, %g]\n", name, v, lo,
			hi);
		return -1;
	}
	*out = d;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cluster", required_argument, 0, 'c' }, { "listen", required_argument, 0, 'l' },
		{ "batch-ms", required_argument, 0, 'b' }, { "lead-ms", required_argument, 0, 'L' },
		{ "replan-ms", required_argument, 0, 'Q' },
		{ "clock-warn-ms", required_argument, 0, 1001 },
		{ "clock-max-ms", required_argument, 0, 1002 },
		{ "clock-correct", required_argument, 0, 1003 },
		{ "capacity", required_argument, 0, 1004 },
		{ "t-lag", required_argument, 0, 't' }, { "peer-timeout", required_argument, 0, 'p' },
		{ "sync-timeout", required_argument, 0, 's' },
		{ "xfer-timeout", required_argument, 0, 'x' },
		{ "aggregators", required_argument, 0, 'a' },
		{ "headroom", required_argument, 0, 'H' }, { "max-batch", required_argument, 0, 'm' },
		{ "records", required_argument, 0, 'r' }, { "verbose", no_argument, 0, 'v' },
		{ "replica-aggregators", required_argument, 0, 'R' },
		{ "verify-every", required_argument, 0, 'V' },
		{ "catchup-timeout", required_argument, 0, 'C' },
		{ "sync-batching", required_argument, 0, 'S' },
		{ "distributors", required_argument, 0, 'D' },
		{ "max-updates-per-host", required_argument, 0, 'U' },
		{ "max-pulls-per-host", required_argument, 0, 'P' },
		{ "copy-wait", required_argument, 0, 'Y' },
		{ "ssp", required_argument, 0, 'Z' },
		{ "asp", no_argument, 0, 'A' },
		{ "asp-weak", required_argument, 0, 'W' },
		{ "adsp", required_argument, 0, 'G' },
		{ "adsp-eval", required_argument, 0, 'E' },
		{ "adsp-epoch", required_argument, 0, 'O' },
		{ "adsp-rate", required_argument, 0, 'T' },
		{ "adsp-max-lag", required_argument, 0, 'K' },
		{ "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 } };
	struct sched_config cfg;
	const char *cluster = NULL;
	double d;
	int c, bad = 0;

	sched_daemon_defaults(&cfg);
	log_component = "scheduler";
	while ((c = getopt_long(argc, argv, "vh", opts, NULL)) != -1) {
		switch (c) {
		case 'c': cluster = optarg; break;
		case 'l': snprintf(cfg.listen, sizeof(cfg.listen), "%s", optarg); break;
		case 'b': bad |= num_arg("--batch-ms", optarg, 1, 60000, &d); cfg.batch_s = d / 1e3; break;
		case 'Q': bad |= num_arg("--replan-ms", optarg, 0, 60000, &d); cfg.replan_s = d / 1e3; break;
		case 'L': bad |= num_arg("--lead-ms", optarg, 0, 60000, &d); cfg.lead_s = d / 1e3; break;
		case 't': bad |= num_arg("--t-lag", optarg, 0, 3600, &cfg.t_lag_s); break;
		case 1001: bad |= num_arg("--clock-warn-ms", optarg, 0, 1e6, &d); cfg.clock_warn_s = d / 1e3; break;
		case 1002: bad |= num_arg("--clock-max-ms", optarg, 0, 1e6, &d); cfg.clock_max_s = d / 1e3; break;
		case 1003:
			if (strcmp(optarg, "on") && strcmp(optarg, "off")) {
				fprintf(stderr, "mlf-scheduler: --clock-correct: '%s' is not on or off\n",
					optarg);
				bad = 1;
			}
			cfg.clock_correct = !strcmp(optarg, "on");
			break;
		case 1004:
			if (strcmp(optarg, "declared") && strcmp(optarg, "measured")) {
				fprintf(stderr, "mlf-scheduler: --capacity: '%s' is not declared or measured\n",
					optarg);
				bad = 1;
			}
			cfg.capacity_measured = !strcmp(optarg, "measured");
			break;
		case 'p': bad |= num_arg("--peer-timeout", optarg, 0.01, 3600, &cfg.peer_timeout_s); break;
		case 's': bad |= num_arg("--sync-timeout", optarg, 0, 86400, &cfg.sync_timeout_s); break;
		case 'x': bad |= num_arg("--xfer-timeout", optarg, 0.01, 86400, &cfg.xfer_timeout_s); break;
		case 'a': snprintf(cfg.aggregators, sizeof(cfg.aggregators), "%s", optarg); break;
		case 'H': bad |= num_arg("--headroom", optarg, 0.01, 1, &cfg.headroom); break;
		case 'm': bad |= num_arg("--max-batch", optarg, 1, MLF_PAYLOAD_MAX_PARTS, &d); cfg.max_batch = (int)d; break;
		case 'r': snprintf(cfg.records, sizeof(cfg.records), "%s", optarg); break;
		case 'R': snprintf(cfg.replica_aggregators, sizeof(cfg.replica_aggregators), "%s", optarg); break;
		case 'V': bad |= num_arg("--verify-every", optarg, 0, 1e9, &d); cfg.verify_every = (int)d; break;
		case 'C': bad |= num_arg("--catchup-timeout", optarg, 0, 86400, &cfg.catchup_timeout_s); break;
		case 'Y':
			if (!strcmp(optarg, "updates"))
				cfg.copy_wait = SCHED_COPY_WAIT_UPDATES;
			else if (!strcmp(optarg, "legs"))
				cfg.copy_wait = SCHED_COPY_WAIT_LEGS;
			else if (!strcmp(optarg, "learned"))
				cfg.copy_wait = SCHED_COPY_WAIT_LEARNED;
			else {
				fprintf(stderr, "mlf-scheduler: --copy-wait: '%s' is not updates, legs "
					"or learned\n", optarg);
				bad = 1;
			}
			break;
		case 'S':
			if (strcmp(optarg, "eager") && strcmp(optarg, "all")) {
				fprintf(stderr, "mlf-scheduler: --sync-batching: '%s' is not eager or all\n",
					optarg);
				bad = 1;
			}
			cfg.sync_all = !strcmp(optarg, "all");
			break;
		case 'D': bad |= num_arg("--distributors", optarg, 0, 1e6, &d); cfg.distributors = (int)d; break;
		case 'U': bad |= num_arg("--max-updates-per-host", optarg, 1, 1e7, &d); cfg.max_upd_per_host = (int)d; break;
		case 'P': bad |= num_arg("--max-pulls-per-host", optarg, 1, 1e7, &d); cfg.max_pulls_per_host = (int)d; break;
		case 'Z': bad |= num_arg("--ssp", optarg, 0, 1e6, &d); cfg.ssp_s = (int)d; break;
		case 'A': cfg.asp = 1; break;
		case 'W': bad |= num_arg("--asp-weak", optarg, 0, 1e6, &d); cfg.asp_w = (int)d; break;
		case 'G': bad |= num_arg("--adsp", optarg, 0.01, 3600, &cfg.adsp.gamma_s); break;
		case 'E': bad |= num_arg("--adsp-eval", optarg, 0.01, 86400, &cfg.adsp.eval_s); break;
		case 'O': bad |= num_arg("--adsp-epoch", optarg, 0, 1e7, &cfg.adsp.epoch_s); break;
		case 'T': bad |= num_arg("--adsp-rate", optarg, 1, 4096, &d); cfg.adsp.fixed_r = (int)d; break;
		case 'K': bad |= num_arg("--adsp-max-lag", optarg, 1, 4096, &d); cfg.adsp.max_lag_r = (int)d; break;
		case 'v': log_threshold = LOG_DEBUG; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (bad)
		return 2;
	if (cfg.asp && cfg.ssp_s < 0) {
		fprintf(stderr, "mlf-scheduler: --asp needs --ssp S (the largest threshold ASP may choose)\n");
		return 2;
	}
	if (cfg.asp && cfg.asp_w > cfg.ssp_s) {
		fprintf(stderr, "mlf-scheduler: --asp-weak %d is above --ssp %d (the weak threshold is the "
			"smallest ASP uses)\n", cfg.asp_w, cfg.ssp_s);
		return 2;
	}
	if (cfg.adsp.gamma_s > 0 && cfg.adsp.eval_s < cfg.adsp.gamma_s) {
		fprintf(stderr, "mlf-scheduler: --adsp-eval %g is shorter than the check period --adsp %g "
			"(a commit rate runs at least one period)\n", cfg.adsp.eval_s, cfg.adsp.gamma_s);
		return 2;
	}
	if (!(cfg.adsp.gamma_s > 0) && (cfg.adsp.fixed_r || cfg.adsp.epoch_s > 0)) {
		fprintf(stderr, "mlf-scheduler: --adsp-rate and --adsp-epoch need --adsp GAMMA\n");
		return 2;
	}
	if (!cluster || optind < argc) {
		fprintf(stderr, "mlf-scheduler: %s\n", cluster ? "unexpected argument" :
			"--cluster FILE is required");
		usage(stderr);
		return 2;
	}
	char err[512];
	struct sched *s = sched_daemon_create(&cfg, cluster, err, sizeof(err));
	if (!s) {
		fprintf(stderr, "mlf-scheduler: %s\n", err);
		return 1;
	}
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	int rc = sched_daemon_run(s, &stop_flag);
	log_info("stopping after %d batches", s->batch_no);
	sched_daemon_free(s);
	return rc ? 1 : 0;
}
