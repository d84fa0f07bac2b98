#!/usr/bin/env bash
# replication_bench.sh - `make bench-replication`: the cost of keeping a replica (paper §7.3) on one
# cluster and workload (conf/exp-repl.json, MLfabric-A): no replica, MLfabric replication at
# div_max 0 (strict) and at 1x, 4x, 16x the mean update norm measured in the no-replica run
# (workers' pushes.jsonl), chain replication, checkpointing every N updates; then a server kill
# with MLfabric replication, chain replication and checkpointing. One table: time to target and
# its overhead over no replica, bytes received by the server host and the replica host (eth0),
# recovery time (kill -> first commit at the new server), lost and dropped updates; the two
# targets checked (MLfabric's overhead below chain's at every div_max; >= 3x less data to the
# replica at the largest div_max than at div_max 0). Appended to docs/results/replication.md ("Replication").
# Usage: bench/replication_bench.sh [--base EXP.json] [--checkpoint-every N] [--kill-at S] [--only V,V]
#        bench/replication_bench.sh --table RUN_DIR   (the table of an earlier bench run, no runs)
# --only runs just the named variants (none always runs: it sets the div_max scale).
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT" || exit 1
BASE=conf/exp-repl.json
CKPT=50
KILL_AT=8
TABLE_ONLY=""
ONLY=""
while [ $# -gt 0 ]; do
	case "$1" in
	--base) BASE=${2:?}; shift 2 ;;
	--checkpoint-every) CKPT=${2:?}; shift 2 ;;
	--kill-at) KILL_AT=${2:?}; shift 2 ;;
	--table) TABLE_ONLY=${2:?}; shift 2 ;;
	--only) ONLY=",${2:?},"; shift 2 ;;
	-h | --help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench-replication: unknown option $1" >&2; exit 2 ;;
	esac
