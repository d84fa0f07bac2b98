#!/usr/bin/env python3
"""bench/sync_iteration.py RUN_DIR... - where an MLfabric-S iteration goes (docs/results/mlfabric-s.md
"MLfabric-S over shard servers against RR-Sync"), from one run folder of `tools/mlf-cluster run` or
`table2` (RUN_DIR holds <system>/records/). Per iteration (model version v, N workers):
  compute  the last worker's model v arrived -> the last push of the iteration (a push is the
           arrival plus compute_s x factor, pushes.jsonl; its t is when allreduce returned);
  gather   the last push -> the last shard server applied the iteration (applied.jsonl of the
           server and every records/shard-K/, their step at `at` = v);
  dist     that step -> the last worker holds the whole model v + N;
  it       the last arrival of v -> the last arrival of v + N.
Then per worker and iteration, its first model copy's planned start (transfers.jsonl) after the
last shard's step. Medians, means and 90th percentiles; seconds. Exit 2 on a folder without
the records of an MLfabric-S run."""
import glob
import os
import statistics as st
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools"))
from mlfcluster.records import RecordError, read_jsonl  # noqa: E402
from mlfcluster.results import step_ends  # noqa: E402


def die(msg):
    print("sync_iteration.py: " + msg, file=sys.stderr)
    sys.exit(2)


def lines(path):
    """The records of the JSON-lines file PATH (records.read_jsonl); exit 2 when it is missing or
    malformed."""
    if not os.path.isfile(path):
        die("%s: missing" % path)
    try:
        return list(read_jsonl(path))
    except RecordError as e:
        die(str(e))


def q(xs):
    xs = sorted(xs)
    return "median %.3f  mean %.3f  p90 %.3f  (n=%d)" % (st.median(xs), st.mean(xs), xs[int(0.9 * len(xs))], len(xs))


def analyse(d):
    recs = glob.glob(os.path.join(d, "*", "records", "applied.jsonl"))
    if not recs:
        die("%s: no <system>/records/applied.jsonl (not an MLfabric-S run folder)" % d)
    rec = os.path.dirname(recs[0])
    got = {}  # version v -> {worker: pushes.jsonl record of its update from v}
    for f in sorted(glob.glob(os.path.join(rec, "*", "pushes.jsonl"))):
        for r in lines(f):
            got.setdefault(r["version"], {})[f.split(os.sep)[-2]] = r
    if not got:
        die("%s: no workers' pushes.jsonl" % rec)
    nw = max(len(v) for v in got.values())
    # iteration start version -> the last shard's step time
    steps = step_ends([r for f in [os.path.join(rec, "applied.jsonl")] +
                       glob.glob(os.path.join(rec, "shard-*", "applied.jsonl")) for r in lines(f)])
    rows = []
    for v in sorted(got):
        prev, cur = got.get(v - nw), got[v]
        if not prev or len(prev) < nw or len(cur) < nw or v not in steps:
            continue
        arr = {w: prev[w]["t"] for w in cur}
        push = {w: arr[w] + cur[w]["compute_s"] * cur[w]["factor"] for w in cur}
        nxt = [cur[w]["t"] for w in cur]
        rows.append({"compute": max(push.values()) - max(arr.values()), "gather": steps[v] - max(push.values()),
                     "dist": max(nxt) - steps[v], "it": max(nxt) - max(arr.values())})
    if not rows:
        die("%s: no complete iteration (is this MLfabric-S?)" % rec)
    print(d)
    for k in ("compute", "gather", "dist", "it"):
        print("  %-8s %s" % (k, q([r[k] for r in rows])))
    models = [x for x in lines(os.path.join(rec, "transfers.jsonl")) if x.get("what") == "model"]
    starts = []
    for v, ws in got.items():
        if v not in steps:
            continue
        for w, r in ws.items():
            ms = [m["start"] for m in models if m["dst"] == w and steps[v] - 0.3 <= m["start"] <= r["t"]]
            if ms:
                starts.append(min(ms) - steps[v])
    if starts:
        print("  %-8s %s" % ("copy", q(starts)) + "  first copy's planned start after the last step")


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        sys.exit(0 if len(sys.argv) > 1 else 2)
    for a in sys.argv[1:]:
        analyse(a)
