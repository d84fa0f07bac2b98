#!/usr/bin/env bash
# fabric_clock.sh - clocks that disagree (docs/control.md "Clocks"): every process of worker host w0
# runs with its CLOCK_REALTIME 50 ms behind the others' (MLF_CLOCK_SKEW_MS=-50). Each dataplane
# estimates its offset to the scheduler's clock on the heartbeat; the scheduler records it
# (clocks.jsonl) and, with --clock-correct on, commands w0's start times in w0's clock. Checked,
# twice (correction off, then on; 8 updates per worker to server ps each time, some may be dropped): the estimates
# (w0 +50 ms, the others 0, each within its uncertainty + 1 ms) and the start errors of w0's update
# transfers against the plan (starts.jsonl: actual first frame, converted to the scheduler's clock
# with the estimate): about 50 ms late without the correction; with it, a median within 1 ms of
# plan beyond w1's (whose clock is right: what is left is the dataplane loop's wake-up).
. "$(dirname "$0")/fabric_lib.sh"
[ -x "$ROOT/build/mlf-scheduler" ] || { echo "SKIP $TEST_NAME: build/mlf-scheduler not built"; exit 0; }
fab_begin fabk 'ps:1:"server","scheduler"' 'w0:10:"worker"' 'w1:11:"worker"'
SKEW=-50

# run MODE: one training round with --clock-correct MODE; records in $WORK/rec-MODE.
run() {
	local mode=$1 rec="$WORK/rec-$1" p
	mkdir -p "$rec"
	bg sched "$TB" exec "$CLUSTER" ps "$ROOT/build/mlf-scheduler" --cluster "$CLUSTER" --records "$rec" \
		--clock-correct "$mode"
	dp_start ps
	MLF_CLOCK_SKEW_MS=$SKEW dp_start w0
	dp_start w1
	bg server "$APP" server --cluster "$CLUSTER" --host ps --mode mlfabric-a --n 100000 --stay
	wait_for "$WORK/server.out" "server ready" 10
	# the first estimates (the heartbeat after welcome, then every 0.25 s) before the first push
	for h in ps w0 w1; do wait_for "$rec/clocks.jsonl" "\"host\":\"$h\"" 10; done
	bg w0 timeout 60 env MLF_CLOCK_SKEW_MS=$SKEW "$APP" worker --cluster "$CLUSTER" --host w0 --server ps \
		--mode mlfabric-a --n 100000 --count 8
	bg w1 timeout 60 "$APP" worker --cluster "$CLUSTER" --host w1 --server ps --mode mlfabric-a --n 100000 \
		--count 8
	wait "$PID_w0" || fail "$mode: worker w0 failed: $(cat "$WORK/w0.err")"
	wait "$PID_w1" || fail "$mode: worker w1 failed: $(cat "$WORK/w1.err")"
	for p in $PID_server $PID_sched $DP_PID_ps $DP_PID_w0 $DP_PID_w1; do kill "$p" 2>/dev/null || true; done
	for p in $PID_server $PID_sched $DP_PID_ps $DP_PID_w0 $DP_PID_w1; do
		while kill -0 "$p" 2>/dev/null; do sleep 0.1; done
	done
}

# last estimate of host $2 in records $1: "offset_ms err_ms"
estimate() { jq -r --arg h "$2" 'select(.host == $h) | "\(.offset_ms) \(.err_ms)"' "$1/clocks.jsonl" | tail -n 1; }
# median start error (ms) of host $2's transfers in records $1, their count and the largest error
starts() { jq -s --arg h "$2" '[.[] | select(.host == $h) | .err_ms] | sort | "\(.[length / 2 | floor]) \(length) \(.[-1])"' -r "$1/starts.jsonl"; }

for mode in off on; do
	run $mode
	rec="$WORK/rec-$mode"
	for h in ps w0 w1; do
		read -r off err <<<"$(estimate "$rec" $h)"
		want=0; [ $h = w0 ] && want=$((-SKEW))
		awk -v o="$off" -v e="$err" -v w="$want" 'BEGIN { d = o - w; if (d < 0) d = -d; exit !(d <= e + 1) }' ||
			fail "$mode: $h's clock offset estimated at $off ms (+- $err), the truth is $want ms"
	done
	read -r med n _ <<<"$(starts "$rec" w0)"
	[ "$n" -ge 4 ] || fail "$mode: only $n of w0's update transfers reported their start (starts.jsonl)"
	if [ $mode = off ]; then
		# later than w1's, whose clock is right, by the skew (a busy machine can only add)
		read -r med1 n1 _ <<<"$(starts "$rec" w1)"
		awk -v m="$med" -v m1="$med1" -v s="$((-SKEW))" 'BEGIN { exit !(m - m1 >= s - 5) }' ||
			fail "off: w0's transfers started a median $med ms from plan, w1's $med1 ms; without the correction a host 50 ms behind starts them ~50 ms later"
		off_med=$med
	else
		# as on time as those of w1, whose clock is right (same run: the loop's wake-up, not
		# the clock, is what is left). Bounds from this run: not earlier than plan by more than
		# w0's estimate uncertainty (+1 ms), and no later than w1's latest start error in the same
		# run plus that uncertainty (on a busy machine a wake-up can be late by milliseconds; the
		# skew it corrects is 50 ms, and the uncorrected run's median is checked above)
		read -r med1 n1 max1 <<<"$(starts "$rec" w1)"
		read -r _ err0 <<<"$(estimate "$rec" w0)"
		awk -v m="$med" -v m1="$med1" -v x1="$max1" -v e="$err0" -v o="$off_med" -v s="$((-SKEW))" \
			'BEGIN { b = x1 > m1 + 1 ? x1 : m1 + 1; if (b < 0) b = 0;
				exit !(m >= -(e + 1) && m <= b + e && m <= o - s / 2) }' ||
			fail "on: w0's transfers started a median $med ms from plan (over $n; uncorrected $off_med ms), w1's median $med1 ms, latest $max1 ms, w0's estimate +- $err0 ms: not within w1's latest + the uncertainty"
		ok "w0 50 ms behind, estimated $(estimate "$rec" w0 | cut -d' ' -f1) ms: its starts $off_med ms late uncorrected, $med ms corrected (median of $n; w1: $med1 of $n1)"
	fi
done
