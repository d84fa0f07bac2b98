#!/usr/bin/env bash
# tests/run_parallel.sh JOBS TEST... [-- ALONE...] - `make unit-test`'s runner: the unit test
# programs TEST, JOBS of them at a time (most of their time is spent waiting on timeouts and a
# scheduler daemon's ticks, not on the CPU: the 52 of 2026-11-28 took 167 s one after the other,
# with 25 s of CPU), then the ALONE ones one after the other with nothing of this beside them
# (tests whose bounds are fractions of a second of real time, which another test's CPU could
# take). Each test's output goes to a file of its own and is printed under "== TEST (S s)" in
# that order once every test ended; exit status 1 when any test failed (each failed one is named
# again at the end), else 0. JOBS=1 runs every test one after the other.
# While they run, one line per test goes to stderr as it ends ("unit: TEST ok|FAILED (S s)"), so a
# run that hangs shows which tests had ended; each test is killed after UNIT_TIMEOUT seconds
# (default 600; timeout(1)'s status 124 then fails it, and its line says "timed out").
set -u
jobs=$1
shift
par=() alone=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do par+=("$1"); shift; done
[ $# -gt 0 ] && shift
alone=("$@")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# run_one DIR INDEX TEST: TEST's output in DIR/INDEX.out, "status seconds" in DIR/INDEX.rc
run_one='s=$(date +%s.%N); timeout "${UNIT_TIMEOUT:-600}" "$3" >"$1/$2.out" 2>&1; rc=$?
	secs=$(awk -v s="$s" -v e="$(date +%s.%N)" "BEGIN { printf \"%.1f\", e - s }")
	case $rc in 0) st=ok ;; 124) st="FAILED: timed out after ${UNIT_TIMEOUT:-600} s" ;; *) st=FAILED ;; esac
	echo "unit: $3 $st ($secs s)" >&2
	echo "$rc $secs" >"$1/$2.rc"'
i=0
for t in "${par[@]}"; do
	i=$((i + 1))
	printf '%s %s\n' "$i" "$t"
done | xargs -r -P "$jobs" -L 1 sh -c "$run_one" sh "$out"
# (sh -c gets the directory as $1, then xargs appends a line's index and test as $2 and $3; the
# loop above ran in the pipeline's subshell, so the index goes on from the count)
i=${#par[@]}
for t in "${alone[@]}"; do
	i=$((i + 1))
	sh -c "$run_one" sh "$out" "$i" "$t"
done
fail=""
i=0
for t in "${par[@]}" "${alone[@]}"; do
	i=$((i + 1))
	read -r rc secs <"$out/$i.rc" 2>/dev/null || { rc=1; secs=?; }
	echo "== $t ($secs s)"
	cat "$out/$i.out"
	[ "$rc" = 0 ] || fail="$fail $t"
done
[ -z "$fail" ] || { echo "failed:$fail"; exit 1; }
