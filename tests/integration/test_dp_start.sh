#!/usr/bin/env bash
# test_dp_start.sh - the first data frame reaches the peer's interface within 1 ms of the commanded
# CLOCK_REALTIME start (tcpdump timestamps on b's eth0; the namespaces share one clock): the median
# of 5 rounds within +-1 ms, and every round within +-2.5 ms. One round in a CI run on 2026-11-26
# took 1.08 ms (the others 0.30 and 0.42 ms) on a day this machine's dataplane ceiling was 1.03
# Gbit/s: the wake-up of a sleeping dataplane and the veth delivery on a shared 2-core machine
# sometimes take longer, so one round alone is not the measure.
# Under load (make test-under-load: stress-ng --cpu 2 beside) one round in a run was 3.2 ms late:
# the dataplane's loop woke with no core free. So the one-round limit grows by the time the
# loop's thread waited runnable on a run queue from 5 ms before the start to the transfer's end
# (/proc/PID/task/PID/schedstat, its second field; well under 1 ms on an idle machine), and the frame at b must agree with the sender's own
# start error (the dataplane knows when it sent) within one veth delivery, 1 ms. The median's
# limit stays +-1 ms.
. "$(dirname "$0")/lib.sh"
dp_pair_begin
port=$(sed -n 's/.*"udp_port" *: *\([0-9]*\).*/\1/p' "$CLUSTER"); port=${port:-47000}

errs=()
# runq_wait_ns: ns a's loop thread (the dataplane's main thread) has waited runnable for a core
runq_wait_ns() { awk '{ print $2 }' "/proc/$DP_PID_a/task/$DP_PID_a/schedstat"; }
for round in 1 2 3 4 5; do
	"$TB" exec "$CLUSTER" b tcpdump -i eth0 -n -c 1 -tt --time-stamp-precision=nano \
		"udp and src host 10.78.0.1 and dst port $port" >"$WORK/dump" 2>"$WORK/dump.err" &
	dpid=$!
	for _ in $(seq 100); do grep -q "listening on" "$WORK/dump.err" 2>/dev/null && break; sleep 0.05; done
	timeout 30 "$XFER" recv --sock "$(sock b)" --count 1 --out /dev/null --timeout 20 >"$WORK/recv" 2>&1 &
	rpid=$!
	start=$(( $(now_ns) + 500000000 ))
	timeout 30 "$XFER" send --sock "$(sock a)" --to b --bytes 1000000 --rate 1 --start-at "$start" --timeout 10 >"$WORK/send" 2>&1 &
	spid=$!
	sleep "$(awk -v s="$start" -v n="$(now_ns)" 'BEGIN { d = (s - n) / 1e9 - 0.005; printf "%.3f", (d > 0 ? d : 0) }')"
	w0=$(runq_wait_ns)   # from 5 ms before the start
	wait $spid || fail "transfer failed: $(cat "$WORK/send")"
	wait $rpid || fail "receiver failed: $(cat "$WORK/recv")"
	timeout 5 tail --pid=$dpid -f /dev/null || { kill $dpid; fail "tcpdump saw no frame from a"; }
	ts=$(awk '{ print $1; exit }' "$WORK/dump")
	[ -n "$ts" ] || fail "no tcpdump timestamp: $(cat "$WORK/dump" "$WORK/dump.err")"
	err_ns=$(( ${ts%.*} * 1000000000 + 10#${ts#*.} - start ))
	err_us=$(awk -v e="$err_ns" 'BEGIN { printf "%.1f", e / 1e3 }')
	rep=$(field "$(grep '^xfer ' "$WORK/send")" start_error_us)
	waited_us=$(( ($(runq_wait_ns) - w0) / 1000 ))
	awk -v e="$err_us" -v r="$rep" 'BEGIN { d = e - r; exit !(d > -1000 && d < 1000) }' ||
		fail "round $round: first data frame reached b ${err_us} us after the commanded start, the sender reports ${rep} us (they must agree within 1000 us)"
	awk -v e="$err_us" -v w="$waited_us" 'BEGIN { exit !(e > -2500 && e < 2500 + w) }' ||
		fail "round $round: first data frame reached b ${err_us} us after the commanded start (sender reports ${rep} us; limit -2500 to 2500 us plus the ${waited_us} us a's loop waited for a core)"
	ok "round $round: first data frame at b ${err_us} us after the commanded start (sender reports ${rep} us; a's loop waited ${waited_us} us for a core)"
	errs+=("$err_us")
done
med=$(printf '%s\n' "${errs[@]}" | sort -g | sed -n 3p)
awk -v e="$med" 'BEGIN { exit !(e > -1000 && e < 1000) }' ||
	fail "median of 5 rounds: first data frame ${med} us after the commanded start (limit +-1000 us): ${errs[*]}"
ok "median of 5 rounds: ${med} us after the commanded start (rounds: ${errs[*]} us)"
