#!/usr/bin/env python3
"""bench/copy_wait.py - sharded model copies: when may a copy start? (`make bench-copy-wait`)

Runs Table 2's C2-N1 cell (--cell to change it) with four shard servers (conf/exp-t2-shards4.json) for MLfabric-A under
mlf-scheduler's `--copy-wait updates` (the rule before 2026-11-26: a copy is planned after the
update legs in flight to its shard) and `--copy-wait learned` (the default: after the update and
aggregate legs, shifted by the shard's learned lateness), plus RR-Sync, seed by seed and
interleaved (seed 1: updates, learned, rr-sync; seed 2: ...), each run under the namespace lock.
Then prints, per setting, the median and min-max over the seeds of:
- time to the target accuracy (a miss counts as over the limit),
- the workers' get per iteration (pushes.jsonl get_s) and updates applied per second,
- retransmitted segments per completed transfer (the senders' dataplane logs),
- copies started more than 5 ms after their planned start (from the shard servers' dataplane logs:
  the command's arrival plus its "start in"), and the mean lateness of a pull's last copy
  (its completion at the worker against its planned end),
- the machine's CPU during the run (/proc/stat busy time over wall time, in cores).

usage: bench/copy_wait.py [--seeds N] [--time-limit S] [--out DIR] [--params FILE] [--cell C]
                          [--variant NAME=TREE:MODE ...]
       bench/copy_wait.py --report DIR [--variant ...]  (the table of a finished run)

--variant runs MLfabric-A with the build of another source tree (e.g. a checkout of an older
commit, built with `make`) under --copy-wait MODE, as row NAME; the default variants are
updates=.:updates and learned=.:learned (this tree). RR-Sync always runs from this tree.
"""
import argparse
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
from mlfcluster import cpu  # noqa: E402
from mlfcluster.records import read_json, read_jsonl  # noqa: E402

LOCK = "/tmp/mlf-netns.lock"
BASE = os.path.join(ROOT, "conf", "exp-t2-shards4.json")
MODES = ("updates", "learned")
# the swept settings of docs/results/staleness.md "Throughput against statistical efficiency"
# (same rule for both)
PARAMS = {"mlfabric-a": {"lr": 0.02, "momentum": 0.0}, "rr-sync": {"lr": 0.005, "momentum": 0.9}}
CMD_RE = re.compile(r"(\S+) INFO dataplane\[\w+\]: xfer (\w+): to \w+, \d+ bytes, start in (-?[\d.]+) ms")
RX_RE = re.compile(r"(\S+) INFO dataplane\[\w+\]: xfer (\w+) from \S+ complete")
TX_RE = re.compile(r"\S+ INFO dataplane\[\w+\]: xfer \w+ to \S+ complete: .* (\d+) retransmits")


def experiment(base, seed, system, mode, limit, params, label=None, cell="c2-n1"):
    x = dict(base)
    p = params[system]
    nw = 8
    c, n = cell.upper().split("-")
    x.update(name="cw-s%d-%s" % (seed, label or system), seed=seed, systems=[system], compute=c,
             network=n, lr=p["lr"], momentum=p["momentum"], lr_sync=round(nw * p["lr"], 10),
             time_limit_s=limit)
    if mode:
        x["scheduler_args"] = ["--copy-wait", mode]
    return x


def run(out, name, exp, tree=ROOT):
    ep = os.path.join(out, name + ".json")
    # a variant tree resolves conf/ against itself: name this tree's cluster file absolutely
    exp["cluster"] = os.path.join(ROOT, exp["cluster"])
    with open(ep, "w") as f:
        json.dump(exp, f, indent=1)
    c0, t0 = cpu.machine_ticks(), time.time()
    with open(os.path.join(out, name + ".out"), "w") as o:
        rc = subprocess.call(["flock", "-o", LOCK, os.path.join(tree, "tools", "mlf-cluster"), "run", ep,
                              "--out", os.path.join(out, name)], stdout=o, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL)
    c1, t1 = cpu.machine_ticks(), time.time()
    with open(os.path.join(out, name + ".cpu.json"), "w") as f:
        json.dump({"machine_cores": round(((c1 or 0) - (c0 or 0)) / cpu.HZ / (t1 - t0), 3), "wall_s": t1 - t0}, f)
    return rc


