#!/usr/bin/env bash
# apps_ssp.sh - stale-synchronous parallel (issue 12, mlf-scheduler --ssp S): 3 workers, w2 4x slower
# (mlf-worker --speed 4), train for 15 s with S = 1 and without the gate. With the gate, no worker
# ever has more than S + 1 pushes more than the slowest at the scheduler (a pull waits while the
# worker is S ahead; the push after it adds one); the test counts pushes by the times the workers
# logged them (pushes.jsonl), which can lag the scheduler's arrival order by one, so it allows
# S + 2. Without the gate the fast workers run far ahead. Accuracy still rises.
. "$(dirname "$0")/apps_lib.sh"
[ -x "$ROOT/build/mlf-scheduler" ] || { echo "SKIP $TEST_NAME: build/mlf-scheduler not built"; exit 0; }
APPS_GBPS=10
apps_begin appssp 3 'ps:2:"server","scheduler"' 'w0:10:"worker"' 'w1:11:"worker"' 'w2:12:"worker"'
S=1

# max_gap DIR: the largest (pushes of a worker - pushes of the slowest) over the run, from the
# workers' pushes.jsonl (the times at which each push completed)
max_gap() {
	for i in 0 1 2; do jq -r --arg w "$i" '"\(.t) \($w)"' "$1/w$i/pushes.jsonl"; done | sort -g |
		awk '{ n[$2]++; lo = n[0]; for (k = 1; k < 3; k++) if (n[k] < lo) lo = n[k];
		       for (k = 0; k < 3; k++) if (n[k] - lo > g) g = n[k] - lo } END { print g + 0 }'
}

# run_case NAME [SCHEDULER-ARGS]: scheduler, server and 3 workers (w2 4x slower) for 15 s into $WORK/NAME
run_case() {
	local name=$1; shift
	local d="$WORK/$name"
	mkdir -p "$d/sched"
	apps_run sched ps "$ROOT/build/mlf-scheduler" --cluster "$CLUSTER" --records "$d/sched" "$@"
	for h in ps w0 w1 w2; do dp_start $h; done
	apps_run ps ps "$PS" --cluster "$CLUSTER" --host ps --mode mlfabric-a --workers 3 --tau-max 16 \
		--eval-every 2 --eval-images 500 --records "$d/ps"
	sleep 1
	kill -0 "$PID_ps" 2>/dev/null || fail "$name: mlf-ps exited at start: $(tail -2 "$WORK/ps.log")"
	for i in 0 1 2; do
		apps_run w$i w$i "$WK" --cluster "$CLUSTER" --host w$i --server ps --mode mlfabric-a --shard $i/3 \
			--lr 0.02 --duration 15 --compute-s 0.1 --seed $((i + 1)) --records "$d/w$i" \
			$([ $i = 2 ] && echo --speed 4)
	done
	for i in 0 1 2; do v=PID_w$i; wait "${!v}" || fail "$name: worker w$i failed: $(tail -2 "$WORK/w$i.log")"; done
	sleep 1
	kill -TERM "$PID_ps"
	wait "$PID_ps" || fail "$name: mlf-ps did not exit cleanly on SIGTERM: $(tail -2 "$WORK/ps.log")"
	kill -TERM "$PID_sched" 2>/dev/null || true
	wait "$PID_sched" 2>/dev/null || true
	for h in ps w0 w1 w2; do v=DP_PID_$h; kill -TERM "${!v}" 2>/dev/null || true; done
	for h in ps w0 w1 w2; do v=DP_PID_$h; timeout 10 tail --pid="${!v}" -f /dev/null || true; done
	GAP=$(max_gap "$d")
	N0=$(wc -l <"$d/w0/pushes.jsonl") N2=$(wc -l <"$d/w2/pushes.jsonl")
}

run_case ssp --ssp $S
[ "$N2" -ge 5 ] || fail "ssp: the slow worker w2 pushed only $N2 updates in 15 s"
[ "$GAP" -le $((S + 2)) ] || fail "ssp: a worker ran $GAP pushes ahead of the slowest (threshold $S allows $((S + 1)), +1 for logging)"
ssp_gap=$GAP ssp_n0=$N0 ssp_n2=$N2
acc=$(jq -s 'map(.accuracy) | max' "$WORK/ssp/ps/accuracy.jsonl")
awk -v a="$acc" 'BEGIN { exit !(a > 0.5) }' || fail "ssp: accuracy only reached $acc"
run_case free
[ "$GAP" -gt $((S + 4)) ] || fail "without --ssp the fast workers stayed within $GAP pushes of w2: the slowdown did not show"
ok "--ssp $S: largest lead over the slowest $ssp_gap pushes (w0 $ssp_n0, w2 4x slower $ssp_n2), accuracy $acc; without the gate $GAP (w0 $N0, w2 $N2)"
