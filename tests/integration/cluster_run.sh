#!/usr/bin/env bash
# cluster_run.sh - tools/mlf-cluster's orchestration on a real 3-host testbed with stand-in
# programs (fake dataplane, scheduler, server, workers, aggregator, mpirun, rrsync that write
# records): every system runs in turn, the network driver shapes tbf and declares capacities
# exactly as the seeded schedule says (none for rr-sync), processes get the right command lines
# (shards, straggler setting, --scheduler none for async), progress is printed, the target stops a
# system, Ctrl-C tears everything down, and no namespace or process is left.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/workdir.sh"   # work_done
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
MC="$ROOT/tools/mlf-cluster"
TEST_NAME=cluster_run
fail() { echo "FAIL $TEST_NAME: $*" >&2; exit 1; }
ok() { echo "ok   $TEST_NAME: $*"; }
[ "$(id -u)" = 0 ] || { echo "SKIP $TEST_NAME: needs root"; exit 0; }
[ -x "$ROOT/build/mlf-testbed" ] || { echo "SKIP $TEST_NAME: build/mlf-testbed not built"; exit 0; }
WORK="$(mktemp -d --tmpdir=/dev/shm)"
[ -d "$WORK" ] || exit 1
CL="$WORK/cluster.json"
RUNPID=""
cleanup() {
	local rc=$?
	[ -n "$RUNPID" ] && kill -TERM "$RUNPID" 2>/dev/null && wait "$RUNPID" 2>/dev/null
	"$ROOT/build/mlf-testbed" down "$CL" >/dev/null 2>&1 || true
	[ $rc -ne 0 ] && [ -f "$WORK/out" ] && tail -n 20 "$WORK/out" >&2
	[ -n "${KEEP:-}" ] || work_done $rc
	[ $rc -ne 0 ] && echo "FAIL $TEST_NAME (exit $rc)"
	exit $rc
}
trap cleanup EXIT
cat >"$CL" <<'JSON'
{ "name": "clur", "insecure": true, "mtu": 1500, "prefix_len": 24, "udp_port": 47000, "control_port": 7070,
  "hosts": [
    {"name": "ps", "ip": "10.84.2.2",  "up_gbps": 1, "down_gbps": 1, "roles": ["server", "scheduler"]},
    {"name": "w0", "ip": "10.84.2.10", "up_gbps": 1, "down_gbps": 1, "roles": ["worker", "aggregator"]},
    {"name": "w1", "ip": "10.84.2.11", "up_gbps": 1, "down_gbps": 1, "roles": ["worker"]} ] }
JSON

# ---- stand-in programs ----
B="$WORK/bin"
mkdir -p "$B"
ln -s "$ROOT/build/mlf-testbed" "$B/mlf-testbed"
cat >"$B/mlf-dataplane" <<'PY'
#!/usr/bin/env python3
import json, signal, socket, sys, time
print("args:", " ".join(sys.argv[1:]), flush=True)
rest = sys.argv[sys.argv.index("--") + 1:]
name = json.load(open(rest[rest.index("--cluster") + 1]))["name"]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind("/run/mlfabric/%s-%s.sock" % (name, rest[rest.index("--host") + 1]))
s.listen(1)
if "--scheduler" not in rest:
    print("scheduler stand-in: welcome", flush=True)  # the line the runner waits for
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
while True:
    time.sleep(1)
