#!/usr/bin/env bash
# dataplane_memif.sh - `make bench-dataplane-memif` (also run by `make bench-dataplane`): the
# dataplane over a PMD that bypasses the kernel (issue 35): two mlf-dataplane processes, one lcore
# each, --no-huge, joined by a net_memif pair (a unix socket; no namespaces), against dpdk-testpmd
# over the same kind of pair in the same round (txonly -> rxonly, the anchor: what DPDK itself
# moves between two processes here).
# Usage: bench/dataplane_memif.sh [--gb N] [--runs R] [--seconds S] [--mtus "1500 9000"]
#                                 [--baseline BIN] [--busy] [--out FILE]
#   --gb N         size of the unpaced byte-exact transfer in GiB (default 1)
#   --runs R       rounds; the report gives median (min-max) (default 3)
#   --seconds S    testpmd's measured window, the idle and the 0.1 Gbit/s windows (default 3)
#   --mtus LIST    MTUs to measure (default "1500 9000"; the cluster configs pair / pair9k)
#   --baseline BIN another mlf-dataplane (e.g. one built from main) measured in the same rounds,
#                  alternating with build/mlf-dataplane (odd rounds baseline first)
#   --new BIN      the mlf-dataplane under test (default build/mlf-dataplane)
#   --pairs N      instead of the rounds: N pairs of unpaced transfers, baseline and this tree
#                  back to back (default loop, fresh dataplanes each), per MTU; reports the
#                  median (min-max) of the per-pair ratios new / baseline (needs --baseline)
#   --busy         also --busy-poll (unpaced only; both binaries with --baseline)
#   --out FILE     markdown report (default: stdout only)
# Per round, MTU and binary (default loop): one unpaced transfer of N GiB (byte-exact: cmp),
# goodput as the sender reports it, CPU of each dataplane from /proc/PID/stat over the transfer
# in seconds per GB (10^9 payload bytes); transfers paced at 1, 5 and 10 Gbit/s of about 1 s
# each, pacing error = reported goodput / commanded payload rate - 1; CPU of each end in % of a
# core while idle and while a 0.1 Gbit/s transfer runs (S s each).
. "$(dirname "$0")/../tests/integration/lib.sh"
GB=1
RUNS=3
SECS=3
MTUS="1500 9000"
BASE=""
NEW="$ROOT/build/mlf-dataplane"
BUSY=0
PAIRS=0
OUT=""
while [ $# -gt 0 ]; do
	case "$1" in
	--gb) GB=$2; shift 2 ;;
	--runs) RUNS=$2; shift 2 ;;
	--seconds) SECS=$2; shift 2 ;;
	--mtus) MTUS=$2; shift 2 ;;
	--baseline) BASE=$(realpath "$2"); shift 2 ;;
	--new) NEW=$(realpath "$2"); shift 2 ;;
	--busy) BUSY=1; shift ;;
	--pairs) PAIRS=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	-h|--help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "dataplane_memif.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
for v in "$GB" "$RUNS" "$SECS"; do
	[[ "$v" =~ ^[1-9][0-9]*$ ]] || { echo "dataplane_memif.sh: --gb, --runs and --seconds take positive integers" >&2; exit 2; }
done
[ "$PAIRS" = 0 ] || [ -n "$BASE" ] || { echo "dataplane_memif.sh: --pairs needs --baseline" >&2; exit 2; }
[ -z "$BASE" ] || [ -x "$BASE" ] || { echo "dataplane_memif.sh: --baseline $BASE is not an executable" >&2; exit 2; }
TESTPMD=$(command -v dpdk-testpmd || true)
[ -n "$TESTPMD" ] || echo "dataplane_memif.sh: no dpdk-testpmd (Debian package dpdk-dev): no anchor" >&2
need_dataplane
memif_begin
TCK=$(getconf CLK_TCK)
BYTES=$((GB * 1024 * 1024 * 1024))
head -c "$BYTES" /dev/urandom >"$WORK/src"

cpu_ticks() { awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }

# testpmd_anchor MTU: L2 Gbit/s that testpmd's rxonly end counts over S s while the txonly end
# sends MTU + 14 byte frames over a memif pair (each process: a main lcore and one forwarding lcore).
testpmd_anchor() {
	local mtu=$1 frame=$(($1 + 14)) mb=2176 i
	[ "$mtu" -gt 1500 ] && mb=16512
	local common=(--no-huge -m 512 --no-pci)
	local fwd=(-i --nb-cores=1 --total-num-mbufs=8192 --mbuf-size=$mb)
	rm -f "$WORK/memif.sock"
	{ sleep 2; echo start; sleep 1; echo "show port stats 0"; sleep "$SECS"; echo "show port stats 0"; echo stop; sleep 0.5; echo quit; } |
		timeout $((SECS + 30)) "$TESTPMD" "${common[@]}" --file-prefix="mlfm$$-tpr" -l 0,1 --main-lcore 1 \
			"$(memif_vdev server "$mtu")" -- "${fwd[@]}" --forward-mode=rxonly >"$WORK/tp-rx.log" 2>&1 &
	local rpid=$!
	for i in $(seq 50); do [ -S "$WORK/memif.sock" ] && break; sleep 0.1; done
	{ sleep 1; echo start; sleep $((SECS + 3)); echo stop; sleep 0.5; echo quit; } |
		timeout $((SECS + 30)) "$TESTPMD" "${common[@]}" --file-prefix="mlfm$$-tpt" -l 0,1 \
			"$(memif_vdev client "$mtu")" -- "${fwd[@]}" --forward-mode=txonly --txpkts=$frame >"$WORK/tp-tx.log" 2>&1 || true
	wait $rpid || true
	rm -rf "/var/run/dpdk/mlfm$$-tpr" "/var/run/dpdk/mlfm$$-tpt"
	# the second "show port stats" gives the rate over the S s since the first
	awk '/Rx-bps:/ { n++; if (n == 2) { printf "%.2f", $NF / 1e9; found = 1 } } END { if (!found) exit 1 }' "$WORK/tp-rx.log" ||
		echo "   testpmd anchor failed at MTU $mtu: $(grep -m2 -i 'cause\|error' "$WORK/tp-rx.log" "$WORK/tp-tx.log" | tr '\n' ' ')" >&2
}

# xfer_unpaced: "goodput cpu_a_s_per_gb cpu_b_s_per_gb retransmits" of one N GiB transfer a -> b.
xfer_unpaced() {
	local a0 b0 a1 b1 line
	timeout 600 "$XFER" recv --sock "$WORK/b.sock" --count 1 --out "$WORK/dst" --timeout 500 >"$WORK/recv" 2>&1 &
	local rpid=$!
	sleep 0.2
	a0=$(cpu_ticks "$DP_PID_a") b0=$(cpu_ticks "$DP_PID_b")
	timeout 600 "$XFER" send --sock "$WORK/a.sock" --to b --file "$WORK/src" --timeout 30 >"$WORK/send" 2>&1 ||
		{ echo "   unpaced transfer failed: $(cat "$WORK/send")" >&2; wait $rpid; return 0; }
	wait $rpid || { echo "   receiver failed: $(cat "$WORK/recv")" >&2; return 0; }
	a1=$(cpu_ticks "$DP_PID_a") b1=$(cpu_ticks "$DP_PID_b")
	cmp -s "$WORK/src" "$WORK/dst" || { echo "   transfer NOT byte-exact" >&2; rm -f "$WORK/dst"; return 0; }
	rm -f "$WORK/dst"
	line=$(grep '^xfer ' "$WORK/send")
	awk -v g="$(field "$line" goodput_gbps)" -v a=$((a1 - a0)) -v b=$((b1 - b0)) -v h="$TCK" -v n="$BYTES" \
		-v r="$(field "$line" retransmits)" 'BEGIN { printf "%.3f %.3f %.3f %d", g, a / h / (n / 1e9), b / h / (n / 1e9), r }'
}

# xfer_paced RATE: the pacing error in % of a transfer of about 1 s commanded at RATE payload Gbit/s.
xfer_paced() {
	local rate=$1 bytes line
	bytes=$(awk -v r="$rate" 'BEGIN { printf "%d", r * 1e9 / 8 }')
	timeout 120 "$XFER" recv --sock "$WORK/b.sock" --count 1 --out /dev/null --timeout 100 >/dev/null 2>&1 &
	local rpid=$!
	sleep 0.2
	timeout 120 "$XFER" send --sock "$WORK/a.sock" --to b --bytes "$bytes" --rate "$rate" --timeout 20 >"$WORK/send" 2>&1 ||
		{ echo "   transfer paced at $rate failed: $(cat "$WORK/send")" >&2; wait $rpid; return 0; }
	wait $rpid || true
	line=$(grep '^xfer ' "$WORK/send")
	awk -v g="$(field "$line" goodput_gbps)" -v r="$rate" 'BEGIN { printf "%.2f", (g / r - 1) * 100 }'
}

