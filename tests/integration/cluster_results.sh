#!/usr/bin/env bash
# cluster_results.sh - tools/mlf-cluster without a cluster: the seeded rate schedule of the network
# settings (determinism, only the setting's rates, frequencies within binomial bounds), results.json
# computed from synthetic record files against hand-computed values, the three PNG plots, and
# bad experiments refused with one line before anything starts.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/workdir.sh"   # work_done
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
MC="$ROOT/tools/mlf-cluster"
TEST_NAME=cluster_results
WORK="${KEEP_WORK:-$(mktemp -d --tmpdir=/dev/shm)}"; mkdir -p "$WORK"
trap 'rc=$?; work_done $rc; [ $rc -eq 0 ] || echo "FAIL $TEST_NAME (exit $rc)"; exit $rc' EXIT
fail() { echo "FAIL $TEST_NAME: $*" >&2; exit 1; }
ok() { echo "ok   $TEST_NAME: $*"; }
# eq NAME GOT WANT: numeric equality within 1e-9 (null compares as a string).
eq() { awk -v g="$2" -v w="$3" 'BEGIN { d = g - w; exit !((g == w) || (g != "null" && w != "null" && d < 1e-9 && d > -1e-9)) }' ||
	fail "$1 = $2, expected $3"; }

# ---- rate schedule ----
"$MC" rates "$ROOT/conf/exp-c1-n1.json" --periods 40 >"$WORK/a"
"$MC" rates "$ROOT/conf/exp-c1-n1.json" --periods 40 >"$WORK/b"
cmp -s "$WORK/a" "$WORK/b" || fail "the same seed gave two different rate schedules"
[ "$(wc -l <"$WORK/a")" = $((41 * 5)) ] || fail "expected one line per period and host (41 x 5), got $(wc -l <"$WORK/a")"
jq '.seed = 2' "$ROOT/conf/exp-c1-n1.json" >"$WORK/seed2.json"
"$MC" rates "$WORK/seed2.json" --periods 40 >"$WORK/c"
cmp -s "$WORK/a" "$WORK/c" && fail "seeds 1 and 2 gave the same rate schedule"
jq '.network = "N3"' "$ROOT/conf/exp-c1-n1.json" >"$WORK/n3.json"
bad=$("$MC" rates "$WORK/n3.json" --periods 200 | awk '$4 != 0.1 && $4 != 1 || $5 != 0.1 && $5 != 1' | wc -l)
[ "$bad" = 0 ] || fail "N3 drew $bad rates outside {1, 10} x 0.1"
# N1: P(5 x scale) = 0.1 over 2 x 5 x 1001 draws: mean 1001, sd 30; accept +-5 sd
n=$("$MC" rates "$ROOT/conf/exp-c1-n1.json" --periods 1000 | awk '{ c += ($4 == 0.5) + ($5 == 0.5) } END { print c }')
[ "$n" -ge 851 ] && [ "$n" -le 1151 ] || fail "N1 drew 0.5 Gbit/s $n times in 10010 draws (expected 1001 +- 150)"
n=$("$MC" rates "$ROOT/conf/exp-c1-n2.json" --periods 1000 | awk '{ c += ($4 == 0.25) } END { print c }')
[ "$n" -ge 350 ] && [ "$n" -le 651 ] || fail "N2 drew uplink 0.25 Gbit/s $n times in 5005 draws (expected 500 +- 150)"
ok "rate schedule: deterministic per seed, N3 only {1,10} x scale, N1/N2 frequencies within bounds"

# ---- results from synthetic records ----
R="$WORK/run"
mkdir -p "$R"/{mlfabric-a,async,rr-sync}/records/{w0,w1}
jq '. + {systems: ["mlfabric-a", "async", "rr-sync"], target_accuracy: 0.78}' "$ROOT/conf/exp-c1-n1.json" >"$R/experiment.json"
A="$R/mlfabric-a"
echo '{"system":"mlfabric-a","n_workers":2,"t0":1000,"t_end":1010,"stop_reason":"target"}' >"$A/run.json"
for x in "1002 0.3" "1004 0.6" "1006 0.8" "1008 0.82"; do set -- $x
	echo "{\"t\":$1,\"version\":$((($1 - 1000) * 10)),\"accuracy\":$2,\"loss\":1}"; done >"$A/records/accuracy.jsonl"
