#!/bin/sh
# replay.sh - installed as <build>/tests/test_fuzz_replay (tests/fuzz/fuzz.mk): every harness of
# tests/fuzz/ (built without libFuzzer, next to this script) runs on its seed corpus and on the
# inputs fuzzing found (tests/fuzz/regress/<harness>/). A crash, a sanitizer report (in `make
# sanitize`) or an unreadable input fails it. Run from the repository root.
dir=$(dirname "$0")
rc=0
for h in wire ctl appmsg plan cluster sched fabric appif arp; do
	set -- tests/fuzz/corpus/$h
	[ -d tests/fuzz/regress/$h ] && set -- "$@" tests/fuzz/regress/$h
	"$dir/fuzz_$h" "$@" || { echo "FAIL test_fuzz_replay: harness $h"; rc=1; }
done
[ $rc = 0 ] && echo "ok   test_fuzz_replay: every seed and regression input replayed"
exit $rc
