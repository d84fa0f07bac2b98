#!/usr/bin/env bash
# apps_sync.sh - MLfabric-S end to end: mlf-scheduler, mlf-ps and 2 mlf-workers run 30 synchronous
# iterations (mlf_push_get); the server applies exactly 2 updates per iteration (version 60), both
# workers end on the same model version, and the test accuracy rises above 0.5.
. "$(dirname "$0")/apps_lib.sh"
[ -x "$ROOT/build/mlf-scheduler" ] || { echo "SKIP $TEST_NAME: build/mlf-scheduler not built"; exit 0; }
apps_begin appsy 5 'ps:2:"server","scheduler"' 'w0:10:"worker"' 'w1:11:"worker"'
mkdir -p "$WORK/sched"
apps_run sched ps "$ROOT/build/mlf-scheduler" --cluster "$CLUSTER" --records "$WORK/sched"
for h in ps w0 w1; do dp_start $h; done

IT=30
MODEL=784,128,10
apps_run ps ps "$PS" --cluster "$CLUSTER" --host ps --mode mlfabric-s --workers 2 --model $MODEL \
	--eval-every 1 --eval-images 500 --records "$WORK/ps"
apps_ps_ready ps
for i in 0 1; do
	apps_run w$i w$i "$WK" --cluster "$CLUSTER" --host w$i --server ps --system mlfabric-s --shard $i/2 \
		--model $MODEL --iterations $IT --seed $((i + 1)) --records "$WORK/w$i"
done
wait "$PID_w0" || fail "worker w0 failed: $(tail -2 "$WORK/w0.log")"
wait "$PID_w1" || fail "worker w1 failed: $(tail -2 "$WORK/w1.log")"
apps_stop_ps

rose=$(apps_accuracy_rose 0.5)
apps_applied_once
[ "$(jq .applied "$WORK/ps/server.json")" = $((2 * IT)) ] || fail "server applied $(jq .applied "$WORK/ps/server.json") updates, expected $((2 * IT))"
[ "$(jq .version "$WORK/ps/server.json")" = $((2 * IT)) ] || fail "server version $(jq .version "$WORK/ps/server.json"), expected $((2 * IT))"
# iteration k of each worker is computed from the model after iteration k-1: version 2(k-1)
for i in 0 1; do
	[ "$(jq -s "map(.version) == [range(0; $((2 * IT)); 2)]" "$WORK/w$i/pushes.jsonl")" = true ] ||
		fail "w$i's updates were computed from versions $(jq -s -c 'map(.version)' "$WORK/w$i/pushes.jsonl"), expected 0, 2, ..., $((2 * IT - 2))"
done
ok "MLfabric-S: $IT iterations x 2 workers, server version $((2 * IT)), each iteration from the previous one's model, accuracy $rose"