PY
printf '#!/bin/sh\necho "$(date +%%s.%%N) $1 $2" >>"%s/tel.log"\n' "$WORK" >"$B/mlf-tel"
# common part of the shell stand-ins: options into OPT_* variables, TERM -> on_term, nap; each
# stand-in prints the line the runner waits for before it starts the next process (READY)
cat >"$B/common.sh" <<'SH'
echo "args: $*"
while [ $# -gt 0 ]; do
	case "$1" in --*) eval "OPT_$(echo "${1#--}" | tr - _)=\"\${2:-}\""; shift 2 ;; *) shift ;; esac
done
trap 'on_term; exit 0' TERM
on_term() { :; }
nap() { sleep "$1" & wait $!; }
[ -z "${READY:-}" ] || echo "$READY"
SH
cat >"$B/mlf-scheduler" <<'SH'
#!/bin/bash
READY="listening on (stand-in)"
. "$(dirname "$0")/common.sh"
i=0
while :; do i=$((i + 1))
	echo "{\"xfer\":$i,\"src\":\"w0\",\"dst\":\"ps\",\"what\":\"update\",\"bytes\":1000,\"start\":$(date +%s.%N),\"end\":$(date +%s.%N)}" >>"$OPT_records/transfers.jsonl"
	echo "{\"id\":$i,\"worker\":\"w0\",\"fate\":\"$([ $((i % 4)) = 0 ] && echo dropped || echo direct)\",\"batch\":$i,\"reason\":\"\"}" >>"$OPT_records/updates.jsonl"
	nap 0.5
done
SH
cat >"$B/mlf-aggregator" <<'SH'
#!/bin/bash
. "$(dirname "$0")/common.sh"
echo "registered as aggregator@$OPT_host"
while :; do nap 1; done
SH
cat >"$B/mlf-ps" <<'SH'
#!/bin/bash
READY="serving (stand-in)"
. "$(dirname "$0")/common.sh"
tc qdisc show dev eth0 >"$OPT_records/tc.txt"
i=0
on_term() { echo "{\"applied\":$i,\"version\":$i,\"rx_bytes\":$((i * 1000)),\"rx_transfers\":$i}" >"$OPT_records/server.json"; }
while :; do i=$((i + 1))
	echo "{\"t\":$(date +%s.%N),\"xfer\":$i,\"src\":\"w0\",\"id\":$i,\"worker\":\"w0\",\"version\":$i,\"at\":$((i + i % 3)),\"delay\":$((i % 3)),\"parts\":1}" >>"$OPT_records/applied.jsonl"
	# every evaluation is followed by one 0.3 lower: the runner must stop at the first one at the target
	a=$(awk -v i=$i -v c="${FAKE_ACC_STEP:-0.05}" 'BEGIN { print 0.1 + c * i }')
	echo "{\"t\":$(date +%s.%N),\"version\":$i,\"accuracy\":$a,\"loss\":1}" >>"$OPT_records/accuracy.jsonl"
	echo "{\"t\":$(date +%s.%N),\"version\":$i,\"accuracy\":$(awk -v a=$a 'BEGIN { print a - 0.3 }'),\"loss\":1}" >>"$OPT_records/accuracy.jsonl"
	nap 0.5
done
SH
cat >"$B/mlf-worker" <<'SH'
#!/bin/bash
READY="worker of (stand-in)"
. "$(dirname "$0")/common.sh"
i=0
on_term() { echo "{\"iterations\":$i,\"pushed\":$i,\"sent\":$i,\"dropped\":0,\"aggregated\":0,\"mean_iteration_s\":0.25}" >"$OPT_records/worker.json"; }
while :; do i=$((i + 1))
	echo "{\"t\":$(date +%s.%N),\"id\":$i,\"version\":$i,\"norm\":1,\"compute_s\":0.1,\"straggled\":false}" >>"$OPT_records/pushes.jsonl"
	nap 0.25
done
SH
cat >"$B/mlf-rrsync" <<'SH'
#!/bin/bash
. "$(dirname "$0")/common.sh"
for i in $(seq 1 100); do
	a=$(awk -v i=$i 'BEGIN { print 0.1 + 0.05 * i }')
	echo "{\"t\":$(date +%s.%N),\"iteration\":$i,\"accuracy\":$a,\"loss\":1}" >>"$OPT_records/accuracy.jsonl"
	echo "{\"t\":$(date +%s.%N),\"iteration\":$i,\"compute_s\":0.1,\"allreduce_s\":0.3}" >>"$OPT_records/iterations.jsonl"
	awk -v a=$a -v t="$OPT_target_accuracy" 'BEGIN { exit !(a >= t) }' && exit 0
	nap 0.5
done
SH
cat >"$B/mpirun" <<'SH'
#!/bin/bash
echo "mpirun: $1 $2"
while [ "$1" != -- ]; do shift; done; shift
exec "$@"
SH
chmod +x "$B"/mlf-* "$B/mpirun"
export MLF_BUILD="$B" MLF_DATAPLANE="$B/mlf-dataplane" MLF_MPIRUN="$B/mpirun"

cat >"$WORK/exp.json" <<JSON
{ "name": "clurun", "cluster": "$CL", "systems": ["mlfabric-a", "async", "rr-sync"],
  "compute": "C2", "network": "N2", "rate_scale": 0.1, "period_s": 2,
  "target_accuracy": 0.6, "time_limit_s": 30, "seed": 5 }
JSON
"$MC" run "$WORK/exp.json" --out "$WORK/run" >"$WORK/out" 2>&1 || fail "mlf-cluster run failed"
R="$WORK/run"
for s in mlfabric-a async rr-sync; do
	[ "$(jq -r ".systems[\"$s\"].reached" "$R/results.json")" = true ] || fail "$s did not reach the target"
	# rr-sync stops by itself at the target: whichever of the runner and mpirun sees it first
	case "$s:$(jq -r .stop_reason "$R/$s/run.json")" in
	*:target | rr-sync:rr-sync_exited) ;;
	*) fail "$s stop reason $(jq -r .stop_reason "$R/$s/run.json")" ;;
	esac
	[ "$(grep -c "$s: t=[0-9]*s accuracy=" "$WORK/out")" -ge 2 ] || fail "$s: fewer than 2 progress lines"
