#!/usr/bin/env bash
# apps_shards_lost.sh - MLfabric-S over two shard servers (§6 over §10.2) past lost parts (issue 37
# item 4): 3 mlf-workers run 24 synchronous iterations; once each pushed 4 updates, w2 is killed
# (kill -9) in the middle of its iteration, and once w0 pushed 4 more, every frame between the
# aggregator ag and shard p1 is dropped (fault injection at p1's dataplane, cut=ag) for longer
# than the dataplanes' 3 s peer timeout, so the aggregated legs to p1 in that window fail.
# Checks: w0 and w1 complete all 24 iterations (each get returns: nothing waits for ever; before,
# both shards stopped at the short iteration's end, 14, and the workers waited for 15 until their
# 30 s get timeout), each from a newer model than the last; the scheduler told the shards the
# short iterations' sizes (sync_step); every update applied at one shard only is one the
# scheduler recorded lost; both shards applied their common updates in one order, none twice.
. "$(dirname "$0")/apps_lib.sh"
IT=24
MODEL=784,64,10
# an iteration without w2 ends at --sync-timeout (no wait for the dead worker's update)
APPS_SCHED_ARGS="--sync-timeout 1"
apps_two_shards appsl 16 mlfabric-s --model $MODEL
for i in 0 1 2; do
	apps_run w$i w$i "$WK" --cluster "$CLUSTER" --host w$i --server p0 --system mlfabric-s --shard $i/3 \
		--model $MODEL --iterations $IT --seed $((i + 1)) --records "$WORK/w$i" --timeout 30
done
wait_event "4 pushes of each worker before killing w2" 60 apps_pushed 4 w0 w1 w2
kill -KILL "$PID_w2"
wait "$PID_w2" 2>/dev/null || true
n0=$(wc -l <"$WORK/w0/pushes.jsonl")
wait_event "4 more pushes of w0 after the kill" 60 apps_pushed $((n0 + 4)) w0
tel="$ROOT/build/mlf-tel"
"$tel" appsl-p1 /mlfabric/faults,cut=ag >"$WORK/tel.out" 2>&1 || fail "mlf-tel: $(cat "$WORK/tel.out")"
sleep 4 # the cut's length: above the dataplanes' 3 s peer timeout, so ag's legs to p1 fail
"$tel" appsl-p1 /mlfabric/faults,none >>"$WORK/tel.out" 2>&1 || fail "mlf-tel: $(cat "$WORK/tel.out")"
for i in 0 1; do v=PID_w$i; wait "${!v}" || fail "worker w$i did not complete its $IT iterations: $(tail -2 "$WORK/w$i.log")"; done
for i in 0 1; do
	its=$(jq .iterations "$WORK/w$i/worker.json")
	[ "$its" = $IT ] || fail "w$i ran $its iterations, expected $IT"
	# every iteration from a newer model than the last
	jq -e -s 'map(.version) | . as $v | [range(1; length)] | all($v[.] > $v[. - 1])' "$WORK/w$i/pushes.jsonl" >/dev/null ||
		fail "w$i computed updates from versions that do not increase: $(jq -s -c 'map(.version)' "$WORK/w$i/pushes.jsonl")"
done
# each worker's last get returned the model after its last iteration: every part is applied or
# lost by now (the pushes of mlf_push_get have no id to match, pushes.jsonl says null)
apps_stop_shards
lostp=$(grep -c "part(s) lost at server" "$WORK/sched.log" || true)
steps=$(cat "$WORK"/ps*.log | grep -c "contributions (sync timeout or parts lost)" || true)
[ "${steps:-0}" -ge 1 ] || fail "no shard server was told an iteration's size (sync_step)"
jq -r 'select(.fate == "lost") | .id' "$WORK/sched/updates.jsonl" | sort -u >"$WORK/lost.txt"
for k in 0 1; do jq -r .id "$WORK/ps$k/applied.jsonl" | sort >"$WORK/ids$k.txt"; done
comm -3 "$WORK/ids0.txt" "$WORK/ids1.txt" | tr -d '\t' | sort >"$WORK/only.txt"
unexplained=$(comm -23 "$WORK/only.txt" "$WORK/lost.txt" | head -3 | tr '\n' ' ')
[ -z "$unexplained" ] || fail "update(s) applied by one shard only that the scheduler did not record lost: $unexplained"
comm -12 "$WORK/ids0.txt" "$WORK/ids1.txt" >"$WORK/both.txt"
for k in 0 1; do jq -r .id "$WORK/ps$k/applied.jsonl" | grep -Fxf "$WORK/both.txt" >"$WORK/order$k.txt" || true; done
cmp -s "$WORK/order0.txt" "$WORK/order1.txt" ||
	fail "the shards applied their common updates in different orders (first difference: $(diff "$WORK/order0.txt" "$WORK/order1.txt" | sed -n 2p))"
for k in 0 1; do
	dups=$(jq .id "$WORK/ps$k/applied.jsonl" | sort | uniq -d | wc -l)
	[ "$dups" = 0 ] || fail "shard $k applied $dups updates more than once"
done
ok "w2 killed mid-iteration, ag cut from p1 for 4 s ($lostp lost-part line(s) in the scheduler's log): w0 and w1 ran all $IT iterations, $steps sync_step(s), $(wc -l <"$WORK/only.txt") update(s) at one shard only, all recorded lost ($(wc -l <"$WORK/lost.txt") lost in all), common updates in one order"
