# tests/integration/apps_lib.sh - shared part of the apps_*.sh tests (sourced, not run): an "app*"
# cluster in 10.83.x.x, mlf-ps and mlf-workers started in their hosts' namespaces, clean-up.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
PS="$ROOT/build/mlf-ps"
WK="$ROOT/build/mlf-worker"
APP_PIDS=""

apps_cleanup() {
	local rc=$?
	for p in $APP_PIDS; do kill "$p" 2>/dev/null || true; done
	if [ $rc -ne 0 ] && [ -n "$WORK" ]; then
		for f in "$WORK"/*.log; do [ -s "$f" ] && { echo "--- tail of $f"; tail -4 "$f"; }; done >&2
	fi
	set +e # errexit would end the trap at `(exit $rc)` and leave the testbed and its dataplanes up
	(exit $rc)
	tb_cleanup
}

# apps_begin NAME SUBNET HOST:SUFFIX:ROLES[:GBPS]...: write cluster NAME with hosts at 10.83.SUBNET.SUFFIX
# (roles a JSON list body, e.g. '"worker"'), links of GBPS (default $APPS_GBPS, else 10) Gbit/s each
# way, bring it up, make the work directory.
apps_begin() {
	local name=$1 net=$2 cfg sep="" h hn ip roles gb
	shift 2
	[ -x "$PS" ] && [ -x "$WK" ] || { echo "SKIP $TEST_NAME: build/mlf-ps or build/mlf-worker not built"; exit 0; }
	need_dataplane
	cfg=$(mktemp --tmpdir=/dev/shm "$name.XXXXXX.json")
	{
		echo "{\"name\": \"$name\", \"hosts\": ["
		for h in "$@"; do
			IFS=: read -r hn ip roles gb <<<"$h"
			gb=${gb:-${APPS_GBPS:-10}}
			printf '%s{"name": "%s", "ip": "10.83.%s.%s", "up_gbps": %s, "down_gbps": %s, "roles": [%s]}\n' \
				"$sep" "$hn" "$net" "$ip" "$gb" "$gb" "$roles"
			sep=","
		done
		echo "]}"
	} >"$cfg"
	CLUSTER=$cfg
	tb_begin
	trap apps_cleanup EXIT
	cp "$cfg" "$WORK/cluster.json" && rm -f "$cfg" && CLUSTER="$WORK/cluster.json"
}

# apps_run NAME HOST PROGRAM ARGS...: run PROGRAM in HOST's namespace in the background, output in
# NAME.log; sets PID_<NAME>.
apps_run() {
	local name=$1 host=$2
	shift 2
	"$TB" exec "$CLUSTER" "$host" "$@" >"$WORK/$name.log" 2>&1 &
	APP_PIDS="$APP_PIDS $!"
	eval "PID_$name=$!"
}

# apps_ps_ready NAME: wait until the mlf-ps started as `apps_run NAME ...` registered (its log says
# "serving" or "replica of") or exited; fail when it exited.
apps_ps_ready() {
	local pid log="$WORK/$1.log" v=PID_$1
	pid=${!v}
	wait_event "$1 to register (\"serving\" or \"replica of\" in $1.log)" 60 \
		eval "grep -qE '(serving|replica of) ' '$log' || ! kill -0 $pid 2>/dev/null"
	kill -0 "$pid" 2>/dev/null || fail "$1 (mlf-ps) exited at start: $(tail -2 "$log")"
}

# apps_pushed N W...: each worker W (records in $WORK/W) has pushed at least N updates.
apps_pushed() {
	local n=$1 w
	shift
	for w in "$@"; do
		[ "$(wc -l <"$WORK/$w/pushes.jsonl" 2>/dev/null || echo 0)" -ge "$n" ] || return 1
	done
}

# apps_settled [PS...]: every update the workers pushed ($WORK/w*/pushes.jsonl) is applied by
# each server PS (default ps: $WORK/PS/applied.jsonl) or dropped / lost in the scheduler's records
# ($WORK/sched/updates.jsonl): nothing is in flight any more (for wait_event before the servers
# are stopped).
apps_settled() {
	local pushed not p
	pushed=$(cat "$WORK"/w*/pushes.jsonl | jq .id | sort -u)
	not=$(jq -r 'select(.fate == "dropped" or .fate == "lost") | .id' "$WORK/sched/updates.jsonl" 2>/dev/null)
	for p in "${@:-ps}"; do
		[ -z "$(comm -23 <(echo "$pushed") <({ echo "$not"; jq .id "$WORK/$p/applied.jsonl" 2>/dev/null; } | sort -u))" ] ||
			return 1
	done
}

