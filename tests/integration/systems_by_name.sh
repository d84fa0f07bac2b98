#!/usr/bin/env bash
# systems_by_name.sh - every system trains when an experiment names only it: tools/mlf-cluster
# runs the ten systems in turn on one short experiment (conf/cluster-fabric3.json, 3 workers, a
# small model; each system stops at accuracy 0.5, a few seconds on an idle machine, or after 30 s)
# that sets none of a system's own keys, so each runs with its paper's defaults
# (docs/experiments.md "Each system's defaults"; `check` names them). Each system's accuracy must
# rise: at least 2 evaluations, the best at least 0.15 above the run's own first evaluation (the
# model before or just after its first updates).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/workdir.sh"   # work_done
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
MC="$ROOT/tools/mlf-cluster"
TB="$ROOT/build/mlf-testbed"
CL="$ROOT/conf/cluster-fabric3.json"
TEST_NAME=systems_by_name
SYSTEMS="mlfabric-a mlfabric-s async rr-sync ssp asp esync adsp local-sgd hop"
fail() { echo "FAIL $TEST_NAME: $*" >&2; exit 1; }
ok() { echo "ok   $TEST_NAME: $*"; }
[ "$(id -u)" = 0 ] || { echo "SKIP $TEST_NAME: needs root"; exit 0; }
for p in mlf-dataplane mlf-tel mlf-scheduler mlf-aggregator mlf-ps mlf-worker mlf-rrsync mlf-testbed; do
	[ -x "$ROOT/build/$p" ] || { echo "SKIP $TEST_NAME: build/$p not built"; exit 0; }
done
command -v mpirun >/dev/null || { echo "SKIP $TEST_NAME: no mpirun (system rr-sync)"; exit 0; }
WORK="$(mktemp -d --tmpdir=/dev/shm)"
cleanup() {
	local rc=$?
	"$TB" down "$CL" >/dev/null 2>&1 || true
	if [ $rc -ne 0 ]; then
		[ -f "$WORK/run/run.log" ] && { echo "--- run.log"; tail -n 15 "$WORK/run/run.log"; } >&2
		echo "FAIL $TEST_NAME (exit $rc)"
	fi
	work_done $rc
	exit $rc
}
trap cleanup EXIT

list=$(printf '"%s",' $SYSTEMS)
cat >"$WORK/exp.json" <<JSON
{ "name": "by-name", "cluster": "$CL", "systems": [${list%,}],
  "compute": "C1", "network": "N1", "rate_scale": 0.1, "period_s": 5,
  "model": "784,32,10", "batch": 32, "lr": 0.05, "momentum": 0, "compute_s": 0.02,
  "target_accuracy": 0.5, "time_limit_s": 30, "eval_every_s": 0.5, "eval_images": 500, "seed": 2 }
JSON

# check names the defaults it applies: ADSP's 1/M (3 workers), ESync's epsilon 1, Hop's graph
"$MC" check "$WORK/exp.json" >"$WORK/check" 2>&1 || { cat "$WORK/check"; fail "mlf-cluster check failed"; }
for want in "default adsp: adsp_global_lr = 0.3333" "default esync: esync_global_lr = 1 " \
	"default hop: hop_graph = ring-based "; do
	grep -q "$want" "$WORK/check" || { cat "$WORK/check"; fail "check does not print \"$want\""; }
done

start=$(date +%s.%N)
"$MC" run "$WORK/exp.json" --out "$WORK/run" >"$WORK/out" 2>&1 || { tail -n 20 "$WORK/out"; fail "mlf-cluster run failed"; }
took=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.0f", e - s }')
R="$WORK/run/results.json"
summary=""
for s in $SYSTEMS; do
	read -r n first best < <(jq -r --arg s "$s" '.systems[$s] | "\(.evaluations) \(.first_accuracy) \(.best_accuracy)"' "$R")
	[ "$n" != null ] && [ "$n" -ge 2 ] || fail "$s: $n evaluations (at least 2 needed to see a rise)"
	awk -v f="$first" -v b="$best" 'BEGIN { exit !(b >= f + 0.15) }' ||
		fail "$s: accuracy did not rise: first evaluation $first, best $best of $n"
	summary="$summary $s $first->$best;"
done
ok "every system trained by name alone (first -> best accuracy):$summary ${took} s in all"
