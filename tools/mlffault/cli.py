"""mlf-fault's command line: list, run, check (see USAGE)."""
import glob
import json
import math
import os
import subprocess
import sys
import time

from . import soak
from mlfcluster.records import RecordError

from .checks import Report, check_run, given

PROG = "mlf-fault"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))

USAGE = """\
Usage: tools/mlf-fault list
       tools/mlf-fault run NAME [--out DIR] [--quick] [--target A] [--time-limit S] [--cluster FILE]
       tools/mlf-fault check RUN_DIR
       tools/mlf-fault soak [--duration S] [--seed N] [--target A] [--out DIR]

  list    the scenarios (conf/fault-*.json): name, faults, replication
  run     run conf/fault-NAME.json with tools/mlf-cluster (run folder DIR, default
          runs/fault-NAME-<UTC time>/), then check it as below
  check   check a run folder of a fault scenario:
          1. the target accuracy is reached (results.json);
          2. the true divergence of the last server/replica snapshot pair taken before the
             first fault (build/mlf-verify on that pair) is at most the sum of the norms of
             the updates the server applied between the two versions written (+1e-4), and
             the planner's divergence bound of every batch before it is <= div_max; after a
             kill-scheduler every kept pair is checked the same way (docs/replication.md
             "Decisions and limits");
          3. every pushed update (records/<worker>/pushes.jsonl) is applied on the surviving
             model (applied.jsonl of the server that ends the run: the old server's up to the
             version the replica was promoted at plus the promoted replica's, or the
             restarted server plus the checkpoint's part of the old server's), lost with the
             failure, dropped (records/updates.jsonl), or pushed within 2 s of the stop (in
             flight); the counts are printed and unaccounted ids named;
          4. after a kill-server: the run recovered (recovery time printed).
  soak    train for S s (default 1200) under a seeded random fault every 20-40 s (kill and
          restart of a worker or an aggregator, kill of the scheduler (restarted), link cuts,
          loss bursts, one server kill with fail-over and a new replica; base conf/soak.json),
          then check: final accuracy >= the soak target, every push accounted for, divergence
          before every fault up to the server kill as in check 2, every restarted scheduler
          planned, every daemon's RSS at the end within 20% of its value after 60 s
          (docs/experiments.md "Soak"; make soak)
  --quick        a short setting for tests: target 0.75, time limit 60 s
  --cluster FILE run on the cluster config FILE instead of the scenario's (for example one whose
                 "launch" reaches real hosts over ssh, docs/deploy.md); its hosts must have the
                 scenario's host names and roles
  --target A     override the target accuracy; --time-limit S: the time limit
Exit status: 0 every check holds, 1 a check failed (named), 2 bad input or the run failed to start.
Needs root for run (network namespaces). Environment: MLF_BUILD (programs, default build/),
MLF_VERIFY (default build/mlf-verify), MLF_CLUSTER (default tools/mlf-cluster).
"""


class Die(Exception):
    """Bad input: the message is printed as "mlf-fault: MESSAGE" and the exit status is 2."""


def paths():
    build = os.environ.get("MLF_BUILD") or os.path.join(ROOT, "build")
    return (os.environ.get("MLF_CLUSTER") or os.path.join(ROOT, "tools", "mlf-cluster"),
            os.environ.get("MLF_VERIFY") or os.path.join(build, "mlf-verify"))


def scenario_row(path):
    """list's columns of the scenario PATH: name, faults, replication."""
    try:
        with open(path, encoding="utf-8") as f:
            sc = json.load(f)
        faults = []
        for x in sc["faults"]:
            faults.append(f"{x.get('kind')}{' ' + str(x['host']) if given(x.get('host')) else ''}"
                          f" at {x.get('at_s')} s"
                          f"{' for ' + str(x['duration_s']) + ' s' if given(x.get('duration_s')) else ''}"
                          f"{' loss ' + str(x['loss']) if given(x.get('loss')) else ''}")
        repl = sc.get("replication") or {}
        mode = repl.get("mode")
        div = f" div_max {repl['div_max']}" if repl.get("div_max") is not None else ""
        name = os.path.basename(path)[:-len(".json")]
        return [name[len("fault-"):] if name.startswith("fault-") else name, ", ".join(faults),
                f"replication {mode if given(mode) else 'none'}{div}"]
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        raise Die(f"{path}: malformed scenario") from None


