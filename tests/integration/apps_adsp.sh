#!/usr/bin/env bash
# apps_adsp.sh - ADSP (adsp-aaai2020; docs/scheduler.md "ADSP's commit rates"): 4 workers at
# fixed speeds 1:1:1:4 (w3 4x slower,
# mlf-worker --speed 4), an MLfabric-A server, and mlf-scheduler --adsp sending commit rates.
# Case "fixed" (--adsp 0.5 --adsp-rate 1, 12 s): ADSP's promise, that every worker commits about
# as often whatever its speed (§3): the slow worker's commits are at least 0.75x a fast one's;
# the fast workers never wait, so each carries at least 2.5x the slow one's local iterations per
# commit (median); the scheduler sent the rates (adsp.jsonl: r 1 throughout, at least 16
# checkpoints with a delta for each of the 4 workers); accuracy rises above 0.4 (chance 0.1).
# Case "search" (--adsp 0.5 --adsp-eval 2, 14 s): the online search runs on the server's loss
# reports (every 0.5 s): adsp.jsonl shows the rate going above 1 (the trial windows of rate 2),
# at least one comparison of two rates finished (five interleaved 2 s windows; decided, or run
# again for want of evidence), and the server's loss reports reaching the scheduler's windows:
# a comparison whose windows each held at least one. How many a window holds depends on how fast
# the server evaluates (4 per 2 s window on an idle machine; under `make test-under-load` the run
# measured fewer than 3 in every window), and a window with too few for a speed and its error
# (3) is the search's own "run again for want of evidence", which `decisions` counts.
. "$(dirname "$0")/apps_lib.sh"
[ -x "$ROOT/build/mlf-scheduler" ] || { echo "SKIP $TEST_NAME: build/mlf-scheduler not built"; exit 0; }
APPS_GBPS=10
apps_begin appads 13 'ps:2:"server","scheduler"' 'w0:10:"worker"' 'w1:11:"worker"' 'w2:12:"worker"' 'w3:13:"worker"'

# run_case NAME SECONDS SCHEDULER-ARGS...: scheduler, MLfabric-A server, 4 ADSP workers
run_case() {
	local name=$1 secs=$2; shift 2
	local d="$WORK/$name"
	mkdir -p "$d/sched"
	apps_run sched ps "$ROOT/build/mlf-scheduler" --cluster "$CLUSTER" --records "$d/sched" "$@"
	for h in ps w0 w1 w2 w3; do dp_start $h; done
	apps_run ps ps "$PS" --cluster "$CLUSTER" --host ps --mode mlfabric-a --workers 4 --momentum 0 \
		--tau-max 16 --eval-every 0.5 --eval-images 500 --records "$d/ps"
	apps_ps_ready ps
	for i in 0 1 2 3; do
		apps_run w$i w$i "$WK" --cluster "$CLUSTER" --host w$i --server ps --system adsp --shard $i/4 \
			--lr 0.05 --duration "$secs" --compute-s 0.05 --seed $((i + 1)) --records "$d/w$i" \
			$([ $i = 3 ] && echo --speed 4)
	done
	for i in 0 1 2 3; do v=PID_w$i; wait "${!v}" || fail "$name: worker w$i failed: $(tail -2 "$WORK/w$i.log")"; done
	apps_stop_case "$name" ps w0 w1 w2 w3
}

run_case fixed 12 --adsp 0.5 --adsp-rate 1
d="$WORK/fixed"
c_fast=$(wc -l <"$d/w0/pushes.jsonl")
c_slow=$(wc -l <"$d/w3/pushes.jsonl")
[ "$c_fast" -ge 8 ] || fail "fixed: w0 committed only $c_fast times in 12 s at one commit per 0.5 s"
awk -v s="$c_slow" -v f="$c_fast" 'BEGIN { exit !(s >= 0.75 * f) }' ||
	fail "fixed: the slow worker committed $c_slow times against $c_fast for a fast one (ADSP keeps them close)"
fast=$(jq -s 'map(.local_steps) | sort | .[length / 2 | floor]' "$d/w0/pushes.jsonl")
slow=$(jq -s 'map(.local_steps) | sort | .[length / 2 | floor]' "$d/w3/pushes.jsonl")
# the fast workers never wait: their local iterations per commit follow the speed ratio the run
# measured (worker.json mean_iteration_s; --speed 4 makes 4x on a quiet machine, less on a loaded
# one, where every worker's real compute stretches: under make test-under-load a fast worker
# carried 2 per commit against 1), within 0.6x for the rounding of a few iterations per commit
fmean=$(jq -s 'map(.local_steps) | add / length' "$d/w0/pushes.jsonl")
smean=$(jq -s 'map(.local_steps) | add / length' "$d/w3/pushes.jsonl")
ratio=$(jq -n --slurpfile f "$d/w0/worker.json" --slurpfile s "$d/w3/worker.json" \
	'$s[0].mean_iteration_s / $f[0].mean_iteration_s')
awk -v f="$fmean" -v s="$smean" -v r="$ratio" 'BEGIN { exit !(r > 1 && f >= 0.6 * r * s) }' ||
	fail "fixed: a fast worker carried $fmean local iterations per commit (mean) against the slow one's $smean, not 0.6x of the measured speed ratio $ratio"
bad=$(jq -s '[.[] | select(.r != 1)] | length' "$d/sched/adsp.jsonl")
full=$(jq -s '[.[] | select((.delta | length) == 4)] | length' "$d/sched/adsp.jsonl")
[ "$bad" = 0 ] || fail "fixed: $bad lines of adsp.jsonl with a rate other than 1"
[ "$full" -ge 16 ] || fail "fixed: only $full checkpoints sent a rate to all 4 workers in 12 s at one per 0.5 s"
acc=$(jq -s 'map(.accuracy) | max' "$d/ps/accuracy.jsonl")
awk -v a="$acc" 'BEGIN { exit !(a > 0.4) }' || fail "fixed: accuracy only reached $acc (chance is 0.1)"

run_case search 14 --adsp 0.5 --adsp-eval 2
s="$WORK/search"
rmax=$(jq -s 'map(.r) | max' "$s/sched/adsp.jsonl")
decisions=$(jq -s 'map(.decisions + .retries) | max' "$s/sched/adsp.jsonl")
fed=$(jq -s '[.[] | select((.window_losses | length) >= 2 and (.window_losses | min) >= 1)] | length' "$s/sched/adsp.jsonl")
most=$(jq -s '[.[] | .window_losses | max // 0] | max' "$s/sched/adsp.jsonl")
[ "$rmax" -ge 2 ] || fail "search: the commit rate never left 1 (adsp.jsonl)"
[ "$decisions" -ge 1 ] || fail "search: no comparison of two rates finished (decided or without evidence) in 14 s"
[ "$fed" -ge 1 ] || fail "search: no comparison whose windows each held a loss report (at most $most in a window: are the server's losses reaching the scheduler?)"
final=$(jq -s 'last | "\(.r) (\(.phase))"' "$s/sched/adsp.jsonl")
ok "ADSP, speeds 1:1:1:4, one commit per 0.5 s: commits w0 $c_fast, w3 $c_slow; local iterations per commit (median) fast $fast, slow $slow (measured speed ratio $ratio); accuracy $acc; the search reached rate $rmax, ended at $final"
