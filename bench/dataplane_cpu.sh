#!/usr/bin/env bash
# dataplane_cpu.sh - `make bench-dataplane-cpu` (also run by `make bench-dataplane`): the CPU a
# dataplane costs (CPU proportional to traffic; docs/dataplane.md), frugal sleeps (the default) against the
# earlier back-off loop (`--sleep backoff`) in the same run, on conf/cluster-pair.json (a -> b).
# With --frame-auth it compares untagged frames with frame tags (docs/security.md "Frames": the
# same cluster with a key_file, frame_auth on) instead of the two sleep policies (docs/security.md "Frames").
# Usage: bench/dataplane_cpu.sh [--runs R] [--seconds S] [--cluster C] [--frame-auth [--frame-mac M]] [--out FILE]
#   --runs R     rounds of every measurement; the report gives median and min-max (default 3)
#   --seconds S  length of the idle and paced measurements (default 6)
#   --cluster C  a two-host cluster config with hosts a and b (default conf/cluster-pair.json;
#                conf/cluster-pair9k.json for MTU 9000)
#   --frame-mac M  the tagged cluster's "frame_mac" (aes256-gcm, the default, or chacha20-poly1305)
#   --out FILE   markdown report (default: stdout only)
# Per round and policy: both dataplanes idle for S s; one transfer paced at 0.1 Gbit/s and one at
# 1 Gbit/s for S s each; one unpaced 512 MiB transfer. CPU is utime+stime of each dataplane from
# /proc/PID/stat over the interval, in % of one core; the paced rate is measured at b's eth0 rx
# counters (mlf-rxrate, L2 bytes) and compared with the L2 rate the payload rate implies.
. "$(dirname "$0")/../tests/integration/lib.sh"
RUNS=3
SECS=6
OUT=""
POLICIES="backoff frugal"
COL=sleep
ARGS=""
CLUSTER="$ROOT/conf/cluster-pair.json"
while [ $# -gt 0 ]; do
	case "$1" in
	--runs) RUNS=$2; shift 2 ;;
	--seconds) SECS=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--cluster) CLUSTER=$(realpath "$2"); ARGS+=" --cluster $2"; shift 2 ;;
	--frame-auth) POLICIES="untagged tagged" COL=frames ARGS+=" --frame-auth"; shift ;;
	--frame-mac) FRAME_MAC=$2; ARGS+=" --frame-mac $2"; shift 2 ;;
	-h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "dataplane_cpu.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "dataplane_cpu.sh needs root (network namespaces)" >&2; exit 1; }
