#!/usr/bin/env bash
# loss_pacing.sh - `make bench-loss-pacing`: what frame loss does to a paced transfer under the
# dataplane's loss response (docs/dataplane.md "Loss response"), which cuts the pacing rate for
# congestion (round trips rising, losses in bursts) and not for random loss. The fault
# injector's random loss (`--fault tx_drop=P`, docs/dataplane.md) on conf/cluster-pair.json
# (a -> b, unshaped: no queue ever overflows, every loss is the injector's) is not congestion;
# with --fall a link that falls from the commanded rate to a tenth of it is.
# Usage: bench/loss_pacing.sh [--runs R] [--seconds S] [--rates LIST] [--drops LIST]
#                             [--fall] [--baseline BIN] [--out FILE]
#   --runs R        rounds of every case (default 3); the report gives median and min-max
#   --seconds S     length of each transfer at its commanded rate (default 3)
#   --rates LIST    commanded payload rates, Gbit/s (default 0.01,0.1,0.5: 0.01 is Table 2's top link)
#   --drops LIST    drop probabilities of a's outgoing frames (default 0,0.001,0.01,0.05)
#   --fall          also: a transfer paced at 0.009 Gbit/s for S s over b's downlink shaped to
#                   0.01 Gbit/s (tbf), which falls to 0.001 Gbit/s S/3 s after the start
#   --baseline BIN  also run every case with the mlf-dataplane BIN (e.g. one built from main),
#                   alternating with this build in each round
#   --out FILE      markdown report (default: stdout only)
# Per case and round: both dataplanes start (a's with `--fault tx_drop=P`); one transfer of
# rate x S bytes paced at the rate; its goodput is bytes over the time from its first frame to
# its completion (mlf-xfer's goodput_gbps), reported as a fraction of the commanded rate,
# with the sender's retransmissions and rate cuts.
. "$(dirname "$0")/../tests/integration/lib.sh"
RUNS=3
SECS=3
RATES="0.01,0.1,0.5"
DROPS="0,0.001,0.01,0.05"
OUT=""
FALL=0
BASE=""
while [ $# -gt 0 ]; do
	case "$1" in
	--runs) RUNS=$2; shift 2 ;;
	--seconds) SECS=$2; shift 2 ;;
	--rates) RATES=$2; shift 2 ;;
	--drops) DROPS=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--fall) FALL=1; shift ;;
	--baseline) BASE=$2; shift 2 ;;
	-h|--help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "loss_pacing.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "loss_pacing.sh needs root (network namespaces)" >&2; exit 1; }
