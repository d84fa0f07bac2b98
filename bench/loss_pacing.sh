#!/usr/bin/env bash
# loss_pacing.sh - `make bench-loss-pacing`: what random frame loss does to a paced transfer now
# that the dataplane answers loss by cutting its pacing rate (docs/dataplane.md "Loss response").
# The loss response is meant for congestion (two senders overflowing one link's queue); the
# fault injector's random loss (`--fault tx_drop=P`, docs/dataplane.md) is not congestion, and a
# rate cut there only slows the transfer. This measures by how much, on conf/cluster-pair.json
# (a -> b, unshaped: no queue ever overflows, every loss is the injector's).
# Usage: bench/loss_pacing.sh [--runs R] [--seconds S] [--rates LIST] [--drops LIST] [--out FILE]
#   --runs R      rounds of every (rate, drop) (default 3); the report gives median and min-max
#   --seconds S   length of each transfer at its commanded rate (default 3)
#   --rates LIST  commanded payload rates, Gbit/s (default 0.01,0.1,0.5: 0.01 is Table 2's top link)
#   --drops LIST  drop probabilities of a's outgoing frames (default 0,0.001,0.01,0.05)
#   --out FILE    markdown report (default: stdout only)
# Per (rate, drop) and round: both dataplanes start with a's `--fault tx_drop=P`; one transfer of
# rate x S bytes paced at the rate; its goodput is bytes over the time from its first frame to
# its completion (mlf-xfer's goodput_gbps), reported as a fraction of the commanded rate,
# with the sender's retransmissions and rate cuts.
. "$(dirname "$0")/../tests/integration/lib.sh"
RUNS=3
SECS=3
RATES="0.01,0.1,0.5"
DROPS="0,0.001,0.01,0.05"
OUT=""
while [ $# -gt 0 ]; do
	case "$1" in
	--runs) RUNS=$2; shift 2 ;;
	--seconds) SECS=$2; shift 2 ;;
	--rates) RATES=$2; shift 2 ;;
	--drops) DROPS=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	-h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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
CLUSTER="$ROOT/conf/cluster-pair.json"
need_dataplane
tb_begin --unshaped

# one RATE DROP: prints "goodput_fraction retransmits cuts"
one() {
	local rate=$1 drop=$2 bytes rpid line g
	bytes=$(awk -v r="$rate" -v s="$SECS" 'BEGIN { printf "%d", r * 1e9 / 8 * s }')
	timeout $((SECS * 40 + 30)) "$XFER" recv --sock "$(sock b)" --count 1 --out /dev/null \
		--timeout $((SECS * 40 + 20)) >/dev/null 2>&1 &
	rpid=$!
	sleep 0.2
	timeout $((SECS * 40 + 30)) "$XFER" send --sock "$(sock a)" --to b --bytes "$bytes" \
		--rate "$rate" --timeout 20 >"$WORK/send" 2>&1 ||
		fail "transfer paced at $rate Gbit/s with drop $drop failed: $(cat "$WORK/send")"
	wait "$rpid" || fail "receiver of the $rate / $drop transfer failed"
	sleep 0.1
	line=$(grep ' complete: ' "$WORK/dp-a.log" | tail -1)
	[ -n "$line" ] || fail "no complete line in a's log"
	# goodput from mlf-xfer: bytes over first frame to completion, to the ns (the log's
	# figure has three decimals of Gbit/s: 10% steps at 0.01 Gbit/s)
	g=$(field "$(grep '^xfer ' "$WORK/send")" goodput_gbps)
	echo "$(awk -v g="$g" -v r="$rate" 'BEGIN { printf "%.3f", g / r }') $(sed -n 's/.* \([0-9]*\) retransmits, \([0-9]*\) rate cuts.*/\1 \2/p' <<<"$line")"
}

declare -A G X C
echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for run in $(seq "$RUNS"); do
	for drop in ${DROPS//,/ }; do
		if [ "$drop" = 0 ]; then dp_start a; else dp_start a --fault "tx_drop=$drop"; fi
		dp_start b
		sleep 1
		for rate in ${RATES//,/ }; do
			read -r g x c <<<"$(one "$rate" "$drop")"
			G[$rate,$drop]+=" $g" X[$rate,$drop]+=" $x" C[$rate,$drop]+=" $c"
			echo "   run $run rate $rate drop $drop: goodput $g of the rate, $x retransmits, $c rate cuts" >&2
		done
		dp_stop a b
	done
done

report() {
	echo "Command: \`bench/loss_pacing.sh --runs $RUNS --seconds $SECS --rates $RATES --drops $DROPS\`, $(date -u +%Y-%m-%d),"
	echo "$(nproc) cores, conf/cluster-pair.json unshaped, load average at start $(cut -d' ' -f1 /proc/loadavg)."
	echo "One transfer of rate x $SECS s of payload, paced at the rate, a's frames dropped at random with"
	echo "probability P (\`--fault tx_drop=P\`). Goodput: the sender's bytes over first frame to completion,"
	echo "as a fraction of the commanded rate; median (min-max) of $RUNS rounds."
	echo
	echo "| rate Gbit/s | drop | goodput / rate | retransmits | rate cuts |"
	echo "|---|---|---|---|---|"
	for rate in ${RATES//,/ }; do
		for drop in ${DROPS//,/ }; do
			echo "| $rate | $drop | $(stat3 ${G[$rate,$drop]}) | $(stat3 ${X[$rate,$drop]}) | $(stat3 ${C[$rate,$drop]}) |"
		done
	done
}
report
[ -z "$OUT" ] || report >"$OUT"
