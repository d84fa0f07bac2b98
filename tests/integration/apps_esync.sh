#!/usr/bin/env bash
# apps_esync.sh - ESync (esync.txt; docs/scheduler.md "ESync's State Server"): 4 workers at
# fixed speeds 1:1:1:4 (w3 4x slower,
# mlf-worker --speed 4), MLfabric-S server and scheduler (the State Server), 40 rounds
# with --system esync --esync-workers 4 (rounds, not a duration: a synchronous round needs every worker). With ESync the fast workers train locally while the slow one finishes: per
# round each fast worker does at least twice the slow one's local iterations (the rule gives
# 3 to 1 with iterations of 0.05 s against 0.2 s: 3 and 1 measured), the slow one about one; every round's four deltas are applied together (the
# server's version grows by 4 per round); in the same number of rounds the cluster computes at
# least 1.25x the mini-batches of plain synchronous SGD (one per worker per round: 4 x 40; per
# second is printed only), and the
# accuracy rises above 0.5. Then the non-blocking mode (esync.txt §4.2, --esync-nonblocking):
# the same rounds and 2:1 split, queries that never block (less time blocked in them than the
# blocking mode's), rounds ended by READYs that abort the iteration in progress.
# Fixed-rate local SGD (--system local-sgd --local-workers 4 --local-steps 4, 20 rounds): every worker does
# exactly 4 local iterations every round, the slow one too, and asks the State Server nothing
# (less than a fifth of blocking ESync's time spent deciding when a round ends);
# every round's four deltas are applied together, and the accuracy rises above 0.5.
. "$(dirname "$0")/apps_lib.sh"
[ -x "$ROOT/build/mlf-scheduler" ] || { echo "SKIP $TEST_NAME: build/mlf-scheduler not built"; exit 0; }
APPS_GBPS=10
apps_begin appesy 3 'ps:2:"server","scheduler"' 'w0:10:"worker"' 'w1:11:"worker"' 'w2:12:"worker"' 'w3:13:"worker"'
ROUNDS=40
# A small model (102 K floats): with the default 784,1024,10 (3.26 MB) each round's model copies
# took ~90 ms on the emulated 10 Gbit/s links (the dataplanes carry ~1 Gbit/s on this machine; the
# planner's distribution tree sent the model to the slow worker, which forwarded it to the three
# fast ones), so the fast workers started each round ~90 ms after the slow one and did 1-2 local
# iterations instead of the rule's 3 (2 of 3 runs failed the 2:1 split on 2026-11-26). The case
# checks ESync's READY rule, not the copy of a large model.
MODEL=784,128,10

# run_case NAME [WORKER-ARGS]: scheduler, MLfabric-S server and 4 workers (w3 4x slower) for
# ROUNDS rounds; WALL: the seconds the workers took
run_case() {
	local name=$1; shift
	local d="$WORK/$name"
	mkdir -p "$d/sched"
	apps_run sched ps "$ROOT/build/mlf-scheduler" --cluster "$CLUSTER" --records "$d/sched"
	for h in ps w0 w1 w2 w3; do dp_start $h; done
	apps_run ps ps "$PS" --cluster "$CLUSTER" --host ps --mode mlfabric-s --workers 4 --model $MODEL \
		--eval-every 2 --eval-images 500 --records "$d/ps"
	apps_ps_ready ps
	for i in 0 1 2 3; do
		apps_run w$i w$i "$WK" --cluster "$CLUSTER" --host w$i --server ps --shard $i/4 \
			--model $MODEL --lr 0.02 --iterations $ROUNDS --compute-s 0.05 --seed $((i + 1)) --records "$d/w$i" \
			$([ $i = 3 ] && echo --speed 4) "$@"
	done
	local t0 t1
	t0=$(date +%s.%N)
	for i in 0 1 2 3; do v=PID_w$i; wait "${!v}" || fail "$name: worker w$i failed: $(tail -2 "$WORK/w$i.log")"; done
	t1=$(date +%s.%N)
	WALL=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')
	apps_stop_case "$name" ps w0 w1 w2 w3
}

# samples DIR: mini-batches computed by all workers (local iterations with ESync, pushes without)
samples() {
	for i in 0 1 2 3; do jq '.local_steps as $l | if $l > 0 then $l else .iterations end' "$1/w$i/worker.json"; done |
		awk '{ s += $1 } END { print s + 0 }'
}