[[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || { echo "loss_pacing.sh: --runs must be a positive integer" >&2; exit 2; }
[[ "$SECS" =~ ^[1-9][0-9]*$ ]] || { echo "loss_pacing.sh: --seconds must be a positive integer" >&2; exit 2; }
for r in ${RATES//,/ }; do
	awk -v r="$r" 'BEGIN { exit !(r + 0 > 0 && r + 0 <= 10) }' ||
		{ echo "loss_pacing.sh: --rates: '$r' is not a rate in (0, 10] Gbit/s" >&2; exit 2; }
done
for d in ${DROPS//,/ }; do
	awk -v d="$d" 'BEGIN { exit !(d ~ /^[0-9.]+$/ && d + 0 >= 0 && d + 0 < 1) }' ||
		{ echo "loss_pacing.sh: --drops: '$d' is not a probability in [0, 1)" >&2; exit 2; }
done
[ -z "$BASE" ] || [ -x "$BASE" ] || { echo "loss_pacing.sh: --baseline $BASE is not an executable" >&2; exit 2; }
CLUSTER="$ROOT/conf/cluster-pair.json"
need_dataplane
tb_begin --unshaped

# one RATE DROP [FALL]: prints "goodput_fraction retransmits cuts"; with FALL, b's downlink
# falls to 0.001 Gbit/s a third of the way through the transfer's planned time
one() {
	local rate=$1 drop=$2 fall=${3:-} bytes rpid spid line g
	bytes=$(awk -v r="$rate" -v s="$SECS" 'BEGIN { printf "%d", r * 1e9 / 8 * s }')
	timeout $((SECS * 40 + 30)) "$XFER" recv --sock "$(sock b)" --count 1 --out /dev/null \
		--timeout $((SECS * 40 + 20)) >/dev/null 2>&1 &
	rpid=$!
	sleep 0.2
	timeout $((SECS * 40 + 30)) "$XFER" send --sock "$(sock a)" --to b --bytes "$bytes" \
		--rate "$rate" --timeout 20 >"$WORK/send" 2>&1 &
	spid=$!
	if [ -n "$fall" ]; then
		sleep "$(awk -v s="$SECS" 'BEGIN { print s / 3 }')"
		"$TB" shape "$CLUSTER" b down 0.001 >/dev/null
	fi
	wait "$spid" || fail "transfer paced at $rate Gbit/s with drop $drop${fall:+ (falling link)} failed: $(cat "$WORK/send")"
	wait "$rpid" || fail "receiver of the $rate / $drop transfer failed"
	sleep 0.1
	line=$(grep ' complete: ' "$WORK/dp-a.log" | tail -1)
	[ -n "$line" ] || fail "no complete line in a's log"
	# goodput from mlf-xfer: bytes over first frame to completion, to the ns (the log's
	# figure has three decimals of Gbit/s: 10% steps at 0.01 Gbit/s)
	g=$(field "$(grep '^xfer ' "$WORK/send")" goodput_gbps)
	echo "$(awk -v g="$g" -v r="$rate" 'BEGIN { printf "%.3f", g / r }') $(sed -n 's/.* \([0-9]*\) retransmits, \([0-9]*\) rate cuts.*/\1 \2/p' <<<"$line")"
}

# start WHICH [DATAPLANE-ARGS of a]: both dataplanes of this build or of the baseline
start() {
	local which=$1; shift
	if [ "$which" = baseline ]; then MLF_DATAPLANE=$BASE dp_start a "$@"; MLF_DATAPLANE=$BASE dp_start b
	else dp_start a "$@"; dp_start b; fi
}

declare -A G X C
WHICH="this"
[ -z "$BASE" ] || WHICH="baseline this"
echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for run in $(seq "$RUNS"); do
	for drop in ${DROPS//,/ }; do
		for which in $WHICH; do
			if [ "$drop" = 0 ]; then start "$which"; else start "$which" --fault "tx_drop=$drop"; fi
			sleep 1
			for rate in ${RATES//,/ }; do
				read -r g x c <<<"$(one "$rate" "$drop")"
				G[$which,$rate,$drop]+=" $g" X[$which,$rate,$drop]+=" $x" C[$which,$rate,$drop]+=" $c"
				echo "   run $run $which rate $rate drop $drop: goodput $g of the rate, $x retransmits, $c rate cuts" >&2
			done
			dp_stop a b
		done
	done
	[ "$FALL" = 1 ] || continue
	for which in $WHICH; do
		"$TB" shape "$CLUSTER" b down 0.01 >/dev/null
		start "$which"
		sleep 1
		read -r g x c <<<"$(one 0.009 0 fall)"
		G[$which,fall]+=" $g" X[$which,fall]+=" $x" C[$which,fall]+=" $c"
		echo "   run $run $which 0.009 over a link falling 0.01 -> 0.001: goodput $g of the rate, $x retransmits, $c rate cuts" >&2
		dp_stop a b
		"$TB" shape "$CLUSTER" b down 0 >/dev/null
	done
done

report() {
	echo "Command: \`bench/loss_pacing.sh --runs $RUNS --seconds $SECS --rates $RATES --drops $DROPS${FALL/#1/ --fall}${BASE:+ --baseline $BASE}\`, $(date -u +%Y-%m-%d),"
	echo "$(nproc) cores, conf/cluster-pair.json unshaped, load average at start $(cut -d' ' -f1 /proc/loadavg)."
	echo "One transfer of rate x $SECS s of payload, paced at the rate, a's frames dropped at random with"
	echo "probability P (\`--fault tx_drop=P\`). Goodput: the sender's bytes over first frame to completion,"
	echo "as a fraction of the commanded rate; median (min-max) of $RUNS rounds.${BASE:+ Dataplane: this build and the baseline $BASE, alternating.}"
	[ "$FALL" = 0 ] || echo "Falling link: b's downlink shaped to 0.01 Gbit/s (tbf, 50 ms queue) falls to 0.001 Gbit/s $(awk -v s="$SECS" 'BEGIN { print s / 3 }') s after a transfer paced at 0.009 Gbit/s ($SECS s of payload) starts (goodput against 0.009)."
	echo
	echo "| dataplane | rate Gbit/s | drop | goodput / rate | retransmits | rate cuts |"
	echo "|---|---|---|---|---|---|"
	for rate in ${RATES//,/ }; do
		for drop in ${DROPS//,/ }; do
			for which in $WHICH; do
				echo "| $which | $rate | $drop | $(stat3 ${G[$which,$rate,$drop]}) | $(stat3 ${X[$which,$rate,$drop]}) | $(stat3 ${C[$which,$rate,$drop]}) |"
			done
		done
	done
	[ "$FALL" = 1 ] || return 0
	for which in $WHICH; do
		echo "| $which | 0.009, link 0.01 falls to 0.001 | 0 | $(stat3 ${G[$which,fall]}) | $(stat3 ${X[$which,fall]}) | $(stat3 ${C[$which,fall]}) |"
	done
}
report
[ -z "$OUT" ] || report >"$OUT"
