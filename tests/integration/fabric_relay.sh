#!/usr/bin/env bash
# fabric_relay.sh - the dataplane as the host's MLfabric daemon: it keeps retrying until a (fake)
# scheduler listens, then sends hello, heartbeats every 0.25 s and link reports every 0.1 s (with a
# capacity declared at run time through /mlfabric/capacity); it relays an app's register (adding
# "host"), routes the scheduler's answers back to that app by "app", answers a command for an
# unknown app with an error naming it, tells the app scheduler_lost when the scheduler dies, and
# reconnects when it is back. Idle, it still sleeps (CPU well under 10% of a core).
. "$(dirname "$0")/fabric_lib.sh"
fab_begin fabr 'ps:1:"server","scheduler"' 'w0:10:"worker"'
dp_start w0
sleep 1.2 # the dataplane's connection attempts fail meanwhile (nothing listens)
grep -q "scheduler 10.82.0.1:7070: .*retrying every 0.5 s" "$WORK/dp-w0.log" ||
	fail "dataplane did not log its failing connection attempts: $(tail -3 "$WORK/dp-w0.log")"
bg sched "$TB" exec "$CLUSTER" ps "$FAKESCHED" --listen 10.82.0.1:7070 --scenario relay --time-limit 50
wait_for "$WORK/sched.out" '"type":"hello","host":"w0"' 5
sleep 1
grep -q '"type":"hello","host":"w0","up_gbps":1' "$WORK/sched.out" ||
	grep -q '"type":"hello".*"up_gbps":1' "$WORK/sched.out" || fail "hello without capacities"
hb=$(grep -c '"type":"heartbeat"' "$WORK/sched.out")
links=$(grep -c '"type":"link"' "$WORK/sched.out")
[ "$hb" -ge 3 ] && [ "$hb" -le 7 ] || fail "$hb heartbeats in ~1 s (expected ~4 at 0.25 s)"
[ "$links" -ge 7 ] && [ "$links" -le 15 ] || fail "$links link reports in ~1 s (expected ~10 at 0.1 s)"
grep '"type":"link"' "$WORK/sched.out" | head -1 | grep -q '"tx_gbps":' || fail "link report without tx_gbps"
"$ROOT/build/mlf-tel" fabr-w0 /mlfabric/capacity,2.5,0.5 >"$WORK/tel.out" 2>&1 || fail "mlf-tel: $(cat "$WORK/tel.out")"
sleep 0.3
grep '"type":"link"' "$WORK/sched.out" | tail -1 | grep -q '"up_gbps":2.5,"down_gbps":0.5' ||
	fail "declared capacity 2.5/0.5 not in the latest link report: $(grep '"type":"link"' "$WORK/sched.out" | tail -1)"
# the idle back-off still holds with the control connection up: well under 10% of a core
t0=$(awk '{print $14 + $15}' "/proc/$DP_PID_w0/stat"); sleep 2; t1=$(awk '{print $14 + $15}' "/proc/$DP_PID_w0/stat")
cpu=$(( (t1 - t0) * 100 / (2 * $(getconf CLK_TCK)) ))
[ "$cpu" -lt 10 ] || fail "idle dataplane with a scheduler connection used $cpu% of a core"
bg app "$APP" ctl --sock "$(sock w0)" --timeout 20 --expect scheduler_lost \
	--send '{"type":"register","app":"worker@w0","role":"worker","server":"ps"}'
wait_for "$WORK/app.out" '"type":"drop"' 5
grep -q 'rx w0 .*"type":"register".*"host":"w0"' "$WORK/sched.out" || fail "register not relayed with host w0"
grep -q '^ctl .*"type":"registered".*"app":"worker@w0"' "$WORK/app.out" || fail "registered not routed to the app"
grep -q '^ctl .*"type":"drop".*"id":12345' "$WORK/app.out" || fail "drop not routed to the app"
wait_for "$WORK/sched.out" "no application 'nobody@x'" 3
grep "no application 'nobody@x'" "$WORK/sched.out" | grep -q '"type":"error","app":"nobody@x"' ||
	fail "the unknown-app error does not carry the app: $(grep "no application" "$WORK/sched.out")"
kill "$PID_sched"; wait "$PID_sched" 2>/dev/null || true
wait "$PID_app" || fail "app did not get scheduler_lost: $(cat "$WORK/app.out" "$WORK/app.err")"
grep -q 'scheduler 10.82.0.1:7070 lost' "$WORK/dp-w0.log" || fail "dataplane did not log the lost scheduler"
bg sched2 "$TB" exec "$CLUSTER" ps "$FAKESCHED" --listen 10.82.0.1:7070 --scenario relay --time-limit 20
wait_for "$WORK/sched2.out" '"type":"hello","host":"w0"' 5
ok "idle CPU $cpu%, retries, hello, $hb heartbeats and $links link reports in ~1 s, run-time capacity, relay and routing, unknown app error, scheduler_lost, reconnect"
