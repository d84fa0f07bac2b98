#!/usr/bin/env bash
# test_dp_rates.sh - commanded rates 0.2, 1 and 2.5 Gbit/s, measured outside the dataplane from the
# receiver's eth0 rx_bytes over the transfer (L2 bytes, as the pacer counts), within +-2%.
. "$(dirname "$0")/lib.sh"
dp_pair_begin

for rate in 0.2 1 2.5; do
	# about 1.2 s of traffic at the commanded rate
	bytes=$(awk -v r="$rate" 'BEGIN { printf "%d", r * 1e9 / 8 * 1.2 }')
	timeout 60 "$XFER" recv --sock "$(sock b)" --count 1 --out /dev/null --timeout 30 >"$WORK/recv" 2>&1 &
	rpid=$!
	rxrate_start b "$WORK/rate" --trace "$WORK/trace-$rate"
	timeout 60 "$XFER" send --sock "$(sock a)" --to b --bytes "$bytes" --rate "$rate" --timeout 20 >"$WORK/send" 2>&1 ||
		fail "rate $rate: transfer failed: $(cat "$WORK/send")"
	wait $rpid || fail "rate $rate: receiver failed: $(cat "$WORK/recv")"
	rxrate_stop
	got=$(field "$(cat "$WORK/rate")" gbps)
	[ -n "$got" ] || fail "rate $rate: nothing measured at b: $(cat "$WORK/rate")"
	if ! within 2 "$got" "$rate"; then
		# the longest gap between frames tells a stall from a steady pacing error
		gap=$(awk 'NR > 1 && $2 > pb { if (pt && $1 - pt > g) g = $1 - pt; pt = $1 } { pb = $2 }
			   END { printf "%.1f", g / 1e6 }' "$WORK/trace-$rate")
		fail "commanded $rate Gbit/s, measured $got Gbit/s at b's eth0, longest gap between frames ${gap} ms ($(cat "$WORK/rate"); sender: $(cat "$WORK/send"))"
	fi
	ok "commanded $rate Gbit/s, measured $got Gbit/s at b's eth0"
done
