#!/usr/bin/env bash
# mlf_top.sh - tools/mlf-top against a live emulated MLfabric-A cluster (docs/mlf-top.md): the
# status shows every host of the cluster and the workers' registrations; after the server host's
# dataplane is stopped (SIGSTOP) mlf-top names ps as the peer waited on (the workers' gets and the
# scheduler's silent-dataplane view) and the workers' logs have `waiting ... for model (get) from
# ps`; the ports' link state and drops (LINK, DROPS) come from the dataplanes' link reports. Also
# `mlf-cluster top CLUSTER --once` and the unreachable-scheduler error. Root; run under
# flock /tmp/mlf-netns.lock.
. "$(dirname "$0")/apps_lib.sh"
[ -x "$ROOT/build/mlf-scheduler" ] || { echo "SKIP $TEST_NAME: build/mlf-scheduler not built"; exit 0; }
TOP="$ROOT/tools/mlf-top"
apps_begin apptop 6 'ps:2:"server","scheduler"' 'w0:10:"worker"' 'w1:11:"worker"'
cont_ps() {
	local rc=$?
	[ -z "${DP_PID_ps:-}" ] || kill -CONT "$DP_PID_ps" 2>/dev/null || true
	(exit $rc)
	apps_cleanup
}
trap cont_ps EXIT

# the scheduler is not running yet: one line naming host:port, exit 1
set +e
out=$("$TB" exec "$CLUSTER" ps "$TOP" --cluster "$CLUSTER" --once 2>&1)
rc=$?
set -e
[ $rc = 1 ] && grep -q "mlf-top: cannot reach the scheduler at 10.83.6.2:7070" <<<"$out" ||
	fail "unreachable scheduler: rc $rc, output: $out"

apps_run sched ps "$ROOT/build/mlf-scheduler" --cluster "$CLUSTER"
for h in ps w0 w1; do dp_start $h; done
apps_run ps ps "$PS" --cluster "$CLUSTER" --host ps --mode mlfabric-a --workers 2 --tau-max 4 \
	--eval-every 100 --records "$WORK/ps"
apps_ps_ready ps
for i in 0 1; do
	apps_run w$i w$i "$WK" --cluster "$CLUSTER" --host w$i --server ps --system mlfabric-a --shard $i/2 \
		--lr 0.01 --duration 60 --timeout 30 --seed $((i + 1)) --records "$WORK/w$i"
done
# the status is read once both workers trained (a push each): registered, their links reported
wait_event "a push of each worker (w0/pushes.jsonl, w1/pushes.jsonl)" 60 \
	eval '[ -s "$WORK/w0/pushes.jsonl" ] && [ -s "$WORK/w1/pushes.jsonl" ]'

top_json() { "$TB" exec "$CLUSTER" ps "$TOP" --cluster "$CLUSTER" --once --json; }
st=$(top_json) || fail "mlf-top --once --json failed"
for h in ps w0 w1; do
	[ "$(jq -r --arg h $h '.hosts[] | select(.name == $h) | .alive' <<<"$st")" = true ] ||
		fail "host $h missing or not alive in the status: $st"
done
[ "$(jq '.hosts | length' <<<"$st")" = 3 ] || fail "status lists $(jq '.hosts | length' <<<"$st") hosts, not 3"
[ "$(jq -r '.hosts[] | select(.name == "w0") | .apps[0]' <<<"$st")" = worker ] ||
	fail "w0's worker registration not shown"
[ "$(jq -r '.server.host' <<<"$st")" = ps ] || fail "server not shown: $(jq -c .server <<<"$st")"
[ "$(jq '[.hosts[] | select(.tx_gbps != null)] | length' <<<"$st")" = 3 ] || fail "no link reports shown"
# the port part of the link reports (docs/control.md): each dataplane's port, link up, drops counted
[ "$(jq '[.hosts[] | select(.port.link_up == true and .port.speed_mbps > 0 and (.port.imissed | type) == "number"
	and (.port.name | startswith("port 0 (net_af_packet0")))] | length' <<<"$st")" = 3 ] ||
	fail "link reports lack the ports' state: $(jq -c '[.hosts[] | .port]' <<<"$st")"
# the text frame through mlf-cluster top (inside the scheduler host's namespace)
frame=$("$ROOT/tools/mlf-cluster" top "$CLUSTER" --once) || fail "mlf-cluster top failed"
for h in ps w0 w1; do grep -q "^$h .* up10G *[0-9][0-9]*$" <<<"$frame" || fail "host $h missing from the frame, or its LINK/DROPS: $frame"; done
ok "mlf-top shows the 3 hosts alive, the registrations, link reports and ports; mlf-cluster top prints the frame"

# stop the server host's dataplane: the workers' gets wait for ps
kill -STOP "$DP_PID_ps"
t0=$(date +%s)
named=""
# ps_named: the status names ps as the peer a worker waits for and as silent to the scheduler
ps_named() {
	st=$(top_json) || return 1
	named=$(jq -r '[.waits[] | select(.peer == "ps") | .app] + [.late[] | select(.peer == "ps") | .who] | unique | join(",")' <<<"$st")
	grep -q "worker@" <<<"$named" && grep -q scheduler <<<"$named"
}
wait_event "mlf-top naming ps (a worker's wait and the scheduler's silent peer)" 60 ps_named
"$TB" exec "$CLUSTER" ps "$TOP" --cluster "$CLUSTER" --once | grep -q "waits .* s for model (get) from ps" ||
	fail "the text frame's waiting section does not name ps"
grep -q "waiting [0-9.]* s for model (get) from ps" "$WORK"/w0.log "$WORK"/w1.log ||
	fail "no worker log line 'waiting ... for model (get) from ps'"
ok "ps's dataplane stopped: within $(( $(date +%s) - t0 )) s mlf-top names ps ($named) and a worker logged the wait"
kill -CONT "$DP_PID_ps"
