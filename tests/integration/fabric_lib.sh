# tests/integration/fabric_lib.sh - shared part of the fabric_*.sh tests (sourced): a "fab*" cluster
# in 10.82.x.x written to the work directory, the test programs, process clean-up.
. "$(dirname "$0")/lib.sh"
APP="$ROOT/build/tests/fabric_app"
FAKESCHED="$ROOT/build/tests/fabric_fakesched"
AGG="$ROOT/build/mlf-aggregator"
FAB_PIDS=""

# fab_begin NAME HOSTS...: write cluster NAME (hosts "name:ip-suffix:roles") and bring it up.
fab_begin() {
	local name=$1; shift
	[ "$(id -u)" = 0 ] || { echo "SKIP $TEST_NAME: needs root"; exit 0; }
	need_dataplane
	[ -x "$APP" ] || { echo "SKIP $TEST_NAME: $APP not built"; exit 0; }
	FAB_DIR="$(mktemp -d --tmpdir=/dev/shm)"
	CLUSTER="$FAB_DIR/$name.json"
	{
		echo "{"
		echo "  \"name\": \"$name\","
		[ -n "${FAB_KEY:-}" ] && echo "  \"key_file\": \"cluster.key\","
		echo "  \"mtu\": 1500, \"control_port\": 7070, \"hosts\": ["
		local sep=""
		for h in "$@"; do
			IFS=: read -r hn ip roles <<<"$h"
			printf '%s{"name": "%s", "ip": "10.82.0.%s", "up_gbps": 1, "down_gbps": 1, "roles": [%s]}\n' \
				"$sep" "$hn" "$ip" "$roles"
			sep=","
		done
		echo "]}"
	} >"$CLUSTER"
	# FAB_KEY=1: the cluster authenticates its control connections (docs/security.md)
	[ -z "${FAB_KEY:-}" ] || "$ROOT/tools/mlf-keygen" "$FAB_DIR/cluster.key" >/dev/null
	trap fab_cleanup EXIT
	WORK="$FAB_DIR"
	"$TB" up "$CLUSTER" >/dev/null 2>"$WORK/up.log" || { cat "$WORK/up.log" >&2; fail "mlf-testbed up $CLUSTER"; }
}

fab_cleanup() {
	local rc=$?
	for p in $FAB_PIDS; do kill "$p" 2>/dev/null || true; done
	if [ $rc -ne 0 ] && [ -n "$WORK" ]; then
		for f in "$WORK"/*.log "$WORK"/*.out "$WORK"/*.err; do [ -s "$f" ] && { echo "--- tail of $f"; tail -8 "$f"; }; done >&2
	fi
	"$TB" down "$CLUSTER" >/dev/null 2>&1 || true
	if [ -n "${FAB_KEEP:-}" ]; then echo "kept $WORK" >&2; else work_done $rc; fi
	[ $rc -ne 0 ] && echo "FAIL $TEST_NAME (exit $rc)"
	exit $rc
}

# bg NAME CMD...: run CMD in the background with stdout in NAME.out, stderr in NAME.err.
bg() {
	local name=$1; shift
	"$@" >"$WORK/$name.out" 2>"$WORK/$name.err" &
	FAB_PIDS="$FAB_PIDS $!"
	eval "PID_$name=$!"
}

# wait_for FILE PATTERN SECONDS: until FILE has a line matching PATTERN.
wait_for() {
	local i
	for ((i = 0; i < $3 * 10; i++)); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
	fail "no line matching '$2' in $(basename "$1") within $3 s"
}