done
grep -q "^mlfabric-a  *yes " "$WORK/out" || fail "no summary table row for mlfabric-a"
# the fake server's evaluations reach 0.6 once (each is followed by one 0.3 lower): the runner
# stops within two of its progress checks (2 s apart) of that evaluation, counted from the
# evaluation's own time, not from t0
t_cross=$(jq -s 'map(select(.accuracy >= 0.6)) | first | .t' "$R/async/records/accuracy.jsonl")
awk -v c="$t_cross" -v e="$(jq .t_end "$R/async/run.json")" 'BEGIN { exit !(c != "null" && e - c < 4) }' ||
	fail "async stopped $(jq --argjson c "$t_cross" '.t_end - $c' "$R/async/run.json") s after the evaluation at the target: the target reached before the last evaluation was missed"
ok "three systems ran in turn, each stopped at the target with progress lines and a summary table"

# the commands each process got
grep -q -- "--shard 0/2 .*--straggle 0.10,4" "$R/mlfabric-a/logs/worker-w0.log" || fail "w0: $(head -1 "$R/mlfabric-a/logs/worker-w0.log")"
grep -q -- "--shard 1/2 .*--straggle 0.10,4" "$R/mlfabric-a/logs/worker-w1.log" || fail "w1: $(head -1 "$R/mlfabric-a/logs/worker-w1.log")"
s0=$(sed -n 's/.*--seed \([0-9]*\).*/\1/p' "$R/async/logs/worker-w0.log"); s1=$(sed -n 's/.*--seed \([0-9]*\).*/\1/p' "$R/async/logs/worker-w1.log")
[ -n "$s0" ] && [ "$s0" != "$s1" ] || fail "workers must have their own seeds ($s0, $s1)"
grep -q -- "--mode async" "$R/async/logs/ps.log" || fail "async server mode"
grep -q -- "--mode mlfabric-a .*--tau-max 8" "$R/mlfabric-a/logs/ps.log" || fail "mlfabric-a server: $(head -1 "$R/mlfabric-a/logs/ps.log")"
for h in ps w0 w1; do
	grep -q -- "--scheduler none" "$R/async/logs/dp-$h.log" || fail "async dataplane of $h without --scheduler none"
	grep -q -- "--scheduler" "$R/mlfabric-a/logs/dp-$h.log" && fail "mlfabric-a dataplane of $h got --scheduler"