for d in 3 0 8 1 2; do echo "{\"t\":1003,\"xfer\":1,\"src\":\"w0\",\"id\":1,\"worker\":\"w0\",\"version\":1,\"at\":$((1 + d)),\"delay\":$d,\"parts\":1}"; done >"$A/records/applied.jsonl"
i=0; for f in direct direct aggregated dropped direct aggregated; do i=$((i + 1)); echo "{\"id\":$i,\"worker\":\"w0\",\"fate\":\"$f\",\"batch\":1,\"reason\":\"\"}"; done >"$A/records/updates.jsonl"
echo '{"applied":5,"version":5,"rx_bytes":16300000,"rx_transfers":4}' >"$A/records/server.json"
echo '{"iterations":10,"pushed":3,"sent":2,"dropped":1,"aggregated":1,"mean_iteration_s":0.1}' >"$A/records/w0/worker.json"
echo '{"iterations":12,"pushed":3,"sent":3,"dropped":0,"aggregated":1,"mean_iteration_s":0.3}' >"$A/records/w1/worker.json"
for i in 1 2 3; do echo "{\"t\":1001,\"id\":$i,\"version\":0,\"norm\":1,\"compute_s\":0.1,\"straggled\":false}"; done | tee "$A/records/w0/pushes.jsonl" >"$A/records/w1/pushes.jsonl"
printf '%s\n' '{"xfer":1,"src":"w0","dst":"ps","what":"update","bytes":3257384,"start":1001.0,"end":1001.5}' \
	'{"xfer":2,"src":"w1","dst":"w0","what":"update","bytes":3257384,"start":1001.2,"end":1001.6}' >"$A/records/transfers.jsonl"
S="$R/async"
echo '{"system":"async","n_workers":2,"t0":2000,"t_end":2240,"stop_reason":"time_limit"}' >"$S/run.json"
printf '%s\n' '{"t":2010,"version":40,"accuracy":0.5,"loss":1}' '{"t":2020,"version":80,"accuracy":0.7,"loss":1}' >"$S/records/accuracy.jsonl"
for d in 0 4 12 30; do echo "{\"t\":2003,\"xfer\":1,\"src\":\"w0\",\"id\":1,\"worker\":\"w0\",\"version\":1,\"at\":1,\"delay\":$d,\"parts\":1}"; done >"$S/records/applied.jsonl"
echo '{"applied":4,"version":4,"rx_bytes":13000000,"rx_transfers":4}' >"$S/records/server.json"
echo '{"iterations":2,"pushed":2,"sent":2,"dropped":0,"aggregated":0,"mean_iteration_s":0.5}' >"$S/records/w0/worker.json"
echo '{"iterations":2,"pushed":2,"sent":2,"dropped":0,"aggregated":0,"mean_iteration_s":0.7}' >"$S/records/w1/worker.json"
Y="$R/rr-sync"
echo '{"system":"rr-sync","n_workers":2,"t0":3000,"t_end":3030,"stop_reason":"rr-sync_exited"}' >"$Y/run.json"
printf '%s\n' '{"t":3010,"iteration":20,"accuracy":0.6,"loss":1}' '{"t":3025,"iteration":40,"accuracy":0.79,"loss":1}' >"$Y/records/accuracy.jsonl"
for i in 1 2 3; do echo "{\"t\":300$i,\"iteration\":$i,\"compute_s\":0.1,\"allreduce_s\":0.2}"; done >"$Y/records/iterations.jsonl"

