#!/usr/bin/env bash
# test_dp_kill.sh - killing the receiver's dataplane mid-transfer makes the sender report the
# transfer failed, naming the silent peer, within its timeout (never a hang).
. "$(dirname "$0")/lib.sh"
dp_pair_begin

timeout 30 "$XFER" recv --sock "$(sock b)" --count 1 --out /dev/null --timeout 20 >"$WORK/recv" 2>&1 &
# 250 MB at 0.5 Gbit/s takes 4 s: the kill lands in the middle
t0=$(now_ns)
timeout 30 "$XFER" send --sock "$(sock a)" --to b --bytes 250000000 --rate 0.5 --timeout 3 >"$WORK/send" 2>&1 &
spid=$!
sleep 1
kill -KILL "$DP_PID_b"
if wait $spid; then fail "sender reported success although b's dataplane was killed: $(cat "$WORK/send")"; fi
t1=$(now_ns)
line=$(grep '^xfer ' "$WORK/send" || true)
[ "$(field "$line" status)" = failed ] || fail "sender did not print a failed transfer line: $(cat "$WORK/send")"
grep -q 'reason="peer b ' <<<"$line" || fail "failure reason does not name peer b: $line"
secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
# killed after 1 s, then at most the 3 s peer timeout and some slack for the report
awk -v s="$secs" 'BEGIN { exit !(s < 1 + 3 + 2) }' || fail "sender took $secs s to report the dead peer (timeout 3 s)"
ok "sender reported failure naming peer b $secs s after the start (b killed at 1 s, timeout 3 s)"
