#!/usr/bin/env bash
# tail_repair.sh - `make bench-tail-repair`: a Table 2 N3 leg (a ~52 KB update commanded at the
# top link rate for its length, then a pause) over a link that carries a tenth of that, with the
# way back quiet or congested, for this tree's dataplane and, with --baseline, an older one in
# the same run. What it measures: the sender's retransmissions (segments resent, of 36) and rate
# cuts, and the time from the send to the sender learning completion (docs/dataplane.md "Loss
# response", "Tail repairs").
# Usage: bench/tail_repair.sh [--runs R] [--legs N] [--baseline DATAPLANE] [--out FILE]
#   --runs R       rounds of every (case, dataplane) (default 3); median and min-max over them
#   --legs N       legs per round, one after another (default 5)
#   --baseline D   also run every case with the mlf-dataplane binary D (e.g. a build of an older
#                  commit), alternating with this tree's in each round
#   --link G       the slow link, Gbit/s (default 0.001: N3's low rate)
#   --cmd G        the commanded rate, Gbit/s (default 0.01: N3's top rate)
#   --out FILE     markdown report (default: stdout only)
# Cases, on conf/cluster-pair.json (a -> b): "quiet": b's downlink shaped to --link, nothing else
# runs; "busy way back": a's downlink shaped to --link too, and b sends a an unpaced background
# transfer the whole time, so a's downlink queue overflows and b's SACKs to a are lost, as on a
# Table 2 N3 server's uplink busy with model copies.
. "$(dirname "$0")/../tests/integration/lib.sh"
RUNS=3
LEGS=5
BASE=""
LINK=0.001
CMD=0.01
BYTES=51912
OUT=""
while [ $# -gt 0 ]; do
	case "$1" in
	--runs) RUNS=$2; shift 2 ;;
	--legs) LEGS=$2; shift 2 ;;
	--baseline) BASE=$2; shift 2 ;;
	--link) LINK=$2; shift 2 ;;
	--cmd) CMD=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	-h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "tail_repair.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "tail_repair.sh needs root (network namespaces)" >&2; exit 1; }
[[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || { echo "tail_repair.sh: --runs must be a positive integer" >&2; exit 2; }
[[ "$LEGS" =~ ^[1-9][0-9]*$ ]] || { echo "tail_repair.sh: --legs must be a positive integer" >&2; exit 2; }
for g in "$LINK" "$CMD"; do
	awk -v r="$g" 'BEGIN { exit !(r + 0 > 0 && r + 0 <= 10) }' ||
		{ echo "tail_repair.sh: '$g' is not a rate in (0, 10] Gbit/s" >&2; exit 2; }
done
[ -z "$BASE" ] || [ -x "$BASE" ] || { echo "tail_repair.sh: --baseline $BASE is not an executable" >&2; exit 2; }
CLUSTER="$ROOT/conf/cluster-pair.json"
need_dataplane
tb_begin
MS=$(awk -v b="$BYTES" -v r="$CMD" 'BEGIN { printf "%d", b * 8 / (r * 1e9) * 1000 + 1 }')

# legs: LEGS transfers a -> b, one after another; prints "retransmits cuts ms" per leg
legs() {
	local i rp t0 t1 line
	for i in $(seq "$LEGS"); do
		timeout 60 "$XFER" recv --sock "$(sock b)" --count 1 --out /dev/null --timeout 50 >/dev/null 2>&1 &
		rp=$!
		sleep 0.2
		t0=$(now_ns)
		timeout 60 "$XFER" send --sock "$(sock a)" --to b --bytes "$BYTES" --steps "0:$CMD,$MS:0" \
			--timeout 20 >"$WORK/send" 2>&1 || fail "leg $i failed: $(cat "$WORK/send")"
		t1=$(now_ns)
		wait "$rp" || fail "receiver of leg $i failed"
		sleep 0.1
		line=$(grep ' complete: ' "$WORK/dp-a.log" | grep ' to b ' | tail -1)
		[ -n "$line" ] || fail "no complete line in a's log"
		echo "$(sed -n 's/.* \([0-9]*\) retransmits, \([0-9]*\) rate cuts.*/\1 \2/p' <<<"$line") $(((t1 - t0) / 1000000))"
		sleep 0.5
	done
}

# one CASE WHICH: a round of LEGS legs; appends to X/C/T[CASE,WHICH]
declare -A X C T
one() {
	local case=$1 which=$2 bg="" x c t
	"$TB" shape "$CLUSTER" b down "$LINK" >/dev/null 2>&1
	if [ "$case" = busy ]; then "$TB" shape "$CLUSTER" a down "$LINK"; else "$TB" shape "$CLUSTER" a down 10; fi >/dev/null 2>&1
	if [ "$which" = baseline ]; then MLF_DATAPLANE=$BASE dp_start a; MLF_DATAPLANE=$BASE dp_start b
	else dp_start a; dp_start b; fi
	sleep 1
	if [ "$case" = busy ]; then
		timeout 300 "$XFER" recv --sock "$(sock a)" --count 1 --out /dev/null --chan 5 --timeout 280 >/dev/null 2>&1 &
		bg=$!
		sleep 0.2
		timeout 300 "$XFER" send --sock "$(sock b)" --to a --bytes 1000000000 --chan 5 --timeout 20 >/dev/null 2>&1 &
		sleep 1
	fi
	while read -r x c t; do
		X[$case,$which]+=" $x" C[$case,$which]+=" $c" T[$case,$which]+=" $t"
		echo "   $which, $case way back: $x retransmits, $c rate cuts, $t ms" >&2
	done < <(legs)
	dp_stop a b
	if [ -n "$bg" ]; then kill "$bg" 2>/dev/null || true; wait "$bg" 2>/dev/null || true; fi
	return 0
}

WHICH="this"
[ -z "$BASE" ] || WHICH="baseline this"
echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for run in $(seq "$RUNS"); do
	for case in quiet busy; do
		for which in $WHICH; do
			echo "run $run" >&2
			one "$case" "$which"
		done
	done
done

report() {
	local ideal
	ideal=$(awk -v b="$BYTES" -v l="$LINK" 'BEGIN { printf "%d", b * 1.057 * 8 / (l * 1e9) * 1000 }')
	echo "Command: \`bench/tail_repair.sh --runs $RUNS --legs $LEGS --link $LINK --cmd $CMD${BASE:+ --baseline $BASE}\`,"
	echo "$(date -u +%Y-%m-%d), $(nproc) cores, conf/cluster-pair.json, load average at start $(cut -d' ' -f1 /proc/loadavg)."
	echo "Legs of $BYTES bytes (36 segments) commanded at $CMD Gbit/s for $MS ms, then a pause, a -> b; b's downlink"
	echo "shaped to $LINK Gbit/s (the leg alone needs about $ideal ms there). Busy way back: a's downlink shaped"
	echo "to $LINK Gbit/s as well and filled by an unpaced b -> a transfer. Per leg: segments resent, rate cuts,"
	echo "time from the send to the sender's completion; median (min-max) over $RUNS rounds x $LEGS legs."
	echo
	echo "| way back | dataplane | retransmits | rate cuts | ms to completion |"
	echo "|---|---|---|---|---|"
	for case in quiet busy; do
		for which in $WHICH; do
			echo "| $case | $which | $(stat3 ${X[$case,$which]}) | $(stat3 ${C[$case,$which]}) | $(stat3 ${T[$case,$which]}) |"
		done
	done
}
report
[ -z "$OUT" ] || report >"$OUT"
