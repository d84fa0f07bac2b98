#!/usr/bin/env bash
# fault_lib.sh - shared by tests/integration/fault_*.sh: runs one fault scenario with
# `tools/mlf-fault run NAME --quick` (target 0.75, time limit 60 s) on conf/cluster-repl-flt.json
# (namespaces flt-*, 10.86.0.0/24), tears the cluster down on any exit, fails when mlf-fault
# reports a failed check, and gives the test the run folder for its own assertions.
# FAULT_VIA=ssh: the same cluster launched as on real hosts (docs/deploy.md "Trying it on one
# machine"): every namespace gets a management address 10.93.0.x and its own sshd, and the runner
# reaches the hosts, and delivers the scenario's kills, only over ssh (`mlf-fault run --cluster`).
# Usage (sourced): TEST_NAME=fault_x; SCENARIO=x; . fault_lib.sh; fault_run; then assertions on $SYS.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/workdir.sh"   # work_done
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TB="$ROOT/build/mlf-testbed"
CL="$ROOT/conf/cluster-repl-flt.json"
fail() { echo "FAIL $TEST_NAME: $*" >&2; exit 1; }
ok() { echo "ok   $TEST_NAME: $*"; }
[ "$(id -u)" = 0 ] || { echo "SKIP $TEST_NAME: needs root"; exit 0; }
for p in mlf-dataplane mlf-tel mlf-scheduler mlf-aggregator mlf-ps mlf-worker mlf-testbed; do
	[ -x "$ROOT/build/$p" ] || { echo "SKIP $TEST_NAME: build/$p not built"; exit 0; }
done
[ -x "${MLF_VERIFY:-$ROOT/build/mlf-verify}" ] || { echo "SKIP $TEST_NAME: build/mlf-verify not built"; exit 0; }
WORK="$(mktemp -d --tmpdir=/dev/shm)"
RUN="$WORK/run"
SYS="$RUN/mlfabric-a"
FAULT_ARGS=()
if [ "${FAULT_VIA:-local}" = ssh ]; then
	[ -x /usr/sbin/sshd ] && command -v clush >/dev/null || { echo "SKIP $TEST_NAME: needs openssh-server and clustershell"; exit 0; }
	jq '.launch = {"via": "ssh", "user": "root", "emulate": true, "ssh_options": ["-o", "LogLevel=ERROR"]}
	    | .hosts |= map(.control_ip = (.ip | sub("^10\\.86\\."; "10.93.")))' "$CL" >"$WORK/cluster-ssh.json"
	FAULT_ARGS=(--cluster "$WORK/cluster-ssh.json")
fi
# every emulated host's sshd (by its pid file) and the management links, even after a failed run;
# "sshd PID left" lines in $WORK/left
fault_ssh_down() {
	local f p i
	for f in "$RUN"/ssh/sshd-*.pid; do
		[ -f "$f" ] || continue
		p=$(cat "$f")
		kill -0 "$p" 2>/dev/null && { echo "sshd $p left" >>"$WORK/left"; kill -KILL "$p"; }
	done
	for i in 0 1 2 3 4 5; do ip link del "flt-m$i" 2>/dev/null || true; done
	ip link del flt-mg 2>/dev/null || true
}
fault_cleanup() {
	local rc=$?
	[ -z "${FAULT_ARGS[*]}" ] || fault_ssh_down
	"$TB" down "$CL" >/dev/null 2>&1 || true
	if [ $rc -ne 0 ]; then
		[ -f "$WORK/out" ] && { echo "--- mlf-fault"; tail -n 25 "$WORK/out"; } >&2
		for f in "$SYS"/logs/{scheduler,ps,replica}.log; do [ -f "$f" ] && { echo "--- $f"; tail -n 4 "$f"; }; done >&2
		echo "FAIL $TEST_NAME (exit $rc)"
	fi
	if [ -n "${FAULT_KEEP:-}" ]; then echo "kept $WORK" >&2; else work_done $rc; fi
	exit $rc
}
trap fault_cleanup EXIT

# fault_run: the scenario with mlf-fault; fails the test when a check fails.
fault_run() {
	local rc=0
	"$ROOT/tools/mlf-fault" run "$SCENARIO" --quick --out "$RUN" "${FAULT_ARGS[@]}" >"$WORK/out" 2>&1 || rc=$?
	grep -E '^(ok|FAIL) ' "$WORK/out" | sed "s/^/     /"
	[ $rc = 0 ] || fail "mlf-fault run $SCENARIO: status $rc: $(grep '^FAIL' "$WORK/out" | head -n 3 | tr '\n' ' ')"
	ok "mlf-fault run $SCENARIO: every check holds"
	[ -z "$(ip netns list 2>/dev/null | awk '$1 ~ /^flt-/')" ] || fail "namespaces flt-* left after the run"
}

# fault_event_ok KIND EVENT...: faults.jsonl has, for each EVENT (start, end), a successful one
# of KIND.
fault_event_ok() {
	local k=$1 e
	shift
	for e in "$@"; do
		[ "$(jq -s --arg k "$k" --arg e "$e" 'map(select(.kind == $k and .event == $e and .ok)) | length' "$SYS/faults.jsonl")" -ge 1 ] ||
			fail "faults.jsonl has no successful $e of $k: $(cat "$SYS/faults.jsonl")"
	done
}