def cmd_list():
    rows = [scenario_row(f) for f in sorted(glob.glob(os.path.join(ROOT, "conf", "fault-*.json")))
            if os.path.isfile(f)]
    widths = [max((len(r[i]) for r in rows), default=0) for i in range(3)]
    for r in rows:  # as column -t: columns two spaces apart, the last one not padded
        print("  ".join(c.ljust(w) for c, w in zip(r[:-1], widths)) + "  " + r[-1])
    return 0


def cmd_check(args):
    run = args[0] if args else ""
    if not run:
        raise Die("check: run folder expected")
    if not os.path.isdir(run):
        raise Die(f"check: no run folder {run}")
    for f in ("results.json", "experiment.json"):
        if not os.path.isfile(os.path.join(run, f)):
            raise Die(f"{run}: no {f}")
    verify = paths()[1]
    if not os.access(verify, os.X_OK):
        raise Die(f"missing program {verify} (run make first)")
    rep = Report(sys.stdout)
    try:
        name = check_run(rep, run, verify)
    except RecordError as e:
        raise Die(str(e)) from None
    if rep.fails == 0:
        print(f"{PROG}: {name}: every check holds")
        return 0
    print(f"{PROG}: {name}: {rep.fails} check(s) failed")
    return 1


def tonumber(s, path):
    try:
        v = json.loads(s)
    except ValueError:
        v = None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise Die(f"{path}: malformed scenario")
    return v


NEEDS = {"--out": "--out needs a folder", "--target": "--target needs a value",
         "--time-limit": "--time-limit needs seconds", "--cluster": "--cluster needs a cluster config"}


def cmd_run(args):
    opt, name, quick, it = {}, "", False, iter(args)
    for a in it:
        if a in NEEDS:
            opt[a] = next(it, "")
            if not opt[a]:
                raise Die(NEEDS[a])
        elif a == "--quick":
            quick = True
        elif a in ("-h", "--help"):
            print(USAGE, end="")
            return 0
        elif a.startswith("-"):
            raise Die(f"unknown option {a}")
        elif name:
            raise Die("one scenario name expected")
        else:
            name = a
    out, target, tlimit, cluster = (opt.get(k, "") for k in NEEDS)
    if not name:
        raise Die("run: scenario name expected (mlf-fault list)")
    src = os.path.join(ROOT, "conf", f"fault-{name}.json")
    if not os.access(src, os.R_OK):
        raise Die(f'unknown scenario "{name}" (no {src}; mlf-fault list)')
    if os.geteuid() != 0:
        raise Die("run needs root (network namespaces)")
    if quick:
        target, tlimit = target or "0.75", tlimit or "60"
    out = out or os.path.join(ROOT, "runs", f"fault-{name}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}")
    try:
        os.makedirs(out, exist_ok=True)
    except OSError:
        raise Die(f"cannot create {out}") from None
    try:
        with open(src, encoding="utf-8") as f:
            sc = json.load(f)
        if target:
            sc["target_accuracy"] = tonumber(target, src)
        if tlimit:
            sc["time_limit_s"] = tonumber(tlimit, src)
        if cluster:
            sc["cluster"] = os.path.abspath(cluster)
        if not sc["cluster"].startswith("/"):
            sc["cluster"] = ROOT + "/" + sc["cluster"]
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        raise Die(f"{src}: malformed scenario") from None
    exp = os.path.join(out, "scenario.json")
    with open(exp, "w", encoding="utf-8") as f:
        f.write(json.dumps(sc, indent=2, ensure_ascii=False) + "\n")
    sys.stdout.flush()
    rc = run_cluster([paths()[0], "run", exp, "--out", out])
    if not os.path.isfile(os.path.join(out, "results.json")):
        print(f"{PROG}: {name}: the run produced no results (status {rc}, {out}/run.log)", file=sys.stderr)
        return 2
    return cmd_check([out])


