#!/usr/bin/env bash
# fabric_direct.sh - MLF_MODE_DIRECT (the Async baseline) through include/mlfabric/mlfabric.h: a worker
# pushes 20 updates (update i = 1000 copies of i); the server's callback receives each exactly once
# (in any order: the Async baseline has no commit order, and the dataplane runs a worker's
# transfers concurrently, so a later one can complete first); get returns the model (sum 1..20 = 210 everywhere) with version 20. Then a
# worker on the server's own host pushes 21..25 (handed over locally by the dataplane) and gets
# version 25 (sum 325).
. "$(dirname "$0")/fabric_lib.sh"
fab_begin fabd 'ps:1:"server"' 'w0:10:"worker"'
dp_start ps --scheduler none
dp_start w0 --scheduler none
bg server "$APP" server --cluster "$CLUSTER" --host ps --mode async --n 1000 --count 25
wait_for "$WORK/server.out" "server ready" 10
timeout 60 "$APP" worker --cluster "$CLUSTER" --host w0 --server ps --mode async --n 1000 --count 20 \
	>"$WORK/worker.out" 2>"$WORK/worker.err" || fail "worker failed: $(cat "$WORK/worker.err")"
line=$(grep '^get ' "$WORK/worker.out")
[[ "$line" == "get version=20 w0=210 wlast=210 pushed=20 sent=20 "* ]] || fail "worker get: $line"
timeout 60 "$APP" worker --cluster "$CLUSTER" --host ps --server ps --mode async --n 1000 --count 5 --first 21 \
	>"$WORK/local.out" 2>"$WORK/local.err" || fail "co-hosted worker failed: $(cat "$WORK/local.err")"
wait "$PID_server" || fail "server failed: $(cat "$WORK/server.err")"
n=$(grep -c '^update ' "$WORK/server.out")
[ "$n" = 25 ] || fail "server callback ran $n times for 25 pushes"
firsts=$(grep '^update ' "$WORK/server.out" | sed 's/.* first=\([0-9]*\) .*/\1/' | tr '\n' ' ')
sorted=$(tr ' ' '\n' <<<"$firsts" | grep . | sort -n | tr '\n' ' ')
[ "$sorted" = "$(seq -s ' ' 1 25) " ] || fail "updates not applied exactly once each: $firsts"
[ "$(grep -c 'src=w0' "$WORK/server.out")" = 20 ] || fail "update source not reported as w0 20 times"
[ "$(grep -c 'src=ps' "$WORK/server.out")" = 5 ] || fail "local updates not reported from ps"
grep -Eq '^server applied=25 version=25 out_of_order=[0-9]+ w0=325 role=server ' "$WORK/server.out" ||
	fail "server end state: $(tail -1 "$WORK/server.out")"
line=$(grep '^get ' "$WORK/local.out")
[[ "$line" == "get version=25 w0=325 wlast=325 pushed=5 sent=5 "* ]] || fail "co-hosted worker get: $line"
ok "25 direct pushes (5 local) applied once each (order: $firsts); gets returned versions 20 and 25 with the right values"
