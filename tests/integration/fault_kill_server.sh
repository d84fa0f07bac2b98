#!/usr/bin/env bash
# fault_kill_server.sh - the server is killed (kill -9) 6 s into training with an MLfabric
# replica: mlf-fault's checks (target reached on the promoted replica, divergence of the last
# snapshot pair before the kill <= Div_max, every push accounted for, recovery) and the fail-over
# record: the replica host is the new server, promoted after the kill, with a first commit.
# FAULT_VIA=ssh (fault_kill_server_ssh.sh): the hosts reached and the server killed only over ssh
# (fault_lib.sh), then also: every host came up through its sshd and teardown left no sshd,
# management link or remote pid folder.
TEST_NAME=fault_kill_server${FAULT_VIA:+_$FAULT_VIA}
SCENARIO=kill-server
. "$(dirname "$0")/fault_lib.sh"
fault_run
fault_event_ok kill-server start
fo="$SYS/records/failover.jsonl"
[ -s "$fo" ] || fail "no failover.jsonl"
[ "$(jq -r .new_server "$fo" | head -n 1)" = rp ] || fail "new server $(jq -r .new_server "$fo"), expected rp"
t_kill=$(jq -s 'map(select(.kind == "kill-server")) | first | .t' "$SYS/faults.jsonl")
jq -e --argjson k "$t_kill" '.t_gone >= $k and .t_promoted >= .t_gone and .t_first_commit >= .t_promoted' "$fo" >/dev/null ||
	fail "fail-over times out of order (kill at $t_kill): $(cat "$fo")"
[ -s "$SYS/records/replica/accuracy.jsonl" ] || fail "the promoted replica evaluated no accuracy"
rec=$(jq -r '.systems["mlfabric-a"].recovery_s * 1000 | round / 1000' "$RUN/results.json")
awk -v r="$rec" 'BEGIN { exit !(r > 0 && r < 10) }' || fail "recovery time $rec s, expected in (0, 10)"
ok "fail-over ps -> rp: promoted after the kill, first commit $rec s after it, the replica evaluated"
[ "${FAULT_VIA:-local}" = ssh ] || exit 0
grep -q "management bridge flt-mg" "$SYS/logs/testbed.log" && grep -q "shared run folder: ps rp w0 w1 w2 w3" "$SYS/logs/testbed.log" ||
	fail "the hosts did not come up over ssh: $(cat "$SYS/logs/testbed.log")"
grep -q "could not clean" "$RUN/run.log" && fail "$(grep 'could not clean' "$RUN/run.log")"
fault_ssh_down
[ ! -s "$WORK/left" ] || fail "after the run: $(cat "$WORK/left")"
ip -o link | grep -q "flt-m" && fail "management links left: $(ip -o link | grep flt-m | cut -c1-60)"
ls -d /tmp/mlf-launch-flt-* >/dev/null 2>&1 && fail "pid folders left on the hosts: $(ls -d /tmp/mlf-launch-flt-*)"
ok "over ssh: every host reached through its sshd, the kill delivered through the server's ssh connection; no sshd, management link or pid folder left"