done
grep -q -- "--aggregators w0" "$R/mlfabric-a/logs/scheduler.log" || fail "scheduler: $(head -1 "$R/mlfabric-a/logs/scheduler.log")"
[ -f "$R/mlfabric-a/logs/aggregator-w0.log" ] && [ ! -f "$R/async/logs/aggregator-w0.log" ] || fail "aggregator only for mlfabric-a"
[ ! -e "$R/async/logs/scheduler.log" ] || fail "async must run without the scheduler"
grep -q "mpirun: $CL w0,w1" "$R/rr-sync/logs/rrsync.log" || fail "rr-sync: $(head -1 "$R/rr-sync/logs/rrsync.log")"
ok "command lines: shards, C2 straggler, own seeds, modes, --scheduler none for async, aggregators, mpirun on w0,w1"

# network: tbf and declared capacities follow the seeded schedule; nothing declared for rr-sync
"$MC" rates "$WORK/exp.json" --periods 10 | cmp -s - <(head -n $((11 * 3)) "$R/network.tsv") || fail "network.tsv differs from 'rates'"
mbit() { awk -v g="$1" 'BEGIN { if (g >= 1) printf "%gGbit", g; else printf "%gMbit", g * 1000 }'; }
up0=$(awk '$1 == 0 && $3 == "ps" { print $4 }' "$R/network.tsv")
grep -q "rate $(mbit "$up0") " "$R/mlfabric-a/records/tc.txt" || fail "ps uplink tbf $(cat "$R/mlfabric-a/records/tc.txt") != period 0 rate $up0"
prev_end=0
for s in mlfabric-a async; do
	te=$(jq .t_end "$R/$s/run.json")
	for h in ps w0 w1; do
		got=$(awk -v a="$prev_end" -v e="$te" -v p="clur-$h" '$1 > a && $1 <= e && $2 == p && $3 ~ /capacity,/ { sub(".*capacity,", "", $3); print $3 }' "$WORK/tel.log" | xargs)
		shaper=$(awk -v a="$prev_end" -v e="$te" -v p="clur-$h" '$1 > a && $1 <= e && $2 == p && $3 ~ /shaper,/ { sub(".*shaper,", "", $3); print $3 }' "$WORK/tel.log" | xargs)
		n=$(wc -w <<<"$got")
		[ "$n" -ge 2 ] || fail "$s: $h declared only $n capacities"
		want=$(awk -v h="$h" '$3 == h { print $4 "," $5 }' "$R/network.tsv" | head -n "$n" | xargs)
		[ "$got" = "$want" ] || fail "$s: $h declared [$got], schedule says [$want]"
		wantup=$(awk -v h="$h" '$3 == h { print $4 }' "$R/network.tsv" | head -n "$n" | xargs)
		[ "$shaper" = "$wantup" ] || fail "$s: $h egress shaper [$shaper], uplink schedule says [$wantup]"
	done
	prev_end=$te
done
te=$(jq .t_end "$R/rr-sync/run.json")
awk -v a="$prev_end" -v e="$te" '$1 > a + 1 && $1 <= e' "$WORK/tel.log" | grep -q . && fail "capacities declared during rr-sync"
ok "tbf at period 0, declared capacities and the egress shaper (= uplink) per period match the seeded schedule for both systems; none for rr-sync"