[[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || { echo "dataplane_cpu.sh: --runs must be a positive integer" >&2; exit 2; }
[[ "$SECS" =~ ^[1-9][0-9]*$ ]] || { echo "dataplane_cpu.sh: --seconds must be a positive integer" >&2; exit 2; }
[ -f "$CLUSTER" ] || { echo "dataplane_cpu.sh: no cluster config $CLUSTER" >&2; exit 2; }
need_dataplane
tb_begin --unshaped
TCK=$(getconf CLK_TCK)
MTU=$(sed -n 's/.*"mtu" *: *\([0-9]*\).*/\1/p' "$CLUSTER")
L2=$(awk -v m="$MTU" 'BEGIN { printf "%.6f", (m + 14) / (m - 68) }')

cpu_ticks() { awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }
# pct T0 T1 NS: CPU % of one core for ticks T0 -> T1 over NS nanoseconds
pct() { awk -v a="$1" -v b="$2" -v n="$3" -v h="$TCK" 'BEGIN { printf "%.2f", (b - a) / h / (n / 1e9) * 100 }'; }

# measure LOAD: prints "cpu_a cpu_b rate_l2" for LOAD = idle | 0.1 | 1 | full
measure() {
	local load=$1 a0 b0 a1 b1 t0 t1 bytes rpid rate=""
	if [ "$load" != idle ]; then
		if [ "$load" = full ]; then bytes=$((512 * 1024 * 1024)); else
			bytes=$(awk -v r="$load" -v s="$SECS" 'BEGIN { printf "%d", r * 1e9 / 8 * s }'); fi
		timeout 120 "$XFER" recv --sock "$(sock b)" --count 1 --out /dev/null --timeout 100 >/dev/null 2>&1 &
		rpid=$!
		sleep 0.2
		[ "$load" = full ] || rxrate_start b "$WORK/rate"
	fi
	t0=$(now_ns) a0=$(cpu_ticks "$DP_PID_a") b0=$(cpu_ticks "$DP_PID_b")
	if [ "$load" = idle ]; then
		sleep "$SECS"
	elif [ "$load" = full ]; then
		timeout 120 "$XFER" send --sock "$(sock a)" --to b --bytes "$bytes" --timeout 20 >"$WORK/send" 2>&1 ||
			fail "unpaced transfer failed: $(cat "$WORK/send")"
	else
		timeout 120 "$XFER" send --sock "$(sock a)" --to b --bytes "$bytes" --rate "$load" --timeout 20 >"$WORK/send" 2>&1 ||
			fail "transfer paced at $load Gbit/s failed: $(cat "$WORK/send")"
	fi
	t1=$(now_ns) a1=$(cpu_ticks "$DP_PID_a") b1=$(cpu_ticks "$DP_PID_b")
	if [ "$load" != idle ]; then
		wait "$rpid" || fail "receiver of the $load transfer failed"
		if [ "$load" = full ]; then rate=$(field "$(grep '^xfer ' "$WORK/send")" goodput_gbps)
		else rxrate_stop; rate=$(field "$(cat "$WORK/rate")" gbps); fi
	fi
	echo "$(pct "$a0" "$a1" $((t1 - t0))) $(pct "$b0" "$b1" $((t1 - t0))) ${rate:-}"
}


declare -A R
LOADS="idle 0.1 1 full"
PLAIN=$CLUSTER
if [ "$POLICIES" = "untagged tagged" ]; then
	# the same cluster (same name, namespaces and sockets) with a key: frames tagged
	"$ROOT/tools/mlf-keygen" "$WORK/bench.key" >/dev/null || fail "mlf-keygen"
	python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); c.pop("insecure", None); c.update(key_file=sys.argv[2], frame_auth=True, frame_mac=sys.argv[4]); json.dump(c, open(sys.argv[3], "w"), indent=1)' \
		"$PLAIN" "$WORK/bench.key" "$WORK/keyed.json" "${FRAME_MAC:-aes256-gcm}" || fail "cannot write the keyed cluster config"
fi
# start_pair POLICY: both dataplanes for one sleep policy, or untagged / tagged frames.
start_pair() {
	case "$1" in
	untagged) CLUSTER=$PLAIN; dp_start a; dp_start b ;;
	tagged) CLUSTER=$WORK/keyed.json; dp_start a; dp_start b
		grep -q "frames tagged (frame_auth, frame_mac ${FRAME_MAC:-aes256-gcm})" "$WORK/dp-a.log" ||
			fail "a's dataplane does not tag its frames with ${FRAME_MAC:-aes256-gcm}" ;;
	*) CLUSTER=$PLAIN; dp_start a --sleep "$1"; dp_start b --sleep "$1" ;;
	esac
}
echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for run in $(seq "$RUNS"); do
	for pol in $POLICIES; do
		start_pair "$pol"
		sleep 1
		for load in $LOADS; do
			read -r ca cb rt <<<"$(measure "$load")"
			R[$pol,$load,a]+=" $ca" R[$pol,$load,b]+=" $cb" R[$pol,$load,r]+=" ${rt:-}"
			echo "   run $run $pol $load: sender $ca%, receiver $cb% of a core${rt:+, rate $rt Gbit/s}" >&2
		done
		dp_stop a b
	done
done

report() {
	echo "Command: \`bench/dataplane_cpu.sh --runs $RUNS --seconds $SECS$ARGS\` (part of \`make bench-dataplane\`), $(date -u +%Y-%m-%d),"
	echo "$(nproc) cores, ${PLAIN#"$ROOT"/} unshaped, MTU $MTU, load average at start $(cut -d' ' -f1 /proc/loadavg)."
	echo "CPU in % of one core (utime+stime from /proc/PID/stat over the interval), median (min-max) of $RUNS rounds."
	echo "Rate: paced rows the L2 rate at b's eth0 rx counters against the commanded rate x $L2 (headers;"
	echo "tagged frames: x (MTU + 14) / (MTU - 104), 36 bytes of tag more per frame);"
	echo "the full-speed row is the sender-reported payload goodput of a 512 MiB transfer."
	if [ "$COL" = frames ]; then echo "Tagged frames: \"frame_mac\": \"${FRAME_MAC:-aes256-gcm}\" (docs/security.md \"Frames\")."; fi
	echo
	echo "| load | $COL | sender CPU % | receiver CPU % | rate Gbit/s | pacing error |"
	echo "|---|---|---|---|---|---|"
	for load in $LOADS; do
		for pol in $POLICIES; do
			local r err="" med
			r=$(stat3 %.2f -- ${R[$pol,$load,r]:-})
			if [ "$load" != idle ] && [ "$load" != full ]; then
				med=$(printf '%s\n' ${R[$pol,$load,r]} | sort -g | awk '{ v[++n] = $1 } END { print (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }')
				local f=$L2 # tagged frames carry 36 more header bytes per segment (WIRE_TAG_LEN)
				[ "$pol" = tagged ] && f=$(awk -v m="$MTU" 'BEGIN { printf "%.6f", (m + 14) / (m - 104) }')
				err=$(awk -v m="$med" -v c="$load" -v f="$f" 'BEGIN { if (m == "") print "n/a"; else printf "%+.2f%%", (m / (c * f) - 1) * 100 }')
			fi
			[ "$load" = idle ] && r="-"
			echo "| $load | $pol | $(stat3 %.2f -- ${R[$pol,$load,a]}) | $(stat3 %.2f -- ${R[$pol,$load,b]}) | $r | ${err:--} |"
		done
	done
}
if [ -n "$OUT" ]; then report | tee "$OUT"; else report; fi
