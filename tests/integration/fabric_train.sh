#!/usr/bin/env bash
# fabric_train.sh - end to end: tools/mlf-cluster trains MLfabric-A on a 3-worker emulated cluster
# (conf/cluster-fabric3.json, C1-N1, a small model) with one worker killed mid-run, and checks the
# run folder: accuracy rises well above chance, every applied update's delay <= tau_max, the
# server applies transfers in the scheduler's planned order, every push is applied or reported
# dropped, the dead worker is named in the log, teardown leaves no namespace or process. Then bad
# input: an unknown host in the experiment, a dataplane that fails to start, a worker without a
# running dataplane.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/workdir.sh"   # work_done
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
MC="$ROOT/tools/mlf-cluster"
TB="$ROOT/build/mlf-testbed"
CL="$ROOT/conf/cluster-fabric3.json"
CN=clut
TEST_NAME=fabric_train
fail() { echo "FAIL $TEST_NAME: $*" >&2; exit 1; }
ok() { echo "ok   $TEST_NAME: $*"; }
[ "$(id -u)" = 0 ] || { echo "SKIP $TEST_NAME: needs root"; exit 0; }
for p in mlf-dataplane mlf-tel mlf-scheduler mlf-aggregator mlf-ps mlf-worker mlf-testbed; do
	[ -x "$ROOT/build/$p" ] || { echo "SKIP $TEST_NAME: build/$p not built"; exit 0; }
