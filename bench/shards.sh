#!/usr/bin/env bash
# bench/shards.sh - sharded parameter servers (paper §10.2) against one server, MLfabric-A, in
# the network-bottleneck regime of conf/exp-t2-shards.json (8 workers, 1 Gbit/s links scaled by
# rate_scale 0.001, C2-N1): the same cluster (conf/cluster-t2-8s.json) with shards 1 and 2,
# seeds 1..SEEDS, one run each, alternating. Prints time to the target accuracy, iterations per
# second, the server links' busy fraction and the machine's CPU per run, then median and
# min-max per setting. Usage: bench/shards.sh [OUT_DIR]   (env SEEDS=3 TARGET=0.75 LIMIT=150)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$ROOT/runs/shards-$(date -u +%Y%m%dT%H%M%S)}
SEEDS=${SEEDS:-3}; TARGET=${TARGET:-0.75}; LIMIT=${LIMIT:-150}
mkdir -p "$OUT"
cd "$ROOT"
for seed in $(seq 1 "$SEEDS"); do
	for shards in 1 2; do
		exp="$OUT/exp-s$shards-seed$seed.json"
		jq --argjson s "$seed" --argjson k "$shards" --argjson t "$TARGET" --argjson l "$LIMIT" \
			'.seed = $s | .shards = $k | .target_accuracy = $t | .time_limit_s = $l' \
			conf/exp-t2-shards.json >"$exp"
		echo "== shards $shards seed $seed"
		flock -o /tmp/mlf-netns.lock tools/mlf-cluster run "$exp" --out "$OUT/s$shards-seed$seed" \
			>"$OUT/s$shards-seed$seed.log" 2>&1 || { echo "run failed: see $OUT/s$shards-seed$seed.log"; continue; }
		tail -4 "$OUT/s$shards-seed$seed.log"
	done
done
python3 "$ROOT/bench/shards_summary.py" "$OUT" "$TARGET"
