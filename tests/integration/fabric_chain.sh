#!/usr/bin/env bash
# fabric_chain.sh - chain replication in the library (docs/replication.md): the (fake) scheduler
# tells server ps that r1 is its chain replica; worker w0 pushes 4 updates to ps only; the server
# forwards each applied transfer to r1 on chan 4 and reports its commit only after the forward
# was delivered; r1 applies all 4 in the same order (momentum 0.5) and ends with a model bit for
# bit equal to the server's, committing each update as the replica. Then the replica host dies
# (its dataplane is killed; a dead app alone would not fail a forward its dataplane accepts): the
# next forward (update 5, from worker w1) fails, the server logs the broken chain, tells the scheduler (done < 0) and still
# commits and applies what follows.
. "$(dirname "$0")/fabric_lib.sh"
fab_begin fabk 'ps:1:"server","scheduler"' 'w0:10:"worker"' 'w1:11:"worker"' 'r1:30:"replica"'
bg sched "$TB" exec "$CLUSTER" ps "$FAKESCHED" --listen 10.82.0.1:7070 --scenario chain --time-limit 60
wait_for "$WORK/sched.out" listening 5
dp_start ps
dp_start w0
dp_start w1
dp_start r1
wait_for "$WORK/sched.out" '"type":"hello","host":"r1"' 5
bg server "$APP" server --cluster "$CLUSTER" --host ps --mode mlfabric-a --n 1000 --momentum 0.5 --stay
bg replica "$APP" replica --cluster "$CLUSTER" --host r1 --server ps --mode mlfabric-a --n 1000 --momentum 0.5 \
	--replication chain
wait_for "$WORK/server.out" "server ready" 10
wait_for "$WORK/replica.out" "replica ready" 10
wait_for "$WORK/sched.out" 'tx ps {"type":"replica".*"host":"r1"' 5
grep 'rx r1 .*"type":"register"' "$WORK/sched.out" | grep -q '"replication":"chain"' || fail "replica did not register as chain"
wait_for "$WORK/server.err" "chain replication to r1" 5
timeout 30 "$APP" worker --cluster "$CLUSTER" --host w0 --server ps --mode mlfabric-a --n 1000 --count 4 \
	>"$WORK/worker.out" 2>"$WORK/worker.err" || fail "worker failed: $(cat "$WORK/worker.err")"
wait_for "$WORK/replica.out" '^update .* version=4 ' 5
s=$(grep '^update .* version=4 ' "$WORK/server.out" | sed 's/.*w0=//')
r=$(grep '^update .* version=4 ' "$WORK/replica.out" | sed 's/.*w0=//')
[ -n "$s" ] && [ "$s" = "$r" ] || fail "after 4 updates: server '$s', replica '$r' (expected equal w0 and hash)"
[ "$(grep -o 'first=[0-9]*' "$WORK/replica.out" | tr '\n' ' ')" = "first=1 first=2 first=3 first=4 " ] ||
	fail "replica applied out of order: $(grep '^update' "$WORK/replica.out")"
[ "$(grep -c 'rx r1 .*"type":"commit"' "$WORK/sched.out")" = 4 ] || fail "replica commits: $(grep -c 'rx r1 .*"type":"commit"' "$WORK/sched.out")"
[ "$(grep -c 'rx ps .*"type":"commit"' "$WORK/sched.out")" = 4 ] || fail "server commits: $(grep -c 'rx ps .*"type":"commit"' "$WORK/sched.out")"
# every server commit is reported after the replica's host received that forward (the server waited)
for v in 1 2 3 4; do
	tc=$(grep "rx ps .*\"type\":\"commit\".*\"version\":$v," "$WORK/sched.out" | sed 's/.*"t":\([0-9.]*\).*/\1/')
	tr=$(grep " from ps complete" "$WORK/dp-r1.log" | sed -n "${v}p" | cut -d' ' -f1)
	[ -n "$tc" ] && [ -n "$tr" ] || fail "version $v: server commit at '$tc', forward received at '$tr'"
	awk -v c="$tc" -v r="$tr" 'BEGIN { exit !(c >= r) }' || fail "version $v committed at $tc before the forward arrived at $tr"
done
grep -q '"status":-' "$WORK/sched.out" && fail "a failed transfer with the chain intact: $(grep '"status":-' "$WORK/sched.out")"
# the replica host dies: the chain breaks (a second worker host: its update ids are new), the server goes on
kill -9 "$DP_PID_r1" "$PID_replica"
sleep 0.5
timeout 60 "$APP" worker --cluster "$CLUSTER" --host w1 --server ps --mode mlfabric-a --n 1000 --first 5 --count 1 --timeout 30 \
	>"$WORK/worker2.out" 2>"$WORK/worker2.err" || fail "second worker failed: $(cat "$WORK/worker2.err")"
grep -q '^update .* version=5 ' "$WORK/server.out" || fail "server did not apply update 5 after the replica died"
wait_for "$WORK/server.err" "chain replication stopped" 5
grep -q 'rx ps .*"type":"done".*"status":-.*chain forward' "$WORK/sched.out" ||
	grep -q 'rx ps .*"type":"done".*chain forward.*"status":-' "$WORK/sched.out" ||
	fail "the scheduler was not told of the broken chain: $(grep 'rx ps .*"type":"done"' "$WORK/sched.out" | tail -2)"
grep -q 'rx ps .*"type":"commit".*"version":5' "$WORK/sched.out" || fail "no commit of version 5 after the broken chain"
kill -INT "$PID_server"; wait "$PID_server" || true
ok "chain forwarding: replica equals the server after 4 updates, commits after delivery; a dead replica breaks the chain (done < 0), the server goes on"
