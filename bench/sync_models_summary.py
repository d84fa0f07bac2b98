#!/usr/bin/env python3
"""sync_models_summary.py RUN_ROOT TARGET - the table of bench/sync_models.sh: per run folder
(<name>-seed<N>/) and system: time to TARGET, samples/s, the largest iteration lead of a worker
over the slowest (from the workers' pushes.jsonl), the bytes moved per second (MB received by
every host's eth0, results.json eth0_rx_bytes, over the run's wall time), the workers' waiting share (waiting(), below), CPU; then median
and min-max per variant
(the systems of ref-seed<N> folders by name, of other folders with several systems as
"<system> (<folder>)", any other folder's one system by the folder's name, e.g. ssp1 for SSP
with s = 1). Standard library only."""
import glob
import json
import os
import statistics
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def max_lead(recdir, workers):
    """Largest (pushes of a worker - pushes of the slowest) over the run, by push times."""
    ev = []
    for w in workers:
        try:
            with open(os.path.join(recdir, w, "pushes.jsonl")) as f:
                ev += [(json.loads(line)["t"], w) for line in f if line.strip()]
        except (OSError, ValueError, KeyError):
            return None
    n = {w: 0 for w in workers}
    lead = 0
    for _, w in sorted(ev):
        n[w] += 1
        lead = max(lead, max(n.values()) - min(n.values()))
    return lead


def local_steps(recdir, workers):
    """ESync: the local iterations of every round the workers logged (pushes.jsonl local_steps)."""
    n = 0
    for w in workers:
        try:
            with open(os.path.join(recdir, w, "pushes.jsonl")) as f:
                n += sum(json.loads(line).get("local_steps") or 0 for line in f if line.strip())
        except (OSError, ValueError):
            return None
    return n


def esync_waits(recdir, workers):
    """ESync: seconds blocked in State Server queries and seconds of local iterations a READY
    aborted (non-blocking mode), summed over the workers' rounds (pushes.jsonl query_wait_s,
    aborted_s; None for runs that predate them)."""
    q = a = 0.0
    for w in workers:
        try:
            with open(os.path.join(recdir, w, "pushes.jsonl")) as f:
                for line in f:
                    if line.strip():
                        r = json.loads(line)
                        if "query_wait_s" not in r:
                            return None
                        q += r["query_wait_s"]
                        a += r.get("aborted_s") or 0
        except (OSError, ValueError):
            return None
    return q, a


# per-round / per-update fields of pushes.jsonl in which a worker waited instead of computing:
# a model get (async parameter servers; SSP's and ASP's held pulls are inside it), Hop's wait
# for neighbours' updates and tokens (a running total: its last line counts), ESync's State Server queries and aborted iterations, an
# ADSP commit (push and get), a synchronous round's allreduce (MLfabric-S, ESync, local SGD:
# the wait for the slowest worker is in it)
WAIT_FIELDS = ("get_s", "wait_s", "query_wait_s", "aborted_s", "commit_s", "allreduce_s")


def waiting(recdir, workers, wall):
    """Share of the workers' time (wall x workers) spent in WAIT_FIELDS, or None where the
    system records none of them. RR-Sync: rank 0's allreduce_s (records/iterations.jsonl) over
    the wall time."""
    rr = os.path.join(recdir, "iterations.jsonl")
    if os.path.isfile(rr):
        try:
            with open(rr) as f:
                t = sum(json.loads(line).get("allreduce_s") or 0 for line in f if line.strip())
        except (OSError, ValueError):
            return None
        return t / wall if wall else None
    total, seen = 0.0, False
    for w in workers:
        hop = 0.0
        try:
            with open(os.path.join(recdir, w, "pushes.jsonl")) as f:
                for line in f:
                    if line.strip():
                        r = json.loads(line)
                        for k in WAIT_FIELDS:
                            if isinstance(r.get(k), (int, float)):
                                if k == "wait_s":  # Hop's is the worker's total so far
                                    hop = max(hop, r[k])
                                else:
                                    total += r[k]
                                seen = True
        except (OSError, ValueError):
            return None
        total += hop
    return total / (wall * len(workers)) if seen and wall and workers else None


def moved_mb(v):
    """MB received by every host's eth0 during the run (results.json eth0_rx_bytes), or None."""
    rx = v.get("eth0_rx_bytes")
    return sum(rx.values()) / 1e6 if isinstance(rx, dict) and rx else None


def fmt(vals, f="%.1f"):
    ok = [v for v in vals if v is not None and v != float("inf")]
    if not vals:
        return "-"
    med = statistics.median([v if v is not None else float("inf") for v in vals])
    m = "miss" if med == float("inf") else f % med
    return "%s (%s-%s)" % (m, f % min(ok) if ok else "miss", f % max(ok) if len(ok) == len(vals) else "miss")


