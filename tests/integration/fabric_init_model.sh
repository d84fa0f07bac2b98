#!/usr/bin/env bash
# fabric_init_model.sh - the initial model of any size (docs/api.md): mlf-ps --init-file
# errors; then on a 3-host testbed (ps, w0, w1):
#  1. Async (MLF_MODE_DIRECT, no scheduler): mlf_recv_model with no sender times out in time naming
#     the host; mlf-ps --init-from w0 refuses a model from w1 (logs naming w1), takes w0's model of
#     61706 random floats; w0 gets it back byte-exact at version 0, pushes one update u and gets
#     w + u exactly at version 1 (eq. 2 without momentum history); mlf-ps does not evaluate
#     (accuracy.jsonl empty) and its server.json says version 1. Then mlf-ps --init-file with the
#     same model serves it likewise.
#  2. MLfabric-A (with mlf-scheduler): w0 sends its model before mlf-ps listens (the server's
#     dataplane keeps it), then the same checks through the scheduler.
. "$(dirname "$0")/apps_lib.sh"
IM="$ROOT/build/tests/fabric_initmodel"
[ -x "$IM" ] && [ -x "$ROOT/build/mlf-scheduler" ] ||
	{ echo "SKIP $TEST_NAME: build/tests/fabric_initmodel or build/mlf-scheduler not built"; exit 0; }
N=61706

# --init-file errors: one line naming the file, exit 2 (no testbed needed)
E="$(mktemp -d --tmpdir=/dev/shm)"
trap 'rm -rf "$E"' EXIT
: >"$E/empty.f32"
printf 'abcdef' >"$E/odd.f32"
for f in "$E/missing.f32" "$E/odd.f32" "$E/empty.f32"; do
	rc=0
	"$PS" --cluster x.json --host ps --mode async --workers 1 --init-file "$f" >"$E/out" 2>&1 || rc=$?
	[ "$rc" = 2 ] || fail "--init-file $f: exit $rc, expected 2: $(cat "$E/out")"
	[ "$(wc -l <"$E/out")" = 1 ] && grep -q "$f" "$E/out" || fail "--init-file $f: not one line naming it: $(cat "$E/out")"
done
"$PS" --help | grep -q -- "--init-from HOST" && "$PS" --help | grep -q -- "--init-file F" ||
	fail "mlf-ps --help does not document --init-from / --init-file"
rc=0; "$PS" --cluster x.json --host r --mode async --replica --server ps --init-from w0 >"$E/out" 2>&1 || rc=$?
[ "$rc" = 2 ] && grep -q "replica" "$E/out" || fail "--replica --init-from not refused clearly (exit $rc): $(cat "$E/out")"
ok "--init-file: missing, odd-sized and empty files refused naming the file (exit 2); --replica --init-from refused"
rm -rf "$E"

apps_begin appim 9 'ps:2:"server","scheduler"' 'w0:10:"worker"' 'w1:11:"worker"'

# wait_for FILE PATTERN SECONDS: until FILE has a line matching PATTERN.
wait_for() {
	local i
	for ((i = 0; i < $3 * 10; i++)); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
	fail "no line matching '$2' in $(basename "$1") within $3 s"
}

# check_worker NAME: the worker's output says byte-exact at version 0, then w + u at version 1
check_worker() {
	grep -q "^get0 version=0 exact=1$" "$WORK/$1.log" || fail "$1: first get not byte-exact at version 0: $(cat "$WORK/$1.log")"
	grep -q "^get1 version=1 exact=1$" "$WORK/$1.log" || fail "$1: get after the push is not w + u at version 1: $(cat "$WORK/$1.log")"
}

# check_ps DIR SOURCE: mlf-ps did not evaluate, said so once, applied the update
check_ps() {
	[ -f "$WORK/$1/accuracy.jsonl" ] && [ ! -s "$WORK/$1/accuracy.jsonl" ] || fail "$1: accuracy.jsonl missing or not empty"
	[ "$(grep -c "model of $N floats from $2: not evaluated by mlf-ps" "$WORK/$1.log")" = 1 ] ||
		fail "$1: no single 'not evaluated' line: $(cat "$WORK/$1.log")"
	[ "$(jq .version "$WORK/$1/server.json")" = 1 ] && [ "$(jq .applied "$WORK/$1/server.json")" = 1 ] ||
		fail "$1: server.json: $(cat "$WORK/$1/server.json")"
}

# stop_ps NAME: SIGTERM, clean exit
stop_ps() {
	local v=PID_$1
	kill -TERM "${!v}"
	wait "${!v}" || fail "$1 did not exit cleanly: $(tail -3 "$WORK/$1.log")"
}