def cmd_soak(args):
    opt, it = {"--duration": "1200", "--seed": "1", "--out": "", "--target": "0.80"}, iter(args)
    for a in it:
        if a in ("-h", "--help"):
            print(USAGE, end="")
            return 0
        if a not in opt:
            raise Die(f"soak: unknown option {a}")
        opt[a] = next(it, "")
        if not opt[a]:
            raise Die(f"soak: {a} needs a value")
    try:
        duration, seed, target = float(opt["--duration"]), int(opt["--seed"]), float(opt["--target"])
    except ValueError:
        raise Die("soak: --duration (seconds), --seed (an integer) and --target must be numbers") from None
    if duration < soak.FIRST_S + soak.EVERY_MAX + soak.END_QUIET_S:
        raise Die(f"soak: --duration {opt['--duration']}: at least "
                  f"{soak.FIRST_S + soak.EVERY_MAX + soak.END_QUIET_S} s for one fault")
    if os.geteuid() != 0:
        raise Die("soak needs root (network namespaces)")
    out = opt["--out"] or os.path.join(ROOT, "runs", f"soak-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}")
    os.makedirs(out, exist_ok=True)
    try:
        x = soak.soak_experiment(ROOT, duration, seed)
    except (OSError, ValueError, TypeError, KeyError) as e:
        raise Die(f"conf/soak.json: malformed ({e})") from None
    if not x["cluster"].startswith("/"):
        x["cluster"] = ROOT + "/" + x["cluster"]
    exp = os.path.join(out, "soak.json")
    with open(exp, "w", encoding="utf-8") as f:
        f.write(json.dumps(x, indent=2) + "\n")
    print(f"{PROG}: soak of {duration:.0f} s, seed {seed}, {len(x['faults'])} faults "
          f"({', '.join(sorted(set(f['kind'] for f in x['faults'])))}); experiment {exp}")
    sys.stdout.flush()
    rc = run_cluster([paths()[0], "run", exp, "--out", out])
    if not os.path.isfile(os.path.join(out, "results.json")):
        print(f"{PROG}: soak: the run produced no results (status {rc}, {out}/run.log)", file=sys.stderr)
        return 2
    rep = Report(sys.stdout)
    try:
        soak.check_soak(rep, out, "mlfabric-a", x, paths()[1], target)
    except RecordError as e:
        raise Die(str(e)) from None
    print(f"{PROG}: soak: " + ("every check holds" if rep.fails == 0 else f"{rep.fails} check(s) failed"))
    return 0 if rep.fails == 0 else 1


def run_cluster(argv):
    """Runs tools/mlf-cluster in the foreground and returns its status; on Ctrl-C (which it
    gets too) waits for it to tear down."""
    try:
        p = subprocess.Popen(argv)
    except OSError as e:
        print(f"{PROG}: {argv[0]}: {e.strerror}", file=sys.stderr)
        return 127 if isinstance(e, FileNotFoundError) else 126
    while True:
        try:
            rc = p.wait()
            return 128 - rc if rc < 0 else rc
        except KeyboardInterrupt:
            continue


def main(argv):
    cmd, args = (argv[0], argv[1:]) if argv else ("", [])
    try:
        if cmd == "list":
            return cmd_list()
        if cmd == "run":
            return cmd_run(args)
        if cmd == "check":
            return cmd_check(args)
        if cmd == "soak":
            return cmd_soak(args)
        if cmd in ("-h", "--help", "help"):
            print(USAGE, end="")
            return 0
        if cmd == "":
            print(USAGE, end="", file=sys.stderr)
            return 2
        raise Die(f'unknown command "{cmd}" (list, run, check, soak)')
    except Die as e:
        sys.stdout.flush()
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
