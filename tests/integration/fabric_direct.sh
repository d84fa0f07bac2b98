#!/usr/bin/env bash
# fabric_direct.sh - MLF_MODE_DIRECT (the Async baseline) through include/mlfabric.h: a worker
# pushes 20 updates (update i = 1000 copies of i); the server's callback receives each exactly once
# and in push order; get returns the model (sum 1..20 = 210 everywhere) with version 20.
. "$(dirname "$0")/fabric_lib.sh"
fab_begin fabd 'ps:1:"server"' 'w0:10:"worker"'
dp_start ps --scheduler none
dp_start w0 --scheduler none
bg server "$APP" server --cluster "$CLUSTER" --host ps --mode direct --n 1000 --count 20
wait_for "$WORK/server.out" "server ready" 10
timeout 60 "$APP" worker --cluster "$CLUSTER" --host w0 --server ps --mode direct --n 1000 --count 20 \
	>"$WORK/worker.out" 2>"$WORK/worker.err" || fail "worker failed: $(cat "$WORK/worker.err")"
wait "$PID_server" || fail "server failed: $(cat "$WORK/server.err")"
n=$(grep -c '^update ' "$WORK/server.out")
[ "$n" = 20 ] || fail "server callback ran $n times for 20 pushes"
firsts=$(grep '^update ' "$WORK/server.out" | sed 's/.* first=\([0-9]*\) .*/\1/' | tr '\n' ' ')
[ "$firsts" = "$(seq -s ' ' 1 20) " ] || fail "updates not applied once each in push order: $firsts"
grep -q 'src=w0' "$WORK/server.out" || fail "update source not reported as w0"
grep -q '^server applied=20 version=20 out_of_order=0 w0=210$' "$WORK/server.out" ||
	fail "server end state: $(tail -1 "$WORK/server.out")"
line=$(grep '^get ' "$WORK/worker.out")
[[ "$line" == "get version=20 w0=210 wlast=210 pushed=20 sent=20 "* ]] || fail "worker get: $line"
ok "20 direct pushes applied once each in order; get returned version 20 with the right values"
