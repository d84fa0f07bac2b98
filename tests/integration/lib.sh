# tests/integration/lib.sh - shared helpers of the testbed integration tests (sourced, not run).
# Every test sets CLUSTER (a conf/*.json) and calls tb_begin; the EXIT trap tears the testbed
# down even when an assertion fails. Assertions print what was expected and what was measured.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/workdir.sh"   # work_done
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TB="$ROOT/build/mlf-testbed"
XFER="$ROOT/build/mlf-xfer"
TEST_NAME="$(basename "$0" .sh)"
WORK=""

tb_cleanup() {
	local rc=$?
	if [ $rc -ne 0 ] && [ -n "$WORK" ]; then
		for f in "$WORK"/dp-*.log; do [ -f "$f" ] && { echo "--- tail of $f"; tail -5 "$f"; }; done >&2
	fi
	[ -n "${CLUSTER:-}" ] && "$TB" down "$CLUSTER" >/dev/null 2>&1 || true
	work_done $rc   # MLF_KEEP_FAILED=DIR keeps a failed test's work directory (workdir.sh)
	if [ $rc -ne 0 ]; then echo "FAIL $TEST_NAME (exit $rc)"; fi
	exit $rc
}

fail() { echo "FAIL $TEST_NAME: $*" >&2; exit 1; }
ok() { echo "ok   $TEST_NAME: $*"; }

# tb_begin [up-args]: bring the cluster up (fresh), make a work directory.
tb_begin() {
	[ "$(id -u)" = 0 ] || { echo "SKIP $TEST_NAME: needs root"; exit 0; }
	trap tb_cleanup EXIT
	WORK="$(mktemp -d --tmpdir=/dev/shm)"
	"$TB" up "$CLUSTER" "$@" >/dev/null 2>"$WORK/up.log" || { cat "$WORK/up.log" >&2; fail "mlf-testbed up $CLUSTER"; }
}

# wait_event WHAT SECONDS CMD...: poll CMD every 0.1 s until it succeeds; after SECONDS fail naming
# WHAT. SECONDS guards against a hang only (far above what the event takes on a loaded machine);
# readiness is the event itself, never a fixed sleep.
wait_event() {
	local what=$1 s=$2 end
	shift 2
	end=$(($(date +%s) + s))
	until "$@"; do
		[ "$(date +%s)" -lt "$end" ] || fail "timed out after $s s waiting for $what"
		sleep 0.1
	done
}

# cluster_name FILE: the "name" of a cluster config.
cluster_name() { sed -n 's/^ *"name" *: *"\([^"]*\)".*/\1/p' "$1" | head -1; }

# rx_bytes HOST: bytes received by HOST's eth0 (measured outside any process under test).
rx_bytes() { "$TB" exec "$CLUSTER" "$1" cat /sys/class/net/eth0/statistics/rx_bytes; }

# within PCT MEASURED TARGET: true when |MEASURED/TARGET - 1| <= PCT/100.
within() { awk -v p="$1" -v m="$2" -v t="$3" 'BEGIN { e = m / t - 1; if (e < 0) e = -e; exit !(e <= p / 100) }'; }

# dp_start HOST [ARGS...]: start HOST's dataplane through the testbed; sets DP_PID_<HOST>.
dp_start() {
	local host=$1; shift
	local pid
	pid="$("$TB" dataplane "$CLUSTER" "$host" --log "$WORK/dp-$host.log" -- "$@" 2>"$WORK/dp-$host.start")" ||
		fail "dataplane of $host did not start: $(cat "$WORK/dp-$host.start")"
	eval "DP_PID_$host=$pid"
}

# sock HOST: the default application socket of HOST's dataplane.
sock() { echo "/run/mlfabric/$(cluster_name "$CLUSTER")-$1.sock"; }

# need_dataplane: skip (exit 0 with a SKIP line) when the dataplane is not built yet.
need_dataplane() {
	[ -x "$ROOT/build/mlf-dataplane" ] && [ -x "$XFER" ] ||
		{ echo "SKIP $TEST_NAME: build/mlf-dataplane or build/mlf-xfer not built"; exit 0; }
}

# field LINE KEY: the value of key=value in an mlf-xfer / mlf-rxrate output line.
field() { sed -n "s/.*[[:space:]]$2=\([^[:space:]]*\).*/\1/p" <<<" $1" | head -1; }

# rxrate_start HOST OUT [ARGS]: measure HOST's receive rate in the background into OUT, until
# rxrate_stop (the window then spans every frame of the transfer, stalls included).
rxrate_start() {
	local host=$1 out=$2; shift 2
	# mlf-testbed exec and ip netns exec both exec: the pid is mlf-rxrate's own
	"$TB" exec "$CLUSTER" "$host" "$ROOT/build/mlf-rxrate" --quiet-ms 60000 --timeout 120 "$@" >"$out" &
	RXRATE_PID=$!
	sleep 0.1
}

# rxrate_stop: end the measurement started by rxrate_start (after the transfer completed).
rxrate_stop() {
	sleep 0.1
	kill -INT "$RXRATE_PID" 2>/dev/null || true
	wait "$RXRATE_PID" || true
}

# random_file PATH MB: MB MiB of random bytes.
random_file() { head -c "$(($2 * 1024 * 1024))" /dev/urandom >"$1"; }

# now_ns: CLOCK_REALTIME in nanoseconds.
now_ns() { date +%s%N; }

