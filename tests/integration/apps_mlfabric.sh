#!/usr/bin/env bash
# apps_mlfabric.sh - MLfabric-A end to end: mlf-scheduler, mlf-aggregator, mlf-ps and 2 mlf-workers
# train for ~15 s; test accuracy rises above 0.5, every applied update respects the delay bound,
# each update is applied at most once, and every pushed update is applied or has a scheduler fate.
. "$(dirname "$0")/apps_lib.sh"
[ -x "$ROOT/build/mlf-scheduler" ] && [ -x "$ROOT/build/mlf-aggregator" ] ||
	{ echo "SKIP $TEST_NAME: build/mlf-scheduler or build/mlf-aggregator not built"; exit 0; }
apps_begin appmf 4 'ps:2:"server","scheduler"' 'w0:10:"worker"' 'w1:11:"worker"' 'ag:20:"aggregator"'
mkdir -p "$WORK/sched"
apps_run sched ps "$ROOT/build/mlf-scheduler" --cluster "$CLUSTER" --records "$WORK/sched"
for h in ps w0 w1 ag; do dp_start $h; done
apps_run agg ag "$ROOT/build/mlf-aggregator" --cluster "$CLUSTER" --host ag

TAU=4
MODEL=784,128,10
apps_run ps ps "$PS" --cluster "$CLUSTER" --host ps --mode mlfabric-a --workers 2 --model $MODEL \
	--tau-max $TAU --eval-every 1 --eval-images 500 --records "$WORK/ps"
sleep 1
kill -0 "$PID_ps" 2>/dev/null || fail "mlf-ps exited at start: $(tail -2 "$WORK/ps.log")"
for i in 0 1; do
	apps_run w$i w$i "$WK" --cluster "$CLUSTER" --host w$i --server ps --mode mlfabric-a --shard $i/2 \
		--model $MODEL --lr 0.01 --duration 15 --straggle C1 --seed $((i + 1)) --records "$WORK/w$i"
done
wait "$PID_w0" || fail "worker w0 failed: $(tail -2 "$WORK/w0.log")"
wait "$PID_w1" || fail "worker w1 failed: $(tail -2 "$WORK/w1.log")"
sleep 1
apps_stop_ps

rose=$(apps_accuracy_rose 0.5)
pushed=$(cat "$WORK"/w0/pushes.jsonl "$WORK"/w1/pushes.jsonl | wc -l)
applied=$(jq .applied "$WORK/ps/server.json")
ok "MLfabric-A, 2 workers: $pushed pushes, $applied applied, server accuracy $rose"

apps_applied_once
maxd=$(jq -s 'map(.delay) | max' "$WORK/ps/applied.jsonl")
[ "$maxd" -le $TAU ] || fail "an update was applied with delay $maxd > delay bound $TAU"
[ "$(jq .version "$WORK/ps/server.json")" = "$applied" ] ||
	fail "server version $(jq .version "$WORK/ps/server.json") != $applied applied updates"
# every pushed id was applied or the scheduler recorded why not (dropped / lost)
cat "$WORK"/w0/pushes.jsonl "$WORK"/w1/pushes.jsonl | jq .id | sort >"$WORK/pushed.ids"
jq .id "$WORK/ps/applied.jsonl" | sort >"$WORK/applied.ids"
jq -r 'select(.fate == "dropped" or .fate == "lost") | .id' "$WORK/sched/updates.jsonl" | sort >"$WORK/notapplied.ids"
unexplained=$(comm -23 "$WORK/pushed.ids" "$WORK/applied.ids" | comm -23 - "$WORK/notapplied.ids" | wc -l)
[ "$unexplained" = 0 ] || fail "$unexplained pushed updates neither applied nor dropped/lost in the scheduler's records"
aggs=$(jq -s 'map(select(.parts > 1)) | length' "$WORK/ps/applied.jsonl")
ok "delays <= $TAU (max $maxd), each update applied at most once, $(wc -l <"$WORK/notapplied.ids") dropped/lost, $aggs parts via aggregates"