def copies(sysdir):
    """(fraction of copies started > 5 ms late, mean lateness s of a pull's last copy at its
    worker, retransmitted segments per completed transfer) from records/transfers.jsonl and the
    dataplanes' logs; Nones without them."""
    tp = os.path.join(sysdir, "records", "transfers.jsonl")
    if not os.path.isfile(tp):
        return None, None, None
    tr = list(read_jsonl(tp))
    cmd, rx, retx = {}, {}, []
    for f in glob.glob(os.path.join(sysdir, "logs", "dp-*.log")):
        for line in open(f, errors="replace"):
            m = TX_RE.match(line)
            if m:
                retx.append(int(m.group(1)))
                continue
            m = CMD_RE.match(line)
            if m:
                cmd[int(m.group(2), 16)] = float(m.group(1)) + max(float(m.group(3)), 0) / 1e3
                continue
            m = RX_RE.match(line)
            if m:
                rx[int(m.group(2), 16)] = float(m.group(1))
    late, n, pulls = 0, 0, {}
    for t in tr:
        if t.get("what") != "model":
            continue
        if t["xfer"] in cmd:
            n += 1
            late += cmd[t["xfer"]] - t["start"] > 0.005
        pulls.setdefault(t.get("pull"), []).append(t)
    lasts = []
    for cs in pulls.values():
        if all(c["xfer"] in rx for c in cs):
            lasts.append(max(rx[c["xfer"]] for c in cs) - max(c["end"] for c in cs))
    return ((late / n if n else None), (statistics.mean(lasts) if lasts else None),
            (sum(retx) / len(retx) if retx else None))


def summary(out, name, system, limit):
    d = os.path.join(out, name)
    try:
        r = read_json(os.path.join(d, "results.json"))["systems"][system]
    except (ValueError, KeyError, TypeError):
        return None
    s = {"t": r["time_to_target_s"] if r.get("reached") else float("inf"), "final": r.get("final_accuracy")}
    try:
        s["cores"] = read_json(os.path.join(out, name + ".cpu.json"))["machine_cores"]
    except (ValueError, KeyError, TypeError):
        s["cores"] = None
    if system == "mlfabric-a":
        sysdir = os.path.join(d, system)
        gets = []
        for p in glob.glob(os.path.join(sysdir, "records", "w*", "pushes.jsonl")):
            gets += [x.get("get_s") for x in read_jsonl(p)]
        gets = [g for g in gets if isinstance(g, (int, float))]
        s["get"] = statistics.mean(gets) if gets else None
        s["applied_s"] = r["applied"] / r["wall_s"] if r.get("wall_s") else None
        s["dropped"] = r.get("dropped_fraction")
        s["late_frac"], s["last_late"], s["retx"] = copies(sysdir)
    return s


def fmt(vals, f="%.1f"):
    v = [x for x in vals if x is not None]
    if not v:
        return "-"
    lo, hi, md = min(v), max(v), statistics.median(v)
    g = lambda x: ("> limit" if x == float("inf") else f % x)
    return "%s (%s - %s)" % (g(md), g(lo), g(hi))


