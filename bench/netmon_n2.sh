#!/usr/bin/env bash
# netmon_n2.sh - measured against declared link capacities on N2 (issue 35 item 5; docs/results/netmon.md).
# For each seed 1..N the base experiment (MLfabric-A alone) runs twice, alternating the order per
# seed: capacity "declared" (the runner tells the scheduler the rate schedule) and "measured"
# (the links are shaped the same, the scheduler plans with its own estimates). Each run takes the
# shared namespace lock for itself only. Prints per run the time to target, the machine's busy
# cores (run.json cpu, from /proc) and the measured estimate's back-offs and probes, then per
# mode the median (min-max) and the ratio of the medians (measured / declared).
# Usage: bench/netmon_n2.sh [--seeds N] [--first K] [--base EXP.json] [--time-limit S] [--out DIR]
#        [--summary DIR]   (seeds K..K+N-1, default 1..3; --out adds to a run folder)
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT" || exit 1
SEEDS=3
FIRST=1
OUT=""
BASE=conf/exp-c1-n2.json
LIMIT=120
SUMMARY=""
while [ $# -gt 0 ]; do
	case "$1" in
	--seeds) SEEDS=${2:?}; shift 2 ;;
	--first) FIRST=${2:?}; shift 2 ;;
	--out) OUT=${2:?}; shift 2 ;;
	--base) BASE=${2:?}; shift 2 ;;
	--time-limit) LIMIT=${2:?}; shift 2 ;;
	--summary) SUMMARY=${2:?}; shift 2 ;;
	-h | --help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "netmon_n2: unknown option $1" >&2; exit 2 ;;
	esac
done
[[ "$SEEDS" =~ ^[1-9][0-9]*$ ]] || { echo "netmon_n2: --seeds wants a positive integer, got $SEEDS" >&2; exit 2; }
[[ "$FIRST" =~ ^[1-9][0-9]*$ ]] || { echo "netmon_n2: --first wants a positive integer, got $FIRST" >&2; exit 2; }
if [ -z "$SUMMARY" ]; then
	[ "$(id -u)" = 0 ] || { echo "netmon_n2: needs root (network namespaces)" >&2; exit 2; }
	[ -n "$OUT" ] || OUT="$ROOT/runs/bench-netmon-$(date -u +%Y%m%dT%H%M%SZ)"
	mkdir -p "$OUT"
	for seed in $(seq "$FIRST" $((FIRST + SEEDS - 1))); do
		if [ $((seed % 2)) = 1 ]; then order="declared measured"; else order="measured declared"; fi
		for cap in $order; do
			jq --argjson s "$seed" --argjson l "$LIMIT" --arg c "$cap" \
				'.seed = $s | .time_limit_s = $l | .capacity = $c | .systems = ["mlfabric-a"] | .name = "netmon-\($c)-s\($s)"' \
				"$BASE" >"$OUT/$cap-seed$seed.json" || exit 2
			echo "== netmon_n2: seed $seed $cap" >&2
			flock /tmp/mlf-netns.lock tools/mlf-cluster run "$OUT/$cap-seed$seed.json" --out "$OUT/$cap-seed$seed" \
				>"$OUT/$cap-seed$seed.log" 2>&1 || echo "netmon_n2: seed $seed $cap failed (see $OUT/$cap-seed$seed.log)" >&2
		done
	done
	SUMMARY=$OUT
