"""`tools/mlf-cluster table2`: the paper's Table 2 grid (§7) on the emulated cluster.

For every cell (compute C1-C3 x network N1-N3), seed and system, one `tools/mlf-cluster run` of
the grid's base experiment (conf/table2.json "base") with that cell's settings, that seed and the
system's learning rate and momentum ("params"), each under the namespace lock (flock -o
/tmp/mlf-netns.lock, held only while the run runs). Then:
- table2.md: per system, the speed-up over RR-Sync per cell in the paper's form (median over the
  seeds of RR-Sync's time to target / the system's, with the min-max of the per-seed ratios), the
  same for MLfabric-A over Async, and a detail table (per cell and system: seeds that reached the
  target, median and min-max time, per-seed times, machine CPU during the run, the busiest link,
  the server links' and the worker links' busy fractions from links.py);
- acc-<cell>.png (C1-N1, C2-N1 when run): test accuracy vs time, one curve per system and seed;
- links-<cell>.png: per system, the busy fraction of the server's uplink and downlink and the
  median of the worker links'.
A seed that misses the target within the time limit (or whose run failed) counts as over the
limit: it is in the median and the max, shown "> L"; never dropped.

The learning rate `lr` of "params" is the step per worker gradient: the asynchronous systems'
update is -lr x g; RR-Sync's averaged gradient of N workers gets lr_sync = N x lr (the same step
per gradient), MLfabric-S sums N updates of -lr x g. `--sweep` runs every (lr, momentum) of the
"sweep" grid for every system in the sweep's cell and seeds and picks, the same way for each
system, the pair with the lowest median time to target (misses over the limit; ties: the higher
median final accuracy); it writes OUT/params.json ("params" for --params) and OUT/sweep.md.
"""
import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time

from . import cpu, results
from .env import load
from .plots import gnuplot
from .records import read_json, read_jsonl

PROG = "mlf-cluster table2"
CELLS = ["c%d-n%d" % (c, n) for c in (1, 2, 3) for n in (1, 2, 3)]
PLOT_CELLS = ["c1-n1", "c2-n1"]
LOCK = "/tmp/mlf-netns.lock"
INF = float("inf")
SYSTEM_ORDER = ["mlfabric-a", "async", "rr-sync", "mlfabric-s"]


class GridError(Exception):
    """A bad grid knob or grid file: one line."""


# ---- the grid ----------------------------------------------------------------------------

def parse_cells(text):
    cells = [c.strip().lower() for c in text.split(",") if c.strip()]
    if not cells:
        raise GridError("cells: at least one cell expected (c1-n1 .. c3-n3)")
    for c in cells:
        if c not in CELLS:
            raise GridError('unknown cell "%s" (c1-n1 .. c3-n3: compute C1-C3, network N1-N3)' % c)
    return cells


def parse_seeds(v):
    try:
        n = int(str(v))
    except ValueError:
        n = 0
    if n < 1 or str(v).strip() != str(n):
        raise GridError("seeds: a whole number >= 1 expected, not \"%s\"" % v)
    return n


def parse_systems(text):
    ss = [s.strip() for s in text.split(",") if s.strip()]
    if not ss:
        raise GridError("systems: at least one system expected")
    for s in ss:
        if s not in SYSTEM_ORDER:
            raise GridError('unknown system "%s" (table2 runs %s)' % (s, ", ".join(SYSTEM_ORDER)))
    return ss


def parse_limit(v):
    try:
        x = float(v)
    except ValueError:
        x = 0
    if not x > 0:
        raise GridError("time limit: a positive number of seconds expected, not \"%s\"" % v)
    return x


def check_params(params, systems, where):
    if not isinstance(params, dict):
        raise GridError("%s: \"params\" must be an object {system: {lr, momentum}}" % where)
    for s in systems:
        p = params.get(s)
        if not isinstance(p, dict):
            raise GridError("%s: params: no entry for system %s" % (where, s))
        for k in ("lr", "momentum"):
            v = p.get(k)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0 or (k == "lr" and v == 0):
                raise GridError("%s: params.%s.%s: a number expected (lr > 0, momentum >= 0)" % (where, s, k))
    return params


def load_grid(path):
    try:
        with open(path) as f:
            g = json.load(f)
    except OSError:
        raise GridError("cannot read grid file %s" % path)
    except ValueError as e:
        raise GridError("%s: not JSON (%s)" % (path, e))
    if not isinstance(g, dict) or not isinstance(g.get("base"), str):
        raise GridError('%s: an object with "base" (the experiment file) expected' % path)
    g.setdefault("cells", CELLS)
    g.setdefault("systems", SYSTEM_ORDER)
    g.setdefault("seeds", 3)
    parse_cells(",".join(g["cells"]))
    parse_systems(",".join(g["systems"]))
    parse_seeds(g["seeds"])
    return g


