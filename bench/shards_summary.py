#!/usr/bin/env python3
"""shards_summary.py RUN_ROOT TARGET - the table of bench/shards.sh: per run (s<K>-seed<N>/) the
time to TARGET, iterations/s, the busiest server link (plan: links.json) and CPU; then median and
min-max per shard count. Standard library only."""
import glob
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools"))
from mlfcluster.records import RecordError, read_json  # noqa: E402


def load(path):
    """The JSON document PATH, None when missing or malformed."""
    try:
        return read_json(path)
    except RecordError:
        return None


def main():
    root, target = sys.argv[1], float(sys.argv[2])
    rows = {}
    print("%-14s %8s %9s %8s %12s %12s %8s" % ("run", "reached", "t_target", "iter/s", "ps up/down", "ps1 up/down",
                                                 "cpu"))
    for d in sorted(glob.glob(os.path.join(root, "s*-seed*"))):
        if not os.path.isdir(d):
            continue
        k = int(os.path.basename(d).split("-")[0][1:])
        res = load(os.path.join(d, "results.json")) or {}
        v = (res.get("systems") or {}).get("mlfabric-a") or {}
        lk = (load(os.path.join(d, "links.json")) or {}).get("mlfabric-a") or {}
        plan = lk.get("transfers") or {}  # busy fractions from the planned transfers (links.py)

        def busy(h):
            x = plan.get(h)
            if not x:
                return "-"
            return "%.0f/%.0f%%" % (100 * ((x.get("up") or {}).get("busy") or 0),
                                    100 * ((x.get("down") or {}).get("busy") or 0))
        wall = v.get("wall_s") or 0
        its = v.get("iterations") or 0
        t = v.get("time_to_target_s")
        cpu = (v.get("cpu") or {}).get("machine_cores") if isinstance(v.get("cpu"), dict) else None
        reached = t is not None
        print("%-14s %8s %9s %8.2f %12s %12s %8s" % (os.path.basename(d), reached, "%.1f" % t if reached else "miss",
                                                    its / wall if wall else 0, busy("ps"), busy("ps1"), cpu))
        rows.setdefault(k, []).append((t if reached else float("inf"), its / wall if wall else 0))
    for k in sorted(rows):
        ts = [r[0] for r in rows[k]]
        ips = [r[1] for r in rows[k]]
        med = statistics.median(ts)
        print("shards %d: time to %.2f median %s (min %s, max %s); iterations/s median %.2f (%.2f-%.2f); %d runs"
              % (k, target, "miss" if med == float("inf") else "%.1f s" % med,
                 "%.1f" % min(ts) if min(ts) < float("inf") else "miss",
                 "%.1f" % max(ts) if max(ts) < float("inf") else "miss",
                 statistics.median(ips), min(ips), max(ips), len(ts)))


if __name__ == "__main__":
    main()