done
WORK="$(mktemp -d --tmpdir=/dev/shm)"
KILLER=""
cleanup() {
	local rc=$?
	[ -n "$KILLER" ] && kill "$KILLER" 2>/dev/null
	"$TB" down "$CL" >/dev/null 2>&1 || true
	if [ $rc -ne 0 ]; then
		[ -f "$WORK/run/run.log" ] && { echo "--- run.log"; tail -n 15 "$WORK/run/run.log"; } >&2
		for f in "$WORK"/run/mlfabric-a/logs/*.log; do [ -f "$f" ] && { echo "--- $f"; tail -n 3 "$f"; }; done >&2
		echo "FAIL $TEST_NAME (exit $rc)"
	fi
	work_done $rc
	exit $rc
}
trap cleanup EXIT

cat >"$WORK/exp.json" <<JSON
{ "name": "fabric-train", "cluster": "$CL", "systems": ["mlfabric-a"],
  "compute": "C1", "network": "N1", "rate_scale": 0.1, "period_s": 5,
  "model": "784,64,10", "batch": 32, "lr": 0.005, "momentum": 0.9, "tau_max": 4,
  "target_accuracy": 0.99, "time_limit_s": 30, "eval_every_s": 2, "eval_images": 1000,
  "batch_ms": 100, "t_lag": 0.2, "seed": 3 }
JSON

"$MC" run "$WORK/exp.json" --out "$WORK/run" >"$WORK/out" 2>&1 || { tail -n 20 "$WORK/out"; fail "mlf-cluster run failed"; }
R="$WORK/run/mlfabric-a"
REC="$R/records"

# accuracy rises well above chance (0.1 for 10 classes)
first=$(head -n 1 "$REC/accuracy.jsonl" | jq .accuracy)
final=$(jq -r '.systems["mlfabric-a"].final_accuracy' "$WORK/run/results.json")
awk -v f="$final" 'BEGIN { exit !(f > 0.5) }' || fail "final test accuracy $final, expected > 0.5"
awk -v a="$first" -v f="$final" 'BEGIN { exit !(f > a) }' || fail "accuracy did not rise: first $first, final $final"
ok "test accuracy rose from $first to $final"

# every applied update's delay is within the delay bound
n_applied=$(wc -l <"$REC/applied.jsonl")
[ "$n_applied" -ge 20 ] || fail "only $n_applied updates applied"
over=$(jq -s '[.[] | select(.delay > 4 or .delay < 0)] | length' "$REC/applied.jsonl")
[ "$over" = 0 ] || fail "$over of $n_applied applied updates have delay outside [0, tau_max = 4]"
bad=$(jq -s '[.[] | select(.delay != .at - .version)] | length' "$REC/applied.jsonl")
[ "$bad" = 0 ] || fail "$bad applied records with delay != at - version"
ok "$n_applied applied updates, every delay in [0, 4]"

# commits follow the planned order: the server's applied transfers are, in order, a subsequence
# of the scheduler's transfers to the server (lost ones skipped), and nothing unplanned is applied
# (xfer ids reach 2^62: read them as text, jq would round them to doubles)
xfer_ids() { sed -n 's/.*"xfer": *\([0-9]*\).*/\1/p'; }
grep '"dst": *"ps"' "$REC/transfers.jsonl" | grep -v '"what": *"model"' | xfer_ids >"$WORK/planned"
xfer_ids <"$REC/applied.jsonl" | uniq >"$WORK/applied"
awk 'NR == FNR { pos[$1] = FNR; next }
     !($1 in pos) { print "transfer " $1 " applied but never planned to the server"; exit 1 }
     pos[$1] <= last { print "transfer " $1 " applied after " prev ", planned before it"; exit 1 }
     { last = pos[$1]; prev = $1 }' "$WORK/planned" "$WORK/applied" >"$WORK/order.err" ||
	fail "commit order: $(cat "$WORK/order.err")"
ok "$(wc -l <"$WORK/applied") transfers applied in the planned order ($(wc -l <"$WORK/planned") planned)"

# every push is applied or reported dropped/lost (pushes of the last 3 s before the stop may
# still be in flight)
t_end=$(jq .t_end "$R/run.json")
cat "$REC"/w*/pushes.jsonl | jq -r --argjson e "$t_end" 'select(.t < $e - 3) | .id' >"$WORK/pushed"
{ jq -r '.id' "$REC/applied.jsonl"; jq -r 'select(.fate == "dropped" or .fate == "lost") | .id' "$REC/updates.jsonl"; } | sort -u >"$WORK/accounted"
missing=$(sort -u "$WORK/pushed" | comm -23 - "$WORK/accounted" | wc -l)
[ "$(wc -l <"$WORK/pushed")" -ge 20 ] || fail "only $(wc -l <"$WORK/pushed") pushes recorded"
[ "$missing" = 0 ] || fail "$missing of $(wc -l <"$WORK/pushed") pushes neither applied nor reported dropped: $(sort -u "$WORK/pushed" | comm -23 - "$WORK/accounted" | head -3 | xargs)"
ok "all $(wc -l <"$WORK/pushed") pushes applied or reported dropped"

# teardown left nothing
grep -q "teardown done: no namespace $CN-\* and no process left" "$WORK/run/run.log" || fail "teardown not confirmed in run.log"
[ "$(ip netns list | grep -c "^$CN-" || true)" = 0 ] || fail "namespaces left: $(ip netns list | grep "^$CN-" | xargs)"
# (pgrep -x with an alternation longer than 15 characters matches nothing: match the command line)
for p in $(pgrep -f -- "cluster-fabric3" || true); do
	case "$(cat /proc/"$p"/comm 2>/dev/null)" in
	mlf-worker | mlf-ps | mlf-scheduler | mlf-aggregator | mlf-dataplane)
		fail "process $p ($(cat /proc/"$p"/comm)) of the run is still running" ;;
	esac
done
for f in accuracy delays timeline; do [ -s "$WORK/run/$f.png" ] || fail "$f.png missing"; done
ok "no namespace or process left, plots written"

