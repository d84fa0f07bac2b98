#!/usr/bin/env bash
# fault_kill_scheduler.sh - mlf-scheduler is killed (kill -9) 6 s into MLfabric-A training and
# restarted by the runner: the dataplanes reconnect, the apps register again and announce their
# held updates and waiting pulls (docs/scheduler.md "Restart"), and mlf-fault's checks hold: the
# target is reached, every pushed update is applied (none dropped or lost because of the kill),
# and the restarted scheduler planned transfers. Before the restart existed, a lost scheduler
# dropped every held update and made every later push and get fail.
TEST_NAME=fault_kill_scheduler
SCENARIO=kill-scheduler
. "$(dirname "$0")/fault_lib.sh"
fault_run
fault_event_ok kill-scheduler start
[ -s "$SYS/logs/scheduler-restart-1.log" ] || fail "no restarted scheduler's log"
grep -q "listening on" "$SYS/logs/scheduler-restart-1.log" || fail "the restarted scheduler did not listen"
dropped=$(jq -r '.systems["mlfabric-a"].dropped // 0' "$RUN/results.json")
[ "$dropped" = 0 ] || fail "$dropped updates dropped (the kill must not drop any)"
back=$(grep -l "a scheduler is back" "$SYS"/logs/worker-*.log | wc -l)
[ "$back" -ge 4 ] || fail "only $back of 4 workers registered again with the restarted scheduler"
[ -z "$(jq -r '.systems["mlfabric-a"].dead_workers | join(",")' "$RUN/results.json")" ] ||
	fail "workers died: $(jq -c '.systems["mlfabric-a"].dead_workers' "$RUN/results.json")"
ok "scheduler killed and restarted: every worker registered again and announced its held updates, none dropped, none dead"
