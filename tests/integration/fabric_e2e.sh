#!/usr/bin/env bash
# fabric_e2e.sh - MLfabric-A end to end with the real scheduler (build/mlf-scheduler): workers w0
# and w1 push 5 updates each (update i = copies of i) to server ps through the scheduler; the server
# commits every update exactly once (version 10, model = 2 x (1+...+5) = 30 everywhere), some of
# them through mlf-aggregator on ag (the scheduler's records name them aggregated), and each
# worker's get returns that model.
. "$(dirname "$0")/fabric_lib.sh"
[ -x "$ROOT/build/mlf-scheduler" ] || { echo "SKIP $TEST_NAME: build/mlf-scheduler not built"; exit 0; }
fab_begin fabe 'ps:1:"server","scheduler"' 'w0:10:"worker"' 'w1:11:"worker"' 'ag:20:"aggregator"'
mkdir -p "$WORK/rec"
bg sched "$TB" exec "$CLUSTER" ps "$ROOT/build/mlf-scheduler" --cluster "$CLUSTER" --records "$WORK/rec"
for h in ps w0 w1 ag; do dp_start $h; done
bg agg "$AGG" --cluster "$CLUSTER" --host ag --progress 0
bg server "$APP" server --cluster "$CLUSTER" --host ps --mode mlfabric-a --n 250000 --count 10
wait_for "$WORK/server.out" "server ready" 10
wait_for "$WORK/agg.err" "registered as aggregator@ag" 10
bg w0 timeout 60 "$APP" worker --cluster "$CLUSTER" --host w0 --server ps --mode mlfabric-a --n 250000 --count 5 --until-version 10
bg w1 timeout 60 "$APP" worker --cluster "$CLUSTER" --host w1 --server ps --mode mlfabric-a --n 250000 --count 5 --until-version 10
wait "$PID_w0" || fail "worker w0 failed: $(cat "$WORK/w0.err")"
wait "$PID_w1" || fail "worker w1 failed: $(cat "$WORK/w1.err")"
wait "$PID_server" || fail "server failed: $(cat "$WORK/server.err")"
grep -q '^server applied=[0-9]* version=10 out_of_order=[0-9]* w0=30 role=server ' "$WORK/server.out" ||
	fail "server end state: $(tail -1 "$WORK/server.out") (expected version 10, w0=30)"
for w in w0 w1; do
	line=$(grep '^get ' "$WORK/$w.out")
	[[ "$line" == "get version=10 w0=30 wlast=30 pushed=5 "* ]] || fail "$w get: $line"
done
fates=$(jq -r .fate "$WORK/rec/updates.jsonl" | sort | uniq -c | tr '\n' ' ')
[ "$(jq -r .fate "$WORK/rec/updates.jsonl" | grep -c .)" = 10 ] || fail "scheduler recorded fates: $fates"
grep -q 'src=ag' "$WORK/server.out" || fail "no update reached the server through the aggregator (fates: $fates)"
ok "10 updates committed once (fates: $fates), via ag: $(grep -c 'src=ag' "$WORK/server.out") aggregates"