run_case esync --system esync --esync-workers 4
d="$WORK/esync"
rounds=$(wc -l <"$d/w3/pushes.jsonl")
[ "$rounds" = $ROUNDS ] || fail "esync: the slow worker logged $rounds rounds, not $ROUNDS"
fast=$(jq -s 'map(.local_steps) | sort | .[length / 2 | floor]' "$d/w0/pushes.jsonl")
slow=$(jq -s 'map(.local_steps) | sort | .[length / 2 | floor]' "$d/w3/pushes.jsonl")
[ "$slow" -ge 1 ] && [ "$slow" -le 2 ] || fail "esync: the slow worker did $slow local iterations per round (median), expected 1-2"
[ "$fast" -ge $((2 * slow)) ] || fail "esync: a fast worker did $fast local iterations per round (median), not twice the slow one's $slow"
odd=$(jq -s '[.[] | select(.version % 4 != 0)] | length' "$d/ps/accuracy.jsonl")
[ "$odd" = 0 ] || fail "esync: $odd evaluations saw a server version that is not a multiple of 4 (a round applied partly)"
acc=$(jq -s 'map(.accuracy) | max' "$d/ps/accuracy.jsonl")
awk -v a="$acc" 'BEGIN { exit !(a > 0.5) }' || fail "esync: accuracy only reached $acc"
n_esync=$(samples "$d") wall_esync=$WALL
[ -n "${MLF_KEEP_ESYNC:-}" ] && cp -r "$d" "$MLF_KEEP_ESYNC"
# total RECORD-FIELD over the rounds of all workers in DIR
rounds_sum() { cat "$1"/w?/pushes.jsonl | jq -s "map(.$2) | add"; }
qwait_b=$(rounds_sum "$d" query_wait_s)

# the non-blocking mode (esync.txt §4.2): queries never block; a READY aborts the iteration in
# progress, so rounds end by aborts, and the slow/fast split of local iterations is kept
run_case esync-nb --system esync --esync-workers 4 --esync-nonblocking
d="$WORK/esync-nb"
rounds=$(wc -l <"$d/w3/pushes.jsonl")
[ "$rounds" = $ROUNDS ] || fail "esync-nb: the slow worker logged $rounds rounds, not $ROUNDS"
odd=$(jq -s '[.[] | select(.version % 4 != 0)] | length' "$d/ps/accuracy.jsonl")
[ "$odd" = 0 ] || fail "esync-nb: $odd evaluations saw a server version that is not a multiple of 4"
fast_nb=$(jq -s 'map(.local_steps) | sort | .[length / 2 | floor]' "$d/w0/pushes.jsonl")
slow_nb=$(jq -s 'map(.local_steps) | sort | .[length / 2 | floor]' "$d/w3/pushes.jsonl")
[ "$slow_nb" -ge 1 ] && [ "$fast_nb" -ge $((2 * slow_nb)) ] ||
	fail "esync-nb: local iterations per round (median) fast $fast_nb, slow $slow_nb: not 2:1 with the slow one >= 1"
aborted=$(rounds_sum "$d" aborted)
[ "$aborted" -ge $ROUNDS ] || fail "esync-nb: only $aborted local iterations were aborted by a READY in $((4 * ROUNDS)) worker-rounds"
qwait_nb=$(rounds_sum "$d" query_wait_s)
aborted_s=$(rounds_sum "$d" aborted_s)
awk -v n="$qwait_nb" -v b="$qwait_b" 'BEGIN { exit !(n < b) }' ||
	fail "esync-nb: $qwait_nb s blocked in queries, not less than blocking mode's $qwait_b s"
acc_nb=$(jq -s 'map(.accuracy) | max' "$d/ps/accuracy.jsonl")
awk -v a="$acc_nb" 'BEGIN { exit !(a > 0.5) }' || fail "esync-nb: accuracy only reached $acc_nb"

# a State Server that goes silent: kill -9 the scheduler mid-run; every non-blocking worker must
# stop within its --timeout (3 s) plus slack, naming the scheduler (the State Server's timeout
# in a local iteration, the get's in the round's allreduce), instead of training locally forever
d="$WORK/esync-dead"
mkdir -p "$d/sched"
apps_run sched ps "$ROOT/build/mlf-scheduler" --cluster "$CLUSTER" --records "$d/sched"
for h in ps w0 w1 w2 w3; do dp_start $h; done
apps_run ps ps "$PS" --cluster "$CLUSTER" --host ps --mode mlfabric-s --workers 4 --model $MODEL --records "$d/ps"
apps_ps_ready ps
for i in 0 1 2 3; do
	apps_run w$i w$i "$WK" --cluster "$CLUSTER" --host w$i --server ps --system esync --shard $i/4 \
		--model $MODEL --lr 0.02 --iterations 100000 --compute-s 0.05 --seed $((i + 1)) --records "$d/w$i" \
		--esync-workers 4 --esync-nonblocking --timeout 3 $([ $i = 3 ] && echo --speed 4)
done
# killed mid-run: after w0's second round (a round is over, the next under way)
wait_event "esync-dead: w0's second round (pushes.jsonl), before the scheduler was to be killed" 60 \
	eval '[ "$(wc -l <"$d/w0/pushes.jsonl" 2>/dev/null || echo 0)" -ge 2 ]'
