#!/usr/bin/env bash
# apps_shards_sync.sh - MLfabric-S over sharded parameter servers (§6 over §10.2) end to end:
# mlf-scheduler, two mlf-ps --mode mlfabric-s --shard K/2 (each holds half of the model), an
# mlf-aggregator and 3 mlf-workers run 20 synchronous iterations over 1 Gbit/s links (the shard
# servers' 0.25 Gbit/s, so aggregation pays). Checks: each shard applied exactly 3 parts per
# iteration (version 60), both shards applied the same updates at the same versions, every
# iteration k of each worker was computed from the model assembled from both shards after
# iteration k-1 (version 3(k-1)), no shard model copy failed, and the test accuracy the
# evaluating worker measures on the assembled models rises above 0.5.
. "$(dirname "$0")/apps_lib.sh"
IT=20
MODEL=784,128,10
apps_two_shards appss 15 mlfabric-s --model $MODEL
for i in 0 1 2; do
	ev=(); [ $i = 0 ] && ev=(--eval-every 1 --eval-images 500)
	apps_run w$i w$i "$WK" --cluster "$CLUSTER" --host w$i --server p0 --system mlfabric-s --shard $i/3 \
		--model $MODEL --iterations $IT --seed $((i + 1)) --records "$WORK/w$i" "${ev[@]}"
done
for i in 0 1 2; do v=PID_w$i; wait "${!v}" || fail "worker w$i failed: $(tail -2 "$WORK/w$i.log")"; done
N=$((3 * IT))
# each worker's last get returned the model after its iteration: every part is applied by now,
# the servers' records follow their applies
shards_applied() { for k in 0 1; do [ "$(wc -l <"$WORK/ps$k/applied.jsonl")" -ge $N ] || return 1; done; }
wait_event "$N parts in the applied.jsonl of both shards" 60 shards_applied
apps_stop_shards

for k in 0 1; do
	[ "$(jq .applied "$WORK/ps$k/server.json")" = $N ] ||
		fail "shard $k applied $(jq .applied "$WORK/ps$k/server.json") parts, expected $N"
	[ "$(jq .version "$WORK/ps$k/server.json")" = $N ] ||
		fail "shard $k is at version $(jq .version "$WORK/ps$k/server.json"), expected $N"
	dups=$(jq .id "$WORK/ps$k/applied.jsonl" | sort | uniq -d | wc -l)
	[ "$dups" = 0 ] || fail "shard $k applied $dups updates more than once"
	# one step per iteration: every part is applied at the iteration's end version
	bad=$(jq -s 'map(select(.at % 3 != 0)) | length' "$WORK/ps$k/applied.jsonl")
	[ "$bad" = 0 ] || fail "shard $k applied $bad parts at versions inside an iteration"
	jq -c '[.id, .at]' "$WORK/ps$k/applied.jsonl" | sort >"$WORK/applied$k.txt"
done
cmp -s "$WORK/applied0.txt" "$WORK/applied1.txt" ||
	fail "the shards applied different updates or at different versions (first difference: $(diff "$WORK/applied0.txt" "$WORK/applied1.txt" | sed -n 2p))"
ok "MLfabric-S over two shards: each applied $N parts in $IT steps of 3, the same updates at the same versions"

for i in 0 1 2; do
	[ "$(jq -s "map(.version) == [range(0; $N; 3)]" "$WORK/w$i/pushes.jsonl")" = true ] ||
		fail "w$i's updates were computed from versions $(jq -s -c 'map(.version)' "$WORK/w$i/pushes.jsonl"), expected 0, 3, ..., $((N - 3))"
done
models=$(cat "$WORK"/ps*.log | grep -c "model copy for pull" || true)
[ "${models:-0}" = 0 ] || fail "$models shard model copies failed: $(grep -h "model copy for pull" "$WORK"/ps*.log | head -1)"
# updates the scheduler sent through an aggregator (every step sums all 3 parts at the shard anyway)
aggs=$(jq -s 'map(.aggregated) | add' "$WORK/sched/batches.jsonl")
first=$(head -1 "$WORK/w0/accuracy.jsonl" | jq .accuracy)
last=$(tail -1 "$WORK/w0/accuracy.jsonl" | jq .accuracy)
awk -v a="$last" -v f="$first" 'BEGIN { exit !(a > 0.5 && a > f) }' ||
	fail "accuracy of the assembled models went from $first to $last (expected > 0.5)"
ok "each worker's iteration k came from the model of both shards at version 3(k-1); $aggs of $N updates aggregated on the way; accuracy $first -> $last"
