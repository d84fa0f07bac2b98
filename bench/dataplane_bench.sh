#!/usr/bin/env bash
# dataplane_bench.sh - `make bench-dataplane`: dataplane goodput vs a bare DPDK tx loop (alone, and with
# a bare DPDK rx loop at b) and iperf3 on the same unshaped veth pair at MTU 1500 and 9000, pacing
# error, CPU seconds per GB.
# Usage: bench/dataplane_bench.sh [--gb N] [--seconds S] [--runs R] [--out FILE]
#   --gb N       size of the dataplane transfer in GiB (default 1)
#   --seconds S  duration of the tx loop and iperf3 runs (default 5)
#   --runs R     rounds of every measurement; the report gives medians (default 3)
#   --out FILE   where the markdown report goes (default docs/results/dataplane.md)
# Every rate is measured outside the process under test, from b's eth0 rx counters (mlf-rxrate),
# except the dataplane's goodput, which is payload bytes that arrived byte-exact over the
# sender-reported transfer time (checked with cmp).
. "$(dirname "$0")/../tests/integration/lib.sh"
GB=1
SECS=5
RUNS=3
OUT="$ROOT/docs/results/dataplane.md"
while [ $# -gt 0 ]; do
	case "$1" in
	--gb) GB=$2; shift 2 ;;
	--seconds) SECS=$2; shift 2 ;;
	--runs) RUNS=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	-h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "dataplane_bench.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "bench-dataplane needs root (network namespaces)" >&2; exit 1; }
HAVE_DP=1
[ -x "$ROOT/build/mlf-dataplane" ] && [ -x "$XFER" ] || HAVE_DP=0

WORK="$(mktemp -d --tmpdir=/dev/shm)"
bench_cleanup() {
	for c in pair pair9k; do "$TB" down "$ROOT/conf/cluster-$c.json" >/dev/null 2>&1 || true; done
	rm -rf "$WORK"
}
trap bench_cleanup EXIT
if [ $HAVE_DP = 1 ]; then head -c "$((GB * 1024 * 1024 * 1024))" /dev/urandom >"$WORK/src"; fi

# cpu_ticks PID: user + system CPU time of PID in clock ticks (/proc/PID/stat fields 14 and 15).
cpu_ticks() { awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }
TCK=$(getconf CLK_TCK)

# measure_txloop: L2 Gbit/s of the bare tx loop a -> b, at b.
measure_txloop() {
	local eal
	mapfile -t eal < <("$TB" eal-args "$CLUSTER" a)
	rxrate_start b "$WORK/rate"
	"$TB" exec "$CLUSTER" a "$ROOT/build/mlf-txloop" "${eal[@]}" -- --cluster "$CLUSTER" --from a --to b \
		--seconds "$SECS" >"$WORK/txloop" 2>"$WORK/txloop.err" || { cat "$WORK/txloop.err" >&2; return 1; }
	rxrate_stop
	field "$(cat "$WORK/rate")" gbps
}

# measure_txrx: "l2_gbps rxloop_gbps" of the bare tx loop a -> b while a bare DPDK rx loop at b (same
# EAL args as b's dataplane) receives and frees every frame: L2 rate at b's eth0, and the rx loop's own count.
measure_txrx() {
	local eal i rpid
	mapfile -t eal < <("$TB" eal-args "$CLUSTER" b)
	"$TB" exec "$CLUSTER" b "$ROOT/build/mlf-txloop" "${eal[@]}" -- --rx --cluster "$CLUSTER" --to b \
		>"$WORK/rxloop" 2>"$WORK/rxloop.err" &
	rpid=$!
	for i in $(seq 100); do grep -q '^rxloop ready' "$WORK/rxloop" && break; sleep 0.1; done
	grep -q '^rxloop ready' "$WORK/rxloop" ||
		{ echo "bare rx loop at b did not start: $(cat "$WORK/rxloop.err")" >&2; kill -TERM $rpid; wait $rpid; return 1; }
	measure_txloop >"$WORK/txrx" || { kill -TERM $rpid; wait $rpid; return 1; }
	kill -TERM $rpid
	wait $rpid || { echo "bare rx loop at b failed: $(cat "$WORK/rxloop.err")" >&2; return 1; }
	echo "$(cat "$WORK/txrx") $(field "$(grep '^rxloop ' "$WORK/rxloop")" gbps)"
}

