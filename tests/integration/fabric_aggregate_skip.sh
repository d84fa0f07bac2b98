#!/usr/bin/env bash
# fabric_aggregate_skip.sh - like fabric_aggregate.sh, but the (fake) scheduler tells the
# aggregator that the phantom input will never arrive (`skip` with chan 2, as mlf-scheduler does
# when the worker sending an input dies): with --input-timeout 30 the aggregator still sends the
# aggregate of the two real inputs at once (well before 30 s), reports `partial` naming the
# phantom, and the server commits version 2.
. "$(dirname "$0")/fabric_lib.sh"
fab_begin fabk 'ps:1:"server","scheduler"' 'w0:10:"worker"' 'ag:20:"aggregator"'
bg sched "$TB" exec "$CLUSTER" ps "$FAKESCHED" --listen 10.82.0.1:7070 --scenario aggregate --count 2 \
	--weights '[1,2,1]' --skip-phantom --time-limit 60
wait_for "$WORK/sched.out" listening 5
dp_start ps
dp_start w0
dp_start ag
wait_for "$WORK/sched.out" '"type":"hello","host":"ag"' 5
bg agg "$AGG" --cluster "$CLUSTER" --host ag --input-timeout 30 --progress 0
bg server "$APP" server --cluster "$CLUSTER" --host ps --mode mlfabric-a --n 1000 --count 1
wait_for "$WORK/server.out" "server ready" 10
wait_for "$WORK/agg.err" "registered as aggregator@ag" 10
t0=$(date +%s.%N)
timeout 60 "$APP" worker --cluster "$CLUSTER" --host w0 --server ps --mode mlfabric-a --n 1000 --count 2 \
	>"$WORK/worker.out" 2>"$WORK/worker.err" || fail "worker failed: $(cat "$WORK/worker.err")"
wait "$PID_server" || fail "server failed: $(cat "$WORK/server.err")"
el=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
awk -v e="$el" 'BEGIN { exit !(e < 30) }' || fail "the server committed after $el s, the aggregator's input timeout: it waited for the skipped input"
line=$(grep '^update ' "$WORK/server.out")
[[ "$line" == *"src=ag parts=2 first=5 last=5 version=2 w0=5 "* ]] || fail "server got: $line (expected the weighted sum 5 from ag, 2 parts)"
grep -q 'rx ag .*"type":"partial".*"missing":\[999999\]' "$WORK/sched.out" ||
	fail "no partial naming the skipped input: $(grep partial "$WORK/sched.out")"
grep -q 'reported lost by the scheduler; sending the rest' "$WORK/agg.err" ||
	fail "the aggregator did not log the skipped input: $(grep aggregate "$WORK/agg.err")"
! grep -q 'inputs missing' "$WORK/agg.err" || fail "the aggregator waited its input timeout: $(grep 'inputs missing' "$WORK/agg.err")"
kill -INT "$PID_agg"; wait "$PID_agg" || true
grep -q 'aggregator exit: commands=1 aggregates_sent=1 inputs_summed=2 inputs_missing=1' "$WORK/agg.out" ||
	fail "aggregator counters: $(cat "$WORK/agg.out")"
ok "skipped input: aggregate of the 2 others sent at once (server done after $el s, input timeout 30 s), partial names it"