# dp_pair_begin: the common start of a dataplane test on conf/cluster-pair.json: skip when the
# dataplane is not built, bring the testbed up, start the dataplanes of a and b.
dp_pair_begin() {
	CLUSTER="$ROOT/conf/cluster-pair.json"
	need_dataplane
	tb_begin
	dp_start a
	dp_start b
}

# dp_stop HOST...: stop those hosts' dataplanes (SIGTERM: unfinished transfers fail cleanly) and
# wait up to 10 s for each to exit.
dp_stop() {
	local h v
	for h in "$@"; do v=DP_PID_$h; [ -z "${!v:-}" ] || kill -TERM "${!v}" 2>/dev/null || true; done
	for h in "$@"; do v=DP_PID_$h; [ -z "${!v:-}" ] || timeout 10 tail --pid="${!v}" -f /dev/null || true; done
}

# stat3 [FMT] -- VALUES...: "median (min-max)" of the numbers given (blank ones ignored), each
# printed with printf FMT (default %g); "n/a" when there are none. For the benches' repeats.
stat3() {
	local fmt=%g
	if [ "${2:-}" = -- ]; then fmt=$1; shift 2; fi
	printf '%s\n' "$@" | awk 'NF' | sort -g | awk -v f="$fmt" '{ v[++n] = $1 } END {
		if (!n) { print "n/a"; exit }
		m = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
		printf f " (" f "-" f ")", m, v[1], v[n] }'
}

# --- two dataplanes over a net_memif pair (no namespaces: memif connects through a unix socket
# in $WORK, so these need neither the testbed nor the namespace lock) ---
# memif_vdev ROLE MTU: the --vdev argument of one end of the pair (ROLE server or client); memif
# buffers big enough for a whole frame at MTU 9000 (memif chains 2048-byte buffers otherwise).
memif_vdev() {
	local bs=2048
	[ "$2" -gt 1500 ] && bs=16384
	echo "--vdev=net_memif0,role=$1,socket=$WORK/memif.sock,socket-abstract=no,id=0,bsize=$bs"
}

# memif_dp_start HOST ROLE CORE [ARGS...]: start HOST's dataplane (binary $MEMIF_DP, default
# build/mlf-dataplane) of cluster $CLUSTER on lcore CORE, one end of the memif pair, app socket
# $WORK/HOST.sock, log $WORK/dp-HOST.log; sets DP_PID_<HOST> and waits until the app socket is up.
# --link-timeout 0 (where the binary has it): a memif link is up only once both ends are
# connected, and the ends start one after the other.
memif_dp_start() {
	local host=$1 role=$2 core=$3 mtu pid
	shift 3
	mtu=$(sed -n 's/.*"mtu" *: *\([0-9]*\).*/\1/p' "$CLUSTER")
	rm -f "$WORK/$host.sock"
	local lt=() # an older binary (a --baseline) may not wait for the link at all
	grep -qa -- "--link-timeout" "${MEMIF_DP:-$ROOT/build/mlf-dataplane}" && lt=(--link-timeout 0)
	"${MEMIF_DP:-$ROOT/build/mlf-dataplane}" --no-huge -m 512 --no-pci --file-prefix="mlfm$$-$host" -l "$core" \
		"$(memif_vdev "$role" "$mtu")" -- --cluster "$CLUSTER" --host "$host" --sock "$WORK/$host.sock" \
		--scheduler none "${lt[@]}" "$@" >"$WORK/dp-$host.log" 2>&1 &
	pid=$!
	eval "DP_PID_$host=$pid"
	local i
	for i in $(seq 300); do
		[ -S "$WORK/$host.sock" ] && grep -q ' up: ' "$WORK/dp-$host.log" && return 0
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	fail "dataplane of $host over memif did not start: $(tail -3 "$WORK/dp-$host.log")"
}

# memif_pair_start [ARGS...]: a (memif server, lcore 0) and b (client, lcore 1) with ARGS; waits
# until each has resolved the other by ARP over the pair.
memif_pair_start() {
	memif_dp_start a server 0 "$@"
	memif_dp_start b client 1 "$@"
	wait_event "ARP over memif (a <-> b)" 30 grep -q 'ARP: peer b .* resolved' "$WORK/dp-a.log"
	wait_event "ARP over memif (b <-> a)" 30 grep -q 'ARP: peer a .* resolved' "$WORK/dp-b.log"
}

# memif_pair_stop: stop b (the memif client) and then a: the server's disconnect handler runs
# in its interrupt thread while the client's loop may be in rx_burst on the same rings.
memif_pair_stop() { dp_stop b; dp_stop a; }

# memif_tel HOST COMMAND: the telemetry reply of HOST's memif dataplane.
memif_tel() { "$ROOT/build/mlf-tel" "mlfm$$-$1" "$2"; }

# memif_begin: the start of a memif test or bench: a work directory, and an EXIT trap that stops
# the dataplanes it started (never the testbed: another test may own namespaces of the cluster).
memif_begin() {
	[ "$(id -u)" = 0 ] || { echo "SKIP $TEST_NAME: needs root (/var/run/dpdk)"; exit 0; }
	WORK="$(mktemp -d --tmpdir=/dev/shm)"
	trap memif_cleanup EXIT
}

memif_cleanup() {
	local rc=$?
	if [ $rc -ne 0 ]; then
		for f in "$WORK"/dp-*.log; do [ -f "$f" ] && { echo "--- tail of $f"; tail -5 "$f"; }; done >&2
	fi
	memif_pair_stop
	for h in a b; do rm -rf "/var/run/dpdk/mlfm$$-$h"; done
	work_done $rc
	[ $rc -eq 0 ] || echo "FAIL $TEST_NAME (exit $rc)"
	exit $rc
}
