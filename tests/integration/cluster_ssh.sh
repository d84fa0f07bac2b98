#!/usr/bin/env bash
# cluster_ssh.sh - the default experiment (shortened) launched as on real hosts: every testbed
# namespace gets a management interface (its control_ip) and its own sshd, with a host key and an
# authorized key made for the run, and tools/mlf-cluster reaches the hosts only over ssh
# (docs/deploy.md "Trying it on one machine"). Checks what the local run's tests check (results.json,
# accuracy rises, every host's records in the run folder), that the scheduler listens on its
# control address and mlf-top reaches it there, that every training process is a child of an
# sshd, and that teardown leaves no sshd, namespace, management link or process.
. "$(dirname "$0")/lib.sh"   # ROOT, TB, TEST_NAME, fail, ok
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
"$ROOT/tools/mlf-keygen" "$WORK/clss.key" >/dev/null
chmod 644 "$WORK/clss.key"
rc=0; "$MC" preflight "$CL" >"$WORK/pre" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "preflight exited with $rc, expected 1: $(cat "$WORK/pre")"
for h in ps w0 w1 w2 w3; do
	grep -q "^$h: cluster key $WORK/clss.key has mode 644: chmod 600 $WORK/clss.key$" "$WORK/pre" ||
		fail "preflight did not name $h's key mode: $(cat "$WORK/pre")"
done
[ "$(grep -c '^[a-z0-9]*: ' "$WORK/pre")" = 5 ] || fail "preflight reported other problems: $(cat "$WORK/pre")"
ok "preflight over ssh: one line per host naming the key's mode 644 and the fix; exit 1"
chmod 600 "$WORK/clss.key"

# the default experiment (conf/exp-default.json) on this cluster, 30 s
jq --arg c "$CL" '.cluster = $c | .time_limit_s = 30' "$ROOT/conf/exp-default.json" >"$WORK/exp.json"
"$MC" run "$WORK/exp.json" --out "$WORK/run" >"$WORK/out" 2>&1 &
RUNPID=$!
R="$WORK/run"
S="$R/mlfabric-a"
# the first progress line: every process runs
for _ in $(seq 1 900); do
	grep -q "mlfabric-a: t=" "$WORK/out" && break
	kill -0 "$RUNPID" 2>/dev/null || break
	sleep 0.1
done
grep -q "mlfabric-a: t=" "$WORK/out" || fail "no progress line within 90 s"
grep -q "listening on 10.87.0.2:7070" "$S/logs/scheduler.log" || fail "scheduler not on its control address: $(grep listening "$S/logs/scheduler.log")"
"$ROOT/tools/mlf-top" --cluster "$CL" --once >"$WORK/top" 2>&1 || fail "mlf-top did not reach the scheduler at its control address: $(cat "$WORK/top")"
grep -q "w3" "$WORK/top" || fail "mlf-top shows no host w3: $(head -5 "$WORK/top")"
ok "the scheduler listens on its control address 10.87.0.2; mlf-top reaches it there from this machine"
n=0
for p in $(pgrep -f "$ROOT/build/mlf-(worker|ps|scheduler|aggregator|dataplane) .*$CL" || true); do
	case "$(ps -o comm= -p "$p")" in mlf-*) ;; *) continue ;; esac   # not the ssh clients
	pp=$(ps -o ppid= -p "$p" | tr -d ' '); gp=$(ps -o ppid= -p "$pp" | tr -d ' ')
	[ "$(ps -o comm= -p "$gp")" = sshd ] || fail "process $p ($(ps -o args= -p "$p" | cut -c1-60)) not started by an sshd"
	n=$((n + 1))
done
[ "$n" -ge 12 ] || fail "only $n training processes found (5 dataplanes, scheduler, server, 2 aggregators, 4 workers expected)"
ok "$n processes, each started through an sshd of its host (none by ip netns exec)"
rc=0; wait "$RUNPID" || rc=$?; RUNPID=""
[ "$rc" = 0 ] || fail "mlf-cluster run exited with $rc"

jq -e '.systems["mlfabric-a"]' "$R/results.json" >/dev/null || fail "no mlfabric-a in results.json"
for f in accuracy delays timeline; do [ -s "$R/$f.png" ] || fail "$f.png missing"; done
first=$(head -n 1 "$S/records/accuracy.jsonl" | jq .accuracy)
best=$(jq -s 'map(.accuracy) | max' "$S/records/accuracy.jsonl")
reached=$(jq -r '.systems["mlfabric-a"].reached' "$R/results.json")
[ "$reached" = true ] || awk -v a="$first" -v b="$best" 'BEGIN { exit !(b >= a + 0.3) }' ||
	fail "accuracy did not rise: first $first, best $best, target not reached"
for h in w0 w1 w2 w3; do [ -s "$S/records/$h/pushes.jsonl" ] || fail "no records of worker $h"; done
[ -s "$S/records/applied.jsonl" ] && [ -s "$S/records/transfers.jsonl" ] || fail "no server or scheduler records"
for h in ps w0 w1 w2 w3; do grep -q "EAL" "$S/logs/dp-$h.log" || fail "dp-$h.log lacks the dataplane's output"; done
grep -q "shared run folder: ps w0 w1 w2 w3" "$S/logs/testbed.log" || fail "hosts did not see the run folder: $(cat "$S/logs/testbed.log")"
ok "results.json, plots; accuracy $first -> $best (target reached: $reached); every host's records and logs in the run folder"

grep -q "mlfabric-a: teardown done" "$R/run.log" || fail "teardown not confirmed: $(grep teardown "$R/run.log")"
grep -q "could not clean" "$R/run.log" && fail "$(grep 'could not clean' "$R/run.log")"
kill_sshds
[ ! -s "$WORK/left" ] || fail "sshd left after the run: $(cat "$WORK/left")"
[ "$(ip netns list | grep -c '^clss-' || true)" = 0 ] || fail "namespaces left"
ip -o link | grep -q "clss-m" && fail "management links left: $(ip -o link | grep clss-m | cut -c1-60)"
pgrep -f "$ROOT/build/mlf-.*$CL" >/dev/null && fail "processes left: $(pgrep -af "$ROOT/build/mlf-.*$CL" | head -3)"
ls -d /tmp/mlf-launch-clss-* >/dev/null 2>&1 && fail "pid folders left on the hosts: $(ls -d /tmp/mlf-launch-clss-*)"
ok "teardown: no sshd, namespace, management link, process or pid folder left"