kill -9 "$PID_sched"
t_kill=$(date +%s.%N)
for i in 0 1 2 3; do
	v=PID_w$i
	timeout 20 tail --pid="${!v}" -f /dev/null || fail "esync-dead: worker w$i still runs 20 s after the scheduler died"
	wait "${!v}" && fail "esync-dead: worker w$i exited 0 without its State Server"
	# in a local iteration: the State Server's timeout; in the round's allreduce: the get's
	grep -q -e "no answer from the scheduler within 3.0 s" -e "scheduler connection lost and not back within 3.0 s" "$WORK/w$i.log" ||
		fail "esync-dead: worker w$i's log does not name what went silent: $(tail -2 "$WORK/w$i.log")"
done
t_dead=$(awk -v a="$t_kill" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
awk -v t="$t_dead" 'BEGIN { exit !(t < 10) }' || fail "esync-dead: the workers took $t_dead s to stop (--timeout 3)"
kill -TERM "$PID_ps" 2>/dev/null; wait "$PID_ps" 2>/dev/null || true
for h in ps w0 w1 w2 w3; do v=DP_PID_$h; kill -TERM "${!v}" 2>/dev/null || true; done
for h in ps w0 w1 w2 w3; do v=DP_PID_$h; timeout 10 tail --pid="${!v}" -f /dev/null || true; done
ok "ESync non-blocking without its State Server: all 4 workers stopped ${t_dead} s after kill -9 of the scheduler (--timeout 3), naming it"

ok "ESync non-blocking: $ROUNDS rounds in $WALL s, local iterations per round (median) fast $fast_nb, slow $slow_nb; blocked in queries $qwait_nb s in all (blocking mode: $qwait_b s); $aborted iterations aborted by a READY ($aborted_s s); accuracy $acc_nb"
# fixed-rate local SGD (adsp-aaai2020's Fixed ADACOMM): T local iterations per round, no queries
run_case local --system local-sgd --local-workers 4 --local-steps 4 --iterations 20
d="$WORK/local"
for i in 0 1 2 3; do
	n=$(wc -l <"$d/w$i/pushes.jsonl")
	[ "$n" = 20 ] || fail "local-sgd: w$i logged $n rounds, not 20"
	other=$(jq -s '[.[] | select(.local_steps != 4)] | length' "$d/w$i/pushes.jsonl")
	[ "$other" = 0 ] || fail "local-sgd: w$i had $other rounds without exactly 4 local iterations"
done
q=$(rounds_sum "$d" query_wait_s)
# the loop's clock reads only (microseconds): fixed rounds ask the State Server nothing, where the
# blocking ESync case above waited on its answers
awk -v q="$q" -v b="$qwait_b" 'BEGIN { exit !(q < b / 5) }' ||
	fail "local-sgd: the workers spent $q s deciding when to end their rounds (blocking ESync: $qwait_b s); fixed rounds ask nothing"
odd=$(jq -s '[.[] | select(.version % 4 != 0)] | length' "$d/ps/accuracy.jsonl")
[ "$odd" = 0 ] || fail "local-sgd: $odd evaluations saw a server version that is not a multiple of 4"
acc_l=$(jq -s 'map(.accuracy) | max' "$d/ps/accuracy.jsonl")
awk -v a="$acc_l" 'BEGIN { exit !(a > 0.5) }' || fail "local-sgd: accuracy only reached $acc_l"
ok "fixed-rate local SGD, speeds 1:1:1:4: 20 rounds of 4 local iterations each for every worker in $WALL s; accuracy $acc_l"
# Synchronous SGD (--system mlfabric-s) computes one mini-batch per worker per round, 4 x ROUNDS
# in ROUNDS rounds: its workers stop after --iterations ROUNDS, and a run_case of it measured
# exactly that (160; its worker.json iterations) in every run, so the count is taken as such
# instead of running a fifth case (~12 s) whose only other output was a printed rate.
n_ssgd=$((4 * ROUNDS))
rate_e=$(awk -v n="$n_esync" -v w="$wall_esync" 'BEGIN { printf "%.1f", n / w }')
# The rule's effect, per round (the same number of rounds each): ESync computes at least 1.25x the
# mini-batches of synchronous SGD (1x without local steps; 394 against 160 in 40 rounds
# measured with the small model on 2026-11-26, 2.5x; 1.6x with the large one). Per second is
# printed, not asserted: on two shared cores the real compute of four workers stretches
# ESync's rounds (22.9 against 9.4 per s measured; 11.7 against 9.2 in a CI run with the large
# model).
awk -v e="$n_esync" -v s="$n_ssgd" 'BEGIN { exit !(e >= 1.25 * s) }' ||
	fail "esync: $n_esync mini-batches in $ROUNDS rounds against $n_ssgd for synchronous SGD, not 1.25x"
ok "ESync, speeds 1:1:1:4: $ROUNDS rounds in $wall_esync s, local iterations per round (median) fast $fast, slow $slow, $n_esync mini-batches ($rate_e/s) against $n_ssgd for synchronous SGD; accuracy $acc"
