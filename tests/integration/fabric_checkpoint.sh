#!/usr/bin/env bash
# fabric_checkpoint.sh - mlf-ps checkpoints (docs/apps.md): the Async baseline (no scheduler) with
# --checkpoint-every 20: 60 worker iterations leave a checkpoint.bin of 24 + 8 n bytes whose
# version is a multiple of 20 and at most the final version, server.json counts the checkpoints
# and says role "server"; an mlf-ps started with --restore serves from that version (a pull
# returns it) and applies new updates on top; a truncated checkpoint is refused by name.
. "$(dirname "$0")/fabric_lib.sh"
PS="$ROOT/build/mlf-ps"
WK="$ROOT/build/mlf-worker"
MODEL=784,32,10
N=$(( (784 + 1) * 32 + (32 + 1) * 10 ))
fab_begin fabc 'ps:1:"server"' 'w0:10:"worker"' 'w1:11:"worker"'
dp_start ps --scheduler none
dp_start w0 --scheduler none
dp_start w1 --scheduler none
common=(--cluster "$CLUSTER" --model $MODEL)
evals=(--eval-images 200 --eval-every 5)
bg ps1 "$TB" exec "$CLUSTER" ps "$PS" "${common[@]}" --mode async "${evals[@]}" --host ps --workers 1 --checkpoint-every 20 \
	--checkpoint-dir "$WORK/ckpt" --records "$WORK/ps1"
wait_for "$WORK/ps1.err" "serving" 20
"$TB" exec "$CLUSTER" w0 "$WK" "${common[@]}" --system async --host w0 --server ps --shard 0/1 --iterations 60 \
	--records "$WORK/w0" >"$WORK/w0.out" 2>"$WORK/w0.err" || fail "worker: $(tail -2 "$WORK/w0.err")"
# the worker's close waited until its last update reached ps's dataplane; mlf-ps applies it then
applied() { [ "$(wc -l <"$WORK/$1/applied.jsonl" 2>/dev/null || echo 0)" -ge "$2" ]; }
wait_event "mlf-ps applying the 60th update (ps1/applied.jsonl)" 60 applied ps1 60
kill -TERM "$PID_ps1"; wait "$PID_ps1" || fail "mlf-ps did not exit cleanly: $(tail -2 "$WORK/ps1.err")"
v=$(jq .version "$WORK/ps1/server.json")
[ "$v" = 60 ] || fail "server version $v after 60 iterations"
[ "$(jq -r .role "$WORK/ps1/server.json")" = server ] || fail "server.json role: $(jq -r .role "$WORK/ps1/server.json")"
[ "$(jq .checkpoints "$WORK/ps1/server.json")" = 3 ] || fail "checkpoints: $(jq .checkpoints "$WORK/ps1/server.json") (expected 3: at 20, 40, 60)"
ck="$WORK/ckpt/checkpoint.bin"
[ "$(stat -c %s "$ck")" = $((24 + 8 * N)) ] || fail "checkpoint size $(stat -c %s "$ck"), expected $((24 + 8 * N))"
[ "$(od -An -t x4 -N 4 "$ck" | tr -d ' ')" = 434b4c4d ] || fail "checkpoint magic $(od -An -t x4 -N 4 "$ck")"
cv=$(od -An -t d8 -j 8 -N 8 "$ck" | tr -d ' ')
[ "$cv" = 60 ] || fail "checkpoint version $cv, expected 60"
ls "$WORK/ckpt" | grep -q tmp && fail "a temporary checkpoint file was left: $(ls "$WORK/ckpt")"
# restore: serves version 60, then applies 10 more updates on top (from w1: a worker restarted on
# w0 would reuse w0's update ids, which the server's dataplane still remembers as finished)
bg ps2 "$TB" exec "$CLUSTER" ps "$PS" "${common[@]}" --mode async "${evals[@]}" --host ps --workers 1 --restore "$ck" --records "$WORK/ps2"
wait_for "$WORK/ps2.err" "restored version 60 from" 20
wait_for "$WORK/ps2.err" "serving" 20
"$TB" exec "$CLUSTER" w1 "$WK" "${common[@]}" --system async --host w1 --server ps --shard 0/1 --iterations 10 \
	--records "$WORK/w0b" >"$WORK/w0b.out" 2>"$WORK/w0b.err" || fail "worker after restore: $(tail -2 "$WORK/w0b.err")"
[ "$(head -1 "$WORK/w0b/pushes.jsonl" | jq .version)" = 60 ] ||
	fail "first update after the restore computed from version $(head -1 "$WORK/w0b/pushes.jsonl" | jq .version), expected 60"
wait_event "the restored mlf-ps applying the 10 updates of w1 (ps2/applied.jsonl)" 60 applied ps2 10
kill -TERM "$PID_ps2"; wait "$PID_ps2" || fail "restored mlf-ps did not exit cleanly: $(tail -2 "$WORK/ps2.err")"
[ "$(jq .version "$WORK/ps2/server.json")" = 70 ] || fail "restored server ended at version $(jq .version "$WORK/ps2/server.json"), expected 70"
truncate -s 1000 "$ck"
"$PS" --cluster "$CLUSTER" --host ps --mode async --workers 1 --model $MODEL --restore "$ck" --records "$WORK/bad" \
	>"$WORK/bad.out" 2>&1 &&
	fail "a truncated checkpoint was accepted"
grep -q "checkpoint.bin: truncated" "$WORK/bad.out" || fail "truncated checkpoint not named: $(cat "$WORK/bad.out")"
ok "checkpoints every 20 updates (3 in 60, version 60 on disk, 24 + 8n bytes), restore serves version 60 and goes on to 70, truncated checkpoint refused"