# measure_iperf: "goodput_gbps l2_gbps" of kernel TCP a -> b (iperf3 receiver, and rx counters at b).
measure_iperf() {
	local ip_b=$1
	"$TB" exec "$CLUSTER" b iperf3 -s -1 -D >/dev/null
	sleep 0.3
	rxrate_start b "$WORK/rate"
	timeout $((SECS + 30)) "$TB" exec "$CLUSTER" a iperf3 -c "$ip_b" -t "$SECS" -J >"$WORK/iperf.json" || true
	rxrate_stop
	echo "$(jq '.end.sum_received.bits_per_second / 1e9' "$WORK/iperf.json") $(field "$(cat "$WORK/rate")" gbps)"
}

# measure_dp: "goodput_gbps cpu_s_per_gb retransmits" of one GB-sized byte-exact transfer a -> b.
measure_dp() {
	local c0 c1 line
	timeout 300 "$XFER" recv --sock "$(sock b)" --count 1 --out "$WORK/dst" --timeout 200 >"$WORK/recv" 2>&1 &
	local rpid=$!
	sleep 0.2
	c0=$(( $(cpu_ticks "$DP_PID_a") + $(cpu_ticks "$DP_PID_b") ))
	timeout 300 "$XFER" send --sock "$(sock a)" --to b --file "$WORK/src" --timeout 30 >"$WORK/send" 2>&1 ||
		{ echo "dataplane transfer failed: $(cat "$WORK/send")" >&2; wait $rpid; return 1; }
	wait $rpid || { echo "receiver failed: $(cat "$WORK/recv")" >&2; return 1; }
	c1=$(( $(cpu_ticks "$DP_PID_a") + $(cpu_ticks "$DP_PID_b") ))
	cmp -s "$WORK/src" "$WORK/dst" || { echo "dataplane transfer NOT byte-exact" >&2; return 1; }
	rm -f "$WORK/dst"
	line=$(grep '^xfer ' "$WORK/send")
	echo "$(field "$line" goodput_gbps) $(awk -v t=$((c1 - c0)) -v h="$TCK" -v g="$GB" 'BEGIN { printf "%.2f", t / h / (g * 1.073741824) }') $(field "$line" retransmits)"
}

# measure_pacing RATE: L2 Gbit/s measured at b for a transfer commanded at RATE (about 1.5 s).
measure_pacing() {
	local rate=$1 bytes
	bytes=$(awk -v r="$rate" 'BEGIN { printf "%d", r * 1e9 / 8 * 1.5 }')
	timeout 60 "$XFER" recv --sock "$(sock b)" --count 1 --out /dev/null --timeout 30 >/dev/null 2>&1 &
	local rpid=$!
	rxrate_start b "$WORK/rate"
	timeout 60 "$XFER" send --sock "$(sock a)" --to b --bytes "$bytes" --rate "$rate" --timeout 20 >"$WORK/send" 2>&1 ||
		{ echo "paced transfer at $rate Gbit/s failed: $(cat "$WORK/send")" >&2; rxrate_stop; wait $rpid; return 1; }
	wait $rpid || true
	rxrate_stop
	field "$(cat "$WORK/rate")" gbps
}

f2() { awk -v a="$1" 'BEGIN { if (a == "") print "n/a"; else printf "%.2f", a }'; }
# median VALUES...: the median of the non-empty values (empty output when there is none).
median() { printf '%s\n' "$@" | awk 'NF' | sort -g | awk '{ v[++n] = $1 } END { if (n) print (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "n/a"; else printf "%.2f", a / b }'; }
pct() { awk -v m="$1" -v t="$2" 'BEGIN { if (m == "") print "n/a"; else printf "%+.2f%%", (m / t - 1) * 100 }'; }