# apps_stop_case NAME HOST...: end a case of a multi-case test: SIGTERM to the server (apps_run ps
# ...), which must exit cleanly, then the scheduler (apps_run sched ...) and the dataplanes of HOSTs,
# waiting until they are gone.
apps_stop_case() {
	local name=$1 h v
	shift
	kill -TERM "$PID_ps"
	wait "$PID_ps" || fail "$name: mlf-ps did not exit cleanly on SIGTERM: $(tail -2 "$WORK/ps.log")"
	kill -TERM "$PID_sched" 2>/dev/null || true
	wait "$PID_sched" 2>/dev/null || true
	for h in "$@"; do v=DP_PID_$h; kill -TERM "${!v}" 2>/dev/null || true; done
	for h in "$@"; do v=DP_PID_$h; timeout 10 tail --pid="${!v}" -f /dev/null || true; done
}

# apps_stop_ps: SIGTERM to the server (started as apps_run ps ...), which must exit cleanly.
apps_stop_ps() {
	kill -TERM "$PID_ps"
	wait "$PID_ps" || fail "mlf-ps did not exit cleanly on SIGTERM: $(tail -2 "$WORK/ps.log")"
	[ -s "$WORK/ps/server.json" ] || fail "mlf-ps wrote no server.json"
}

# apps_accuracy_rose MIN: the server's last accuracy exceeds MIN and its first; prints both.
apps_accuracy_rose() {
	local first last
	first=$(head -1 "$WORK/ps/accuracy.jsonl" | jq .accuracy)
	last=$(tail -1 "$WORK/ps/accuracy.jsonl" | jq .accuracy)
	awk -v a="$last" -v f="$first" -v m="$1" 'BEGIN { exit !(a > m && a > f) }' ||
		fail "server accuracy went from $first to $last (expected > $1)"
	echo "$first -> $last"
}

# apps_applied_once: no update id appears twice in applied.jsonl, every line's delay is at - version.
apps_applied_once() {
	local dups bad
	dups=$(jq .id "$WORK/ps/applied.jsonl" | sort | uniq -d | wc -l)
	[ "$dups" = 0 ] || fail "$dups updates applied more than once"
	bad=$(jq -s 'map(select(.delay != .at - .version or .delay < 0)) | length' "$WORK/ps/applied.jsonl")
	[ "$bad" = 0 ] || fail "$bad applied.jsonl lines with a delay other than at - version >= 0"
}

# apps_two_shards NAME SUBNET MODE PS_ARGS...: cluster NAME of shard server hosts p0 (also the
# scheduler) and p1 at 0.25 Gbit/s, workers w0-w2 and aggregator host ag at 1 Gbit/s; starts
# mlf-scheduler (records in $WORK/sched; more flags from $APPS_SCHED_ARGS), every dataplane, mlf-aggregator and two mlf-ps
# --mode MODE --workers 3 --shard K/2 PS_ARGS (PID_ps0, PID_ps1, records $WORK/ps0, ps1); fails
# when a shard server exited at start.
apps_two_shards() {
	local name=$1 net=$2 mode=$3 k v h
	shift 3
	[ -x "$ROOT/build/mlf-scheduler" ] && [ -x "$ROOT/build/mlf-aggregator" ] ||
		{ echo "SKIP $TEST_NAME: build/mlf-scheduler or build/mlf-aggregator not built"; exit 0; }
	APPS_GBPS=1
	apps_begin "$name" "$net" 'p0:2:"server","scheduler":0.25' 'p1:3:"server":0.25' 'w0:10:"worker"' \
		'w1:11:"worker"' 'w2:12:"worker"' 'ag:20:"aggregator"'
	mkdir -p "$WORK/sched"
	# default timings: the shard servers' 0.25 Gbit/s downlinks are busy, so updates gather
	# behind them and the per-shard aggregation these tests check has something to sum
	# (docs/scheduler.md "Gathering behind a busy link")
	apps_run sched p0 "$ROOT/build/mlf-scheduler" --cluster "$CLUSTER" --records "$WORK/sched" \
		${APPS_SCHED_ARGS:-}
	for h in p0 p1 w0 w1 w2 ag; do dp_start $h; done
	apps_run agg ag "$ROOT/build/mlf-aggregator" --cluster "$CLUSTER" --host ag
	for k in 0 1; do
		apps_run ps$k p$k "$PS" --cluster "$CLUSTER" --host p$k --mode "$mode" --workers 3 --shard $k/2 \
			--records "$WORK/ps$k" "$@"
	done
	for k in 0 1; do apps_ps_ready ps$k; done
}

# apps_stop_shards: SIGTERM to both shard servers of apps_two_shards, which must exit cleanly.
apps_stop_shards() {
	local k v
	for k in 0 1; do
		v=PID_ps$k
		kill -TERM "${!v}"
		wait "${!v}" || fail "mlf-ps shard $k did not exit cleanly on SIGTERM: $(tail -2 "$WORK/ps$k.log")"
	done
}