## 1. Async: no scheduler
for h in ps w0 w1; do dp_start $h --scheduler none; done
out=$("$TB" exec "$CLUSTER" ps "$IM" recv --cluster "$CLUSTER" --host ps --from w1 --timeout 2)
rc=$(field "$out" rc); secs=$(field "$out" secs)
[ "$rc" = -110 ] || fail "recv without a sender: $out (expected rc=-110, -ETIMEDOUT)"
[[ "$out" == *"from host w1 within 2.0 s"* ]] || fail "recv timeout does not name host w1: $out"
# at the timeout, not before; after it at most the slack of a busy machine
awk -v s="$secs" 'BEGIN { exit !(s >= 1.9 && s < 2 + 5) }' || fail "recv timed out after $secs s, asked for 2"
ok "mlf_recv_model without a sender: -ETIMEDOUT after $secs s naming w1"

apps_run ps1 ps "$PS" --cluster "$CLUSTER" --host ps --mode async --workers 1 --init-from w0 --records "$WORK/ps1"
wait_for "$WORK/ps1.log" "waiting for the initial model from w0" 10
[ -f "$WORK/ps1/accuracy.jsonl" ] || fail "no accuracy.jsonl while mlf-ps waits for its model"
"$TB" exec "$CLUSTER" w1 "$IM" send --cluster "$CLUSTER" --host w1 --server ps --mode async --n 100 --only-send \
	>"$WORK/w1.log" 2>&1 || fail "w1's send failed: $(cat "$WORK/w1.log")"
wait_for "$WORK/ps1.log" "model from host w1 refused" 10
"$TB" exec "$CLUSTER" w0 "$IM" send --cluster "$CLUSTER" --host w0 --server ps --mode async --n $N --seed 7 \
	>"$WORK/w0a.log" 2>&1 || fail "w0 failed: $(cat "$WORK/w0a.log")"
check_worker w0a
grep -q "serving the model from w0 ($N parameters, version 0)" "$WORK/ps1.log" || fail "ps1 did not log serving: $(cat "$WORK/ps1.log")"
stop_ps ps1
check_ps ps1 w0
ok "Async: mlf-ps --init-from w0 refused w1's model, served w0's $N floats byte-exact, applied an update exactly"

"$IM" write --n $N --seed 8 --file "$WORK/model.f32"
apps_run ps2 ps "$PS" --cluster "$CLUSTER" --host ps --mode async --workers 1 --init-file "$WORK/model.f32" --records "$WORK/ps2"
wait_for "$WORK/ps2.log" "serving" 10
# again from w0, a new process: its update ids must not repeat the earlier process's, which ps's
# dataplane still remembers as delivered (it would drop the new push as a duplicate)
"$TB" exec "$CLUSTER" w0 "$IM" send --cluster "$CLUSTER" --host w0 --server ps --mode async --n $N --seed 8 --no-send \
	>"$WORK/w0b.log" 2>&1 || fail "w0 (second process) failed: $(cat "$WORK/w0b.log")"
check_worker w0b
stop_ps ps2
check_ps ps2 "$WORK/model.f32"
ok "Async: mlf-ps --init-file served the file's $N floats byte-exact and applied an update exactly"

## 2. MLfabric-A: scheduler; the worker sends before mlf-ps listens
for h in ps w0 w1; do v=DP_PID_$h; kill -TERM "${!v}"; done
for h in ps w0 w1; do
	v=DP_PID_$h
	for ((i = 0; i < 50; i++)); do kill -0 "${!v}" 2>/dev/null || break; sleep 0.1; done
	kill -0 "${!v}" 2>/dev/null && fail "dataplane of $h did not stop"
done
mkdir -p "$WORK/sched"
apps_run sched ps "$ROOT/build/mlf-scheduler" --cluster "$CLUSTER" --records "$WORK/sched"
for h in ps w0 w1; do dp_start $h; done
apps_run w0c w0 "$IM" send --cluster "$CLUSTER" --host w0 --server ps --mode mlfabric-a --n $N --seed 9 --timeout 20
wait_for "$WORK/w0c.log" "^sent n=$N" 20
apps_run ps3 ps "$PS" --cluster "$CLUSTER" --host ps --mode mlfabric-a --workers 1 --init-from w0 --records "$WORK/ps3"
wait "$PID_w0c" || fail "w0 failed in MLfabric-A: $(cat "$WORK/w0c.log")"
check_worker w0c
grep -q "waiting for the initial model from w0" "$WORK/ps3.log" || fail "ps3 did not log the wait"
stop_ps ps3
check_ps ps3 w0
ok "MLfabric-A: a model sent before mlf-ps listened was installed; get byte-exact at version 0, update applied exactly"
