#!/usr/bin/env bash
# test_sgd_delay.sh - bench-sgd-delay (bench/sgd_delay.c, docs/results/staleness.md): with one
# worker, synchronous SGD and asynchronous SGD with delay 0 are the same sequence of steps, so they
# must need the same number of gradients in every run; a delay must change the result; bad options
# give one line and exit 2. The event-driven mode (bench/sgd_event.c): with one worker and no
# transfer time, event:async is async:0 run for run; the pull's snapshot rule, plan on arrival
# against ticks and the delay bound give the delays and drops they must. Installed as
# $(BUILD)/tests/test_sgd_delay, it runs the bench-sgd-delay of its own build (build/ or
# build-san/); BENCH_SGD_DELAY overrides. Needs the Fashion-MNIST package.
set -u
here=$(cd "$(dirname "$0")" && pwd)
PROG=${BENCH_SGD_DELAY:-$here/../bench-sgd-delay}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

[ -x "$PROG" ] || { echo "FAIL: $PROG not built"; exit 1; }
"$PROG" --help | grep -q -- "--systems" || fail "--help does not describe --systems"
"$PROG" --help | grep -q -- "--pull-rule" || fail "--help does not describe --pull-rule"

for bad in "--systems sink" "--systems async:-1" "--lr 0.1,x" "--momentum 1" "--workers 0" "--target 2" "extra" "--pretrain 10 --pretrain-only" \
           "--model 100,10" "--workers 8x" "--train-images 4" "--save-model $tmp/x.f32" "--pretrain 4" \
           "--systems event:5:sideways" "--systems event:100:after:x" "--systems event:fast" "--pull-rule x" \
           "--speeds 1,0.5" "--speeds 1,1 --workers 3" "--tau-max -2" "--straggle C9" "--compute-s 0" \
           "--transfer-s -1" "--tick-ms 1x"; do
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

# the event mode: one worker, no transfer time, 0.1 s per gradient and an evaluation every 2 s
# (20 gradients): event:async evaluates the models async:0 evaluates every 20 gradients; a pull
# answered before its batch's updates gives that one worker a delay of 1 from its second update
ev="--lr 0.05 --momentum 0 --seeds 1 --target 0.7 --eval-images 300 --train-images 6000"
# shellcheck disable=SC2086
"$PROG" $ev --workers 1 --systems async:0,event:async,event:100:before,event:100:after \
  --eval-every 20 --compute-s 0.1 --transfer-s 0 --max-grads 600 >"$tmp/out" 2>"$tmp/err" ||
  fail "event run: exit $?: $(cat "$tmp/err")"
col() { awk -v s="$1" -v c="$2" '$1 == s { print $c }' "$tmp/out"; }
[ "$(runs async:0) $(col async:0 6)" = "$(runs event:async) $(col event:async 6)" ] ||
  fail "one worker: event:async differs from async:0: $(grep '^async:0 ' "$tmp/out") vs $(grep '^event:async ' "$tmp/out")"
awk '$1 == "event:async" && $5 > 0 && $5 != 10 * $10 { exit 1 }' "$tmp/out" ||
  fail "one worker at 0.1 s a gradient: gradients $(col event:async 5) in $(col event:async 10) virtual s"
[ "$(col event:100:after 8)" = 0.00 ] ||
  fail "one worker, pulls after their batch: mean delay $(col event:100:after 8), want 0.00"
[ "$(col event:100:before 8)" = 0.99 ] ||
  fail "one worker, pulls before their batch: mean delay $(col event:100:before 8), want 0.99 (1 from the second of 100 updates)"

# two equal workers, no straggler, on arrival, pulls after their own update: they push at the same
# times, so the second of each pair is 1 update old. Bound 2 drops nothing; bound 1 drops that
# second half; bound 0 drops every update. 100 ms ticks, pulls before, bound 1: each batch commits
# one of the two, and the next batch's pair is 1 old already: 3 of 4 dropped.
# shellcheck disable=SC2086
"$PROG" $ev --speeds 1,1 --max-grads 300 \
  --systems event:0:after,event:0:after:2,event:0:after:1,event:0:after:0,event:100:before:1 \
  >"$tmp/out" 2>"$tmp/err" || fail "event bound run: exit $?: $(cat "$tmp/err")"
for want in "event:0:after 0.50 0.000" "event:0:after:2 0.50 0.000" "event:0:after:1 0.00 0.500" \
            "event:0:after:0 0.00 1.000" "event:100:before:1 0.00 0.750"; do
  # shellcheck disable=SC2086
  set -- $want
  got="$(col "$1" 8) $(col "$1" 9)"
  [ "$got" = "$2 $3" ] || fail "$1, two equal workers: mean delay and dropped share $got, want $2 $3"
done
[ "$(col event:0:after:0 5) $(col event:0:after:0 7)" = "-1 0" ] ||
  fail "bound 0 applied something: $(grep '^event:0:after:0 ' "$tmp/out")"

# 1:1:1:4 with C3 stragglers (conf/exp-esync.json), the same seed: planned on arrival with pulls
# after their own update, the updates are less stale than with 100 ms ticks and pulls before
# shellcheck disable=SC2086
"$PROG" $ev --speeds 1,1,1,4 --straggle C3 --max-grads 600 --systems event:0:after,event:mlfabric-a \
  >"$tmp/out" 2>"$tmp/err" || fail "event 1:1:1:4 run: exit $?: $(cat "$tmp/err")"
awk -v a="$(col event:0:after 8)" -v b="$(col event:mlfabric-a 8)" 'BEGIN { exit !(a > 0 && a < b) }' ||
  fail "1:1:1:4: mean delay on arrival, pulls after $(col event:0:after 8), not below 100 ms ticks," \
       "pulls before $(col event:mlfabric-a 8)"
grep -q "^| event:mlfabric-a | 0.05 | 0 | .* | .*% | .* |$" "$tmp/out" ||
  fail "no event table row: $(grep '^|' "$tmp/out")"

[ "$fails" = 0 ] && echo "test_sgd_delay: all checks passed" || { echo "test_sgd_delay: $fails failed"; exit 1; }
