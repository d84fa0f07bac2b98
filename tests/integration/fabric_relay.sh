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
# the dataplane's connection attempts fail meanwhile (nothing listens)
wait_for "$WORK/dp-w0.log" "scheduler 10.82.0.1:7070: .*retrying every 0.5 s" 30
bg sched "$TB" exec "$CLUSTER" ps "$FAKESCHED" --listen 10.82.0.1:7070 --scenario relay --time-limit 50
wait_for "$WORK/sched.out" '"type":"hello","host":"w0"' 30
grep -q '"type":"hello","host":"w0","up_gbps":1' "$WORK/sched.out" ||
	grep -q '"type":"hello".*"up_gbps":1' "$WORK/sched.out" || fail "hello without capacities"
# the periods, from the times the dataplane put in its messages (not from a guess of how many
# fit in a wall-clock second): never shorter than configured, and the median at most twice it
wait_event "5 heartbeats and 10 link reports at the fake scheduler" 60 \
	eval '[ "$(grep -c "\"type\":\"heartbeat\"" "$WORK/sched.out")" -ge 5 ] && [ "$(grep -c "\"type\":\"link\"" "$WORK/sched.out")" -ge 10 ]'
# periods TYPE: "N MIN MEDIAN" of the intervals (s) between the messages of TYPE
periods() {
	grep "\"type\":\"$1\"" "$WORK/sched.out" | sed 's/^rx [^ ]* //' | jq -r .t | sort -g |
		awk 'NR > 1 { print $1 - p } { p = $1 }' | sort -g |
		awk '{ d[++n] = $1 } END { printf "%d %.3f %.3f", n, d[1], d[int((n + 1) / 2)] }'
}
read -r hb hb_min hb_med <<<"$(periods heartbeat)"
read -r links l_min l_med <<<"$(periods link)"
awk -v a="$hb_min" -v m="$hb_med" 'BEGIN { exit !(a >= 0.24 && m <= 0.5) }' ||
	fail "heartbeat intervals: shortest $hb_min s, median $hb_med s over $hb (expected 0.25 s)"
awk -v a="$l_min" -v m="$l_med" 'BEGIN { exit !(a >= 0.09 && m <= 0.2) }' ||
	fail "link report intervals: shortest $l_min s, median $l_med s over $links (expected 0.1 s)"
grep '"type":"link"' "$WORK/sched.out" | head -1 | grep -q '"tx_gbps":' || fail "link report without tx_gbps"
"$ROOT/build/mlf-tel" fabr-w0 /mlfabric/capacity,2.5,0.5 >"$WORK/tel.out" 2>&1 || fail "mlf-tel: $(cat "$WORK/tel.out")"
wait_for "$WORK/sched.out" '"type":"link".*"up_gbps":2.5,"down_gbps":0.5' 30
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
ok "idle CPU $cpu%, retries, hello, heartbeats every $hb_med s and link reports every $l_med s (median), run-time capacity, relay and routing, unknown app error, scheduler_lost, reconnect"