# cpu_window LOAD: "cpu_a% cpu_b%" of a core over S s, idle or with a transfer paced at LOAD.
cpu_window() {
	local load=$1 a0 b0 a1 b1 t0 t1 rpid="" spid=""
	if [ "$load" != idle ]; then
		local bytes; bytes=$(awk -v r="$load" -v s="$SECS" 'BEGIN { printf "%d", r * 1e9 / 8 * (s + 1) }')
		timeout 120 "$XFER" recv --sock "$WORK/b.sock" --count 1 --out /dev/null --timeout 100 >/dev/null 2>&1 &
		rpid=$!
		sleep 0.2
		timeout 120 "$XFER" send --sock "$WORK/a.sock" --to b --bytes "$bytes" --rate "$load" --timeout 20 >/dev/null 2>&1 &
		spid=$!
		sleep 0.5
	fi
	t0=$(now_ns) a0=$(cpu_ticks "$DP_PID_a") b0=$(cpu_ticks "$DP_PID_b")
	sleep "$SECS"
	t1=$(now_ns) a1=$(cpu_ticks "$DP_PID_a") b1=$(cpu_ticks "$DP_PID_b")
	[ -z "$spid" ] || wait $spid $rpid || true
	awk -v a=$((a1 - a0)) -v b=$((b1 - b0)) -v h="$TCK" -v n=$((t1 - t0)) \
		'BEGIN { printf "%.2f %.2f", a / h / (n / 1e9) * 100, b / h / (n / 1e9) * 100 }'
}

declare -A R
add() { R[$1]+=" $2"; }

# --pairs: back-to-back baseline / new unpaced transfers; ratios per pair cancel the load's drift
if [ "$PAIRS" != 0 ]; then
	echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
	for mtu in $MTUS; do
		CLUSTER="$ROOT/conf/cluster-pair.json"
		[ "$mtu" = 1500 ] || CLUSTER="$ROOT/conf/cluster-pair9k.json"
		for p in $(seq "$PAIRS"); do
			order="$BASE $NEW"
			[ $((p % 2)) = 0 ] && order="$NEW $BASE"
			for MEMIF_DP in $order; do
				memif_pair_start
				read -r g ca cb rx <<<"$(xfer_unpaced)"
				k=new; [ "$MEMIF_DP" = "$BASE" ] && k=base
				eval "${k}_g=\$g ${k}_c=\$(awk -v a=\"\$ca\" -v b=\"\$cb\" 'BEGIN { print a + b }')"
				memif_pair_stop
			done
			rg=$(awk -v a="$new_g" -v b="$base_g" 'BEGIN { if (a != "" && b > 0) printf "%.3f", a / b }')
			rc=$(awk -v a="$new_c" -v b="$base_c" 'BEGIN { if (a > 0 && b > 0) printf "%.3f", a / b }')
			add "pg,$mtu" "$rg"; add "pc,$mtu" "$rc"; add "bg,$mtu" "$base_g"; add "ng,$mtu" "$new_g"
			echo "   pair $p MTU $mtu: baseline $base_g Gbit/s, $base_c CPU-s/GB (both ends); new $new_g, $new_c: ratios $rg, $rc" >&2
		done
	done
	{
		echo "Command: \`bench/dataplane_memif.sh --gb $GB --pairs $PAIRS --mtus \"$MTUS\" --baseline $BASE\`, $(date -u +%Y-%m-%d),"
		echo "$(nproc) cores shared with other work, load average at the end $(cut -d' ' -f1 /proc/loadavg). $PAIRS pairs per MTU of unpaced"
		echo "$GB GiB byte-exact transfers over a memif pair, the baseline and $NEW back to back (order"
		echo "alternating), default loops, fresh dataplanes for each; median (min-max) over the pairs."
		echo
		echo "| MTU | baseline goodput | new goodput | goodput new / baseline (per pair) | CPU-s per GB new / baseline (both ends, per pair) |"
		echo "|---|---|---|---|---|"
		for mtu in $MTUS; do
			echo "| $mtu | $(stat3 %.2f -- ${R[bg,$mtu]:-}) | $(stat3 %.2f -- ${R[ng,$mtu]:-}) | $(stat3 %.3f -- ${R[pg,$mtu]:-}) | $(stat3 %.3f -- ${R[pc,$mtu]:-}) |"
		done
	} | if [ -n "$OUT" ]; then tee "$OUT"; else cat; fi
	exit 0
