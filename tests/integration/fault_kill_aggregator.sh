#!/usr/bin/env bash
# fault_kill_aggregator.sh - the aggregator on w0 is killed (kill -9) 6 s into training: the run is
# not a crash (the runner goes on), mlf-fault's checks hold, and no update is planned through w0
# after the scheduler noticed (its transfers after the kill + 3 s avoid w0 as aggregator).
TEST_NAME=fault_kill_aggregator
SCENARIO=kill-aggregator
. "$(dirname "$0")/fault_lib.sh"
fault_run
fault_event_ok kill-aggregator start
grep -q "aggregator w0 .* killed by a fault" "$RUN/run.log" || fail "run.log does not name the killed aggregator"
[ "$(jq -r '.systems["mlfabric-a"].stop_reason' "$RUN/results.json")" = target ] || fail "the run did not stop at the target"
t_kill=$(jq -s 'map(select(.kind == "kill-aggregator")) | first | .t' "$SYS/faults.jsonl")
late=$(jq -s --argjson k "$t_kill" 'map(select(.start > $k + 3 and .what == "aggregate" and .src == "w0")) | length' "$SYS/records/transfers.jsonl")
[ "$late" = 0 ] || fail "$late aggregates planned from w0 more than 3 s after its aggregator was killed"
ok "aggregator w0 killed: the run reached the target, no aggregate planned from w0 after the kill"