for s in mlfabric-a async rr-sync; do grep -q "$s: teardown done" "$R/run.log" || fail "$s: teardown not confirmed"; done
for f in accuracy delays timeline; do [ -s "$R/$f.png" ] || fail "$f.png missing"; done
[ "$(ip netns list | grep -c '^clur-' || true)" = 0 ] || fail "namespaces left"
pgrep -f "$B/" >/dev/null && fail "stand-in processes left: $(pgrep -af "$B/" | head -3)"
ok "teardown after each system, plots, no namespace or process left"

# CPU from /proc and the switch's byte counters, per system
for s in mlfabric-a async rr-sync; do
	jq -e '.cpu.machine_cores > 0 and .cpu.wall_s > 0' "$R/$s/run.json" >/dev/null || fail "$s: no cpu in run.json: $(jq -c .cpu "$R/$s/run.json")"
	n=$(wc -l <"$R/$s/netdev.jsonl")
	[ "$n" -ge 8 ] || fail "$s: only $n switch counter samples in netdev.jsonl"
	jq -e 'select(.rx.ps != null and .tx.w0 != null and .rx.w1 != null)' <(tail -n 1 "$R/$s/netdev.jsonl") >/dev/null ||
		fail "$s: netdev.jsonl lacks a host's counters: $(tail -n 1 "$R/$s/netdev.jsonl")"
	jq -e --arg s "$s" '.[$s].counters.ps.up.busy >= 0 and .[$s].verdict.busiest != null' "$R/links.json" >/dev/null ||
		fail "$s: links.json without the counters' analysis"
	jq -e '.systems["'"$s"'"].links.source == "counters"' "$R/results.json" >/dev/null || fail "$s: results.json links"
done
jq -e '.cpu.procs | has("worker@w0") and has("dataplane@ps") and has("scheduler@ps")' "$R/mlfabric-a/run.json" >/dev/null ||
	fail "mlfabric-a: cpu.procs $(jq -c '.cpu.procs | keys' "$R/mlfabric-a/run.json")"
jq -e '.cpu.procs | has("mpirun")' "$R/rr-sync/run.json" >/dev/null || fail "rr-sync: no mpirun in cpu.procs"
pgrep -f "mlfcluster/netdev.py" >/dev/null && fail "the counter sampler was left running"
# to a file first: grep -q stops reading at the first match, and the writer's broken pipe would
# fail the pipeline (pipefail) whenever the table is longer than the pipe buffer
"$MC" links "$R" >"$WORK/links.out" || fail "tools/mlf-cluster links failed: $(tail -n 3 "$WORK/links.out")"
grep -q "^mlfabric-a (window" "$WORK/links.out" || fail "tools/mlf-cluster links prints no table"
ok "run.json cpu (machine, per process), netdev.jsonl counters of every host, links.json and 'links' for every system"

# Ctrl-C in the middle of a run: everything is torn down, partial results are written
jq '.systems = ["mlfabric-a"] | .target_accuracy = 0.99' "$WORK/exp.json" >"$WORK/exp2.json"
# (a background job of a script starts with SIGINT ignored: restore the default as a terminal would)
FAKE_ACC_STEP=0.001 python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])' \
	"$MC" run "$WORK/exp2.json" --out "$WORK/run2" >"$WORK/out" 2>&1 &
RUNPID=$!
for _ in $(seq 1 100); do grep -q "mlfabric-a: t=" "$WORK/out" && break; sleep 0.2; done
kill -INT "$RUNPID"
rc=0; wait "$RUNPID" || rc=$?; RUNPID=""
[ "$rc" = 130 ] || fail "interrupted run exited with $rc, expected 130"
grep -q "interrupted: tearing down" "$WORK/run2/run.log" || fail "no interruption message"
[ "$(ip netns list | grep -c '^clur-' || true)" = 0 ] || fail "namespaces left after Ctrl-C"
pgrep -f "$B/" >/dev/null && fail "processes left after Ctrl-C: $(pgrep -af "$B/" | head -3)"
[ -f "$WORK/run2/results.json" ] || fail "no results.json after Ctrl-C"
ok "Ctrl-C: exit 130, torn down, results written"
