"""tools/mlf-cluster's command line: run, down, rates, results, check, top, preflight (see USAGE)."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from . import links, plots, preflight, results, table2, validate
from .env import PROG, die, load, paths
from .network import rate_schedule, schedule_lines
from .records import RecordError, read_json
from .launcher import LaunchError
from .runner import Runner
from .testbed import Testbed

USAGE = """\
Usage: tools/mlf-cluster run EXPERIMENT.json [--out DIR] [--systems a,b] [-- PROGRAM ARGS...]
       tools/mlf-cluster down EXPERIMENT.json
       tools/mlf-cluster rates EXPERIMENT.json [--periods K]
       tools/mlf-cluster results RUN_DIR [--target A]
       tools/mlf-cluster links RUN_DIR [--json]
       tools/mlf-cluster table2 [--cells c1-n1,..] [--seeds N] [--systems a,b] [--time-limit S]
                                [--params FILE] [--base EXP] [--out DIR] [--table DIR] [--sweep]
       tools/mlf-cluster check EXPERIMENT.json [--systems a,b]
       tools/mlf-cluster top EXPERIMENT.json|CLUSTER.json [--interval S] [--once] [--json]
       tools/mlf-cluster preflight CLUSTER.json

  run      run every system of the experiment (or --systems) one after the other on the
           emulated cluster; write the run folder (default runs/<name>-<UTC time>/):
           <system>/logs/*.log, <system>/records/ (docs/fabric.md records, workers in
           records/<host>/), <system>/run.json, network.tsv (the rate schedule applied),
           results.json, accuracy.png, delays.png, timeline.png; print a summary table.
           -- PROGRAM ARGS...: every worker runs this command (the experiment key
           worker_command) with the MLF_* variables mlfabric.init() reads (docs/python.md).
  down     tear the experiment's cluster down (after a crash of the runner).
  rates    print the seeded rate schedule: period, offset s, host, up and down Gbit/s.
  results  recompute results.json, the plots and the summary table of a run folder.
  links    per-link utilisation of a run folder (links.json): per host, the uplink's and
           downlink's busy fraction of the run from the scheduler's planned transfers and
           from the switch's byte counters (netdev.jsonl), their utilisation (bytes /
           capacity) and where the bottleneck sits; --json prints links.json.
  table2   the paper's Table 2 grid (bench/table2.mk: make bench-table2, bench-table2-sweep;
           docs/experiments.md "Table 2"; table2 --help).
  check    validate the experiment (systems, settings, hosts, programs) and exit.
  preflight  check every host of a cluster launched over ssh (docs/deploy.md "Preflight"):
           reachable, programs present and the same build, key 0600, hugepages, NIC bound
           to DPDK or link up with the MTU, ports free; one line per problem; exit 1 on any.
  top      a live view of the running cluster (tools/mlf-top, docs/mlf-top.md) from inside
           the scheduler host's namespace: links, transfers in flight, held updates, waits.

Systems: mlfabric-a, mlfabric-s (scheduler + aggregators), ssp, asp (MLfabric-A with the
stale-synchronous gate), esync (MLfabric-S with local training between rounds, the scheduler
as ESync's State Server), async (plain parameter server,
dataplanes with --scheduler none), rr-sync (build/mlf-rrsync under tools/mlf-mpirun), gloo
(torch.distributed all-reduce, no fabric process; needs "worker_program": "torch").
"worker_program": "c" (build/mlf-worker, default) or "torch" (/usr/bin/python3
examples/torch_fashion_mnist.py, PYTHONPATH=build/python; mlf-ps --init-from the first worker,
which evaluates: records/<host>/accuracy.jsonl; docs/torch-example.md); or "worker_command":
[argv], your own program on every worker (MLF_CLUSTER, MLF_HOST, MLF_SERVER, MLF_MODE,
MLF_RANK, MLF_SIZE, MLF_WORKERS, MLF_RECORDS...; mlf-ps --init-from the first worker).
Optional keys (docs/replication.md, docs/experiments.md): "replication" {mode none|mlfabric|
chain|checkpoint, div_max, replica, replica_aggregators, checkpoint_every, verify_every} starts
the replica / checkpointing / snapshots; "faults" [{at_s, kind kill-server|kill-aggregator|
kill-worker|cut-link|loss-burst, host, duration_s, loss}] are injected by a fault driver and
logged in <system>/faults.jsonl; a killed server fails over to the replica or is restarted
from its checkpoint. Unknown keys are refused.
Compute settings C1 (0.10,2), C2 (0.10,4), C3 (0.04,2); network settings N1-N3 (paper §7).
Each process must show it is ready before the next starts (scheduler: 'listening on';
dataplane: its socket /run/mlfabric/<cluster>-<host>.sock and, with the scheduler, 'welcome';
aggregator: 'registered as aggregator@<host>'; server: 'serving'; replica: 'replica of';
worker: 'worker of' within 60 s); a process that does not is named and the system fails.
Needs root (network namespaces). Environment: MLF_BUILD (programs, default build/),
MLF_MPIRUN (default tools/mlf-mpirun), MLF_DATAPLANE (read by mlf-testbed).
"""


class Parser(argparse.ArgumentParser):
    def error(self, message):
        die("%s: %s" % (self.prog, message))

    def print_help(self, file=None):
        (file or sys.stdout).write(USAGE)


def cmd_run(a):
    exp = load(a.experiment, a.systems, worker_command=a.command)
    if os.geteuid() != 0:
        die("run needs root (network namespaces)")
    root = paths()[0]
    run = a.out or os.path.join(root, "runs", "%s-%s" % (exp.name, time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())))
    try:
        os.makedirs(run, exist_ok=True)
    except OSError:
        die("cannot create %s" % run)
    try:
        return Runner(exp, run).main()
    except (RecordError, LaunchError) as e:
        die(str(e))


def cmd_down(a):
    root, build, _ = paths()
    try:
        cl = str(validate.read_json(a.experiment, "experiment").get("cluster") or "")
    except (validate.ConfigError, AttributeError):
        die("cannot read experiment %s" % a.experiment)
    if not os.access(cl, os.R_OK):
        cl = os.path.join(root, cl)

    class E:
        pass
    E.tb, E.cluster, E.cname, E.build = os.path.join(build, "mlf-testbed"), cl, "", build
    return Testbed(E).down(quiet=False)


def cmd_rates(a):
    exp = load(a.experiment, check_programs=False)
    k = a.periods if a.periods is not None else int(float(exp.time_limit_s) / float(exp.period_s))
    most = min(validate.MAX_PERIODS, validate.MAX_SCHEDULE_ROWS // len(exp.hosts) - 1)
    if not 0 <= k <= most:  # docs/experiments.md "Ranges"
        die("rates: --periods: an integer in [0, %d] expected (%d hosts), got %d" % (most, len(exp.hosts), k))
    sys.stdout.write(schedule_lines(rate_schedule(exp, k)))
    return 0


def cmd_results(a):
    if not os.path.isdir(a.run):
        die("no run folder %s" % a.run)
    try:
        res = results.compute(a.run, float(a.target) if a.target is not None else None)
        results.write(a.run, res)
        plots.plots(a.run)
    except ValueError as e:  # RecordError too
        die(str(e))
    sys.stdout.write(results.summary(res))
    return 0


def cmd_links(a):
    if not os.path.isdir(a.run):
        die("no run folder %s" % a.run)
    try:
        lks = links.run_links(a.run)
    except RecordError as e:
        die(str(e))
    if not lks:
        die("%s: no system with run.json t0/t_end and network.tsv" % a.run)
    links.write(a.run, lks)
    if a.json:
        json.dump(lks, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    for name, lk in lks.items():
        rj = read_json(os.path.join(a.run, name, "run.json")) or {}
        sys.stdout.write(links.table(name, lk, rj.get("server") or ""))
    return 0


def cmd_table2(argv):
    return table2.main(argv, paths())


def cmd_check(a):
    exp = load(a.experiment or "/dev/null", a.systems)
    print("%s: %s" % (PROG, exp.summary_line()))
    for line in exp.defaults_lines():
        print("%s: default %s" % (PROG, line))
    return 0


def top_cluster(path):
    """(cluster config path, scheduler host) of PATH: an experiment (its "cluster") or a
    cluster config; dies with one line naming what is wrong."""
    root, _, _ = paths()
    try:
        doc = validate.read_json(path, "experiment or cluster config")
    except validate.ConfigError as e:
        die("top: %s" % e)
    if isinstance(doc, dict) and "hosts" not in doc and isinstance(doc.get("cluster"), str):
        cl = doc["cluster"]
        if not os.access(cl, os.R_OK):
            cl = os.path.join(root, cl)
        return top_cluster(cl)
    if not isinstance(doc, dict) or not isinstance(doc.get("hosts"), list):
        die("top: %s is neither an experiment (\"cluster\") nor a cluster config (\"hosts\")" % path)
    for h in doc["hosts"]:
        if isinstance(h, dict) and "scheduler" in (h.get("roles") or []):
            return path, str(h.get("name"))
    die("top: cluster %s has no host with role scheduler" % path)


def cmd_top(a):
    root, build, _ = paths()
    cl, host = top_cluster(a.experiment)
    argv = [os.path.join(root, "tools", "mlf-top"), "--cluster", cl, "--interval", str(a.interval)]
    argv += ["--once"] if a.once else []
    argv += ["--json"] if a.json else []
    tb = os.path.join(build, "mlf-testbed")
    if not os.access(tb, os.X_OK):
        die("top: %s not built" % tb)
    try:
        return subprocess.call([tb, "exec", cl, host] + argv)
    except KeyboardInterrupt:
        return 0


def cmd_preflight(a):
    """tools/mlf-cluster preflight CLUSTER (tools/mlfcluster/preflight.py)."""
    if not os.path.isfile(a.cluster):
        die("preflight: no cluster config %s" % a.cluster)
    with tempfile.TemporaryDirectory(prefix="mlf-preflight-") as d:
        return preflight.main(a.cluster, paths()[1], d, sys.stdout)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        sys.stderr.write(USAGE)
        return 2
    if argv[0] in ("-h", "--help", "help"):
        sys.stdout.write(USAGE)
        return 0
    cmds = {"run": cmd_run, "down": cmd_down, "rates": cmd_rates, "results": cmd_results, "check": cmd_check,
            "top": cmd_top, "links": cmd_links, "preflight": cmd_preflight}
    if argv[0] == "table2":
        return cmd_table2(argv[1:])
    if argv[0] not in cmds:
        die('unknown command "%s" (run, down, rates, results, links, table2, check, top, preflight)' % argv[0])
    p = Parser(prog=argv[0], add_help=True)
    command = None
    if argv[0] == "run" and "--" in argv:
        k = argv.index("--")
        argv, command = argv[:k], argv[k + 1:]
        if not command:
            die("run: nothing after -- (the worker command: -- python3 train.py ARGS)")
    if argv[0] == "run":
        p.add_argument("experiment")
        p.add_argument("--out")
        p.add_argument("--systems")
    elif argv[0] in ("down",):
        p.add_argument("experiment")
    elif argv[0] == "rates":
        p.add_argument("experiment")
        p.add_argument("--periods", type=int)
    elif argv[0] == "results":
        p.add_argument("run")
        p.add_argument("--target")
    elif argv[0] == "links":
        p.add_argument("run")
        p.add_argument("--json", action="store_true")
    elif argv[0] == "preflight":
        p.add_argument("cluster")
    elif argv[0] == "top":
        p.add_argument("experiment")
        p.add_argument("--interval", type=float, default=1.0)
        p.add_argument("--once", action="store_true")
        p.add_argument("--json", action="store_true")
    else:
        p.add_argument("experiment", nargs="?")
        p.add_argument("--systems")
    a = p.parse_args(argv[1:])
    if argv[0] == "run":
        a.command = command
    return cmds[argv[0]](a)
