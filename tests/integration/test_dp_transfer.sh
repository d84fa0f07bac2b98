#!/usr/bin/env bash
# test_dp_transfer.sh - a 64 MiB transfer a -> b arrives byte-exact, first on a clean path, then
# with the dataplanes' fault injection at 1% loss, 1% reordering and 1% duplication on both hosts.
. "$(dirname "$0")/lib.sh"
CLUSTER="$ROOT/conf/cluster-pair.json"
need_dataplane
tb_begin
random_file "$WORK/src" 64

# run_case NAME [DATAPLANE-ARGS]: one transfer with fresh dataplanes started with those arguments.
run_case() {
	local name=$1; shift
	dp_start a "$@"
	dp_start b "$@"
	timeout 60 "$XFER" recv --sock "$(sock b)" --count 1 --out "$WORK/dst-$name" --timeout 40 >"$WORK/recv-$name" 2>"$WORK/recv-$name.err" &
	local rpid=$!
	sleep 0.2
	timeout 60 "$XFER" send --sock "$(sock a)" --to b --file "$WORK/src" --timeout 20 >"$WORK/send-$name" 2>"$WORK/send-$name.err" ||
		fail "$name: sender reported failure: $(cat "$WORK/send-$name" "$WORK/send-$name.err")"
	wait $rpid || fail "$name: receiver reported failure: $(cat "$WORK/recv-$name" "$WORK/recv-$name.err")"
	local line; line=$(grep '^xfer ' "$WORK/send-$name")
	[ "$(field "$line" status)" = ok ] || fail "$name: sender line is not ok: $line"
	[ "$(field "$line" bytes)" = $((64 * 1024 * 1024)) ] || fail "$name: sender reports $(field "$line" bytes) bytes, sent 64 MiB"
	grep -q "^recv .*from=a .*status=ok" "$WORK/recv-$name" || fail "$name: receiver line: $(cat "$WORK/recv-$name")"
	cmp -s "$WORK/src" "$WORK/dst-$name" || fail "$name: received file differs from the sent one ($(stat -c %s "$WORK/dst-$name" 2>/dev/null || echo no) bytes)"
	[ "$(sha256sum <"$WORK/src")" = "$(sha256sum <"$WORK/dst-$name")" ] || fail "$name: sha256 differs"
	RETX=$(field "$line" retransmits)
	ok "$name: 64 MiB byte-exact, goodput $(field "$line" goodput_gbps) Gbit/s, $RETX retransmits"
	"$TB" down "$CLUSTER" >/dev/null 2>&1
	"$TB" up "$CLUSTER" >/dev/null 2>&1 || fail "re-up between cases"
}

run_case clean
run_case faults --fault rx_drop=0.01,tx_drop=0,dup=0.01,reorder=0.01
# 1% loss of ~45000 data frames (and of the SACKs) cannot be repaired without retransmissions
[ "${RETX:-0}" -gt 0 ] || fail "faults: 1% loss injected but the sender reports no retransmits"
