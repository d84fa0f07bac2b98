#!/usr/bin/env bash
# apps_mlfabric.sh - MLfabric-A end to end over 1 Gbit/s links: mlf-scheduler, mlf-aggregator, mlf-ps
# and 3 mlf-workers train the default model until the server's accuracy passes 0.7 (at most
# 20 s); the links cannot carry every update, so the
# scheduler drops some; test accuracy rises above 0.5, every applied update respects the delay bound
# 2, each update is applied at most once, and every pushed update is applied or dropped/lost.
# w2 runs with --overlap (its gradient is computed while the next model's get is in
# flight) and an emulated compute of 0.05 s: most of its iterations take less than their compute
# plus their get, which a worker that gets and then computes cannot do.
. "$(dirname "$0")/apps_lib.sh"
[ -x "$ROOT/build/mlf-scheduler" ] && [ -x "$ROOT/build/mlf-aggregator" ] ||
	{ echo "SKIP $TEST_NAME: build/mlf-scheduler or build/mlf-aggregator not built"; exit 0; }
APPS_GBPS=1
apps_begin appmf 4 'ps:2:"server","scheduler"' 'w0:10:"worker"' 'w1:11:"worker"' 'w2:12:"worker"' \
	'ag:20:"aggregator"'
mkdir -p "$WORK/sched"
apps_run sched ps "$ROOT/build/mlf-scheduler" --cluster "$CLUSTER" --records "$WORK/sched"
for h in ps w0 w1 w2 ag; do dp_start $h; done
apps_run agg ag "$ROOT/build/mlf-aggregator" --cluster "$CLUSTER" --host ag

TAU=2
apps_run ps ps "$PS" --cluster "$CLUSTER" --host ps --mode mlfabric-a --workers 3 --tau-max $TAU \
	--eval-every 2 --eval-images 500 --records "$WORK/ps"
apps_ps_ready ps
for i in 0 1 2; do
	extra=()
	[ $i = 2 ] && extra=(--overlap --compute-s 0.05)
	apps_run w$i w$i "$WK" --cluster "$CLUSTER" --host w$i --server ps --system mlfabric-a --shard $i/3 \
		--lr 0.01 --duration 20 --straggle C1 --seed $((i + 1)) --records "$WORK/w$i" "${extra[@]}"
done
# the workers stop once an evaluation of the server passed 0.7 (0.79 after the 20 s they used to
# run) and w2 made the 23 iterations the --overlap check below needs (20 from its third on), at
# most after their --duration: the checks ask for a last accuracy above 0.5 and count what was
# pushed, dropped and overlapped, whatever the duration; a worker stopped by SIGTERM drains its
# pushes and writes its records as at the end of --duration
t0=$(date +%s.%N)
wait_event "an evaluation of the server above 0.7 (ps/accuracy.jsonl) and 23 pushes of w2, or the workers' end" 60 \
	eval '! kill -0 $PID_w0 2>/dev/null || ! kill -0 $PID_w1 2>/dev/null || ! kill -0 $PID_w2 2>/dev/null ||
		{ apps_pushed 23 w2 && jq -e -s "map(.accuracy) | max > 0.7" "$WORK/ps/accuracy.jsonl" >/dev/null 2>&1; }'
kill -TERM "$PID_w0" "$PID_w1" "$PID_w2" 2>/dev/null || true
for i in 0 1 2; do v=PID_w$i; wait "${!v}" || fail "worker w$i failed: $(tail -2 "$WORK/w$i.log")"; done
ran=$(awk -v s="$t0" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
wait_event "every pushed update applied at ps or dropped/lost in the scheduler's records" 60 apps_settled
apps_stop_ps

rose=$(apps_accuracy_rose 0.5)
pushed=$(cat "$WORK"/w*/pushes.jsonl | wc -l)
applied=$(jq .applied "$WORK/ps/server.json")
ok "MLfabric-A, 3 workers on 1 Gbit/s links: $pushed pushes in $ran s, $applied applied, server accuracy $rose"

apps_applied_once
maxd=$(jq -s 'map(.delay) | max' "$WORK/ps/applied.jsonl")
[ "$maxd" -le $TAU ] || fail "an update was applied with delay $maxd > delay bound $TAU"
[ "$(jq .version "$WORK/ps/server.json")" = "$applied" ] ||
	fail "server version $(jq .version "$WORK/ps/server.json") != $applied applied updates"
# every pushed id was applied or the scheduler recorded why not (dropped / lost)
cat "$WORK"/w*/pushes.jsonl | jq .id | sort >"$WORK/pushed.ids"
jq .id "$WORK/ps/applied.jsonl" | sort >"$WORK/applied.ids"
jq -r 'select(.fate == "dropped" or .fate == "lost") | .id' "$WORK/sched/updates.jsonl" | sort >"$WORK/notapplied.ids"
unexplained=$(comm -23 "$WORK/pushed.ids" "$WORK/applied.ids" | comm -23 - "$WORK/notapplied.ids" | wc -l)
[ "$unexplained" = 0 ] || fail "$unexplained pushed updates neither applied nor dropped/lost in the scheduler's records"
dropped=$(jq -s 'map(.dropped) | add' "$WORK"/w*/worker.json)
[ "$dropped" -gt 0 ] || fail "no update dropped: the 1 Gbit/s links did not constrain the run"
aggs=$(jq -s 'map(select(.parts > 1)) | length' "$WORK/ps/applied.jsonl")
ok "delays <= $TAU (max $maxd), each update applied at most once, $dropped dropped at the workers, $aggs parts via aggregates"
# --overlap: iteration k (from the third on) ends at most max(compute, get) + the push after the
# previous one; gotten then computed, it would take their sum
read -r n_ov n_short med_get med_it <<<"$(jq -s '.[2:] as $a | [range(1; $a | length) |
	{ it: ($a[.].t - $a[. - 1].t), sum: ($a[.].compute_s * $a[.].factor + $a[.].get_s), get: $a[.].get_s }] |
	[length, (map(select(.it < .sum - 0.01)) | length), (map(.get) | sort | .[length / 2 | floor]),
	 (map(.it) | sort | .[length / 2 | floor])] | @tsv' -r "$WORK/w2/pushes.jsonl")"
[ "$n_ov" -ge 20 ] || fail "--overlap: w2 made only $n_ov iterations"
[ $((2 * n_short)) -ge "$n_ov" ] ||
	fail "--overlap: only $n_short of w2's $n_ov iterations took less than compute + get (median get $med_get s, iteration $med_it s)"
ok "--overlap: $n_short of w2's $n_ov iterations took less than their compute + get (median get $med_get s, iteration $med_it s)"