# a worker killed mid-run (once it pushed: its first line in records/w2/pushes.jsonl): the run
# still finishes and the log names the dead worker
jq '.time_limit_s = 16' "$WORK/exp.json" >"$WORK/exp-kill.json"
(
	for _ in $(seq 1 300); do
		for pid in $(ip netns pids "$CN-w2" 2>/dev/null); do
			if [ "$(cat /proc/"$pid"/comm 2>/dev/null)" = mlf-worker ] &&
				[ -s "$WORK/kill/mlfabric-a/records/w2/pushes.jsonl" ]; then
				date +%s.%N >"$WORK/killed_at"; kill -KILL "$pid"; exit 0
			fi
		done
		sleep 0.2
	done
) &
KILLER=$!
"$MC" run "$WORK/exp-kill.json" --out "$WORK/kill" >"$WORK/out" 2>&1 || { tail -n 20 "$WORK/out"; fail "the run with a killed worker failed"; }
wait "$KILLER" 2>/dev/null || true; KILLER=""
[ -f "$WORK/killed_at" ] || fail "the worker process of w2 was never seen with a push in records/w2/pushes.jsonl"
grep -q "worker w2 (pid [0-9]*) exited with status 137" "$WORK/kill/run.log" || fail "run.log does not name the dead worker w2"
jq -e '.dead_workers == ["w2"] and .stop_reason == "time_limit"' "$WORK/kill/mlfabric-a/run.json" >/dev/null ||
	fail "run.json: $(jq -c '{dead_workers, stop_reason}' "$WORK/kill/mlfabric-a/run.json")"
[ "$(ip netns list | grep -c "^$CN-" || true)" = 0 ] || fail "namespaces left after the run with a dead worker"
after=$(jq -r --argjson k "$(cat "$WORK/killed_at")" 'select(.t > $k + 2) | .id' "$WORK/kill/mlfabric-a/records/applied.jsonl" | wc -l)
[ "$after" -ge 10 ] || fail "the server applied only $after updates from 2 s after w2's death on (stalled behind the dead worker?)"
ok "worker w2 killed after its first push: run finished at the time limit, w2 named in run.log ($after updates applied from 2 s after its death)"

# bad input: an unknown host, a dataplane that fails to start, a worker without a dataplane
jq '.workers = ["w0", "w7"]' "$WORK/exp.json" >"$WORK/bad.json"
if "$MC" run "$WORK/bad.json" --out "$WORK/bad" 2>"$WORK/err"; then fail "an experiment naming host w7 was accepted"; fi
grep -q 'host "w7" is not in cluster' "$WORK/err" || fail "unknown host error: $(cat "$WORK/err")"
[ ! -e "$WORK/bad" ] && [ "$(ip netns list | grep -c "^$CN-" || true)" = 0 ] || fail "the refused run started something"
if MLF_DATAPLANE=/bin/false "$MC" run "$WORK/exp.json" --out "$WORK/dpfail" >"$WORK/out" 2>&1; then
	fail "a run whose dataplanes cannot start reported success"
fi
grep -q "dataplane of ps did not start: .*host ps" "$WORK/dpfail/run.log" || fail "dataplane failure not named: $(grep dataplane "$WORK/dpfail/run.log" | head -2)"
[ "$(ip netns list | grep -c "^$CN-" || true)" = 0 ] || fail "a failed start left namespaces"
"$TB" up "$CL" >/dev/null 2>&1 || fail "mlf-testbed up"
if timeout 30 "$TB" exec "$CL" w0 "$ROOT/build/mlf-worker" --cluster "$CL" --host w0 --server ps --system mlfabric-a \
	--shard 0/1 --model 784,64,10 --records "$WORK" >"$WORK/w.out" 2>"$WORK/w.err"; then
	fail "a worker without a running dataplane succeeded"
fi
grep -qi "dataplane\|/run/mlfabric/$CN-w0.sock" "$WORK/w.err" || fail "worker error does not name the dataplane: $(head -n 2 "$WORK/w.err")"
"$TB" down "$CL" >/dev/null 2>&1
ok "unknown host refused, failed dataplane start named with teardown, worker without dataplane: $(head -n 1 "$WORK/w.err")"
