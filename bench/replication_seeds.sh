#!/usr/bin/env bash
# replication_seeds.sh - `make bench-replication`: the replication targets over several seeds.
# For each seed 1..N the base experiment (conf/exp-repl.json) with that seed runs through
# bench/replication_bench.sh --only VARIANTS (no replica, MLfabric at div_max 0, 1x, 4x, 16x the
# mean update norm of that seed's no-replica run, chain replication); bench/replication_summary.py
# then gives, per variant, the median and min-max over the seeds of the time to target, the bytes
# received by the replica host and the server host, the transfers to the replica and the machine's
# CPU, and checks the two targets on medians: >= 3x less data to the replica at 16x than at 0, and
# MLfabric's time to target below chain replication's. Written into docs/results/replication.md ("Replication
# over seeds"); the one-seed table with the kill runs stays `bench/replication_bench.sh`.
# Usage: bench/replication_seeds.sh [--seeds N] [--base EXP.json] [--only V,V] [--summary DIR]
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT" || exit 1
SEEDS=3
BASE=conf/exp-repl.json
ONLY=mlfabric-0x,mlfabric-1x,mlfabric-4x,mlfabric-16x,chain
SUMMARY=""
while [ $# -gt 0 ]; do
	case "$1" in
	--seeds) SEEDS=${2:?}; shift 2 ;;
	--base) BASE=${2:?}; shift 2 ;;
	--only) ONLY=${2:?}; shift 2 ;;
	--summary) SUMMARY=${2:?}; shift 2 ;;
	-h | --help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench-replication: unknown option $1" >&2; exit 2 ;;
	esac
done
[[ "$SEEDS" =~ ^[1-9][0-9]*$ ]] || { echo "bench-replication: --seeds wants a positive integer, got $SEEDS" >&2; exit 2; }
if [ -z "$SUMMARY" ]; then
	[ "$(id -u)" = 0 ] || { echo "bench-replication: needs root (network namespaces)" >&2; exit 2; }
	tools/mlf-cluster check "$BASE" >/dev/null || exit 2
	STAMP=$(date -u +%Y%m%dT%H%M%SZ)
	OUT="$ROOT/runs/bench-replication-seeds-$STAMP"
	mkdir -p "$OUT"
	for seed in $(seq 1 "$SEEDS"); do
		jq --argjson s "$seed" '.seed = $s' "$BASE" >"$OUT/base-seed$seed.json" || exit 2
		echo "== bench-replication: seed $seed of $SEEDS ($ONLY)" >&2
		bench/replication_bench.sh --base "$OUT/base-seed$seed.json" --only "$ONLY" 2>&1 |
			tee "$OUT/seed$seed.log" | grep -E '^== |^bench-replication' >&2
		dir=$(sed -n 's/.*table in \(.*\)\/table.md.*/\1/p' "$OUT/seed$seed.log" | tail -n 1)
		[ -n "$dir" ] && [ -f "$dir/rows.json" ] || { echo "bench-replication: seed $seed left no rows.json (see $OUT/seed$seed.log)" >&2; exit 1; }
		echo "$dir" >"$OUT/seed$seed.dir"
	done
	SUMMARY=$OUT
fi
python3 bench/replication_summary.py --base "$BASE" --write-benchmarks "$ROOT/docs/results/replication.md" "$SUMMARY"
