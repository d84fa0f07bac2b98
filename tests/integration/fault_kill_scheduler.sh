#!/usr/bin/env bash
# fault_kill_scheduler.sh - mlf-scheduler is killed (kill -9) 6 s into MLfabric-A training and
# restarted by the runner: the dataplanes reconnect, the apps register again and announce their
# held updates and waiting pulls (docs/scheduler.md "Restart"), the replica registers again and
# catches up, and mlf-fault's checks hold: the target is reached, the last snapshot pair before the
# kill and every kept pair within the norms of the updates between their versions, the
# planner's divergence bound within div_max, every pushed update accounted for, and the restarted
# scheduler planned transfers. Before the restart existed, a lost scheduler
# dropped every held update and made every later push and get fail.
TEST_NAME=fault_kill_scheduler
SCENARIO=kill-scheduler
. "$(dirname "$0")/fault_lib.sh"
fault_run
fault_event_ok kill-scheduler start
[ -s "$SYS/logs/scheduler-restart-1.log" ] || fail "no restarted scheduler's log"
grep -q "listening on" "$SYS/logs/scheduler-restart-1.log" || fail "the restarted scheduler did not listen"
grep -q "replica@rp registered" "$SYS/logs/scheduler-restart-1.log" ||
	fail "the replica did not register with the restarted scheduler"
grep -q "counting on from there" "$SYS/logs/scheduler-restart-1.log" ||
	fail "the restarted scheduler did not go on from the recorded batch number"
jq -e -s 'map(.batch) | . as $b | [range(1; length)] | all($b[.] > $b[. - 1])' "$SYS/records/batches.jsonl" >/dev/null ||
	fail "batch numbers repeat across the restart (snapshot tags would collide)"
# every snapshot pair, before and after the restart, within the bound of the versions it
# compares (mlf-fault check's "every snapshot pair": the replica the restarted scheduler caught
# up holds the server's updates); not div_max, which the replica's lag passes for moments
# between batches (the planner bounds it at each batch's end; docs/replication.md)
grep -q '^ok   every snapshot pair' "$WORK/out" || fail "no every-snapshot-pair check in mlf-fault's output"
lost=$(jq -r '.systems["mlfabric-a"].lost // 0' "$RUN/results.json")
[ "$lost" = 0 ] || fail "$lost updates lost (the kill must not lose any)"
back=$(grep -l "a scheduler is back" "$SYS"/logs/worker-*.log | wc -l)
[ "$back" -ge 4 ] || fail "only $back of 4 workers registered again with the restarted scheduler"
[ -z "$(jq -r '.systems["mlfabric-a"].dead_workers | join(",")' "$RUN/results.json")" ] ||
	fail "workers died: $(jq -c '.systems["mlfabric-a"].dead_workers' "$RUN/results.json")"
ok "scheduler killed and restarted: every worker and the replica registered again, held updates announced, none lost, no worker dead, batch numbers go on, $(grep '^ok   every snapshot pair' "$WORK/out" | sed 's/^ok   every snapshot pair: //')"
