#!/usr/bin/env bash
# bench/adsp_search.sh [OUT] - ADSP's commit-rate search against fixed rates 1, 2 and 4
# (docs/results/sync-models.md "ADSP's commit-rate search against fixed rates"): 
# conf/exp-adsp-search.json (4 workers at speeds 1:1:1:4, C3-N1, target 0.8 within 90 s, trial
# windows of 3 s) run with the search and with adsp_rate 1, 2, 4, seeds 1..SEEDS (default 3),
# one run folder each under OUT (default runs/adsp-search); a folder already there is kept (run
# again to finish an interrupted bench). Prints per run the time to target and, for the search,
# its comparisons (time from the first checkpoint, r_a against r_b, their speeds, the verdict)
# and the rate it ended on; then median and min-max per variant. Needs root, and the namespace
# lock when other runs share the machine: flock /tmp/mlf-netns.lock bench/adsp_search.sh OUT.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="${1:-$ROOT/runs/adsp-search}"
SEEDS="${SEEDS:-3}"
mkdir -p "$OUT"
for seed in $(seq 1 "$SEEDS"); do
	for v in search 1 2 4; do
		e="$OUT/exp-$v-$seed.json"
		rate=$([ $v = search ] && echo . || echo ".adsp_rate = $v")
		jq ".seed = $seed | .name = \"adsp-$v-$seed\" | $rate" "$ROOT/conf/exp-adsp-search.json" >"$e"
		[ -d "$OUT/$v-$seed" ] && continue
		nice timeout 300 "$ROOT/tools/mlf-cluster" run "$e" --out "$OUT/$v-$seed" >"$OUT/$v-$seed.log" 2>&1 ||
			echo "$v-$seed: mlf-cluster run failed (exit $?), see $OUT/$v-$seed.log" >&2
	done
done
python3 - "$OUT" "$SEEDS" <<'PY'
import json, os, statistics, sys
out, seeds = sys.argv[1], int(sys.argv[2])
def load(p):
    with open(p) as f:
        return [json.loads(l) for l in f if l.strip()]
rows = {}
for v in ("search", "1", "2", "4"):
    for s in range(1, seeds + 1):
        d = os.path.join(out, "%s-%d" % (v, s))
        try:
            with open(os.path.join(d, "results.json")) as f:
                r = json.load(f)["systems"]["adsp"]
        except (OSError, KeyError, ValueError):
            print("%-6s seed %d: no results.json" % (v, s))
            continue
        t = r["time_to_target_s"] if r["reached"] else None
        rows.setdefault(v, []).append(t)
        line = "%-6s seed %d: time to target %s" % (v, s, "%.1f s" % t if t is not None else "missed")
        if v == "search":
            a = load(os.path.join(d, "adsp", "records", "adsp.jsonl"))
            t0, seen, steps = a[0]["t"], 0, []
            for x in a:
                if x["decisions"] > seen:
                    seen = x["decisions"]
                    won = x["r_a"] != steps[-1][1] if steps else x["r_a"] != 1
                    steps.append((x["t"] - t0, x["r_a"], x["r1"], x["r2"], won))
            line += "; comparisons: " + (", ".join(
                "%.0f s %s (speeds %.3f vs %.3f)" % (ts, "-> %d" % ra if won else "stay %d" % ra, r1, r2)
                for ts, ra, r1, r2, won in steps) or "none")
            line += "; ended at rate %d (%s)" % (a[-1]["r"], a[-1]["phase"])
        print(line)
print("variant  time to target: median (min-max), reached")
for v, ts in rows.items():
    ok = sorted(t for t in ts if t is not None)
    miss = len(ts) - len(ok)
    med = statistics.median([t if t is not None else float("inf") for t in ts])
    print("%-8s %s (%s-%s), %d/%d" % (v if v == "search" else "rate " + v,
          "%.1f" % med if med != float("inf") else "miss", "%.1f" % ok[0] if ok else "-",
          ("%.1f" % ok[-1] if ok else "-") if not miss else "miss", len(ok), len(ts)))
PY