done
ORDER="none mlfabric-0x mlfabric-1x mlfabric-4x mlfabric-16x chain checkpoint kill-mlfabric kill-chain kill-checkpoint"
VARIANTS=()
if [ -n "$TABLE_ONLY" ]; then
	OUT=$(cd "$TABLE_ONLY" && pwd) || exit 2
	STAMP=${OUT##*bench-replication-}
	for v in $ORDER; do [ -f "$OUT/$v/results.json" ] && VARIANTS+=("$v"); done
	[ ${#VARIANTS[@]} -gt 0 ] || { echo "bench-replication: no variant results in $OUT" >&2; exit 2; }
	[ -f "$OUT/exp/checkpoint.json" ] && CKPT=$(jq -r .replication.checkpoint_every "$OUT/exp/checkpoint.json")
	[ -f "$OUT/exp/kill-chain.json" ] && KILL_AT=$(jq -r '.faults[0].at_s' "$OUT/exp/kill-chain.json")
else
	[ "$(id -u)" = 0 ] || { echo "bench-replication: needs root (network namespaces)" >&2; exit 2; }
	tools/mlf-cluster check "$BASE" >/dev/null || exit 2
	STAMP=$(date -u +%Y%m%dT%H%M%SZ)
	OUT="$ROOT/runs/bench-replication-$STAMP"
	mkdir -p "$OUT/exp"
fi

# variant NAME JQ-EDIT: run the base experiment edited by JQ-EDIT (replication, faults) as NAME.
variant() {
	local name=$1 edit=$2 exp="$OUT/exp/$1.json"
	[ -z "$ONLY" ] || [ "$name" = none ] || [[ "$ONLY" == *",$name,"* ]] || return 0
	jq --arg n "repl-$name" ".name = \$n | del(.faults) | $edit" "$BASE" >"$exp" || exit 2
	echo "== bench-replication: $name ($(jq -c '{replication, faults}' "$exp"))" >&2
	tools/mlf-cluster run "$exp" --out "$OUT/$name" >"$OUT/$name.out" 2>&1 ||
		echo "bench-replication: $name: the system failed or was not recovered (see $OUT/$name/run.log)" >&2
	tail -n 3 "$OUT/$name.out" | head -n 2 >&2
	VARIANTS+=("$name")
}

[ -n "$TABLE_ONLY" ] || variant none '.replication = {mode: "none"}'
# the mean L2 norm of an update in the no-replica run sets the div_max scale
NORM=$(cat "$OUT"/none/mlfabric-a/records/*/pushes.jsonl 2>/dev/null | jq -s 'map(.norm) | add / length')
if [ -z "$NORM" ] || [ "$NORM" = null ]; then
	echo "bench-replication: no pushes.jsonl in the no-replica run ($OUT/none)" >&2
	exit 1
fi
echo "== bench-replication: mean update norm $NORM" >&2
if [ -z "$TABLE_ONLY" ]; then
	DIVS=(0 "$NORM" "$(awk -v n="$NORM" 'BEGIN { print 4 * n }')" "$(awk -v n="$NORM" 'BEGIN { print 16 * n }')")
	MULT=(0 1 4 16)
	for i in "${!DIVS[@]}"; do
		variant "mlfabric-${MULT[$i]}x" ".replication = {mode: \"mlfabric\", div_max: ${DIVS[$i]}}"
	done
	variant chain '.replication = {mode: "chain"}'
	variant checkpoint ".replication = {mode: \"checkpoint\", checkpoint_every: $CKPT}"
	KILL=".faults = [{at_s: $KILL_AT, kind: \"kill-server\"}]"
	variant kill-mlfabric ".replication = {mode: \"mlfabric\", div_max: ${DIVS[2]}} | $KILL"
	variant kill-chain ".replication = {mode: \"chain\"} | $KILL"
	variant kill-checkpoint ".replication = {mode: \"checkpoint\", checkpoint_every: $CKPT} | $KILL"
fi

# one JSON object per variant with the figures of the table, plus the scheduler's replica
# transfers and punted replica copies (batches.jsonl)
rows() {
	local v rec
	for v in "${VARIANTS[@]}"; do
		[ -f "$OUT/$v/results.json" ] || { jq -nc --arg v "$v" '{variant: $v}'; continue; }
		rec="$OUT/$v/mlfabric-a/records"
		jq -c --arg v "$v" \
			--argjson punted "$(cat "$rec/batches.jsonl" 2>/dev/null | jq -s 'map(.punted // 0) | add // 0')" \
			--argjson rx "$(cat "$rec/transfers.jsonl" 2>/dev/null | jq -s --arg r "$(jq -r '.systems["mlfabric-a"].replication.replica // ""' "$OUT/$v/results.json")" \
				'map(select(.dst == $r and $r != "")) | length')" \
			'.systems["mlfabric-a"] + {variant: $v, punted: $punted, replica_xfers: $rx}' "$OUT/$v/results.json"
	done | jq -s -c .
}
ROWS=$(rows)
echo "$ROWS" >"$OUT/rows.json"
TABLE=$(jq -r --argjson norm "$NORM" '
	def f($x; $n): if $x == null then "-" else ($x * pow(10; $n) | round / pow(10; $n) | tostring) end;
	(map(select(.variant == "none")) | first | .time_to_target_s) as $t0
	| "| variant | replication | div_max | reached | time to target s | overhead vs none | server host MB | replica host MB | transfers to the replica | punted copies | dropped % | lost | recovery s |",
	  "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
	  (.[] | "| \(.variant) | \(.replication.mode // "-")\(if .replication.mode == "checkpoint" then " every \(.replication.checkpoint_every)" else "" end) | "
	    + "\(if .replication.mode == "mlfabric" then f(.replication.div_max; 4) else "-" end) | \(.reached | tostring) | "
	    + "\(f(.time_to_target_s; 1)) | "
	    + "\(if .time_to_target_s and $t0 and .variant != "none" then f((.time_to_target_s / $t0 - 1) * 100; 0) + "%" else "-" end) | "
	    + "\(f(if .server_host_rx_bytes then .server_host_rx_bytes / 1e6 else null end; 1)) | "
	    + "\(f(if .replica_host_rx_bytes then .replica_host_rx_bytes / 1e6 else null end; 1)) | "
	    + "\(if .replication.mode == "mlfabric" then .replica_xfers else "-" end) | \(if .replication.mode == "mlfabric" then .punted else "-" end) | "
	    + "\(f((.dropped_fraction // null) | if . then . * 100 else null end; 1)) | \(.lost // "-") | \(f(.recovery_s; 2)) |")' <<<"$ROWS")
# the two targets
TARGETS=$(jq -r '
	def by($v): map(select(.variant == $v)) | first;
	(by("chain").time_to_target_s) as $chain
	| (map(select(.variant | test("^mlfabric-"))) ) as $m
	| ($m | map(.time_to_target_s)) as $mt
	| (by("mlfabric-0x").replica_host_rx_bytes) as $r0 | (by("mlfabric-16x").replica_host_rx_bytes) as $r16
	| "- MLfabric overhead below chain'"'"'s at every div_max: "
	  + (if $chain == null or ($mt | any(. == null)) then "not measured (a run missed the target)"
	     elif ($mt | all(. < $chain)) then "yes (chain \($chain * 10 | round / 10) s; MLfabric \($mt | map(. * 10 | round / 10) | join(", ")) s)"
	     else "NO (chain \($chain * 10 | round / 10) s; MLfabric \($mt | map(. * 10 | round / 10) | join(", ")) s)" end),
	  "- >= 3x less data to the replica at the largest div_max than at div_max 0: "
	  + (if $r0 == null or $r16 == null or $r16 == 0 then "not measured"
	     else "\(if $r0 / $r16 >= 3 then "yes" else "NO" end) (\($r0 / $r16 * 100 | round / 100)x: \($r0 / 1e6 * 10 | round / 10) MB at 0, \($r16 / 1e6 * 10 | round / 10) MB at 16x)" end)' <<<"$ROWS")
echo "$TABLE"
echo "$TARGETS"

# a partial run (--only) does not replace the full table: its table is in $OUT/table.md
if [ -n "$ONLY" ]; then
	{ echo "$TABLE"; echo; echo "$TARGETS"; } >"$OUT/table.md"
	echo "bench-replication: --only: docs/results/replication.md left as it is; table in $OUT/table.md" >&2
	exit 0
fi
# the "Replication" section of docs/results/replication.md for this base experiment is replaced by this run's
CLUSTER_CONF=$(jq -r .cluster "$BASE")
LINKS=$(jq -r '.hosts | map("\(.name) \(.up_gbps)/\(.down_gbps)") | join(", ")' "$CLUSTER_CONF" 2>/dev/null)
CMD="make bench-replication"
[ "$BASE" = conf/exp-repl.json ] || CMD="bench/replication_bench.sh --base $BASE"
{
	# everything but an earlier bench-replication section of the same base (or of no stated base),
	# without trailing blank lines; the hand-written "## Replication ..." sections stay
	awk -v tag="base $BASE," '/^## Replication \(bench-replication/ { if (index($0, tag) || !index($0, "base ")) { skip = 1; next } }
		skip && /^## / { skip = 0 }
		!skip { buf = buf $0 "\n"; if ($0 != "") { printf "%s", buf; buf = "" } }' "$ROOT/docs/results/replication.md"
	echo
	echo "## Replication (bench-replication, base $BASE, $STAMP)"
	echo
	echo "Command: \`$CMD\` (bench/replication_bench.sh; base experiment $BASE, run folders under"
	echo "runs/bench-replication-$STAMP/). $(jq -r --arg cl "$CLUSTER_CONF" --arg links "$LINKS" '"MLfabric-A, \(.compute)-\(.network), model \(.model), momentum \(.momentum), lr \(.lr), 4 workers, server ps, replica rp (\($cl), links up/down Gbit/s: \($links); rate_scale \(.rate_scale)), target accuracy \(.target_accuracy), time limit \(.time_limit_s) s, seed \(.seed)"' "$BASE")."
	echo "div_max is a multiple (0, 1x, 4x, 16x) of the mean update norm $(awk -v n="$NORM" 'BEGIN { printf "%.4g", n }') measured in the no-replica run."
	echo "Host MB: bytes received by the host's eth0 (all traffic: updates, replica copies, models, control)."
	echo "Kill runs: kill -9 of the server's mlf-ps $KILL_AT s after the workers start; recovery = the kill to the"
	echo "first commit at the new server (promoted replica; or the server restarted from its checkpoint at once);"
	echo "kill-mlfabric uses div_max 4x. One seed per variant on one 2-core machine shared by every emulated host:"
	echo "times vary by several seconds between repeats. Transfers to the replica and punted copies: the scheduler's"
	echo "transfers.jsonl and batches.jsonl. The replica's bytes fall with div_max only as far as the planner punts"
	echo "replica copies (to aggregate them later): it schedules every copy that fits before the batch's last server"
	echo "commit and punts only when the replica schedule falls short of the bound (§5.3)."
	echo
	echo "$TABLE"
	echo
	echo "Targets:"
	echo "$TARGETS"
} >"$OUT/replication.md.new" && mv "$OUT/replication.md.new" "$ROOT/docs/results/replication.md"
echo "bench-replication: table written into docs/results/replication.md (section Replication, base $BASE); run folders in $OUT" >&2
