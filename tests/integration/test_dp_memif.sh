#!/usr/bin/env bash
# test_dp_memif.sh - two dataplanes over a net_memif pair (a PMD that bypasses the kernel; no
# namespaces): a 32 MiB transfer a -> b arrives byte-exact in the default loop and with
# --busy-poll, and the counters agree with it: one transfer sent and one received, every DATA
# frame a sent arrived at b (memif loses nothing), as many frames left a as arrived at b, none
# refused or split; payloads are sent from the app's buffer without a copy into mbufs.
# docs/dataplane.md "Idle behaviour" and "Zero-copy send", issue 35.
. "$(dirname "$0")/lib.sh"
CLUSTER="$ROOT/conf/cluster-pair.json"
need_dataplane
memif_begin
MB=32
random_file "$WORK/src" $MB
SEG=1432 # payload bytes per DATA frame at MTU 1500
NSEG=$(((MB * 1024 * 1024 + SEG - 1) / SEG))

# stat HOST KEY: one counter of HOST's /mlfabric/stats
stat() { memif_tel "$1" /mlfabric/stats | jq -r ".\"/mlfabric/stats\".$2"; }
# quiet: a's DATA frames and frames all arrived at b (nothing left in flight)
quiet() { [ "$(stat a tx_data)" = "$(stat b rx_data)" ] && [ "$(stat a tx_frames)" = "$(stat b rx_frames)" ]; }

for loop in default busy-poll; do
	args=()
	[ $loop = busy-poll ] && args=(--busy-poll)
	memif_pair_start "${args[@]}"
	timeout 60 "$XFER" recv --sock "$WORK/b.sock" --count 1 --out "$WORK/dst" --timeout 40 >"$WORK/recv" 2>&1 &
	rpid=$!
	sleep 0.2
	timeout 60 "$XFER" send --sock "$WORK/a.sock" --to b --file "$WORK/src" --timeout 20 >"$WORK/send" 2>&1 ||
		fail "$loop: sender reported failure: $(cat "$WORK/send")"
	wait $rpid || fail "$loop: receiver reported failure: $(cat "$WORK/recv")"
	line=$(grep '^xfer ' "$WORK/send")
	cmp -s "$WORK/src" "$WORK/dst" || fail "$loop: received file differs from the sent one"
	wait_event "$loop: every frame a sent to arrive at b" 10 quiet
	for c in "a xfer_tx_ok 1" "a xfer_tx_failed 0" "b xfer_rx_ok 1" "b xfer_rx_failed 0" "b rx_multiseg 0" \
		 "b rx_stray 0"; do
		set -- $c
		v=$(stat "$1" "$2")
		[ "$v" = "$3" ] || fail "$loop: $1's $2 is $v, expected $3"
	done
	for r in trunc ip_hdr magic version csum type len peer; do
		[ "$(stat b rx_reject_$r)" = 0 ] || fail "$loop: b refused $(stat b rx_reject_$r) frames as $r"
	done
	txd=$(stat a tx_data) retx=$(stat a tx_retx)
	[ "$txd" -eq $((NSEG + retx)) ] ||
		fail "$loop: a sent $txd DATA frames, expected $NSEG segments + $retx retransmissions"
	[ "$(stat b rx_data)" -ge "$NSEG" ] || fail "$loop: b received $(stat b rx_data) DATA frames, fewer than $NSEG"
	# net_memif copies every frame into its shared ring: payloads go from the app's buffer
	grep -q "DATA payloads sent from the app's buffer" "$WORK/dp-a.log" ||
		fail "$loop: a copies DATA payloads into mbufs over memif (no zero-copy send)"
	ok "$loop loop: $MB MiB byte-exact over memif, goodput $(field "$line" goodput_gbps) Gbit/s, $txd DATA frames ($retx resent), all counted at b"
	memif_pair_stop
	rm -f "$WORK/dst"
done