fi
python3 - "$SUMMARY" <<'PY'
import glob, json, os, statistics, sys
out = sys.argv[1]
rows = {"declared": [], "measured": []}
for d in sorted(glob.glob(os.path.join(out, "*-seed*"))):
    if not os.path.isdir(d):
        continue
    cap, seed = os.path.basename(d).split("-seed")
    try:
        r = json.load(open(os.path.join(d, "results.json")))["systems"]["mlfabric-a"]
        cpu = json.load(open(os.path.join(d, "mlfabric-a", "run.json")))["cpu"]["machine_cores"]
    except (OSError, KeyError, ValueError) as e:
        print("%s seed %s: no result (%s)" % (cap, seed, e))
        continue
    ev = {"backoff": 0, "probe": 0}
    try:
        for line in open(os.path.join(d, "mlfabric-a", "records", "capacity.jsonl")):
            ev[json.loads(line)["event"]] += 1
    except OSError:
        pass
    t = r["time_to_target_s"] if r["reached"] else None
    rows[cap].append((int(seed), t, cpu, r["applied"], ev))
    print("%-8s seed %s: time to target %s s, machine cores %.2f, applied %d (%.2f/s), iteration %.3f s, "
          "estimate back-offs %d probes %d"
          % (cap, seed, "%.1f" % t if t else "not reached", cpu, r["applied"], r["applied"] / r["wall_s"],
             r["mean_iteration_s"], ev["backoff"], ev["probe"]))
def accuracy(d):
    """Seconds the measured estimate spent below 0.8x, within, above 1.25x the shaped rate, per
    link direction, summed over the hosts (from network.tsv and capacity.jsonl)."""
    t0 = json.load(open(os.path.join(d, "mlfabric-a", "run.json")))["t0"]
    t_end = json.load(open(os.path.join(d, "mlfabric-a", "run.json")))["t_end"] - t0
    sched = {}
    for line in open(os.path.join(d, "network.tsv")):
        k, off, h, u, dn = line.split()
        sched.setdefault(h, []).append((float(off), float(u), float(dn)))
    ev = [json.loads(l) for l in open(os.path.join(d, "mlfabric-a", "records", "capacity.jsonl"))]
    acc = {"up": [0.0, 0.0, 0.0], "down": [0.0, 0.0, 0.0]}
    for h, rows_h in sched.items():
        for link in ("up", "down"):
            pts = [(e["t"] - t0, e["est_gbps"]) for e in ev if e["host"] == h and e["link"] == link]
            est, last = 1.0, 0.0
            for t, e in pts + [(t_end, None)]:
                t = min(max(t, 0.0), t_end)
                s = last
                while s < t:
                    nxt = min(t, (int(s / 5) + 1) * 5.0)
                    sh = [r for r in rows_h if r[0] <= s][-1]
                    ratio = est / (sh[1] if link == "up" else sh[2])
                    acc[link][0 if ratio < 0.8 else 2 if ratio > 1.25 else 1] += nxt - s
                    s = nxt
                last = t
                if e is not None:
                    est = e
    return acc

for cap, rs in rows.items():
    if cap != "measured":
        continue
    tot = {"up": [0.0, 0.0, 0.0], "down": [0.0, 0.0, 0.0]}
    for seed, *_ in rs:
        try:
            a = accuracy(os.path.join(out, "measured-seed%d" % seed))
        except (OSError, KeyError, ValueError, IndexError):
            continue
        for k in tot:
            tot[k] = [x + y for x, y in zip(tot[k], a[k])]
    for k, v in tot.items():
        if sum(v):
            print("measured estimate of the %slinks: below 0.8x the shaped rate %.0f%% of the time, within %.0f%%, above 1.25x %.0f%%"
                  % (k, 100 * v[0] / sum(v), 100 * v[1] / sum(v), 100 * v[2] / sum(v)))
med = {}
for cap, rs in rows.items():
    ts = [t for _, t, _, _, _ in rs if t is not None]
    cs = [c for _, _, c, _, _ in rs]
    if not rs:
        continue
    miss = len(rs) - len(ts)
    if ts:
        med[cap] = statistics.median(ts + [float("inf")] * miss)
        print("%-8s time to target median %s s (%.1f-%s)%s; machine cores %.2f (%.2f-%.2f)"
              % (cap, "%.1f" % med[cap], min(ts), "%.1f" % max(ts) if not miss else "not reached",
                 " (%d of %d not reached)" % (miss, len(rs)) if miss else "",
                 statistics.median(cs), min(cs), max(cs)))
if "declared" in med and "measured" in med:
    print("measured / declared (medians): %.2fx (target <= 1.2x)" % (med["measured"] / med["declared"]))
PY