"$MC" results "$R" >"$WORK/summary" || fail "mlf-cluster results failed"
J="$R/results.json"
g() { jq -r ".systems[\"$1\"]$2" "$J"; }
[ "$(g mlfabric-a .reached)" = true ] || fail "mlfabric-a reached 0.80 >= 0.78 but reached = $(g mlfabric-a .reached)"
eq "mlfabric-a time_to_target_s" "$(g mlfabric-a .time_to_target_s)" 6
eq "mlfabric-a final_accuracy" "$(g mlfabric-a .final_accuracy)" 0.82
eq "mlfabric-a applied" "$(g mlfabric-a .applied)" 5
eq "mlfabric-a dropped_fraction" "$(g mlfabric-a .dropped_fraction)" "$(awk 'BEGIN { printf "%.12f", 1 / 6 }')"
eq "mlfabric-a delay.mean" "$(g mlfabric-a .delay.mean)" 2.8
eq "mlfabric-a delay.p50" "$(g mlfabric-a .delay.p50)" 2
eq "mlfabric-a delay.p99" "$(g mlfabric-a .delay.p99)" 3
eq "mlfabric-a delay.max" "$(g mlfabric-a .delay.max)" 8
eq "mlfabric-a server_rx_bytes" "$(g mlfabric-a .server_rx_bytes)" 16300000
eq "mlfabric-a mean_iteration_s" "$(g mlfabric-a .mean_iteration_s)" 0.2
eq "mlfabric-a pushed" "$(g mlfabric-a .pushed)" 6
[ "$(g async .reached)" = false ] || fail "async never reached 0.78 but reached = $(g async .reached)"
[ "$(g async .time_to_target_s)" = null ] || fail "async time_to_target_s should be null"
eq "async dropped_fraction" "$(g async .dropped_fraction)" 0
eq "async delay.max" "$(g async .delay.max)" 30
eq "async mean_iteration_s" "$(g async .mean_iteration_s)" 0.6
eq "rr-sync time_to_target_s" "$(g rr-sync .time_to_target_s)" 25
eq "rr-sync applied" "$(g rr-sync .applied)" 6
eq "rr-sync mean_iteration_s" "$(g rr-sync .mean_iteration_s)" 0.3
[ "$(g rr-sync .server_rx_bytes)" = null ] || fail "rr-sync has no server but server_rx_bytes = $(g rr-sync .server_rx_bytes)"
ok "results.json matches the hand-computed values for mlfabric-a, async, rr-sync"
grep -q "^mlfabric-a  *yes  *6\.0 " "$WORK/summary" || fail "summary table row of mlfabric-a: $(grep mlfabric-a "$WORK/summary")"
for p in accuracy delays timeline; do
	[ "$(head -c 4 "$R/$p.png" 2>/dev/null | od -An -c | tr -d ' ')" = '211PNG' ] || fail "$p.png missing or not a PNG"
done
# the timeline has one segment on the sender's uplink and one on the receiver's downlink
[ "$(grep -vc '^#' "$R/plot/timeline.dat")" = 4 ] || fail "timeline data: expected 4 link segments"
grep -q '^1\.0 [0-9] 0\.5 update' "$R/plot/timeline.dat" || fail "timeline: transfer 1 not at 1 s for 0.5 s"
ok "summary table and accuracy/delays/timeline PNGs"

# ---- replication results from synthetic records: a fail-over ----
F="$WORK/frun"
S="$F/mlfabric-a"
mkdir -p "$S/records/w0" "$S/records/replica"
jq '. + {faults: [{at_s: 10, kind: "kill-server"}], target_accuracy: 0.78}' "$ROOT/conf/exp-repl.json" >"$F/experiment.json"
echo '{"system":"mlfabric-a","n_workers":1,"t0":100,"t_end":130,"server":"ps","stop_reason":"target","replication":{"mode":"mlfabric","div_max":0.5,"replica":"rp"},"eth0_rx_bytes":{"ps":1000,"rp":400,"w0":7}}' >"$S/run.json"
echo '{"t":110,"t_s":10,"fault":1,"event":"start","kind":"kill-server","host":"ps","ok":true}' >"$S/faults.jsonl"
echo '{"t_gone":110.5,"t_promoted":110.8,"t_first_commit":111.25,"old_server":"ps","new_server":"rp","version":50,"lost_committed":2,"lost_planned":1}' >"$S/records/failover.jsonl"
printf '%s\n' '{"t":105,"version":10,"accuracy":0.5}' '{"t":109,"version":40,"accuracy":0.6}' >"$S/records/accuracy.jsonl"
printf '%s\n' '{"t":112,"version":55,"accuracy":0.7}' '{"t":115,"version":70,"accuracy":0.8}' >"$S/records/replica/accuracy.jsonl"
printf '%s\n' '{"t":104,"id":1,"delay":1}' '{"t":108,"id":2,"delay":3}' >"$S/records/applied.jsonl"
printf '%s\n' '{"t":104.1,"id":1,"delay":0}' '{"t":111.2,"id":4,"delay":5}' >"$S/records/replica/applied.jsonl"
echo '{"applied":90,"version":70,"rx_bytes":5}' >"$S/records/replica/server.json"
printf '%s\n' '{"id":1,"fate":"direct"}' '{"id":2,"fate":"direct"}' '{"id":3,"fate":"dropped"}' '{"id":2,"fate":"lost"}' '{"id":4,"fate":"direct"}' >"$S/records/updates.jsonl"
"$MC" results "$F" >/dev/null
q() { jq -r ".systems[\"mlfabric-a\"].$1" "$F/results.json"; }
eq time_to_target_s "$(q time_to_target_s)" 15
eq final_accuracy "$(q final_accuracy)" 0.8
eq applied "$(q applied)" 90
eq recovery_s "$(q recovery_s)" 1.25
eq lost "$(q lost)" 1
eq dropped_only "$(q dropped_only)" 1
eq dropped_fraction "$(q dropped_fraction)" 0.5
eq server_host_rx_bytes "$(q server_host_rx_bytes)" 1000
eq replica_host_rx_bytes "$(q replica_host_rx_bytes)" 400
eq "delay max (server, then the promoted replica from t_promoted)" "$(q delay.max)" 5
eq "delay mean" "$(q delay.mean)" 3
[ "$(q failover.new_server)" = rp ] || fail "failover.new_server = $(q failover.new_server), expected rp"
ok "fail-over results: accuracy of the server then the promoted replica, recovery 1.25 s, lost/dropped by last fate, server/replica host bytes"

