#!/usr/bin/env bash
# apps_get_latency.sh - MLfabric-A's model get on a lightly loaded testbed takes about a transfer
# plus the command latency, not a tick (docs/scheduler.md "Batches"), and returns a model that
# includes the worker's own update pushed before it (docs/scheduler.md "Fresh pulls").
# One mlf-ps, mlf-scheduler with its default options and --batch-ms 200, two mlf-workers with a
# 784,128,10 model (101,770 float32: 407 KB, 3.4 ms per copy on a 1 Gbit/s link) and an emulated
# compute of 0.05 s, for 8 s. A get after a push waits for the planning of the push and the pull
# (--replan-ms), the lead, the update's copy to the server and the model's copy back: the median
# get_s (pushes.jsonl, first iteration left out) must stay under a quarter of the --batch-ms
# tick: a get that waits for ticks waits half a tick on average (100 ms here), one planned on
# arrival about 2 x (replan + lead + 2 copy times) (measured: 21-24 ms). Every get after a
# push returns a version that includes that push (applied.jsonl: its commit's `at` + `parts`),
# unless the update was dropped.
# GETLAT_SCHED_ARGS adds scheduler options, the bound unchanged (e.g. "--replan-ms 100": a plan
# a tick after each arrival, which this test rejects: median gets of about half the tick).
. "$(dirname "$0")/apps_lib.sh"
[ -x "$ROOT/build/mlf-scheduler" ] || { echo "SKIP $TEST_NAME: build/mlf-scheduler not built"; exit 0; }
MODEL=784,128,10
GBPS=1
BATCH_MS=200
APPS_GBPS=$GBPS
apps_begin appgl 17 'ps:2:"server","scheduler"' 'w0:10:"worker"' 'w1:11:"worker"'
mkdir -p "$WORK/sched"
# shellcheck disable=SC2086 # GETLAT_SCHED_ARGS is a list of options
apps_run sched ps "$ROOT/build/mlf-scheduler" --cluster "$CLUSTER" --records "$WORK/sched" \
	--batch-ms $BATCH_MS ${GETLAT_SCHED_ARGS:-}
for h in ps w0 w1; do dp_start $h; done
apps_run ps ps "$PS" --cluster "$CLUSTER" --host ps --mode mlfabric-a --workers 2 --model $MODEL \
	--eval-every 4 --eval-images 200 --records "$WORK/ps"
apps_ps_ready ps
for i in 0 1; do
	apps_run w$i w$i "$WK" --cluster "$CLUSTER" --host w$i --server ps --system mlfabric-a --shard $i/2 \
		--model $MODEL --compute-s 0.05 --duration 8 --seed $((i + 1)) --records "$WORK/w$i"
done
for i in 0 1; do v=PID_w$i; wait "${!v}" || fail "worker w$i failed: $(tail -2 "$WORK/w$i.log")"; done
apps_stop_ps
kill -TERM "$PID_sched"
wait "$PID_sched" || fail "mlf-scheduler did not exit cleanly on SIGTERM: $(tail -2 "$WORK/sched.log")"

# the lead at exit (the measured command latency, docs/scheduler.md "The lead"); its cap when absent
lead_ms=$(sed -n 's/.*lead at exit \([0-9.]*\) ms (cap \([0-9.]*\) ms).*/\1/p' "$WORK/sched.log" | tail -1)
lead_ms=${lead_ms:-10}
# the default --replan-ms the test is about, also when GETLAT_SCHED_ARGS sets another
replan_ms=2
floats=$(awk -F, '{ n = 0; for (i = 2; i <= NF; i++) n += $(i - 1) * $i + $i; print n }' <<<"$MODEL")
# one copy of the model (an update is the same size) at the link rate the scheduler plans with
# (--headroom 0.95)
xfer_ms=$(awk -v f="$floats" -v g=$GBPS 'BEGIN { printf "%.2f", f * 4 * 8 / (g * 0.95e9) * 1e3 }')
model_ms=$(awk -v r="$replan_ms" -v l="$lead_ms" -v x="$xfer_ms" 'BEGIN { printf "%.2f", 2 * (r + l + 2 * x) }')
bound_ms=$((BATCH_MS / 4))

for i in 0 1; do
	n=$(wc -l <"$WORK/w$i/pushes.jsonl")
	[ "$n" -ge 20 ] || fail "w$i made only $n iterations in 8 s"
	read -r med_ms p90_ms <<<"$(jq -rs '.[1:] | map(.get_s * 1e3) | sort |
		[.[length / 2 | floor], .[length * 9 / 10 | floor]] | map(. * 100 | round / 100) | @tsv' \
		"$WORK/w$i/pushes.jsonl")"
	awk -v m="$med_ms" -v b="$bound_ms" 'BEGIN { exit !(m < b) }' ||
		fail "w$i: median get $med_ms ms >= $bound_ms ms (a quarter of the $BATCH_MS ms tick; planned on arrival about $model_ms ms = 2 x (replan $replan_ms + lead $lead_ms + 2 x copy $xfer_ms); p90 $p90_ms ms, $n iterations)"
	ok "w$i: median get $med_ms ms (p90 $p90_ms) < $bound_ms ms, a quarter of the $BATCH_MS ms tick (planned on arrival about $model_ms ms = 2 x (replan $replan_ms + lead $lead_ms + 2 x copy $xfer_ms)); $n iterations"
done

# fresh pulls: iteration k's model (pushes.jsonl `version` of line k) includes update k - 1 of the
# same worker, i.e. is at least the version its commit reached (applied.jsonl `at` + `parts`)
for i in 0 1; do
	read -r checked stale dropped example <<<"$(jq -rs --slurpfile ap <(jq -c . "$WORK/ps/applied.jsonl") '
		($ap | map({key: (.id | tostring), value: (.at + .parts)}) | from_entries) as $done |
		[range(1; length) as $k | {id: .[$k - 1].id, got: .[$k].version, need: $done[.[$k - 1].id | tostring]}] |
		[(map(select(.need != null)) | length), (map(select(.need != null and .got < .need)) | length),
		 (map(select(.need == null)) | length),
		 (map(select(.need != null and .got < .need)) | first // {} | tojson)] | @tsv' "$WORK/w$i/pushes.jsonl")"
	[ "$stale" = 0 ] ||
		fail "w$i: $stale of $checked gets after a push returned a model without that push (first: $example)"
	ok "w$i: all $checked gets after an applied push returned a model including it ($dropped pushes not applied)"
done