def report(out, seeds, limit, variants):
    rows = [("mlfabric-a", v[0]) for v in variants] + [("rr-sync", None)]
    print("| system | variant | reached | time to target s, median (min-max) | get per iteration s | "
          "applied /s | dropped | copies started > 5 ms late | last copy of a pull, mean s after its planned end | "
          "retransmits per transfer | machine CPU cores |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    res = {}
    for system, mode in rows:
        ss = [summary(out, "s%d-%s" % (k, mode or system), system, limit) for k in range(1, seeds + 1)]
        ss = [s for s in ss if s]
        res[(system, mode)] = ss
        col = lambda k, f="%.3f": fmt([s.get(k) for s in ss], f)
        print("| %s | %s | %d/%d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            system, mode or "-", sum(s["t"] != float("inf") for s in ss), len(ss), fmt([s["t"] for s in ss]),
            col("get"), col("applied_s", "%.1f"), col("dropped", "%.2f"), col("late_frac", "%.3f"),
            col("last_late"), col("retx", "%.2f"), col("cores", "%.2f")))
    rr = [s["t"] for s in res[("rr-sync", None)]]
    for v in variants:
        a = [s["t"] for s in res[("mlfabric-a", v[0])]]
        if a and rr:
            print("MLfabric-A (%s: %s, --copy-wait %s) over RR-Sync: %.2fx (median RR-Sync / median MLfabric-A)" % (
                v[0], v[1], v[2], statistics.median(rr) / statistics.median(a)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--seeds", type=int, default=3, help="seeds 1..N (default 3)")
    ap.add_argument("--time-limit", type=float, default=150, help="per run, s (default 150)")
    ap.add_argument("--out", default=None, help="run folder (default runs/bench-copy-wait-<UTC time>)")
    ap.add_argument("--cell", default="c2-n1", help="Table 2 cell, e.g. c1-n1 (default c2-n1)")
    ap.add_argument("--params", default=None, help='{"mlfabric-a": {"lr", "momentum"}, "rr-sync": {...}}')
    ap.add_argument("--report", default=None, metavar="DIR", help="only print the table of a finished run")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=TREE:MODE",
                    help="an MLfabric-A row from another built source tree (repeatable)")
    a = ap.parse_args()
    if a.seeds < 1 or a.time_limit <= 0:
        ap.error("--seeds must be >= 1 and --time-limit > 0")
    if not re.match(r"^c[123]-n[123]$", a.cell):
        ap.error("--cell %s: expected c1-n1 .. c3-n3" % a.cell)
    variants = []
    for v in a.variant or ["%s=%s:%s" % (m, ROOT, m) for m in MODES]:
        m = re.match(r"^([A-Za-z0-9_.-]+)=(.+):(updates|legs|learned)$", v)
        if not m:
            ap.error("--variant %s: expected NAME=TREE:MODE (MODE updates, legs or learned)" % v)
        tree = os.path.abspath(m.group(2))
        if not os.access(os.path.join(tree, "tools", "mlf-cluster"), os.X_OK) or not os.path.isfile(
                os.path.join(tree, "build", "mlf-scheduler")):
            ap.error("--variant %s: %s has no tools/mlf-cluster or build/mlf-scheduler (run make there)" % (v, tree))
        variants.append((m.group(1), tree, m.group(3)))
    if len({v[0] for v in variants}) != len(variants) or "rr-sync" in {v[0] for v in variants}:
        ap.error("--variant: names must be distinct and not rr-sync")
    if a.report:
        report(a.report, a.seeds, a.time_limit, variants)
        return 0
    params = dict(PARAMS)
    if a.params:
        try:
            params.update(json.load(open(a.params)))
        except (OSError, ValueError) as e:
            ap.error("--params %s: %s" % (a.params, e))
    out = a.out or os.path.join(ROOT, "runs", time.strftime("bench-copy-wait-%Y%m%dT%H%M%SZ", time.gmtime()))
    os.makedirs(out, exist_ok=True)
    base = json.load(open(BASE))
    plan = []
    for k in range(1, a.seeds + 1):
        plan += [(k, "mlfabric-a", v) for v in variants] + [(k, "rr-sync", None)]
    for i, (k, system, v) in enumerate(plan):
        name = "s%d-%s" % (k, v[0] if v else system)
        print("[%d/%d] %s %s seed %d ..." % (i + 1, len(plan), system,
                                            "%s (%s, --copy-wait %s)" % v if v else "", k), flush=True)
        rc = run(out, name, experiment(base, k, system, v[2] if v else None, a.time_limit, params,
                                       v[0] if v else None, a.cell), v[1] if v else ROOT)
        s = summary(out, name, system, a.time_limit)
        print("    exit %d: %s" % (rc, "time to target %s s" % (s["t"] if s else "?")), flush=True)
    report(out, a.seeds, a.time_limit, variants)
    print("run folder: %s" % out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