def main():
    root, target = sys.argv[1], float(sys.argv[2])
    rows = {}
    waits = {}
    print("%-16s %-11s %8s %9s %10s %6s %8s %7s %6s" % ("run", "system", "reached", "t_target", "samples/s", "lead",
                                                      "MB/s", "waiting", "cpu"))
    for d in sorted(glob.glob(os.path.join(root, "*-seed*"))):
        if not os.path.isdir(d):
            continue
        res = load(os.path.join(d, "results.json")) or {}
        exp = load(glob.glob(os.path.join(root, "exp-%s.json" % os.path.basename(d)))[0]) \
            if glob.glob(os.path.join(root, "exp-%s.json" % os.path.basename(d))) else {}
        batch = (exp or {}).get("batch", 32)
        workers = (exp or {}).get("workers") or []
        for sys_, v in sorted((res.get("systems") or {}).items()):
            prefix = os.path.basename(d).split("-seed")[0]
            # ref-seedN: the systems by name; refX-seedN: "<system> (X)"; single-system folders
            # by the folder's name: ssp1, ssp2, ...
            # (a folder of several systems, e.g. side-seedN: "<system> (side)")
            if prefix.startswith("ref"):
                label = sys_ + (" (%s)" % prefix[3:] if prefix[3:] else "")
            elif len(res.get("systems") or {}) > 1:
                label = "%s (%s)" % (sys_, prefix)
            else:
                label = prefix
            t = v.get("time_to_target_s") if v.get("reached") else None
            wall = v.get("wall_s") or 0
            # mini-batches computed: ESync's local iterations (from the rounds in pushes.jsonl, which
            # survive a worker stopped before it wrote worker.json), else one per iteration
            steps = (local_steps(os.path.join(d, sys_, "records"), workers)
                     if sys_ in ("esync", "local-sgd", "adsp") else None)
            # RR-Sync counts iterations of the whole ring; its mini-batches are the gradients applied
            grads = v.get("applied") if sys_ == "rr-sync" else v.get("iterations")
            sps = (steps or grads or 0) * batch / wall if wall else 0
            lead = max_lead(os.path.join(d, sys_, "records"), workers)
            cpu = (v.get("cpu") or {}).get("machine_cores") if isinstance(v.get("cpu"), dict) else None
            mb = moved_mb(v)
            mb = mb / wall if mb is not None and wall else None  # MB/s
            wt = waiting(os.path.join(d, sys_, "records"), workers, wall)
            print("%-16s %-11s %8s %9s %10.0f %6s %8s %7s %6s" % (
                os.path.basename(d), label, t is not None, "%.1f" % t if t is not None else "miss", sps,
                lead if lead is not None else "-", "%.2f" % mb if mb is not None else "-",
                "%.1f%%" % (100 * wt) if wt is not None else "-", "%.2f" % cpu if cpu is not None else "-"))
            w = esync_waits(os.path.join(d, sys_, "records"), workers) if sys_ == "esync" else None
            if w is not None:
                waits.setdefault(label, []).append(w + (wall * len(workers),))
            r = rows.setdefault(label, {"t": [], "sps": [], "lead": [], "cpu": [], "mb": [], "wait": []})
            r["mb"].append(mb)
            r["wait"].append(100 * wt if wt is not None else None)
            r["t"].append(t if t is not None else float("inf"))
            r["sps"].append(sps)
            r["lead"].append(lead)
            r["cpu"].append(cpu)
    print()
    print("| system | time to %.2f s, median (min-max) | reached | samples/s | largest lead (iterations) "
          "| MB/s moved | waiting, %% of worker time (RR-Sync: rank 0's) | machine CPU (cores) |" % target)
    print("|---|---|---|---|---|---|---|---|")
    for label in sorted(rows):
        r = rows[label]
        print("| %s | %s | %d/%d | %s | %s | %s | %s | %s |" % (
            label, fmt(r["t"]), sum(1 for t in r["t"] if t != float("inf")), len(r["t"]), fmt(r["sps"], "%.0f"),
            fmt([x for x in r["lead"] if x is not None], "%d"), fmt([x for x in r["mb"] if x is not None], "%.2f"),
            fmt([x for x in r["wait"] if x is not None], "%.1f"), fmt([x for x in r["cpu"] if x is not None], "%.2f")))
    if waits:
        print()
        print("| ESync run | blocked in queries, s (all workers) | in aborted iterations, s | share of worker time |")
        print("|---|---|---|---|")
        for label in sorted(waits):
            v = waits[label]
            print("| %s | %s | %s | %s |" % (label, fmt([x[0] for x in v], "%.2f"), fmt([x[1] for x in v], "%.2f"),
                                          fmt([100 * (x[0] + x[1]) / x[2] if x[2] else 0 for x in v], "%.1f%%")))


if __name__ == "__main__":
    main()
