#!/usr/bin/env bash
# fabric_failover.sh - the library's replica with the real scheduler (build/mlf-scheduler):
# workers w0 and then w1 push 5 updates each (update i = copies of i, plain sums, with its true
# norm) to server ps, w1 closing right after its pushes (mlf_close drains them); the scheduler
# replicates them to replica r1 (mlfabric replication, div_max 1, aggregator ag), the
# replica ends with the server's model (w0 = 30), snapshots every batch pair up with mlf-verify;
# then the server is killed: its dataplane tells the scheduler at once that the server app is
# gone, the scheduler promotes r1, and worker w3 pushes updates 11 and 12 for "ps" that the promoted
# replica applies (w0 = 30 + 11 + 12 = 53); a new replica r2 then joins r1 and catches up (53).
. "$(dirname "$0")/fabric_lib.sh"
[ -x "$ROOT/build/mlf-scheduler" ] && "$ROOT/build/mlf-scheduler" --help | grep -q -- --verify-every ||
	{ echo "SKIP $TEST_NAME: build/mlf-scheduler without replication"; exit 0; }
fab_begin fabf 'ps:1:"server","scheduler"' 'w0:10:"worker"' 'w1:11:"worker"' 'w2:12:"worker"' 'w3:13:"worker"' \
	'ag:20:"aggregator"' 'r1:30:"replica"' 'r2:31:"replica"'
mkdir -p "$WORK/rec"
bg sched "$TB" exec "$CLUSTER" ps "$ROOT/build/mlf-scheduler" --cluster "$CLUSTER" --records "$WORK/rec" --verify-every 1
for h in ps w0 w1 w2 w3 ag r1 r2; do dp_start $h; done
bg agg "$AGG" --cluster "$CLUSTER" --host ag --progress 0
bg server "$APP" server --cluster "$CLUSTER" --host ps --mode mlfabric-a --n 10000 --stay --verify "$WORK/verify"
wait_for "$WORK/server.out" "server ready" 10
bg replica "$APP" replica --cluster "$CLUSTER" --host r1 --server ps --mode mlfabric-a --n 10000 --verify "$WORK/verify"
wait_for "$WORK/replica.out" "replica ready" 10
wait_for "$WORK/agg.err" "registered as aggregator@ag" 10
sleep 0.5
bg w0 timeout 60 "$APP" worker --cluster "$CLUSTER" --host w0 --server ps --mode mlfabric-a --n 10000 --count 5
wait "$PID_w0" || fail "worker w0 failed: $(cat "$WORK/w0.err")"
# w1 starts after w0 is done: its get is answered with version 5 at once, so it closes right
# after pushing; mlf_close waits until its updates and their replica copies are sent (else the
# server loses updates and the replica has to catch up from a state transfer)
bg w1 timeout 60 "$APP" worker --cluster "$CLUSTER" --host w1 --server ps --mode mlfabric-a --n 10000 --count 5
wait "$PID_w1" || fail "worker w1 failed: $(cat "$WORK/w1.err")"
wait_for "$WORK/replica.out" '^update .* version=10 w0=30 ' 10
s=$(grep '^update .* version=10 ' "$WORK/server.out" | sed 's/.*w0=//')
r=$(grep '^update .* version=10 ' "$WORK/replica.out" | sed 's/.*w0=//')
[ "$s" = "$r" ] || fail "server '$s' and replica '$r' differ at version 10"
# snapshots are taken at batch boundaries: no batch has started since w1's updates took the
# model to version 10; w2's pull of version 10 makes one
timeout 60 "$APP" worker --cluster "$CLUSTER" --host w2 --server ps --mode mlfabric-a --n 10000 --first 11 --count 0 \
	>"$WORK/w2.out" 2>"$WORK/w2.err" || fail "worker w2 failed: $(cat "$WORK/w2.err")"
wait_for "$WORK/verify/snapshots.jsonl" '"role":"replica".*"version":10' 5
grep -E 'is stale|update\(s\) lost' "$WORK/sched.err" && fail "a closing worker lost updates or replica copies"
"$ROOT/build/mlf-verify" "$WORK/verify" --batches "$WORK/rec/batches.jsonl" --div-max 1 >"$WORK/verify.out" 2>&1
rc=$?
[ $rc = 0 ] || fail "mlf-verify: $(cat "$WORK/verify.out")"
grep -Eq '^ +[0-9]+ +10 +10 +0 ' "$WORK/verify.out" || fail "no snapshot pair at version 10: $(cat "$WORK/verify.out")"
kill -9 "$PID_server"
# the dataplane of ps reports the server app gone (no traffic needed); after the promotion,
# w3's updates 11 and 12 are applied by r1
wait_for "$WORK/replica.err" "promoted from replica" 5
timeout 60 "$APP" worker --cluster "$CLUSTER" --host w3 --server ps --mode mlfabric-a --n 10000 --first 11 --count 2 \
	>"$WORK/w3.out" 2>"$WORK/w3.err" || fail "worker w3 failed: $(cat "$WORK/w3.err")"
line=$(grep '^get ' "$WORK/w3.out")
[[ "$line" == "get version=12 w0=53 "* ]] || fail "w3 get: $line"
grep -q '^update .* version=12 w0=53 ' "$WORK/replica.out" || fail "promoted replica: $(tail -3 "$WORK/replica.out")"
# a new replica joins the promoted server r1 and catches up from it (state transfer)
bg replica2 "$APP" replica --cluster "$CLUSTER" --host r2 --server r1 --mode mlfabric-a --n 10000
wait_for "$WORK/replica2.out" '^installed version=12 w0=53 ' 10
kill "$PID_sched"; wait "$PID_sched" 2>/dev/null # writes failover.jsonl
fo=$(cat "$WORK/rec/failover.jsonl")
[ "$(jq -r .new_server <<<"$fo")" = r1 ] && [ "$(jq .version <<<"$fo")" = 10 ] && [ "$(jq .lost_committed <<<"$fo")" = 0 ] ||
	fail "failover.jsonl: $fo"
echo "failover: $(jq -c '{promoted_after_s: (.t_promoted - .t_gone), first_commit_after_s: (.t_first_commit - .t_gone)}' <<<"$fo")"
ok "replicated to w0 = 30 on both (snapshots: divergence 0), fail-over to r1, w3's updates applied there (53), new replica r2 caught up from r1"
