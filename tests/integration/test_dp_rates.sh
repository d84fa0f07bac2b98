#!/usr/bin/env bash
# test_dp_rates.sh - commanded rates 0.2, 1 and 2.5 Gbit/s, measured outside the dataplane from the
# receiver's eth0 rx_bytes over the transfer, within +-2%. Rates are payload (update) Gbit/s and
# rx_bytes counts L2 frames, so the expectation is the rate times frame/payload bytes per segment.
# Two cores are shared by everything on this machine: a rate that misses gets one more attempt,
# and both measurements are printed, so a steady pacing error still fails.
# The top rate is a pacing test only where the machine can carry it: an unpaced 128 MiB transfer
# measures the ceiling first, and the top rate is capped at 70% of it (printed; this VM carried
# 8.6 Gbit/s unpaced on 2026-11-22 but only 2.3 on 2026-11-24 and 1.7 in a CI run that evening,
# old and new dataplanes alike). Where 70% of the ceiling is not above 1.1 Gbit/s the top step
# would repeat the 1 Gbit/s one: it is skipped with a note naming the ceiling, and 0.2 and 1 Gbit/s
# are still checked. Below a ceiling of 1.43 Gbit/s (1.11 in a CI run on 2026-11-26) 1 Gbit/s would
# be above 70% of it, the headroom the top rate gets: 0.2 Gbit/s and 70% of the ceiling are
# checked instead, with a note; a ceiling below 0.43 Gbit/s fails.
. "$(dirname "$0")/lib.sh"
dp_pair_begin
MTU=$(sed -n 's/.*"mtu": *\([0-9]*\).*/\1/p' "$CLUSTER")
# L2 frame = 14 Ethernet + IP MTU; payload = MTU - 20 IP - 8 UDP - 40 MLfabric
L2_PER_PAYLOAD=$(awk -v m="$MTU" 'BEGIN { printf "%.6f", (m + 14) / (m - 68) }')

# measure RATE: one transfer of about 1.2 s at RATE; sets GOT (Gbit/s at b) and GAP (longest ms
# between frames, which tells a stall from a steady pacing error).
measure() {
	local rate=$1 bytes rpid
	bytes=$(awk -v r="$rate" 'BEGIN { printf "%d", r * 1e9 / 8 * 1.2 }')
	timeout 60 "$XFER" recv --sock "$(sock b)" --count 1 --out /dev/null --timeout 30 >"$WORK/recv" 2>&1 &
	rpid=$!
	rxrate_start b "$WORK/rate" --trace "$WORK/trace"
	timeout 60 "$XFER" send --sock "$(sock a)" --to b --bytes "$bytes" --rate "$rate" --timeout 20 >"$WORK/send" 2>&1 ||
		fail "rate $rate: transfer failed: $(cat "$WORK/send")"
	wait $rpid || fail "rate $rate: receiver failed: $(cat "$WORK/recv")"
	rxrate_stop
	GOT=$(field "$(cat "$WORK/rate")" gbps)
	[ -n "$GOT" ] || fail "rate $rate: nothing measured at b: $(cat "$WORK/rate")"
	GAP=$(awk 'NR > 1 && $2 > pb { if (pt && $1 - pt > g) g = $1 - pt; pt = $1 } { pb = $2 }
		   END { printf "%.1f", g / 1e6 }' "$WORK/trace")
}

timeout 120 "$XFER" recv --sock "$(sock b)" --count 1 --out /dev/null --timeout 60 >"$WORK/recv" 2>&1 &
rpid=$!
timeout 120 "$XFER" send --sock "$(sock a)" --to b --bytes $((128 << 20)) --timeout 20 >"$WORK/send" 2>&1 ||
	fail "unpaced transfer failed: $(cat "$WORK/send")"
wait $rpid || fail "receiver of the unpaced transfer failed: $(cat "$WORK/recv")"
CEIL=$(field "$(grep '^xfer ' "$WORK/send")" goodput_gbps)
[ -n "$CEIL" ] || fail "no goodput reported for the unpaced transfer: $(cat "$WORK/send")"
TOP=$(awk -v c="$CEIL" 'BEGIN { t = 0.7 * c; if (t > 2.5) t = 2.5; printf "%.2f", t }')
awk -v c="$CEIL" 'BEGIN { exit !(c >= 0.43) }' ||
	fail "this machine carries only $CEIL Gbit/s unpaced: too slow for a pacing test at 0.2 Gbit/s and 70% of the ceiling"
if awk -v c="$CEIL" 'BEGIN { exit !(c < 1.43) }'; then
	RATES="0.2 $TOP"
	echo "note test_dp_rates: unpaced ceiling $CEIL Gbit/s here: 1 Gbit/s is above 70% of it; checked 0.2 and $TOP Gbit/s"
elif awk -v t="$TOP" 'BEGIN { exit !(t <= 1.1) }'; then
	RATES="0.2 1"
	echo "note test_dp_rates: unpaced ceiling $CEIL Gbit/s here: no top rate above 1.1 Gbit/s at 70% of it, only 0.2 and 1 Gbit/s checked"
else
	RATES="0.2 1 $TOP"
	[ "$TOP" = 2.50 ] ||
		echo "note test_dp_rates: unpaced ceiling $CEIL Gbit/s here: top rate $TOP instead of 2.5 Gbit/s (70% of it)"
fi

for rate in $RATES; do
	l2=$(awk -v r="$rate" -v k="$L2_PER_PAYLOAD" 'BEGIN { printf "%.4f", r * k }')
	measure "$rate"
	if ! within 2 "$GOT" "$l2"; then
		first="$GOT Gbit/s (longest gap ${GAP} ms)"
		measure "$rate"
		within 2 "$GOT" "$l2" ||
			fail "commanded $rate Gbit/s payload ($l2 L2), measured $first then $GOT Gbit/s (longest gap ${GAP} ms) at b's eth0 ($(cat "$WORK/rate"); sender: $(cat "$WORK/send"))"
		ok "commanded $rate Gbit/s payload ($l2 L2), measured $GOT Gbit/s at b's eth0 (first attempt: $first)"
		continue
	fi
	ok "commanded $rate Gbit/s payload ($l2 L2), measured $GOT Gbit/s at b's eth0"
done
