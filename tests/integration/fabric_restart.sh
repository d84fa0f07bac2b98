#!/usr/bin/env bash
# fabric_restart.sh - a scheduler killed between an `order` and its `send`s (the fake scheduler's
# scenario restart): worker w0 pushes updates 1 and 2; update 1 is ordered and sent, update 2 is
# ordered at the server but never commanded, and the scheduler goes away (every control
# connection closed). The dataplanes reconnect, the apps register again, w0 announces update 2
# again (still held), and the "restarted" scheduler orders and sends it under a fresh transfer
# id. The server must apply it at once: its dataplane's commit order must not hold the fresh
# transfer behind the id the lost scheduler ordered and never commanded (before the fix it was
# held for the dataplane's 30 s hold timeout). Checks: server version 2 committed within 15 s
# (half the hold timeout) of the restart, w0's get returns version 2 with w = 1 + 2, nothing applied twice.
. "$(dirname "$0")/fabric_lib.sh"
fab_begin fabr 'ps:1:"server","scheduler"' 'w0:10:"worker"'
bg sched "$TB" exec "$CLUSTER" ps "$FAKESCHED" --listen 10.82.0.1:7070 --scenario restart --time-limit 60
wait_for "$WORK/sched.out" listening 5
dp_start ps
dp_start w0
wait_for "$WORK/sched.out" '"type":"hello","host":"w0"' 5
bg server "$APP" server --cluster "$CLUSTER" --host ps --mode mlfabric-a --n 1000 --count 2
wait_for "$WORK/server.out" "server ready" 10
timeout 60 "$APP" worker --cluster "$CLUSTER" --host w0 --server ps --mode mlfabric-a --n 1000 --count 2 \
	>"$WORK/worker.out" 2>"$WORK/worker.err" || fail "worker failed: $(tail -3 "$WORK/worker.err")"
wait "$PID_server" || fail "server failed: $(tail -3 "$WORK/server.err")"

t_restart=$(sed -n 's/^restart t=//p' "$WORK/sched.out")
[ -n "$t_restart" ] || fail "the fake scheduler never restarted: $(tail -3 "$WORK/sched.out")"
[ "$(grep -c '"type":"hello","host":"ps"' "$WORK/sched.out")" = 2 ] || fail "ps's dataplane did not say hello again after the restart"
grep -q 'rx ps .*"type":"register".*"app":"server@ps"' "$WORK/sched.out" || fail "no registration of server@ps"
[ "$(grep -c 'rx ps .*"type":"register"' "$WORK/sched.out")" -ge 2 ] || fail "server@ps did not register again after the restart"
t_commit=$(grep 'rx ps .*"type":"commit"' "$WORK/sched.out" | grep '"version":2' | head -1 | sed -E 's/.*"t":([0-9.e+]+).*/\1/')
[ -n "$t_commit" ] || fail "no commit of version 2: $(grep commit "$WORK/sched.out")"
awk -v c="$t_commit" -v r="$t_restart" 'BEGIN { exit !(c - r < 15) }' ||
	fail "version 2 committed $(awk -v c="$t_commit" -v r="$t_restart" 'BEGIN { printf "%.1f", c - r }') s after the restart (the fresh transfer was held behind the lost scheduler's order)"
line=$(grep '^server applied' "$WORK/server.out")
[[ "$line" == "server applied=2 version=2 out_of_order=0 w0=3 "* ]] || fail "server end: $line (expected 2 applied, w0 = 1 + 2)"
line=$(grep '^get ' "$WORK/worker.out")
[[ "$line" == "get version=2 w0=3 wlast=3 pushed=2 "* ]] || fail "worker get: $line"
grep -q "a scheduler is back" "$WORK/server.err" "$WORK/worker.err" || fail "no 'a scheduler is back' in the apps' logs"
ok "update ordered by a lost scheduler and never sent: the restarted scheduler's transfer of it applied $(awk -v c="$t_commit" -v r="$t_restart" 'BEGIN { printf "%.2f", c - r }') s after the restart (version 2, w = 1 + 2)"
