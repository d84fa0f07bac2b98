#!/usr/bin/env bash
# apps_rrsync.sh - the RR-Sync baseline over 3 emulated hosts with tools/mlf-mpirun: rank 0's test
# accuracy rises above chance, the allreduce traffic crosses the hosts' eth0, a slow uplink slows
# the allreduce, and mlf-mpirun rejects unknown hosts and missing namespaces by name.
. "$(dirname "$0")/lib.sh"
MPIRUN="$ROOT/tools/mlf-mpirun"
RR="$ROOT/build/mlf-rrsync"
[ -x "$RR" ] || { echo "SKIP $TEST_NAME: build/mlf-rrsync not built"; exit 0; }
CFG=$(mktemp --tmpdir=/dev/shm apps-rr.XXXXXX.json)
cat >"$CFG" <<'JSON'
{"name": "apprr", "hosts": [
 {"name": "w0", "ip": "10.83.2.10", "roles": ["worker"]},
 {"name": "w1", "ip": "10.83.2.11", "roles": ["worker"]},
 {"name": "w2", "ip": "10.83.2.12", "roles": ["worker"]}]}
JSON
CLUSTER=$CFG
tb_begin
cp "$CFG" "$WORK/cluster.json" && rm -f "$CFG" && CLUSTER="$WORK/cluster.json"

# 40 iterations of the default model (784,1024,10: 3.26 MB of gradient per rank per iteration)
rx0=$(rx_bytes w1)
timeout 120 "$MPIRUN" "$CLUSTER" w0,w1,w2 -- "$RR" --iterations 40 --eval-every 0.5 --eval-images 500 \
	--records "$WORK/rr" --straggle C1 >"$WORK/rr.log" 2>&1 || { tail -20 "$WORK/rr.log"; fail "mlf-rrsync over 3 hosts failed"; }
rx1=$(rx_bytes w1)
grep -q "3 ranks" "$WORK/rr.log" || fail "rank 0 did not report 3 ranks: $(head -3 "$WORK/rr.log")"
n=$(wc -l <"$WORK/rr/iterations.jsonl")
[ "$n" = 40 ] || fail "iterations.jsonl has $n lines, expected 40"
[ "$(jq -s 'map(.iteration) == [range(1; 41)]' "$WORK/rr/iterations.jsonl")" = true ] || fail "iterations.jsonl does not number iterations 1..40"
first=$(head -1 "$WORK/rr/accuracy.jsonl" | jq .accuracy)
last=$(tail -1 "$WORK/rr/accuracy.jsonl" | jq .accuracy)
awk -v f="$first" -v l="$last" 'BEGIN { exit !(l > 0.5 && l > f) }' ||
	fail "rank 0's accuracy went from $first to $last (expected a rise above 0.5)"
ok "3 ranks, 40 iterations: rank 0's accuracy $first -> $last"

# every iteration moves at least (n-1)/n of the 3.26 MB gradient into each rank, over eth0
mb=$(( (rx1 - rx0) / 1000000 ))
[ "$mb" -ge 80 ] || fail "w1's eth0 received $mb MB during 40 allreduces (expected >= 80 MB: MPI not on the emulated links?)"
ok "w1's eth0 received $mb MB during the run"

# --target-accuracy: rank 0's decision stops every rank after the same iteration
timeout 60 "$MPIRUN" "$CLUSTER" w0,w1,w2 -- "$RR" --target-accuracy 0.6 --time-limit 30 --eval-every 0.2 \
	--eval-images 300 --records "$WORK/tgt" >"$WORK/tgt.log" 2>&1 || { tail -20 "$WORK/tgt.log"; fail "mlf-rrsync with a target failed"; }
grep -q "target accuracy reached" "$WORK/tgt.log" || fail "run with --target-accuracy 0.6 did not stop at the target: $(tail -2 "$WORK/tgt.log")"
acc=$(tail -1 "$WORK/tgt/accuracy.jsonl" | jq .accuracy)
awk -v a="$acc" 'BEGIN { exit !(a >= 0.6) }' || fail "stopped at the target with final accuracy $acc < 0.6"
ok "--target-accuracy 0.6: all ranks stopped at accuracy $acc after $(wc -l <"$WORK/tgt/iterations.jsonl") iterations"

# a 0.5 Gbit/s uplink at w1 makes each allreduce take >= 2.17 MB * 8 / 0.5 Gbit/s = 35 ms
"$TB" shape "$CLUSTER" w1 up 0.5 >/dev/null 2>&1
timeout 60 "$MPIRUN" "$CLUSTER" w0,w1,w2 -- "$RR" --iterations 8 --eval-images 100 --records "$WORK/slow" \
	>"$WORK/slow.log" 2>&1 || { tail -20 "$WORK/slow.log"; fail "mlf-rrsync with a shaped uplink failed"; }
fast=$(jq -s 'map(.allreduce_s) | sort | .[length / 2 | floor]' "$WORK/rr/iterations.jsonl")
slow=$(jq -s 'map(.allreduce_s) | sort | .[length / 2 | floor]' "$WORK/slow/iterations.jsonl")
awk -v s="$slow" 'BEGIN { exit !(s >= 0.035) }' ||
	fail "median allreduce with w1's uplink at 0.5 Gbit/s took $slow s (expected >= 0.035 s; unshaped $fast s)"
ok "tc shaping applies to MPI: median allreduce $fast s unshaped, $slow s with a 0.5 Gbit/s uplink"

# bad input
if "$MPIRUN" "$CLUSTER" w0,zz -- true 2>"$WORK/err"; then fail "mlf-mpirun accepted unknown host zz"; fi
grep -q "unknown host 'zz'" "$WORK/err" || fail "unknown host error does not name it: $(cat "$WORK/err")"
sed 's/"apprr"/"appnone"/' "$CLUSTER" >"$WORK/other.json"
if "$MPIRUN" "$WORK/other.json" w0 -- true 2>"$WORK/err"; then fail "mlf-mpirun ran without the namespaces"; fi
grep -q "namespace appnone-w0" "$WORK/err" || fail "missing namespace error does not name it: $(cat "$WORK/err")"
ok "unknown host and missing namespace rejected by name"
