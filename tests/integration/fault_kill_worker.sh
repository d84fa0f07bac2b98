#!/usr/bin/env bash
# fault_kill_worker.sh - worker w3 is killed (kill -9) 6 s into training, once it pushed (the fault
# driver waits for its first push): the runner names it, the
# other three workers reach the target, mlf-fault's checks hold (w3's held updates are dropped or
# lost, none unaccounted), and w3 pushed nothing after the kill.
TEST_NAME=fault_kill_worker
SCENARIO=kill-worker
. "$(dirname "$0")/fault_lib.sh"
fault_run
fault_event_ok kill-worker start
[ "$(jq -r '.systems["mlfabric-a"].dead_workers | join(",")' "$RUN/results.json")" = w3 ] ||
	fail "dead workers $(jq -c '.systems["mlfabric-a"].dead_workers' "$RUN/results.json"), expected [w3]"
# t_done: after kill -9 returned (t, taken before it, may precede a last push)
t_kill=$(jq -s 'map(select(.kind == "kill-worker")) | first | .t_done' "$SYS/faults.jsonl")
[ -s "$SYS/records/w3/pushes.jsonl" ] || fail "w3 wrote no push before it was killed (the kill waits for its first push): $(cat "$SYS/faults.jsonl")"
after=$(jq -s --argjson k "$t_kill" 'map(select(.t > $k)) | length' "$SYS/records/w3/pushes.jsonl")
[ "$after" = 0 ] || fail "w3 pushed $after updates after it was killed"
ok "worker w3 killed: named as dead, no push after the kill, the others reached the target"
