#!/usr/bin/env bash
# fabric_sync.sh - MLfabric-S with the real scheduler: workers w0 and w1 each run 3 mlf_allreduce
# iterations (iteration i pushes copies of i); every allreduce returns the model only after both
# updates of the iteration are applied: versions 2, 4, 6 with values 2, 6, 12 on both workers.
. "$(dirname "$0")/fabric_lib.sh"
[ -x "$ROOT/build/mlf-scheduler" ] || { echo "SKIP $TEST_NAME: build/mlf-scheduler not built"; exit 0; }
fab_begin fabs 'ps:1:"server","scheduler"' 'w0:10:"worker"' 'w1:11:"worker"'
bg sched "$TB" exec "$CLUSTER" ps "$ROOT/build/mlf-scheduler" --cluster "$CLUSTER"
for h in ps w0 w1; do dp_start $h; done
bg server "$APP" server --cluster "$CLUSTER" --host ps --mode sync --workers 2 --n 10000 --count 6
wait_for "$WORK/server.out" "server ready" 10
bg w0 timeout 60 "$APP" worker --cluster "$CLUSTER" --host w0 --server ps --mode sync --n 10000 --count 3
bg w1 timeout 60 "$APP" worker --cluster "$CLUSTER" --host w1 --server ps --mode sync --n 10000 --count 3
wait "$PID_w0" || fail "worker w0 failed: $(cat "$WORK/w0.err")"
wait "$PID_w1" || fail "worker w1 failed: $(cat "$WORK/w1.err")"
wait "$PID_server" || fail "server failed: $(cat "$WORK/server.err")"
want=$'allreduce version=2 w0=2\nallreduce version=4 w0=6\nallreduce version=6 w0=12'
for w in w0 w1; do
	got=$(grep '^allreduce ' "$WORK/$w.out")
	[ "$got" = "$want" ] || fail "$w allreduce results: $(echo $got) (expected $(echo $want))"
done
grep -q '^server applied=6 version=6 out_of_order=[0-9]* w0=12 role=server ' "$WORK/server.out" ||
	fail "server end state: $(tail -1 "$WORK/server.out")"
ok "3 allreduce iterations on 2 workers: versions 2, 4, 6 with the summed model on both"
