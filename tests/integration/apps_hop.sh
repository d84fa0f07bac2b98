#!/usr/bin/env bash
# apps_hop.sh - Hop (hop-asplos2019; docs/api.md "Peers"): decentralized training with no server
# and no scheduler. 4 workers on a ring (each with its two neighbours), parameters and tokens straight
# through the dataplanes (chan 7), --compute-s 0.05, 12 s per case.
# Case "tokens" (w3 4x slower, max_ig 2, no backups; the neighbours from the cluster config's
# "graph", --hop graph): the token queues hold every worker within
# 2 iterations of its neighbours, so the fast ones end at most 2 x 2 = 4 iterations (the ring
# distance to w3 times max_ig) ahead of w3; w0's model (evaluated every second) rises above 0.5.
# Case "backup" (w3 4x slower, one backup worker, max_ig 8): w0 and w2 may go on without w3's
# update, so w0 runs ahead of w3 by more than the 2 of plain decentralized training, but the token
# queue still holds it within max_ig = 8 of its neighbour w3 (§4.3: the gap stays bounded), plus
# one in the iterations counted at the stop: w3 may be stopped inside an iteration whose token it
# already gave (a CI run on 2026-11-26 ended w0 66, w3 57).
# Case "skip" (w3 4x slower, staleness 2, max_ig 2, --hop-jump 4): w3 skips iterations (skipped > 0
# in its worker.json) and ends within max_ig + 1 of w1.
. "$(dirname "$0")/apps_lib.sh"
apps_begin apphop 14 'w0:10:"worker"' 'w1:11:"worker"' 'w2:12:"worker"' 'w3:13:"worker"'
# the ring as the cluster config's "graph" (docs/cluster-config.md): case tokens takes its
# neighbours from it (--hop graph), the other cases from lists
jq '.graph = {"w0": ["w3", "w1"], "w1": ["w0", "w2"], "w2": ["w1", "w3"], "w3": ["w2", "w0"]}' "$CLUSTER" >"$CLUSTER.g" &&
	mv "$CLUSTER.g" "$CLUSTER" || fail "cannot add the graph to $CLUSTER"
for h in w0 w1 w2 w3; do dp_start $h --scheduler none; done
NB=(w3,w1 w0,w2 w1,w3 w2,w0)

# run_case NAME HOP-ARGS...: 4 Hop workers for 12 s, w3 4x slower, w0 evaluating
run_case() {
	local name=$1; shift
	local d="$WORK/$name"
	for i in 0 1 2 3; do mkdir -p "$d/w$i"; done
	for i in 0 1 2 3; do
		apps_run w$i w$i "$WK" --cluster "$CLUSTER" --host w$i --server w0 --mode async --shard $i/4 \
			--model 784,64,10 --lr 0.05 --duration 12 --compute-s 0.05 --seed $((i + 1)) --records "$d/w$i" \
			--hop "${HOP_NB:-${NB[$i]}}" $([ $i = 3 ] && echo --speed 4) $([ $i = 0 ] && echo --eval-every 1 --eval-images 500) "$@"
	done
	for i in 0 1 2 3; do v=PID_w$i; wait "${!v}" || fail "$name: worker w$i failed: $(tail -2 "$WORK/w$i.log")"; done
}
iters() { jq .iterations "$WORK/$1/$2/worker.json"; }

HOP_NB=graph run_case tokens --hop-max-ig 2
grep -q "Hop neighbours w1,w3 (the cluster's graph)" "$WORK/w0.log" ||
	fail "tokens: w0 did not take w1 and w3 from the cluster's graph: $(grep -m1 'Hop neighbours' "$WORK/w0.log")"
a0=$(iters tokens w0) a1=$(iters tokens w1) a3=$(iters tokens w3)
[ "$a3" -ge 5 ] || fail "tokens: the slow worker did only $a3 iterations"
[ $((a0 - a3)) -le 4 ] && [ $((a1 - a3)) -le 2 ] ||
	fail "tokens: iterations w0 $a0, w1 $a1, w3 $a3: the token queues allow w1 (a neighbour) 2 and w0 4 ahead"
acc=$(jq -s 'map(.accuracy) | max' "$WORK/tokens/w0/accuracy.jsonl")
awk -v a="$acc" 'BEGIN { exit !(a > 0.5) }' || fail "tokens: w0's model reached only $acc"

run_case backup --hop-backups 1 --hop-max-ig 8
b0=$(iters backup w0) b3=$(iters backup w3)
[ $((b0 - b3)) -ge 4 ] && [ $((b0 - b3)) -le 9 ] ||
	fail "backup: w0 did $b0 iterations against the slow w3's $b3: expected 4 to 9 (max_ig + the stop's iteration) ahead"

run_case skip --hop-staleness 2 --hop-max-ig 2 --hop-jump 4
s1=$(iters skip w1) s3=$(iters skip w3)
k1=$(jq -s 'last.iter' "$WORK/skip/w1/pushes.jsonl") k3=$(jq -s 'last.iter' "$WORK/skip/w3/pushes.jsonl")
skipped=$(jq .hop_skipped "$WORK/skip/w3/worker.json")
[ "$skipped" -gt 0 ] || fail "skip: the slow worker never skipped an iteration"
[ $((k1 - k3)) -le 3 ] || fail "skip: w1 ended at iteration $k1, w3 at $k3: more than max_ig + 1 apart"
ok "Hop, ring of 4, w3 4x slower: tokens (max_ig 2) iterations w0 $a0 w1 $a1 w3 $a3, w0 accuracy $acc; one backup: w0 $b0 vs w3 $b3; skipping: w3 skipped $skipped, ended at $k3 (w1 $k1, $s1 computed)"
