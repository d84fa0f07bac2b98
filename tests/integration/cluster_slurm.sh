#!/usr/bin/env bash
# cluster_slurm.sh - the default experiment (shortened) launched under Slurm as on real hosts: a
# local Slurm (slurm-wlm: slurmctld on this machine's management bridge address, one slurmd per
# testbed namespace on its control_ip, auth/none) and an allocation of every host are made for
# the run, and tools/mlf-cluster starts every process as an srun step of it (docs/deploy.md
# "Slurm"). Checks what cluster_ssh.sh checks (preflight through the same path, results.json,
# accuracy rises, every host's records in the run folder, the scheduler on its control address,
# mlf-top reaching it), that every training process runs under a slurmstepd, and that teardown
# leaves no slurmctld, slurmd, step, namespace, management link or process.
. "$(dirname "$0")/lib.sh"   # ROOT, TB, TEST_NAME, fail, ok
. "$(dirname "$0")/launch_lib.sh"   # launch_preflight, launch_start, launch_check_trained, launch_check_gone
MC="$ROOT/tools/mlf-cluster"
[ "$(id -u)" = 0 ] || { echo "SKIP $TEST_NAME: needs root"; exit 0; }
[ -x "$TB" ] || { echo "SKIP $TEST_NAME: build/mlf-testbed not built"; exit 0; }
command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v srun >/dev/null ||
	{ echo "SKIP $TEST_NAME: needs slurm-wlm (slurmctld, slurmd, srun)"; exit 0; }
WORK="$(mktemp -d --tmpdir=/dev/shm)"
[ -d "$WORK" ] || exit 1
CL="$WORK/cluster.json"
CLUSTER="$CL"   # lib.sh's tb_cleanup takes it down
RUNPID=""
# every slurmctld and slurmd this test's runs started (their slurm.conf is under WORK or a
# preflight's folder), even when the runner failed to stop them
kill_slurm() {
	local p
	for p in $(pgrep -f "^slurm(ctld|d) -D -f ($WORK|/tmp/mlf-preflight-)[^ ]*/slurm/slurm.conf" || true); do
		echo "$(ps -o comm= -p "$p") $p left" >>"$WORK/left"
		kill -KILL "$p" 2>/dev/null || true
	done
	return 0
}
cleanup() {
	local rc=$?
	if [ -n "$RUNPID" ] && kill -TERM "$RUNPID" 2>/dev/null; then   # its teardown stops the Slurm it made
		for _ in $(seq 1 600); do kill -0 "$RUNPID" 2>/dev/null || break; sleep 0.1; done
	fi
	kill_slurm
	for i in 0 1 2 3 4 ; do ip link del "clsl-m$i" 2>/dev/null || true; done
	ip link del clsl-mg 2>/dev/null || true
	[ $rc -ne 0 ] && [ -f "$WORK/out" ] && tail -n 20 "$WORK/out" >&2
	(exit $rc)
	tb_cleanup
}
trap cleanup EXIT
cat >"$CL" <<'JSON'
{ "name": "clsl", "key_file": "clsl.key", "control_port": 7070,
  "launch": {"via": "slurm", "emulate": true},
  "hosts": [
    {"name": "ps", "ip": "10.80.0.2",  "control_ip": "10.81.0.2",  "up_gbps": 1, "down_gbps": 1, "roles": ["server", "scheduler"]},
    {"name": "w0", "ip": "10.80.0.10", "control_ip": "10.81.0.10", "up_gbps": 1, "down_gbps": 1, "roles": ["worker", "aggregator"]},
    {"name": "w1", "ip": "10.80.0.11", "control_ip": "10.81.0.11", "up_gbps": 1, "down_gbps": 1, "roles": ["worker", "aggregator"]},
    {"name": "w2", "ip": "10.80.0.12", "control_ip": "10.81.0.12", "up_gbps": 1, "down_gbps": 1, "roles": ["worker"]},
    {"name": "w3", "ip": "10.80.0.13", "control_ip": "10.81.0.13", "up_gbps": 1, "down_gbps": 1, "roles": ["worker"]} ] }
JSON
# preflight through srun steps: the only problem is the key's mode, named on every host with its fix
launch_preflight "as srun steps"
pgrep -f "^slurm(ctld|d) -D -f /tmp/mlf-preflight-" >/dev/null && fail "preflight left Slurm daemons: $(pgrep -af '^slurm(ctld|d) -D')"

# the default experiment on this cluster, 30 s
launch_start 10.81.0.2
grep -q "slurm: allocation [0-9]* on " "$S/logs/testbed.log" || fail "no Slurm allocation in testbed.log: $(cat "$S/logs/testbed.log")"
ok "an allocation of the local Slurm; the scheduler listens on 10.81.0.2; mlf-top reaches it there"
# the training processes, each an srun step's: under a slurmstepd, in its host's namespace
slurm_started() {
	local comm a chain="" c="" ns
	comm=$(ps -o comm= -p "$1" 2>/dev/null) || { WHY=gone; return 1; }
	case "$comm" in mlf-*) ;; *) WHY=$comm; return 1 ;; esac   # not the srun clients
	# its ancestors up to init: the step's shells, then the step's slurmstepd
	a=$1
	while [ -n "$a" ] && [ "$a" -gt 1 ]; do
		a=$(ps -o ppid= -p "$a" 2>/dev/null | tr -d ' ') || a=""
		c=$(ps -o comm= -p "$a" 2>/dev/null || true); chain="$chain $c"
		[ "$c" = slurmstepd ] && break
	done
	ns=$(ip netns identify "$1" 2>/dev/null || true)
	kill -0 "$1" 2>/dev/null || { WHY=ended; return 1; }   # its ancestry says nothing
	[ "$c" = slurmstepd ] || fail "process $1 ($(ps -o args= -p "$1" | cut -c1-60)) not under a slurmstepd (ancestors:$chain)"
	case "$ns" in clsl-*) ;; *) fail "process $1 not in a host's namespace" ;; esac
	KIND="${ns#clsl-}:$comm"
}
launch_scan slurm_started "each an srun step's under a slurmstepd in its host's namespace (none by ip netns exec)"
launch_check_trained
launch_check_gone
kill_slurm
[ ! -s "$WORK/left" ] || fail "Slurm daemons left after the run: $(cat "$WORK/left")"
for p in $(pgrep -x slurmstepd || true); do
	case "$(ip netns identify "$p" 2>/dev/null)" in clsl-*) fail "slurmstepd $p left in $(ip netns identify "$p")" ;; esac
done
ok "teardown: no slurmctld, slurmd, step, namespace, management link, process or pid folder left"
