#!/usr/bin/env bash
# test_dp_concurrent.sh - ten concurrent transfers a -> b at 0.2 Gbit/s each, summing to b's
# 2 Gbit/s downlink (tbf on the switch side), all arrive byte-exact.
. "$(dirname "$0")/lib.sh"
CLUSTER="$ROOT/conf/cluster-pair.json"
need_dataplane
tb_begin
"$TB" shape "$CLUSTER" b down 2 2>/dev/null || fail "cannot shape b's downlink"
random_file "$WORK/src" 16
mkdir "$WORK/out"
dp_start a
dp_start b

timeout 90 "$XFER" recv --sock "$(sock b)" --count 10 --out "$WORK/out" --timeout 60 >"$WORK/recv" 2>&1 &
rpid=$!
sleep 0.2
timeout 90 "$XFER" send --sock "$(sock a)" --to b --file "$WORK/src" --count 10 --rate 0.2 --timeout 30 >"$WORK/send" 2>&1 ||
	fail "sender reported failure: $(cat "$WORK/send")"
wait $rpid || fail "receiver reported failure: $(cat "$WORK/recv")"
[ "$(grep -c '^xfer .*status=ok' "$WORK/send")" = 10 ] || fail "expected 10 ok transfers: $(cat "$WORK/send")"
[ "$(grep -c '^recv .*status=ok' "$WORK/recv")" = 10 ] || fail "expected 10 received transfers: $(cat "$WORK/recv")"
n=0
for f in "$WORK"/out/*; do
	cmp -s "$WORK/src" "$f" || fail "received transfer $(basename "$f") differs from the sent file"
	n=$((n + 1))
done
[ "$n" = 10 ] || fail "expected 10 files in the output directory, found $n"
ok "10 concurrent transfers of 16 MiB at 0.2 Gbit/s into a 2 Gbit/s downlink, all byte-exact"
