#!/usr/bin/env bash
# netmon_n2.sh - measured against declared link capacities on N2 (issue 35 item 5; docs/results/netmon.md).
# For each seed 1..N the base experiment (MLfabric-A alone) runs twice, alternating the order per
# seed: capacity "declared" (the runner tells the scheduler the rate schedule) and "measured"
# (the links are shaped the same, the scheduler plans with its own estimates). Each run takes the
# shared namespace lock for itself only. Prints per run the time to target, the machine's busy
# cores (run.json cpu, from /proc) and the measured estimate's back-offs and probes, then per
# mode the median (min-max) and the ratio of the medians (measured / declared).
# Usage: bench/netmon_n2.sh [--seeds N] [--base EXP.json] [--time-limit S] [--summary DIR]
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT" || exit 1
SEEDS=3
BASE=conf/exp-c1-n2.json
LIMIT=120
SUMMARY=""
while [ $# -gt 0 ]; do
	case "$1" in
	--seeds) SEEDS=${2:?}; shift 2 ;;
	--base) BASE=${2:?}; shift 2 ;;
	--time-limit) LIMIT=${2:?}; shift 2 ;;
	--summary) SUMMARY=${2:?}; shift 2 ;;
	-h | --help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "netmon_n2: unknown option $1" >&2; exit 2 ;;
	esac
done
[[ "$SEEDS" =~ ^[1-9][0-9]*$ ]] || { echo "netmon_n2: --seeds wants a positive integer, got $SEEDS" >&2; exit 2; }
if [ -z "$SUMMARY" ]; then
	[ "$(id -u)" = 0 ] || { echo "netmon_n2: needs root (network namespaces)" >&2; exit 2; }
	OUT="$ROOT/runs/bench-netmon-$(date -u +%Y%m%dT%H%M%SZ)"
	mkdir -p "$OUT"
	for seed in $(seq 1 "$SEEDS"); do
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
    print("%-8s seed %s: time to target %s s, machine cores %.2f, applied %d, estimate back-offs %d probes %d"
          % (cap, seed, "%.1f" % t if t else "not reached", cpu, r["applied"], ev["backoff"], ev["probe"]))
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
