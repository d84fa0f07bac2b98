#!/usr/bin/env bash
# run.sh BUILD SECONDS HARNESS... - `make fuzz` (docs/fuzzing.md): each libFuzzer harness
# BUILD/fuzz/fuzz_<h> runs SECONDS on a scratch copy of tests/fuzz/corpus/<h> (so the corpus in
# git does not grow), niced, one at a time (2 cores). Prints the runs, the coverage and any crash;
# exits 1 when a harness crashed, naming the input it saved (add it to tests/fuzz/regress/<h>/
# once fixed).
set -u
build=$1 secs=$2
shift 2
rc=0
for h in "$@"; do
	work="$build/corpus/$h"
	mkdir -p "$work" "$build/crashes"
	cp -n tests/fuzz/corpus/"$h"/* "$work"/ 2>/dev/null
	log="$build/fuzz-$h.log"
	nice -n 10 "$build/fuzz/fuzz_$h" -max_total_time="$secs" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
		-artifact_prefix="$build/crashes/$h-" -print_final_stats=1 "$work" >"$log" 2>&1
	status=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
	if [ $status -ne 0 ]; then
		echo "FUZZ $h: CRASH after ${runs:-?} runs: $(grep -m1 -E 'ERROR|runtime error|deadly signal' "$log")"
		echo "      input: $(ls -t "$build"/crashes/"$h"-* 2>/dev/null | head -1)  log: $log"
		rc=1
	else
		echo "fuzz $h: ${runs:-?} runs in ${secs} s, ${cov:-cov ?}, corpus $(ls "$work" | wc -l) inputs, no crash"
	fi
done
exit $rc