# ---- bad experiments: one line, nothing started ----
before=$(ip netns list 2>/dev/null | grep -c '^clu' || true)
check_bad() { # NAME JQ-EDIT EXPECTED-WORD [--systems LIST]
	local name=$1 edit=$2 word=$3; shift 3
	jq "$edit" "$ROOT/${BASE:-conf/exp-c1-n1.json}" >"$WORK/bad.json"
	if "$MC" run "$WORK/bad.json" --out "$WORK/out-$name" "$@" 2>"$WORK/err" >/dev/null; then fail "$name: run accepted"; fi
	[ "$(wc -l <"$WORK/err")" = 1 ] || fail "$name: expected one error line, got: $(cat "$WORK/err")"
	grep -q -- "$word" "$WORK/err" || fail "$name: error does not name $word: $(cat "$WORK/err")"
	[ ! -e "$WORK/out-$name" ] || fail "$name: the run folder was created"
}
check_bad system '.' 'unknown system "bogus"' --systems mlfabric-a,bogus
check_bad compute '.compute = "C9"' 'C9'
check_bad network '.network = "N7"' 'N7'
check_bad host '.aggregators = ["w0", "w9"]' 'w9'
check_bad cluster '.cluster = "conf/no-such-cluster.json"' 'no-such-cluster'
check_bad field 'del(.seed)' '"seed"'
MLF_BUILD="$WORK/empty" check_bad program '.' 'missing program'
BASE=conf/fault-kill-server.json
check_bad repl-mode '.replication.mode = "raft"' '"raft"'
check_bad repl-div-max '.replication.div_max = -1' 'div_max'
check_bad repl-replica '.replication.replica = "w1"' '"w1" is a worker host'
check_bad repl-key '.replication.every = 3' '"every"'
check_bad repl-ckpt '.replication = {mode: "checkpoint"}' 'checkpoint_every'
check_bad repl-async '.systems = ["async"]' 'system async'
check_bad fault-kind '.faults = [{at_s: 1, kind: "meteor"}]' '"meteor"'
check_bad fault-host '.faults = [{at_s: 1, kind: "kill-worker", host: "w9"}]' '"w9"'
check_bad fault-agg '.faults = [{at_s: 1, kind: "kill-aggregator", host: "w3"}]' 'not an aggregator'
check_bad fault-dur '.faults = [{at_s: 1, kind: "cut-link", host: "w3"}]' 'duration_s'
check_bad fault-loss '.faults = [{at_s: 1, kind: "loss-burst", host: "w3", duration_s: 1, loss: 1.5}]' 'loss'
unset BASE
after=$(ip netns list 2>/dev/null | grep -c '^clu' || true)
[ "$before" = "$after" ] || fail "a refused experiment created namespaces"
ok "unknown system, unknown settings, unknown host, missing cluster/field/program, bad replication or faults: one line, nothing started"