fi
BINS="new"
[ -n "$BASE" ] && BINS="base new"
if [ $BUSY = 1 ]; then BINS="$BINS busy"; [ -n "$BASE" ] && BINS="$BINS basebusy"; fi
echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for run in $(seq "$RUNS"); do
	order=$BINS
	# alternate: even rounds run the list backwards
	[ $((run % 2)) = 0 ] && order=$(echo "$BINS" | tr ' ' '\n' | tac | tr '\n' ' ')
	for mtu in $MTUS; do
		CLUSTER="$ROOT/conf/cluster-pair.json"
		[ "$mtu" = 1500 ] || CLUSTER="$ROOT/conf/cluster-pair9k.json"
		if [ -n "$TESTPMD" ]; then
			tp=$(testpmd_anchor "$mtu")
			add "tp,$mtu" "$tp"
			echo "   run $run MTU $mtu: testpmd txonly -> rxonly $tp Gbit/s L2" >&2
		fi
		for bin in $order; do
			MEMIF_DP=$NEW args=()
			case $bin in base*) MEMIF_DP=$BASE ;; esac
			case $bin in *busy) args=(--busy-poll) ;; esac
			memif_pair_start "${args[@]}"
			read -r g ca cb rx <<<"$(xfer_unpaced)"
			add "$bin,$mtu,g" "$g"; add "$bin,$mtu,ca" "$ca"; add "$bin,$mtu,cb" "$cb"; add "$bin,$mtu,rx" "$rx"
			msg="unpaced ${g:-failed} Gbit/s, CPU s/GB $ca / $cb, $rx retransmits"
			if [[ $bin != *busy ]]; then
				for rate in 1 5 10; do
					e=$(xfer_paced $rate); add "$bin,$mtu,p$rate" "$e"; msg+="; paced $rate: ${e:-failed}%"
				done
				for load in idle 0.1; do
					read -r ca cb <<<"$(cpu_window $load)"
					add "$bin,$mtu,$load,a" "$ca"; add "$bin,$mtu,$load,b" "$cb"; msg+="; $load CPU $ca% / $cb%"
				done
			fi
			echo "   run $run MTU $mtu $bin: $msg" >&2
			memif_pair_stop
		done
	done
done

# ratio MEDIAN_A MEDIAN_B
med() { printf '%s\n' $1 | awk 'NF' | sort -g | awk '{ v[++n] = $1 } END { if (n) print (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "n/a"; else printf "%.3f", a / b }'; }
name() { case $1 in base) echo "baseline" ;; basebusy) echo "baseline, --busy-poll" ;; new) echo "this tree" ;; busy) echo "this tree, --busy-poll" ;; esac; }
report() {
	echo "Command: \`bench/dataplane_memif.sh --gb $GB --runs $RUNS --seconds $SECS --mtus \"$MTUS\"${BASE:+ --baseline $BASE}$([ $BUSY = 1 ] && echo " --busy")\`"
	echo "(part of \`make bench-dataplane\`), $(date -u +%Y-%m-%d), $(nproc) cores shared with other work, load average"
	echo "at the end $(cut -d' ' -f1 /proc/loadavg). Two mlf-dataplane processes (lcores 0 and 1, --no-huge) joined by a"
	echo "net_memif pair; anchor: dpdk-testpmd txonly -> rxonly over the same kind of pair in the same round"
	echo "(L2 Gbit/s of MTU + 14 byte frames counted by the rxonly end over $SECS s). Median (min-max) of $RUNS rounds."
	echo "Goodput: payload of a $GB GiB byte-exact transfer over the sender-reported time; CPU: utime + stime"
	echo "of each dataplane from /proc over the transfer, seconds per 10^9 payload bytes; pacing error:"
	echo "sender-reported goodput of a ~1 s transfer against its commanded payload rate; idle and 0.1"
	echo "Gbit/s: % of a core over $SECS s.${BASE:+ Baseline: $BASE, alternating with $NEW.}"
	echo
	echo "| MTU | dataplane | testpmd L2 | goodput Gbit/s | / testpmd | sender / receiver CPU-s per GB | retransmits | pacing error 1 / 5 / 10 Gbit/s | idle CPU % (a / b) | 0.1 Gbit/s CPU % (a / b) |"
	echo "|---|---|---|---|---|---|---|---|---|---|"
	for mtu in $MTUS; do
		for bin in $BINS; do
			local tp g p=""
			tp=$(med "${R[tp,$mtu]:-}") g=$(med "${R[$bin,$mtu,g]:-}")
			if [[ $bin != *busy ]]; then
				p="$(stat3 %+.2f -- ${R[$bin,$mtu,p1]:-}) / $(stat3 %+.2f -- ${R[$bin,$mtu,p5]:-}) / $(stat3 %+.2f -- ${R[$bin,$mtu,p10]:-})"
				i="$(stat3 %.2f -- ${R[$bin,$mtu,idle,a]:-}) / $(stat3 %.2f -- ${R[$bin,$mtu,idle,b]:-})"
				s="$(stat3 %.2f -- ${R[$bin,$mtu,0.1,a]:-}) / $(stat3 %.2f -- ${R[$bin,$mtu,0.1,b]:-})"
			else p="-" i="-" s="-"; fi
			echo "| $mtu | $(name $bin) | $(stat3 %.2f -- ${R[tp,$mtu]:-}) | $(stat3 %.2f -- ${R[$bin,$mtu,g]:-}) | $(ratio "$g" "$tp") | $(stat3 %.2f -- ${R[$bin,$mtu,ca]:-}) / $(stat3 %.2f -- ${R[$bin,$mtu,cb]:-}) | $(stat3 %g -- ${R[$bin,$mtu,rx]:-}) | $p | $i | $s |"
		done
	done
}
if [ -n "$OUT" ]; then report | tee "$OUT"; else report; fi
