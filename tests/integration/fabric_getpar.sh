#!/usr/bin/env bash
# fabric_getpar.sh - gets of several servers at once on one endpoint (include/mlfabric/mlfabric.h
# "Threads"; the Python package's overlapped gets, docs/python.md "Overlap"): a worker pushes 3000
# copies of 10 to ps0 and 6000 copies of 20 to ps1 (direct mode), then two threads get ps0's and
# ps1's models at the same time, 30 times each; every get must return its own server's model
# (size and values). The library before held one get per endpoint: the second thread's get took
# the first's place, a model landed in the wrong get (or failed its size check) and the other
# thread timed out.
. "$(dirname "$0")/fabric_lib.sh"
fab_begin fabgp 'ps0:1:"server"' 'ps1:2:"server"' 'w0:10:"worker"'
for h in ps0 ps1 w0; do dp_start $h --scheduler none; done
bg s0 "$APP" server --cluster "$CLUSTER" --host ps0 --mode async --n 3000 --stay
bg s1 "$APP" server --cluster "$CLUSTER" --host ps1 --mode async --n 6000 --stay
wait_for "$WORK/s0.out" "server ready" 10
wait_for "$WORK/s1.out" "server ready" 10
timeout 120 "$APP" getpar --cluster "$CLUSTER" --host w0 --server ps0,ps1 --mode async --n 3000 --count 30 \
	--timeout 10 >"$WORK/getpar.out" 2>"$WORK/getpar.err" ||
	fail "gets at once: $(cat "$WORK/getpar.out" "$WORK/getpar.err" | tr '\n' ' ')"
grep -q '^getpar server=ps0 n=3000 version=1 rc=0 wrong=0$' "$WORK/getpar.out" || fail "ps0: $(cat "$WORK/getpar.out")"
grep -q '^getpar server=ps1 n=6000 version=1 rc=0 wrong=0$' "$WORK/getpar.out" || fail "ps1: $(cat "$WORK/getpar.out")"
ok "two threads got ps0's (3000 x 10) and ps1's (6000 x 20) models at once, 30 times each, each its own"
