#!/usr/bin/env bash
# test_sgd_delay.sh - bench-sgd-delay (bench/sgd_delay.c, issue 11): with one worker, synchronous
# SGD and asynchronous SGD with delay 0 are the same sequence of steps, so they must need the same
# number of gradients in every run; a delay must change the result; bad options give one line and
# exit 2. Installed as $(BUILD)/tests/test_sgd_delay, it runs the bench-sgd-delay of its own build
# (build/ or build-san/); BENCH_SGD_DELAY overrides. Needs the Fashion-MNIST package.
set -u
here=$(cd "$(dirname "$0")" && pwd)
PROG=${BENCH_SGD_DELAY:-$here/../bench-sgd-delay}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

[ -x "$PROG" ] || { echo "FAIL: $PROG not built"; exit 1; }
"$PROG" --help | grep -q -- "--systems" || fail "--help does not describe --systems"

for bad in "--systems sink" "--systems async:-1" "--lr 0.1,x" "--momentum 1" "--workers 0" "--target 2" "extra" "--pretrain 10 --pretrain-only" \
           "--model 100,10" "--workers 8x" "--train-images 4" "--save-model $tmp/x.f32" "--pretrain 4"; do
  # shellcheck disable=SC2086
  "$PROG" $bad >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ "$rc" = 2 ] || fail "'$bad': exit $rc, want 2"
  [ "$(wc -l <"$tmp/err")" = 1 ] || fail "'$bad': stderr has $(wc -l <"$tmp/err") lines, want 1: $(cat "$tmp/err")"
  grep -q "^bench-sgd-delay: " "$tmp/err" || fail "'$bad': stderr does not name the program"
done
"$PROG" --data "$tmp/none" --seeds 1 >"$tmp/out" 2>"$tmp/err"
[ $? = 1 ] && grep -q "$tmp/none" "$tmp/err" || fail "a missing data directory is not named: $(cat "$tmp/err")"

# one worker: sync (lr x the sum of 1 gradient) = async:0, run for run; async:3 differs somewhere
"$PROG" --workers 1 --systems sync,async:0,async:3 --lr 0.02,0.05 --momentum 0,0.5 --seeds 1 \
  --target 0.7 --eval-every 16 --eval-images 300 --train-images 6000 --max-grads 800 \
  >"$tmp/out" 2>"$tmp/err" || fail "run: exit $?: $(cat "$tmp/err")"
runs() { awk -v s="$1" '$1 == s { print $2, $3, $4, $5 }' "$tmp/out"; }
[ "$(runs sync | wc -l)" = 4 ] || fail "sync: $(runs sync | wc -l) runs, want 4"
[ "$(runs sync)" = "$(runs async:0)" ] || fail "sync and async:0 differ with one worker: $(runs sync | tr '\n' ';') vs $(runs async:0 | tr '\n' ';')"
runs sync | awk '$4 > 0 { ok = 1 } END { exit !ok }' || fail "no sync run reached 0.7 in 800 gradients"
[ "$(runs async:3)" != "$(runs async:0)" ] || fail "a delay of 3 changed nothing"
grep -q "^| async:0 | .* | 1.00x |$" "$tmp/out" || fail "the table does not give async:0 at 1.00x of sync: $(grep '^|' "$tmp/out")"

# --pretrain-only: the pre-trained model, model-sized (784,8,10: 6,370 floats), nothing else run
"$PROG" --model 784,8,10 --pretrain 96 --pretrain-only --save-model "$tmp/w.f32" --train-images 6000 \
  --eval-images 300 >"$tmp/out" 2>"$tmp/err" || fail "pretrain: exit $?: $(cat "$tmp/err")"
[ "$(stat -c %s "$tmp/w.f32" 2>/dev/null)" = 25480 ] || fail "pre-trained model: $(stat -c %s "$tmp/w.f32" 2>/dev/null) bytes, want 25480"
grep -q "^# pre-trained: 96 gradients" "$tmp/out" || fail "pretrain: no summary line: $(cat "$tmp/out")"
grep -qv "^#" "$tmp/out" && fail "--pretrain-only ran systems: $(grep -v '^#' "$tmp/out" | head -2)"

[ "$fails" = 0 ] && echo "test_sgd_delay: all checks passed" || { echo "test_sgd_delay: $fails failed"; exit 1; }
