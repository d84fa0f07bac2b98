#!/usr/bin/env bash
# apps_async.sh - the Async baseline (MLF_MODE_DIRECT) end to end: mlf-ps + 2 mlf-workers through
# the dataplanes train for ~20 s, test accuracy rises above 0.5, every pushed update is applied
# exactly once with a non-negative delay, and a worker names the server when it stops answering.
. "$(dirname "$0")/lib.sh"
PS="$ROOT/build/mlf-ps"
WK="$ROOT/build/mlf-worker"
[ -x "$PS" ] && [ -x "$WK" ] || { echo "SKIP $TEST_NAME: build/mlf-ps or build/mlf-worker not built"; exit 0; }
need_dataplane
CFG=$(mktemp --tmpdir=/dev/shm apps-async.XXXXXX.json)
cat >"$CFG" <<'JSON'
{"name": "appas", "hosts": [
 {"name": "ps", "ip": "10.83.3.2", "roles": ["server"]},
 {"name": "w0", "ip": "10.83.3.10", "roles": ["worker"]},
 {"name": "w1", "ip": "10.83.3.11", "roles": ["worker"]}]}
JSON
CLUSTER=$CFG
tb_begin
cp "$CFG" "$WORK/cluster.json" && rm -f "$CFG" && CLUSTER="$WORK/cluster.json"
for h in ps w0 w1; do dp_start $h --scheduler none; done

MODEL=784,128,10
LR=${LR:-0.01}
MOM=${MOM:-0.9}
"$PS" --cluster "$CLUSTER" --host ps --mode async --workers 2 --model $MODEL --momentum $MOM --eval-every 1 \
	--eval-images 500 --records "$WORK/ps" >"$WORK/ps.log" 2>&1 &
ps_pid=$!
sleep 1
kill -0 $ps_pid 2>/dev/null || { cat "$WORK/ps.log"; fail "mlf-ps exited at start"; }
for i in 0 1; do
	"$WK" --cluster "$CLUSTER" --host w$i --server ps --mode async --shard $i/2 --model $MODEL \
		--lr $LR --duration 20 --straggle C1 --seed $((i + 1)) --records "$WORK/w$i" >"$WORK/w$i.log" 2>&1 &
	eval "wk_pid_$i=\$!"
done
wait "$wk_pid_0" || { tail -5 "$WORK/w0.log"; fail "worker w0 failed"; }
wait "$wk_pid_1" || { tail -5 "$WORK/w1.log"; fail "worker w1 failed"; }
sleep 1 # let the last pushes arrive
kill -TERM $ps_pid
wait $ps_pid || { tail -5 "$WORK/ps.log"; fail "mlf-ps did not exit cleanly on SIGTERM"; }
[ -s "$WORK/ps/server.json" ] || fail "mlf-ps wrote no server.json"

acc=$(tail -1 "$WORK/ps/accuracy.jsonl" | jq .accuracy)
first=$(head -1 "$WORK/ps/accuracy.jsonl" | jq .accuracy)
awk -v a="$acc" -v f="$first" 'BEGIN { exit !(a > 0.5 && a > f) }' || fail "server accuracy went from $first to $acc (expected > 0.5)"
pushed=$(cat "$WORK"/w0/pushes.jsonl "$WORK"/w1/pushes.jsonl | wc -l)
[ "$pushed" -ge 20 ] || fail "only $pushed pushes in 20 s"
ok "2 workers, $pushed pushes in 20 s: server accuracy $first -> $acc"

# every pushed id appears in applied.jsonl exactly once; nothing else was applied
cat "$WORK"/w0/pushes.jsonl "$WORK"/w1/pushes.jsonl | jq .id | sort >"$WORK/pushed.ids"
jq .id "$WORK/ps/applied.jsonl" | sort >"$WORK/applied.ids"
missing=$(comm -23 "$WORK/pushed.ids" "$WORK/applied.ids" | wc -l)
[ "$missing" = 0 ] || fail "$missing of $pushed pushed updates never appear in applied.jsonl"
dups=$(uniq -d "$WORK/applied.ids" | wc -l)
[ "$dups" = 0 ] || fail "$dups updates applied more than once"
applied=$(jq .applied "$WORK/ps/server.json")
[ "$applied" = "$pushed" ] || fail "server.json says $applied applied, workers pushed $pushed"
[ "$(jq .version "$WORK/ps/server.json")" = "$pushed" ] || fail "server version $(jq .version "$WORK/ps/server.json") != $pushed updates"
bad=$(jq -s 'map(select(.delay != .at - .version or .delay < 0 or .parts != 1)) | length' "$WORK/ps/applied.jsonl")
[ "$bad" = 0 ] || fail "$bad applied.jsonl lines with a wrong delay or parts"
for i in 0 1; do
	[ "$(jq -s "map(select(.worker == \"w$i\")) | length" "$WORK/ps/applied.jsonl")" = "$(wc -l <"$WORK/w$i/pushes.jsonl")" ] ||
		fail "applied.jsonl does not attribute w$i's updates to w$i"
done
maxd=$(jq -s 'map(.delay) | max' "$WORK/ps/applied.jsonl")
ok "all $pushed pushed ids applied exactly once, delays = at - version >= 0 (max $maxd), per-worker attribution"

# the server is gone: a worker's get times out and the error names the server
if "$WK" --cluster "$CLUSTER" --host w0 --server ps --mode async --shard 0/2 --model $MODEL \
	--iterations 3 --timeout 2 --records "$WORK/w0b" >"$WORK/w0b.log" 2>&1; then
	fail "a worker without a server succeeded"
fi
grep -q "server ps stopped answering" "$WORK/w0b.log" || fail "worker error does not name the server: $(tail -2 "$WORK/w0b.log")"
ok "a worker whose server is gone exits naming it"