def cell_settings(cell):
    """("C2", "N1") of "c2-n1"."""
    c, n = cell.upper().split("-")
    return c, n


def experiment(base, cell, seed, system, params, nw, time_limit=None):
    """The experiment dict of one run: BASE with the cell's settings, the seed, one system and its
    lr / momentum (lr_sync = NW x lr)."""
    c, n = cell_settings(cell)
    p = params[system]
    x = dict(base)
    x.update(name="t2-%s-s%d-%s" % (cell, seed, system), compute=c, network=n, seed=seed, systems=[system],
             lr=p["lr"], momentum=p["momentum"], lr_sync=round(nw * p["lr"], 10))
    if time_limit:
        x["time_limit_s"] = time_limit
    return x


# ---- numbers -----------------------------------------------------------------------------

def med(vals):
    """Median of times where a miss is INF (the middle value; an even count averages the two)."""
    if not vals:
        return None
    s = sorted(vals)
    m = len(s) // 2
    if len(s) % 2:
        return s[m]
    a, b = s[m - 1], s[m]
    return INF if INF in (a, b) else (a + b) / 2


def ratio(base, t):
    """(kind, value) of BASE / T where a miss is INF: ("=", r), (">", lower bound: only BASE
    missed, bounded with LIMIT by the caller), ("<", ...), ("?", None) both missed."""
    if base is None or t is None:
        return ("?", None)
    if base == INF and t == INF:
        return ("?", None)
    if base == INF:
        return (">", t)
    if t == INF:
        return ("<", base)
    return ("=", base / t if t > 0 else None)


def ratio_text(kind_val, limit):
    k, v = kind_val
    if k == "=":
        return "-" if v is None else "%.2fx" % v
    if k == ">":
        return "> %.2fx" % (limit / v) if v else "?"
    if k == "<":
        return "< %.2fx" % (v / limit)
    return "?"


def ratio_num(kind_val, limit):
    """A number for ordering ratios: the bound itself for > and <."""
    k, v = kind_val
    if k == "=":
        return v
    if k == ">":
        return limit / v if v else None
    if k == "<":
        return v / limit
    return None


def t_text(t, limit):
    if t is None:
        return "-"
    return "> %g" % limit if t == INF else "%.1f" % t


def speedup(base_times, times, limit):
    """Speed-up of a system over a baseline in a cell: the ratio of the medians, and the min-max
    of the per-seed ratios (seeds paired: same seed, same rate schedule and stragglers).
    BASE_TIMES, TIMES: {seed: time or INF}. Returns (text, median ratio number or None)."""
    seeds = sorted(set(base_times) & set(times))
    if not seeds:
        return "-", None
    m = ratio(med([base_times[s] for s in seeds]), med([times[s] for s in seeds]))
    per = [ratio(base_times[s], times[s]) for s in seeds]
    nums = [(ratio_num(r, limit), r) for r in per if ratio_num(r, limit) is not None]
    text = ratio_text(m, limit)
    if len(seeds) > 1 and nums:
        lo, hi = min(nums, key=lambda x: x[0])[1], max(nums, key=lambda x: x[0])[1]
        text += " (%s-%s)" % (ratio_text(lo, limit), ratio_text(hi, limit))
    return text, ratio_num(m, limit)


# ---- collecting results -------------------------------------------------------------------

def run_name(cell, seed, system):
    return "%s-s%d-%s" % (cell, seed, system)


def collect(out, cells, seeds, systems):
    """{(cell, system): {seed: rec}} where rec = {"t": time or INF, "reached", "final", "cpu",
    "links", "failed", "limit"} from OUT/<cell>-s<seed>-<system>/results.json (a missing or
    failed run is a miss with failed=True)."""
    data = {}
    for cell in cells:
        for sys_ in systems:
            for seed in range(1, seeds + 1):
                rd = os.path.join(out, run_name(cell, seed, sys_))
                r = read_json(os.path.join(rd, "results.json"))
                v = (r or {}).get("systems", {}).get(sys_) if isinstance(r, dict) else None
                lim = ((r or {}).get("experiment") or {}).get("time_limit_s") if isinstance(r, dict) else None
                wc = read_json(os.path.join(out, run_name(cell, seed, sys_) + ".cpu.json"))
                if not os.path.isdir(rd):
                    continue
                rec = {"failed": v is None or v.get("stop_reason") not in ("target", "time_limit", "rr-sync_exited"),
                       "reached": bool(v and v.get("reached")), "limit": lim,
                       "final": v.get("final_accuracy") if v else None,
                       "cpu": (v or {}).get("cpu"), "links": ((v or {}).get("links") or {}).get("verdict"),
                       "run_cpu": wc, "stop": (v or {}).get("stop_reason"),
                       "applied": (v or {}).get("applied"), "dropped_fraction": (v or {}).get("dropped_fraction"),
                       "wall": (v or {}).get("wall_s"), "pushed": (v or {}).get("pushed"),
                       "sync_it": (v or {}).get("steady_iteration_s")}
                rec["t"] = v["time_to_target_s"] if v and v.get("reached") else INF
                data.setdefault((cell, sys_), {})[seed] = rec
    return data