ROWS=()
PACE=()
NOTES=()
for conf in pair pair9k; do
	CLUSTER="$ROOT/conf/cluster-$conf.json"
	mtu=$(sed -n 's/.*"mtu" *: *\([0-9]*\).*/\1/p' "$CLUSTER")
	ip_b=$(sed -n 's/.*"name": *"b", *"ip": *"\([0-9.]*\)".*/\1/p' "$CLUSTER")
	echo "== MTU $mtu ($conf): testbed up, unshaped" >&2
	"$TB" up "$CLUSTER" --unshaped >/dev/null 2>&1 || { echo "mlf-testbed up $CLUSTER failed" >&2; exit 1; }
	TX=() TXRX=() RXL=() IPG=() DP=() CPU=() RETX=() P1=() P5=()
	note=""
	for run in $(seq "$RUNS"); do
		TX+=("$(measure_txloop)") || exit 1
		read -r txrx rxl <<<"$(measure_txrx)" || exit 1
		TXRX+=("$txrx") RXL+=("$rxl")
		read -r ip_good ip_l2 <<<"$(measure_iperf "$ip_b")"
		IPG+=("$ip_good")
		echo "   run $run: bare tx loop ${TX[-1]} Gbit/s (L2 at b); with the bare rx loop at b $txrx Gbit/s (L2 at b), $rxl Gbit/s received by the rx loop; iperf3 TCP $ip_good Gbit/s goodput ($ip_l2 at b's rx counters)" >&2
		[ $HAVE_DP = 1 ] && [ -z "$note" ] || continue
		if ! { DP_PID_a=$("$TB" dataplane "$CLUSTER" a --log "$WORK/dp-a.log" 2>"$WORK/dp.err") &&
		       DP_PID_b=$("$TB" dataplane "$CLUSTER" b --log "$WORK/dp-b.log" 2>"$WORK/dp.err"); }; then
			why=$(grep -m1 -i 'will not\|cause' "$WORK/dp.err" || grep -m1 ERROR "$WORK/dp.err" || true)
			note="dataplane did not start at MTU $mtu: ${why:-see its log}"
			echo "   $note" >&2
			NOTES+=("$note")
			continue
		fi
		read -r dp cpu retx <<<"$(measure_dp)" || true
		DP+=("$dp") CPU+=("$cpu") RETX+=("$retx")
		P1+=("$(measure_pacing 1)") || true
		P5+=("$(measure_pacing 5)") || true
		echo "   run $run: dataplane $dp Gbit/s byte-exact goodput, $cpu CPU s/GB, $retx retransmits; pacing 1 -> ${P1[-1]}, 5 -> ${P5[-1]} Gbit/s at b" >&2
		# stop the dataplanes so that they do not share the cores with the next tx loop and iperf3
		dp_stop a b
	done
	tx=$(median "${TX[@]}") txrx=$(median "${TXRX[@]}") rxl=$(median "${RXL[@]}") ip_good=$(median "${IPG[@]}") dp=$(median "${DP[@]}") cpu=$(median "${CPU[@]}")
	retx=$(median "${RETX[@]}") p1=$(median "${P1[@]}") p5=$(median "${P5[@]}")
	ROWS+=("| $mtu | $(f2 "$dp") | $(f2 "$tx") | $(f2 "$txrx") | $(f2 "$rxl") | $(f2 "$ip_good") | $(ratio "$dp" "$tx") | $(ratio "$dp" "$txrx") | $(ratio "$dp" "$ip_good") | ${cpu:-n/a} | ${retx:-n/a} |")
	# Commanded rates are payload Gbit/s (docs/dataplane.md); b's eth0 counts L2 frames of
	# MTU + 14 bytes carrying MTU - 68 payload bytes, so the expected L2 rate is scaled by that.
	l2=$(awk -v m="$mtu" 'BEGIN { printf "%.6f", (m + 14) / (m - 68) }')
	e1=$(awk -v f="$l2" 'BEGIN { printf "%.4f", 1 * f }')
	e5=$(awk -v f="$l2" 'BEGIN { printf "%.4f", 5 * f }')
	PACE+=("| $mtu | 1 | $e1 | $(f2 "$p1") | $(pct "$p1" "$e1") |" "| $mtu | 5 | $e5 | $(f2 "$p5") | $(pct "$p5" "$e5") |")
	"$TB" down "$CLUSTER" >/dev/null 2>&1
