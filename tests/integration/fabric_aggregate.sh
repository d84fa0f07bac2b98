#!/usr/bin/env bash
# fabric_aggregate.sh - scheduled path through a (fake) scheduler: worker w0 pushes updates 1 and 2
# (1000 floats each), the scheduler sends them to mlf-aggregator on ag and commands a weighted
# aggregate (weights 1, 2, 1) of them plus a phantom input that never arrives; after
# --input-timeout the aggregator sends 1*1 + 2*2 = 5 with both parts to the server, reports
# `partial` naming the phantom, the server commits version 2 naming both updates, and the
# worker's get (answered after the commit) returns that model.
. "$(dirname "$0")/fabric_lib.sh"
fab_begin faba 'ps:1:"server","scheduler"' 'w0:10:"worker"' 'ag:20:"aggregator"'
bg sched "$TB" exec "$CLUSTER" ps "$FAKESCHED" --listen 10.82.0.1:7070 --scenario aggregate --count 2 \
	--weights '[1,2,1]' --phantom --time-limit 60
wait_for "$WORK/sched.out" listening 5
dp_start ps
dp_start w0
dp_start ag
wait_for "$WORK/sched.out" '"type":"hello","host":"ag"' 5
bg agg "$AGG" --cluster "$CLUSTER" --host ag --input-timeout 1 --progress 0
bg server "$APP" server --cluster "$CLUSTER" --host ps --mode mlfabric-a --n 1000 --count 1
wait_for "$WORK/server.out" "server ready" 10
wait_for "$WORK/agg.err" "registered as aggregator@ag" 10
timeout 60 "$APP" worker --cluster "$CLUSTER" --host w0 --server ps --mode mlfabric-a --n 1000 --count 2 \
	>"$WORK/worker.out" 2>"$WORK/worker.err" || fail "worker failed: $(cat "$WORK/worker.err")"
wait "$PID_server" || fail "server failed: $(cat "$WORK/server.err")"
ids=$(sed -n 's/^push id=//p' "$WORK/worker.out" | tr '\n' ',' | sed 's/,$//')
line=$(grep '^update ' "$WORK/server.out")
[[ "$line" == *"src=ag parts=2 first=5 last=5 version=2 w0=5 "* ]] || fail "server got: $line (expected the weighted sum 5 from ag, 2 parts)"
grep -q "^server applied=1 version=2 out_of_order=0 w0=5 role=server " "$WORK/server.out" || fail "server end: $(tail -1 "$WORK/server.out")"
grep -q "rx ps .*\"type\":\"commit\".*\"version\":2.*\"parts\":\[$ids\]" "$WORK/sched.out" ||
	grep -q "rx ps .*\"type\":\"commit\".*\"parts\":\[$ids\].*\"version\":2" "$WORK/sched.out" ||
	fail "no commit of version 2 naming updates $ids: $(grep commit "$WORK/sched.out")"
grep -q 'rx ag .*"type":"partial".*"missing":\[999999\]' "$WORK/sched.out" ||
	fail "no partial naming the phantom input: $(grep partial "$WORK/sched.out")"
[ "$(grep -c 'rx w0 .*"type":"done".*"status":0' "$WORK/sched.out")" = 2 ] || fail "worker did not report 2 done transfers"
grep -q 'rx ag .*"type":"done".*"status":0' "$WORK/sched.out" || fail "aggregator did not report its transfer done"
line=$(grep '^get ' "$WORK/worker.out")
[[ "$line" == "get version=2 w0=5 wlast=5 pushed=2 "* ]] || fail "worker get: $line"
kill -INT "$PID_agg"; wait "$PID_agg" || true
grep -q 'aggregator exit: commands=1 aggregates_sent=1 inputs_summed=2 inputs_missing=1' "$WORK/agg.out" ||
	fail "aggregator counters: $(cat "$WORK/agg.out")"
ok "aggregate of 2 inputs (weights 1,2) = 5 with both parts, partial for the missing one, commit version 2, get"
