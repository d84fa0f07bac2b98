#!/usr/bin/env python3
"""sync_models_summary.py RUN_ROOT TARGET - the table of bench/sync_models.sh: per run folder
(<name>-seed<N>/) and system: time to TARGET, samples/s, the largest iteration lead of a worker
over the slowest (from the workers' pushes.jsonl), the bytes moved per second (MB received by
every host's eth0, results.json eth0_rx_bytes, over the run's wall time), the workers' waiting
share (waiting(), below), CPU; then median and min-max per variant (the systems of ref-seed<N>
folders by name, of other folders with several systems as "<system> (<folder>)", any other
folder's one system by the folder's name, e.g. ssp1 for SSP with s = 1). Standard library only."""
import glob
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools"))
from mlfcluster.records import RecordError, read_json, read_jsonl  # noqa: E402


def load(path):
    """The JSON document PATH, None when missing or malformed."""
    try:
        return read_json(path)
    except RecordError:
        return None


def read_pushes(recdir, workers):
    """Each worker's pushes.jsonl records, {worker: [record, ...]}, read once per system; None when
    a worker's file is missing or not JSON lines."""
    out = {}
    for w in workers:
        path = os.path.join(recdir, w, "pushes.jsonl")
        try:
            if not os.path.isfile(path):
                return None
            out[w] = list(read_jsonl(path))
        except RecordError:
            return None
    return out


def max_lead(pushes):
    """Largest (pushes of a worker - pushes of the slowest) over the run, by push times."""
    if pushes is None or any("t" not in r for rs in pushes.values() for r in rs):
        return None
    n = {w: 0 for w in pushes}
    lead = 0
    for _, w in sorted((r["t"], w) for w, rs in pushes.items() for r in rs):
        n[w] += 1
        lead = max(lead, max(n.values()) - min(n.values()))
    return lead


def local_steps(pushes):
    """ESync: the local iterations of every round the workers logged (pushes.jsonl local_steps)."""
    return None if pushes is None else sum(r.get("local_steps") or 0 for rs in pushes.values() for r in rs)


def esync_waits(pushes):
    """ESync: seconds blocked in State Server queries and seconds of local iterations a READY
    aborted (non-blocking mode), summed over the workers' rounds (pushes.jsonl query_wait_s,
    aborted_s; None for runs that predate them)."""
    rs = [r for x in (pushes or {}).values() for r in x]
    if pushes is None or any("query_wait_s" not in r for r in rs):
        return None
    return sum(r["query_wait_s"] for r in rs), sum(r.get("aborted_s") or 0 for r in rs)


# per-round / per-update fields of pushes.jsonl in which a worker waited instead of computing:
# a model get (async parameter servers; SSP's and ASP's held pulls are inside it), Hop's wait
# for neighbours' updates and tokens (a running total: its last line counts), ESync's State
# Server queries and aborted iterations, an ADSP commit (push and get), a synchronous round's
# allreduce (MLfabric-S, ESync, local SGD: the wait for the slowest worker is in it)
WAIT_FIELDS = ("get_s", "wait_s", "query_wait_s", "aborted_s", "commit_s", "allreduce_s")


def waiting(pushes, recdir, wall):
    """Share of the workers' time (wall x workers) spent in WAIT_FIELDS, or None where the
    system records none of them. RR-Sync: rank 0's allreduce_s (RECDIR/iterations.jsonl) over
    the wall time."""
    rr = os.path.join(recdir, "iterations.jsonl")
    if os.path.isfile(rr):
        try:
            t = sum(x.get("allreduce_s") or 0 for x in read_jsonl(rr))
        except RecordError:
            return None
        return t / wall if wall else None
    if pushes is None:
        return None
    total, seen = 0.0, False
    for rs in pushes.values():
        hop = 0.0
        for r in rs:
            for k in WAIT_FIELDS:
                if isinstance(r.get(k), (int, float)):
                    if k == "wait_s":  # Hop's is the worker's total so far
                        hop = max(hop, r[k])
                    else:
                        total += r[k]
                    seen = True
        total += hop
    return total / (wall * len(pushes)) if seen and wall and pushes else None


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
            recdir = os.path.join(d, sys_, "records")
            pushes = read_pushes(recdir, workers)
            steps = local_steps(pushes) if sys_ in ("esync", "local-sgd", "adsp") else None
            # RR-Sync counts iterations of the whole ring; its mini-batches are the gradients applied
            grads = v.get("applied") if sys_ == "rr-sync" else v.get("iterations")
            sps = (steps or grads or 0) * batch / wall if wall else 0
            lead = max_lead(pushes)
            cpu = (v.get("cpu") or {}).get("machine_cores") if isinstance(v.get("cpu"), dict) else None
            mb = moved_mb(v)
            mb = mb / wall if mb is not None and wall else None  # MB/s
            wt = waiting(pushes, recdir, wall)
            print("%-16s %-11s %8s %9s %10.0f %6s %8s %7s %6s" % (
                os.path.basename(d), label, t is not None, "%.1f" % t if t is not None else "miss", sps,
                lead if lead is not None else "-", "%.2f" % mb if mb is not None else "-",
                "%.1f%%" % (100 * wt) if wt is not None else "-", "%.2f" % cpu if cpu is not None else "-"))
            w = esync_waits(pushes) if sys_ == "esync" else None
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