done

{
	echo "# Dataplane benchmark (\`make bench-dataplane\`)"
	echo
	echo "Command: \`make bench-dataplane\` (= \`bench/dataplane_bench.sh --gb $GB --seconds $SECS --runs $RUNS\`), $(date -u +%Y-%m-%d), $(nproc) cores"
	echo "shared by every process (and by whatever else runs on the machine), two namespaces a -> b on one veth pair"
	echo "through a bridge, no tbf (unshaped). Rates in Gbit/s; every figure is the median of $RUNS rounds."
	echo
	echo "| MTU | dataplane goodput ($GB GiB, byte-exact) | bare DPDK tx loop (L2 at b) | bare tx loop + bare rx loop at b (L2 at b) | received by the rx loop | iperf3 TCP goodput | dataplane / tx loop (target >= 0.7) | dataplane / tx+rx loop | dataplane / iperf3 (target >= 1 at 9000) | CPU s per GB (both dataplanes) | retransmits |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|"
	printf '%s\n' "${ROWS[@]}"
	echo
	echo "Pacing: one transfer of 1.5 s at the commanded payload rate, L2 rate measured at b's eth0 rx"
	echo "counters over the active window (\`mlf-rxrate\`, 1 ms samples), compared with the L2 rate that"
	echo "payload rate implies: rate x (MTU + 14) / (MTU - 68) (Ethernet, IPv4, UDP and MLfabric headers)."
	echo
	echo "| MTU | commanded (payload) | expected L2 at b | measured L2 at b | error |"
	echo "|---|---|---|---|---|"
	printf '%s\n' "${PACE[@]}"
	echo
	echo "Two ceilings: the bare tx loop alone (no process at b, the issue's definition of the target), and"
	echo 'the same tx loop while a bare DPDK rx loop at b (`mlf-txloop --rx`, the same EAL args and'
	echo "af_packet ring as b's dataplane) receives and frees every frame; both measured at b's eth0 rx"
	echo "counters, which count what the veth delivered whether or not b's af_packet ring had room. The"
	echo "\"received by the rx loop\" column is the rx loop's own L2 count (first to last frame)."
	echo
	echo "The tx loops' and the pacing figures are L2 frame bytes (Ethernet header included); the"
	echo "dataplane's and iperf3's goodput are application payload bytes. n/a: the dataplane was not built"
	echo "or did not run (notes below)."
	echo
	echo "Kernel TCP on a veth pair moves 64 KiB GSO segments whatever the MTU, so iperf3 is not bound by"
	echo "per-frame costs the way an af_packet ring is; its figure also swings most between rounds."
	echo "Per-round figures are printed on stderr by the script."
	echo
	echo "Where the rest of the dataplane's time goes (perf at MTU 9000): both dataplanes keep a core busy."
	echo "The lone tx loop has no receiving process; the dataplane's receiver pays three copies per frame (the"
	echo "kernel into b's af_packet ring, the PMD from the ring into an mbuf, pwritev into the destination's"
	echo "memfd, whose fresh shmem pages are allocated on the way), and the sender's sendto runs the veth and"
	echo "bridge delivery into that ring (a copy of af_packet's zero-copy skb, the ring lock). The dataplane's"
	echo "own per-frame work (pacing, SACK, segment bookkeeping, parsing) is a few percent of either profile."
	for n in "${NOTES[@]}"; do echo; echo "Note: $n"; done
} >"$OUT"
cat "$OUT"
