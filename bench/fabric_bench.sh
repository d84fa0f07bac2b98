#!/usr/bin/env bash
# fabric_bench.sh - `make bench-fabric`: MLfabric-A, Async and RR-Sync train to the same target
# accuracy in the settings C1-N1, C2-N1 and C1-N2 (conf/exp-*.json, tools/mlf-cluster), then a
# table per setting and system: time to the target, the speed-up of MLfabric-A over RR-Sync and
# over Async (paper Table 2), per-iteration time, dropped fraction, delay distribution and bytes
# received by the server; appended to docs/results/fabric.md with the command. Needs root.
# Usage: bench/fabric_bench.sh [EXPERIMENT.json ...]   (default: the three settings)
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT" || exit 1
case "${1:-}" in -h | --help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
EXPS=("$@")
[ ${#EXPS[@]} -gt 0 ] || EXPS=(conf/exp-c1-n1.json conf/exp-c2-n1.json conf/exp-c1-n2.json)
[ "$(id -u)" = 0 ] || { echo "bench-fabric: needs root (network namespaces)" >&2; exit 2; }
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT="$ROOT/runs/bench-fabric-$STAMP"
mkdir -p "$OUT"
runs=()
for e in "${EXPS[@]}"; do
	name=$(jq -r .name "$e") || exit 2
	echo "== bench-fabric: $e" >&2
	tools/mlf-cluster run "$e" --out "$OUT/$name" >&2 || echo "bench-fabric: $e: a system failed (see $OUT/$name/run.log)" >&2
	runs+=("$OUT/$name")
done

# ratio A B: A / B with two decimals, "-" when either is missing
table() {
	local r
	echo "| setting | system | reached | time to target s | RR-Sync / MLfabric-A | Async / MLfabric-A | iteration s | dropped % | delay mean / p50 / p99 / max | server MB received |"
	echo "|---|---|---|---|---|---|---|---|---|---|"
	for r in "$@"; do
		[ -f "$r/results.json" ] || continue
		jq -r '
		def f($x; $n): if $x == null then "-" else ($x * pow(10; $n) | round / pow(10; $n) | tostring) end;
		def ratio($a; $b): if $a == null or $b == null or $b == 0 then "-" else f($a / $b; 2) + "x" end;
		(.experiment.compute + "-" + .experiment.network) as $set
		| .systems["mlfabric-a"].time_to_target_s as $m
		| .systems as $s
		| $s | to_entries[] | .value as $v
		| "| \($set) | \(.key) | \($v.reached) | \(f($v.time_to_target_s; 1)) | "
		  + (if .key == "mlfabric-a" then ratio($s["rr-sync"].time_to_target_s; $m) + " | " + ratio($s["async"].time_to_target_s; $m) else "  |  " end)
		  + " | \(f($v.mean_iteration_s; 3)) | \(f(($v.dropped_fraction // 0) * 100; 1)) | "
		  + "\(f($v.delay.mean; 2)) / \($v.delay.p50 // "-") / \($v.delay.p99 // "-") / \($v.delay.max // "-") | "
		  + "\(f(if $v.server_rx_bytes then $v.server_rx_bytes / 1e6 else null end; 0)) |"' "$r/results.json"
	done
}
TABLE=$(table "${runs[@]}")
echo "$TABLE"
{
	echo
	echo "## Training fabric: time to target accuracy (bench-fabric, $STAMP)"
	echo
	echo "Command: \`make bench-fabric\` (bench/fabric_bench.sh; experiments ${EXPS[*]}; run folders under"
	echo "runs/bench-fabric-$STAMP/). Fashion-MNIST MLP $(jq -r .model "${EXPS[0]}") (update $(jq -r '.model' "${EXPS[0]}" |
		awk -F, '{ n = 0; for (i = 1; i < NF; i++) n += ($i + 1) * $(i + 1); printf "%.2f MB", (4 * n + 1024) / 1e6 }')),"
	echo "$(jq -r '"\(.systems | length) systems x 4 workers, target accuracy \(.target_accuracy) on \(.eval_images) test images, time limit \(.time_limit_s) s, rate_scale \(.rate_scale) (link rates {0.1 .. 1} Gbit/s), period \(.period_s) s, seed \(.seed)"' "${EXPS[0]}")."
	echo "Ratios are RR-Sync time / MLfabric-A time and Async time / MLfabric-A time (paper Table 2 reports"
	echo "MLfabric-A 1.23x-2.96x faster than RR-Sync, highest in C2-N1). Measured on one 2-core machine shared"
	echo "by every emulated host (and other jobs): compute, not the emulated network, is often the bottleneck."
	echo
	echo "$TABLE"
} >>"$ROOT/docs/results/fabric.md"
echo "bench-fabric: table appended to docs/results/fabric.md; run folders in $OUT" >&2
