#!/usr/bin/env bash
# fabric_sync.sh - MLfabric-S with the real scheduler (eager batches, §6): workers w0, w1 and w2
# each run 3 mlf_push_get iterations (iteration i pushes copies of i); w2 straggles 0.6 s before
# each push. Every push_get returns the model only after the iteration's 3 updates are applied,
# as ONE momentum step (server momentum 0.5: h = 0.5 h + sum, w += h): versions 3, 6, 9 with
# values 3, 10.5, 23.25 on every worker (a step per arrival would give other values). From the
# scheduler's transfers.jsonl: in every iteration w0's and w1's updates started before w2 pushed
# its own (they left early instead of waiting for the last worker).
# SYNC_BATCHING=all runs the scheduler with --sync-batching all (the early check then fails).
. "$(dirname "$0")/fabric_lib.sh"
[ -x "$ROOT/build/mlf-scheduler" ] || { echo "SKIP $TEST_NAME: build/mlf-scheduler not built"; exit 0; }
fab_begin fabs 'ps:1:"server","scheduler"' 'w0:10:"worker"' 'w1:11:"worker"' 'w2:12:"worker"'
mkdir -p "$WORK/rec"
bg sched "$TB" exec "$CLUSTER" ps "$ROOT/build/mlf-scheduler" --cluster "$CLUSTER" --records "$WORK/rec" \
	--sync-batching "${SYNC_BATCHING:-eager}"
for h in ps w0 w1 w2; do dp_start $h; done
bg server "$APP" server --cluster "$CLUSTER" --host ps --mode mlfabric-s --workers 3 --n 10000 --count 9 --momentum 0.5
wait_for "$WORK/server.out" "server ready" 10
for w in w0 w1; do
	bg $w timeout 60 "$APP" worker --cluster "$CLUSTER" --host $w --server ps --mode mlfabric-s --n 10000 --count 3
done
bg w2 timeout 60 "$APP" worker --cluster "$CLUSTER" --host w2 --server ps --mode mlfabric-s --n 10000 --count 3 --delay 0.6
for w in w0 w1 w2; do
	eval "pid=\$PID_$w"
	wait "$pid" || fail "worker $w failed: $(cat "$WORK/$w.err")"
done
wait "$PID_server" || fail "server failed: $(cat "$WORK/server.err")"
want=$'push_get version=3 w0=3\npush_get version=6 w0=10.5\npush_get version=9 w0=23.25'
for w in w0 w1 w2; do
	got=$(grep '^push_get ' "$WORK/$w.out")
	[ "$got" = "$want" ] || fail "$w push_get results: $(echo $got) (expected $(echo $want))"
done
grep -q '^server applied=3 version=9 out_of_order=[0-9]* w0=23.25 role=server ' "$WORK/server.out" ||
	fail "server end state (3 steps of 3 updates expected): $(tail -1 "$WORK/server.out")"
# iteration k: w0's and w1's k-th update transfers start before w2's k-th push
mapfile -t pushes < <(sed -n 's/^push t=//p' "$WORK/w2.out")
[ ${#pushes[@]} = 3 ] || fail "w2 printed ${#pushes[@]} push times, expected 3"
for w in w0 w1; do
	mapfile -t starts < <(jq -r "select(.what == \"update\" and .src == \"$w\") | .start" "$WORK/rec/transfers.jsonl" | sort -n)
	[ ${#starts[@]} = 3 ] || fail "$w: ${#starts[@]} update transfers in transfers.jsonl, expected 3"
	for k in 0 1 2; do
		awk -v s="${starts[$k]}" -v p="${pushes[$k]}" 'BEGIN { exit !(s < p) }' ||
			fail "iteration $((k + 1)): $w's update started at ${starts[$k]}, not before w2 pushed at ${pushes[$k]}"
	done
done
ok "3 push_get iterations on 3 workers (w2 straggling): one step per iteration (versions 3, 6, 9, momentum sum on all), w0's and w1's updates left before w2 pushed"
