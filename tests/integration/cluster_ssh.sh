#!/usr/bin/env bash
# cluster_ssh.sh - the default experiment (shortened) launched as on real hosts: every testbed
# namespace gets a management interface (its control_ip) and its own sshd, with a host key and an
# authorized key made for the run, and tools/mlf-cluster reaches the hosts only over ssh
# (docs/deploy.md "Trying it on one machine"). Checks what the local run's tests check (results.json,
# accuracy rises, every host's records in the run folder), that the scheduler listens on its
# control address and mlf-top reaches it there, that every training process is a child of an
# sshd, and that teardown leaves no sshd, namespace, management link or process.
. "$(dirname "$0")/lib.sh"   # ROOT, TB, TEST_NAME, fail, ok
. "$(dirname "$0")/launch_lib.sh"   # launch_preflight, launch_start, launch_check_trained, launch_check_gone
MC="$ROOT/tools/mlf-cluster"
[ "$(id -u)" = 0 ] || { echo "SKIP $TEST_NAME: needs root"; exit 0; }
[ -x "$TB" ] || { echo "SKIP $TEST_NAME: build/mlf-testbed not built"; exit 0; }
[ -x /usr/sbin/sshd ] && command -v clush >/dev/null || { echo "SKIP $TEST_NAME: needs openssh-server and clustershell"; exit 0; }
WORK="$(mktemp -d --tmpdir=/dev/shm)"
[ -d "$WORK" ] || exit 1
CL="$WORK/cluster.json"
CLUSTER="$CL"   # lib.sh's tb_cleanup takes it down
RUNPID=""
# every sshd of the run by its pid file, even when the runner failed to stop them
kill_sshds() {
	local f p
	for f in "$WORK"/run/ssh/sshd-*.pid; do
		[ -f "$f" ] || continue
		p=$(cat "$f")
		kill -0 "$p" 2>/dev/null && { echo "sshd $p left" >>"$WORK/left"; kill -KILL "$p"; }
	done
	return 0
}
# the runner, every sshd, the management links; then lib.sh's testbed teardown and report
cleanup() {
	local rc=$?
	[ -n "$RUNPID" ] && kill -TERM "$RUNPID" 2>/dev/null && wait "$RUNPID" 2>/dev/null
	kill_sshds
	for i in 0 1 2 3 4 ; do ip link del "clss-m$i" 2>/dev/null || true; done
	ip link del clss-mg 2>/dev/null || true
	[ $rc -ne 0 ] && [ -f "$WORK/out" ] && tail -n 20 "$WORK/out" >&2
	(exit $rc)
	tb_cleanup
}
trap cleanup EXIT
cat >"$CL" <<'JSON'
{ "name": "clss", "key_file": "clss.key", "control_port": 7070,
  "launch": {"via": "ssh", "user": "root", "emulate": true, "ssh_options": ["-o", "LogLevel=ERROR"]},
  "hosts": [
    {"name": "ps", "ip": "10.86.0.2",  "control_ip": "10.87.0.2",  "up_gbps": 1, "down_gbps": 1, "roles": ["server", "scheduler"]},
    {"name": "w0", "ip": "10.86.0.10", "control_ip": "10.87.0.10", "up_gbps": 1, "down_gbps": 1, "roles": ["worker", "aggregator"]},
    {"name": "w1", "ip": "10.86.0.11", "control_ip": "10.87.0.11", "up_gbps": 1, "down_gbps": 1, "roles": ["worker", "aggregator"]},
    {"name": "w2", "ip": "10.86.0.12", "control_ip": "10.87.0.12", "up_gbps": 1, "down_gbps": 1, "roles": ["worker"]},
    {"name": "w3", "ip": "10.86.0.13", "control_ip": "10.87.0.13", "up_gbps": 1, "down_gbps": 1, "roles": ["worker"]} ] }
JSON
# preflight over the same path: the only problem is the key's mode, named on every host with its fix
launch_preflight "over ssh"

# the default experiment on this cluster, 30 s
launch_start 10.87.0.2
ok "the scheduler listens on its control address 10.87.0.2; mlf-top reaches it there from this machine"
# the training processes, each started through an sshd of its host: the parent is the ssh
# session's shell, its parent the sshd
ssh_started() {
	local comm pp g
	comm=$(ps -o comm= -p "$1" 2>/dev/null) || { WHY=gone; return 1; }
	case "$comm" in mlf-*) ;; *) WHY=$comm; return 1 ;; esac   # not the ssh clients
	pp=$(ps -o ppid= -p "$1" 2>/dev/null | tr -d ' ') && [ -n "$pp" ] || { WHY=gone; return 1; }
	g=$(ps -o comm= -p "$(ps -o ppid= -p "$pp" 2>/dev/null | tr -d ' ')" 2>/dev/null) || { WHY=ended; return 1; }
	[ "$(ps -o ppid= -p "$1" 2>/dev/null | tr -d ' ')" = "$pp" ] || { WHY=reparented; return 1; }   # ending
	[ "$g" = sshd ] || fail "process $1 ($(ps -o args= -p "$1" | cut -c1-60)) not started by an sshd"
	KIND=$comm
}
launch_scan ssh_started "each started through an sshd of its host (none by ip netns exec)"
launch_check_trained
launch_check_gone
kill_sshds
[ ! -s "$WORK/left" ] || fail "sshd left after the run: $(cat "$WORK/left")"
ok "teardown: no sshd, namespace, management link, process or pid folder left"