def pct(v):
    return "-" if v is None else "%.0f%%" % (100 * v)


def span(vals, fmt):
    vals = [v for v in vals if v is not None]
    if not vals:
        return "-"
    m = statistics.median(vals)
    return (fmt % m) + (" (%s-%s)" % (fmt % min(vals), fmt % max(vals)) if len(vals) > 1 else "")


def build_table(data, cells, seeds, systems, limit):
    """The markdown of table2.md (see the module doc)."""
    lines = []
    present_cells = [c for c in CELLS if c in cells]
    rows = sorted({c.split("-")[0] for c in present_cells})
    cols = sorted({c.split("-")[1] for c in present_cells})

    def times(cell, s):
        return {seed: r["t"] for seed, r in data.get((cell, s), {}).items()}

    def grid(title, sys_, base):
        if sys_ not in systems or base not in systems:
            return
        lines.append("%s (median over seeds; min-max of the per-seed ratios):" % title)
        lines.append("")
        lines.append("| | " + " | ".join(n.upper() for n in cols) + " |")
        lines.append("|---|" + "---|" * len(cols))
        for c in rows:
            cellv = []
            for n in cols:
                cell = "%s-%s" % (c, n)
                cellv.append(speedup(times(cell, base), times(cell, sys_), limit)[0] if cell in present_cells else "")
            lines.append("| %s | %s |" % (c.upper(), " | ".join(cellv)))
        lines.append("")

    grid("Speed-up of MLfabric-A over RR-Sync (RR-Sync time / MLfabric-A time; paper Table 2: 1.23x-2.96x)",
         "mlfabric-a", "rr-sync")
    grid("Speed-up of MLfabric-A over Async (Async time / MLfabric-A time)", "mlfabric-a", "async")
    grid("Speed-up of Async over RR-Sync", "async", "rr-sync")
    grid("Speed-up of MLfabric-S over RR-Sync (paper §7: RR-Sync 1.2-2x faster except C2-N1, where "
         "MLfabric-S is 16% faster)", "mlfabric-s", "rr-sync")
    lines.append("Per cell and system (time to target in s from the workers' start, a miss counts as "
                 "\"> limit\"; CPU = the machine's busy cores during the run, from /proc/stat; links = busy "
                 "fraction of the run, median over seeds, from the switch's byte counters: server uplink / "
                 "downlink, the worker links' median, the busiest link of seed 1):")
    lines.append("")
    lines.append("| cell | system | reached | median s | min-max s | per seed s | final accuracy | "
                 "CPU cores | dataplanes cores | server up / down busy | worker links busy | busiest link |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for cell in present_cells:
        for s in [x for x in SYSTEM_ORDER if x in systems]:
            recs = data.get((cell, s), {})
            if not recs:
                lines.append("| %s | %s | not run | | | | | | | | | |" % (cell.upper(), s))
                continue
            ts = [recs[k]["t"] for k in sorted(recs)]
            lim = max([r["limit"] for r in recs.values() if r["limit"]] or [limit])
            per = ", ".join(t_text(recs[k]["t"], lim) + (" (run failed: %s)" % recs[k]["stop"]
                                                         if recs[k]["failed"] else "") for k in sorted(recs))
            mc = [(r["cpu"] or {}).get("machine_cores") for r in recs.values()]
            dp = [((r["cpu"] or {}).get("groups") or {}).get("dataplanes") for r in recs.values()]
            lk = [r["links"] for r in recs.values() if r["links"]]
            first_lk = recs[min(recs)]["links"] or {}
            su = [l["server_up"] for l in lk]
            sd = [l["server_down"] for l in lk]
            wm = [l["workers_busy_median"] for l in lk if l["workers_busy_median"] is not None]
            lines.append("| %s | %s | %d/%d | %s | %s - %s | %s | %s | %s | %s | %s / %s | %s | %s |" % (
                cell.upper(), s, sum(1 for r in recs.values() if r["reached"]), len(recs),
                t_text(med(ts), lim), t_text(min(ts), lim), t_text(max(ts), lim), per,
                " ".join("%.3f" % recs[k]["final"] if recs[k]["final"] is not None else "-" for k in sorted(recs)),
                span(mc, "%.2f"), span(dp, "%.2f"),
                pct(statistics.median(su)) if su else "-", pct(statistics.median(sd)) if sd else "-",
                pct(statistics.median(wm)) if wm else "-", first_lk.get("busiest") or "-"))
    lines.append("")
    lines += efficiency_lines(data, present_cells, systems)
    lines += sync_iteration_lines(data, present_cells, systems)
    return "\n".join(lines) + "\n"


def sync_iteration_lines(data, present_cells, systems):
    """§7.2's measure (the time to complete 5 epochs): per cell, MLfabric-S's and RR-Sync's seconds
    per synchronous iteration after the first 5 (results.steady_iteration_s), median (min-max) over
    the seeds that have it, every seed whether it reached the target or not, and RR-Sync's /
    MLfabric-S's (median; min-max of the per-seed ratios). [] unless both systems ran."""
    if "mlfabric-s" not in systems or "rr-sync" not in systems:
        return []
    rows = []
    for cell in present_cells:
        its = {s: {k: r.get("sync_it") for k, r in data.get((cell, s), {}).items() if r.get("sync_it")}
               for s in ("mlfabric-s", "rr-sync")}
        if not its["mlfabric-s"] or not its["rr-sync"]:
            continue
        per = [its["rr-sync"][k] / its["mlfabric-s"][k] for k in sorted(its["mlfabric-s"]) if k in its["rr-sync"]]
        col = ["%.3f (%.3f-%.3f)" % (statistics.median(v.values()), min(v.values()), max(v.values()))
               for v in (its["mlfabric-s"], its["rr-sync"])]
        ratio = statistics.median(its["rr-sync"].values()) / statistics.median(its["mlfabric-s"].values())
        rows.append("| %s | %s | %s | %.2fx (%s) |" % (
            cell.upper(), col[0], col[1], ratio, "%.2fx-%.2fx" % (min(per), max(per)) if per else "-"))
    if not rows:
        return []
    return ["Seconds per synchronous iteration after the first 5 (the paper's §7.2 compares MLfabric-S "
            "and RR-Sync by the time to complete 5 epochs: RR-Sync 1.2-2x faster except C2-N1, where "
            "MLfabric-S is 16% faster; median (min-max) over seeds; the ratio is RR-Sync's / MLfabric-S's, "
            "with the min-max of the per-seed ratios):", "",
            "| cell | MLfabric-S s / iteration | RR-Sync s / iteration | MLfabric-S speed-up |",
            "|---|---|---|---|"] + rows + [""]


def efficiency_lines(data, present_cells, systems):
    """Time to target = gradients to target / gradients per second (docs/results/staleness.md
    "Throughput against statistical efficiency"): per cell and system,
    the medians over the seeds that reached the target of the worker gradients computed and
    applied per second of the run, the fraction dropped, and the gradients applied when the target
    was reached (the run stops there; RR-Sync applies workers x iterations), each also as a ratio
    to RR-Sync's. speed-up over RR-Sync = (applied/s ratio) / (gradients-to-target ratio)."""
    rows = []
    for cell in present_cells:
        base = None
        for s in ["rr-sync"] + [x for x in SYSTEM_ORDER if x in systems and x != "rr-sync"]:
            recs = [r for r in data.get((cell, s), {}).values()
                    if r["reached"] and r.get("wall") and r.get("applied")]
            if s not in systems or not recs:
                continue
            app_s = statistics.median(r["applied"] / r["wall"] for r in recs)
            comp_s = statistics.median(((r.get("pushed") or r["applied"]) / r["wall"]) for r in recs)
            grads = statistics.median(r["applied"] for r in recs)
            drop = statistics.median((r.get("dropped_fraction") or 0) for r in recs)
            if s == "rr-sync":
                base = (app_s, grads)
            rr = ("%.2fx | %.2fx | %.2fx" % (app_s / base[0], grads / base[1], (app_s / base[0]) / (grads / base[1]))
                  if base else "- | - | -")
            rows.append("| %s | %s | %d | %.1f | %.1f | %.0f%% | %.0f | %s |" % (
                cell.upper(), s, len(recs), comp_s, app_s, 100 * drop, grads, rr))
    if not rows:
        return []
    return ["Throughput against statistical efficiency (time to target = gradients to target / gradients "
            "applied per second; medians over the seeds that reached the target; a gradient is one worker's "
            "mini-batch gradient, RR-Sync applies workers x iterations; the run stops at the target, so "
            "gradients to target are the applied count at the stop; `make bench-sgd-delay` measures the "
            "gradients ratio without a network):", "",
            "| cell | system | seeds | gradients computed /s | applied /s | dropped | gradients to target | "
            "applied /s over RR-Sync | gradients over RR-Sync | predicted speed-up |",
            "|---|---|---|---|---|---|---|---|---|---|"] + rows + [""]


# ---- plots --------------------------------------------------------------------------------

def plots(out, data, cells, systems):
    pd = os.path.join(out, "plot")
    os.makedirs(pd, exist_ok=True)
    glog = os.path.join(pd, "gnuplot.log")
    made = []
    colors = {"mlfabric-a": 1, "async": 2, "rr-sync": 3, "mlfabric-s": 4}
    for cell in [c for c in PLOT_CELLS if c in cells]:
        curves = []
        for s in [x for x in SYSTEM_ORDER if x in systems]:
            for seed in sorted(data.get((cell, s), {})):
                sysdir = os.path.join(out, run_name(cell, seed, s), s)
                rec = os.path.join(sysdir, "records")
                t0 = (read_json(os.path.join(sysdir, "run.json")) or {}).get("t0") or 0
                accs = results.acc_files(rec) if os.path.isdir(rec) else []
                if not accs:
                    continue
                dat = os.path.join(pd, "acc-%s-%s-s%d.dat" % (cell, s, seed))
                with open(dat, "w") as f:
                    for a in read_jsonl(accs[0]):
                        if a.get("t") is not None and a.get("accuracy") is not None:
                            f.write("%.3f %s\n" % (a["t"] - t0, a["accuracy"]))
                curves.append("'%s' using 1:2 with lines lc %d dt %d lw 2 title '%s seed %d'"
                              % (dat, colors.get(s, 5), seed, s, seed))
        if curves:
            png = os.path.join(out, "acc-%s.png" % cell)
            gnuplot("set terminal pngcairo size 1000,600\nset output '%s'\n"
                    "set title 'Test accuracy vs time, %s (one curve per system and seed)'\n"
                    "set xlabel 'time since the workers started (s)'; set ylabel 'test accuracy'; set xrange [0:*]\n"
                    "set key bottom right; set grid\nplot %s\n" % (png, cell.upper(), ", ".join(curves)), glog)
            made.append(png)
        # links: per system, server up / down busy and the worker links' median (medians over seeds)
        dat = os.path.join(pd, "links-%s.dat" % cell)
        n = 0
        with open(dat, "w") as f:
            for s in [x for x in SYSTEM_ORDER if x in systems]:
                lk = [r["links"] for r in data.get((cell, s), {}).values() if r["links"]]
                if not lk:
                    continue
                m = lambda k: statistics.median([l[k] for l in lk if l[k] is not None] or [0])
                f.write("%s %.4f %.4f %.4f\n" % (s, m("server_up"), m("server_down"), m("workers_busy_median")))
                n += 1
        if n:
            png = os.path.join(out, "links-%s.png" % cell)
            gnuplot("set terminal pngcairo size 900,500\nset output '%s'\n"
                    "set title 'Busy fraction of the run per link, %s (switch byte counters, median over seeds)'\n"
                    "set style data histograms; set style histogram clustered gap 1; set style fill solid 0.6\n"
                    "set yrange [0:1.05]; set ylabel 'busy fraction'; set grid y; set key top right\n"
                    "plot '%s' using 2:xtic(1) title 'server uplink', '' using 3 title 'server downlink', "
                    "'' using 4 title 'worker links (median)'\n" % (png, cell.upper(), dat), glog)
            made.append(png)
    return made


# ---- running ------------------------------------------------------------------------------

def fmt_dur(s):
    s = int(s)
    return "%dh%02dm" % (s // 3600, s % 3600 // 60) if s >= 3600 else "%dm%02ds" % (s // 60, s % 60)


def run_one(root, out, exp, name, lock, log):
    """One tools/mlf-cluster run of EXP (a dict) into OUT/NAME, under the lock; the machine's CPU
    over the whole run (setup and teardown included) into OUT/NAME.cpu.json. Returns the exit
    status."""
    ep = os.path.join(out, "exp", name + ".json")
    os.makedirs(os.path.dirname(ep), exist_ok=True)
    with open(ep, "w") as f:
        json.dump(exp, f, indent=1)
    argv = [os.path.join(root, "tools", "mlf-cluster"), "run", ep, "--out", os.path.join(out, name)]
    if lock:
        argv = ["flock", "-o", LOCK] + argv
    c0, t0 = cpu.machine_ticks(), time.time()
    with open(os.path.join(out, name + ".out"), "w") as o:
        p = subprocess.Popen(argv, stdout=o, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            rc = p.wait()
        except KeyboardInterrupt:
            # the run got the terminal's Ctrl-C too and tears its cluster down: let it finish
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            p.wait()
            raise
    c1, t1 = cpu.machine_ticks(), time.time()
    with open(os.path.join(out, name + ".cpu.json"), "w") as f:
        json.dump({"cpu_ticks": (c1 or 0) - (c0 or 0), "hz": cpu.HZ, "wall_s": round(t1 - t0, 3),
                   "machine_cores": round(((c1 or 0) - (c0 or 0)) / cpu.HZ / (t1 - t0), 3)}, f)
        f.write("\n")
    return rc


STALE_S = 10  # a final accuracy evaluated this long before the run's end is reported as stale


def stale_note(v):
    """' (stale: last evaluated at T s of W s)' when the last evaluation came STALE_S or more before
    the end of the run (its evaluating worker exited early), else ''."""
    t, w = v.get("final_accuracy_t_s"), v.get("wall_s")
    if isinstance(t, (int, float)) and isinstance(w, (int, float)) and w - t >= STALE_S:
        return " (stale: last evaluated at %.0f s of %.0f s)" % (t, w)
    return ""


def describe(out, name, sys_):
    r = read_json(os.path.join(out, name, "results.json"))
    v = (r or {}).get("systems", {}).get(sys_) if isinstance(r, dict) else None
    if not v:
        return "failed (no results; see %s.out)" % name
    u = v.get("cpu") or {}
    lk = ((v.get("links") or {}).get("verdict")) or {}
    what = ("reached %s at %.1f s" % ((r.get("experiment") or {}).get("target_accuracy"), v["time_to_target_s"])
            if v.get("reached") else "MISSED (%s, final accuracy %s%s)" % (
                v.get("stop_reason"), v.get("final_accuracy"), stale_note(v)))
    if v.get("dead_workers"):
        what += "; workers that exited early: %s" % ",".join(map(str, v["dead_workers"]))
    return "%s; CPU %s cores (dataplanes %s); busiest link %s" % (
        what, u.get("machine_cores", "-"), (u.get("groups") or {}).get("dataplanes", "-"), lk.get("busiest", "-"))


def run_grid(root, out, jobs, lock, log):
    """JOBS: [(name, system, experiment dict)]; runs those without results.json (a rerun with the
    same --out resumes), printing progress with an estimate of the time left."""
    todo = [j for j in jobs if not os.path.isfile(os.path.join(out, j[0], "results.json"))]
    if len(todo) < len(jobs):
        log("%d of %d runs already in %s: skipped" % (len(jobs) - len(todo), len(jobs), out))
    start = time.time()
    for i, (name, sys_, exp) in enumerate(todo):
        el = time.time() - start
        eta = " (about %s left)" % fmt_dur(el / i * (len(todo) - i)) if i else ""
        log("[%d/%d] %s: running (limit %g s)%s" % (i + 1, len(todo), name, exp["time_limit_s"], eta))
        rc = run_one(root, out, exp, name, lock, log)
        log("[%d/%d] %s: %s%s" % (i + 1, len(todo), name, describe(out, name, sys_),
                                 "" if rc == 0 else " (mlf-cluster exited %d)" % rc))
        if rc == 130:
            raise KeyboardInterrupt()


def main(argv, paths):
    root = paths[0]
    p = argparse.ArgumentParser(prog=PROG, add_help=True, description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--grid", default=os.path.join(root, "conf", "table2.json"), help="grid file (conf/table2.json)")
    p.add_argument("--cells", help="cells to run, e.g. c2-n1,c1-n1 (default: the grid's, all nine)")
    p.add_argument("--seeds", help="seeds 1..N (default: the grid's, 3)")
    p.add_argument("--systems", help="subset of mlfabric-a,async,rr-sync,mlfabric-s")
    p.add_argument("--time-limit", help="time limit per run, s (default: the base experiment's)")
    p.add_argument("--params", help='{"params": {system: {lr, momentum}}} (e.g. a sweep\'s params.json)')
    p.add_argument("--base", help="base experiment instead of the grid's (e.g. conf/exp-t2-16.json)")
    p.add_argument("--out", help="folder of the runs (default runs/table2-<UTC>; an existing one resumes)")
    p.add_argument("--table", help="only rebuild table2.md and the plots of this folder")
    p.add_argument("--sweep", action="store_true", help="run the grid's lr / momentum sweep instead")
    p.add_argument("--no-lock", action="store_true", help="do not take /tmp/mlf-netns.lock per run")
    p.add_argument("--bench-md", help='replace the section "Table 2: the last bench-table2 run" of this file')
    p.error = lambda m: die(m)
    a = p.parse_args(argv)
    try:
        return run_main(a, root)
    except GridError as e:
        die(str(e))
    except KeyboardInterrupt:
        print("%s: interrupted" % PROG, file=sys.stderr)
        return 130


def die(msg):
    print("%s: %s" % (PROG, msg), file=sys.stderr)
    sys.exit(2)


def log(msg):
    print("[%s] table2: %s" % (time.strftime("%H:%M:%S", time.gmtime()), msg), flush=True)


def run_main(a, root):
    g = load_grid(a.grid)
    cells = parse_cells(a.cells) if a.cells is not None else parse_cells(",".join(g["cells"]))
    seeds = parse_seeds(a.seeds) if a.seeds is not None else parse_seeds(g["seeds"])
    systems = parse_systems(a.systems) if a.systems is not None else parse_systems(",".join(g["systems"]))
    limit = parse_limit(a.time_limit) if a.time_limit is not None else None
    if a.base:
        g["base"] = a.base
    base_path = g["base"] if os.path.isabs(g["base"]) or os.path.isfile(g["base"]) else os.path.join(root, g["base"])
    try:
        with open(base_path) as f:
            base = json.load(f)
    except (OSError, ValueError):
        raise GridError("%s: base: cannot read experiment %s" % (a.grid, g["base"]))
    if a.params:
        try:
            with open(a.params) as f:
                pf = json.load(f)
        except (OSError, ValueError):
            raise GridError("cannot read params file %s (JSON {\"params\": {system: {lr, momentum}}})" % a.params)
        params = check_params(pf.get("params") if isinstance(pf, dict) else None, systems, a.params)
    else:
        params = check_params(g.get("params"), systems, a.grid)
    # the experiment itself is validated by tools/mlf-cluster check before anything runs
    if a.table:
        out = a.table
        if not os.path.isdir(out):
            raise GridError("no folder %s" % out)
    else:
        out = a.out or os.path.join(root, "runs", "table2%s-%s" % ("-sweep" if a.sweep else "",
                                                                   time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())))
        os.makedirs(out, exist_ok=True)
    probe = dict(experiment(base, cells[0], 1, systems[0], params, 1, limit), systems=systems)
    tmpd = os.path.join(out, "exp")
    os.makedirs(tmpd, exist_ok=True)
    pp = os.path.join(tmpd, "check.json")
    with open(pp, "w") as f:
        json.dump(probe, f)
    e = load(pp, check_programs=not a.table)
    nw = e.nw
    lim = limit or float(base.get("time_limit_s") or 0)
    if a.sweep:
        return sweep(a, g, root, out, base, systems, nw, limit)
    jobs = []
    for cell in cells:
        for seed in range(1, seeds + 1):
            for s in systems:
                jobs.append((run_name(cell, seed, s), s, experiment(base, cell, seed, s, params, nw, limit)))
    if not a.table:
        if os.geteuid() != 0:
            raise GridError("needs root (network namespaces)")
        log("%d cells x %d seeds x %d systems = %d runs, %d workers (%s), time limit %g s; folder %s"
            % (len(cells), seeds, len(systems), len(jobs), nw, e.cluster, lim, out))
        run_grid(root, out, jobs, not a.no_lock, log)
    data = collect(out, cells, seeds, systems)
    head = ("Table 2 grid: cells %s, seeds 1-%d, systems %s, %d workers (%s), base %s, time limit %g s, "
            "target %s; params %s.\n\n" % (",".join(cells), seeds, ",".join(systems), nw, os.path.relpath(e.cluster, root)
                                            if e.cluster.startswith(root) else e.cluster, g["base"], lim,
                                            base.get("target_accuracy"),
                                            "; ".join("%s lr %g momentum %g" % (s, params[s]["lr"], params[s]["momentum"])
                                                      for s in systems)))
    text = head + build_table(data, cells, seeds, systems, lim)
    with open(os.path.join(out, "table2.md"), "w") as f:
        f.write(text)
    made = plots(out, data, cells, systems)
    sys.stdout.write(text)
    log("table in %s/table2.md%s" % (out, "; plots " + " ".join(os.path.basename(m) for m in made) if made else ""))
    if a.bench_md:
        bench_section(a.bench_md, out, text)
    return 0


def bench_section(path, out, text):
    """Replace (or append) the section "## Table 2: the last bench-table2 run" of PATH."""
    head = "## Table 2: the last bench-table2 run"
    sec = "%s\n\n%s UTC, run folders %s (`make bench-table2`, bench/table2.mk).\n\n%s" % (
        head, time.strftime("%Y-%m-%d %H:%M", time.gmtime()), out, text)
    old = open(path).read() if os.path.exists(path) else ""
    m = re.search(r"^## Table 2: the last bench-table2 run.*?(?=^## |\Z)", old, re.S | re.M)
    new = old[:m.start()] + sec + "\n" + old[m.end():] if m else old.rstrip("\n") + "\n\n" + sec
    with open(path, "w") as f:
        f.write(new)
    log("section \"%s\" of %s replaced" % (head[3:], path))


def choose(rows):
    """The sweep's rule for one system: ROWS [(lr, momentum, [times with INF for misses],
    [final accuracies])] -> the (lr, momentum) with the lowest median time, ties broken by the
    higher median final accuracy, then the smaller lr."""
    def key(r):
        accs = [x for x in r[3] if x is not None]
        return (med(r[2]) if r[2] else INF, -(statistics.median(accs) if accs else 0), r[0], r[1])
    best = min(rows, key=key)
    return best[0], best[1]


def sweep(a, g, root, out, base, systems, nw, limit):
    sw = g.get("sweep")
    if not isinstance(sw, dict):
        raise GridError("%s: no \"sweep\" object" % a.grid)
    cell = parse_cells(str(sw.get("cell", "c1-n1")))[0]
    seeds = parse_seeds(sw.get("seeds", 1))
    lrs, moms = sw.get("lr"), sw.get("momentum")
    if not isinstance(lrs, list) or not lrs or not isinstance(moms, list) or not moms:
        raise GridError("%s: sweep: \"lr\" and \"momentum\" lists expected" % a.grid)
    tl = limit or sw.get("time_limit_s")
    jobs, keys = [], {}
    for s in systems:
        for lr in lrs:
            for m in moms:
                p = {s: {"lr": lr, "momentum": m}}
                check_params(p, [s], a.grid)
                for seed in range(1, seeds + 1):
                    name = "sweep-%s-lr%g-m%g-s%d" % (s, lr, m, seed)
                    x = experiment(base, cell, seed, s, p, nw, tl)
                    x["name"] = name
                    jobs.append((name, s, x))
                    keys.setdefault((s, lr, m), []).append(name)
    if not a.table:
        if os.geteuid() != 0:
            raise GridError("needs root (network namespaces)")
        log("sweep: %s, %d systems x %d lr x %d momentum x %d seeds = %d runs, limit %s s; folder %s"
            % (cell, len(systems), len(lrs), len(moms), seeds, len(jobs), tl, out))
        run_grid(root, out, jobs, not a.no_lock, log)
    lines = ["| system | lr | momentum | per seed: time to target s | final accuracy | chosen |",
             "|---|---|---|---|---|---|"]
    chosen = {}
    for s in systems:
        rows = []
        for (s2, lr, m), names in keys.items():
            if s2 != s:
                continue
            ts, fs = [], []
            for n in names:
                r = read_json(os.path.join(out, n, "results.json"))
                v = (r or {}).get("systems", {}).get(s) if isinstance(r, dict) else None
                ts.append(v["time_to_target_s"] if v and v.get("reached") else INF)
                fs.append(v.get("final_accuracy") if v else None)
            rows.append((lr, m, ts, fs))
        lr, m = choose(rows)
        chosen[s] = {"lr": lr, "momentum": m}
        for r in rows:
            lines.append("| %s | %g | %g | %s | %s | %s |" % (
                s, r[0], r[1], ", ".join(t_text(t, tl) for t in r[2]),
                " ".join("%.3f" % x if x is not None else "-" for x in r[3]), "yes" if (r[0], r[1]) == (lr, m) else ""))
    text = ("Sweep in %s, seeds 1-%d, time limit %s s: per system the (lr, momentum) with the lowest median "
            "time to target (a miss is over the limit; ties: higher final accuracy, then smaller lr).\n\n"
            % (cell.upper(), seeds, tl)) + "\n".join(lines) + "\n"
    with open(os.path.join(out, "sweep.md"), "w") as f:
        f.write(text)
    with open(os.path.join(out, "params.json"), "w") as f:
        json.dump({"params": chosen, "cell": cell, "seeds": seeds, "time_limit_s": tl}, f, indent=1)
        f.write("\n")
    sys.stdout.write(text)
    log("chosen params in %s/params.json (use: make bench-table2 TABLE2_PARAMS=%s/params.json)" % (out, out))
    return 0
