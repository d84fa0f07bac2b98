#!/usr/bin/env bash
# fabric_distribute.sh - model distribution trees (§10.3) end to end: server ps has a slow uplink
# (0.1 Gbit/s against the workers' 1), so the scheduler answers concurrent pulls of workers w0..w2
# through distributors: the server sends one copy to a worker, which forwards it (`forward`) to the
# others. Checks: transfers.jsonl has forwarded copies (forwarded_by, from_xfer), every get returns
# a model byte-identical to the server's model at the version it carries (FNV hash of the floats,
# the server prints one per version), and, in a second part, a distributor whose worker is killed
# while it holds forwards: their pulls are answered again (a second model transfer for the same
# pull in the records) and the other workers' gets all succeed. Run under
# `flock -o /tmp/mlf-netns.lock`.
TEST_NAME=fabric_distribute
. "$(dirname "$0")/fabric_lib.sh"
DAPP="$ROOT/build/tests/fabric_distapp"
[ -x "$ROOT/build/mlf-scheduler" ] && [ -x "$DAPP" ] || { echo "SKIP $TEST_NAME: build/mlf-scheduler or $DAPP not built"; exit 0; }
[ "$(id -u)" = 0 ] || { echo "SKIP $TEST_NAME: needs root"; exit 0; }
need_dataplane

# the cluster: fab_begin's, but the server's uplink at 0.1 Gbit/s
FAB_DIR="$(mktemp -d --tmpdir=/dev/shm)"
WORK="$FAB_DIR"
CLUSTER="$FAB_DIR/fabd.json"
cat >"$CLUSTER" <<'EOF'
{"name": "fabd", "mtu": 1500, "control_port": 7070, "hosts": [
{"name": "ps", "ip": "10.82.0.1", "up_gbps": 0.1, "down_gbps": 1, "roles": ["server", "scheduler"]},
{"name": "w0", "ip": "10.82.0.10", "up_gbps": 1, "down_gbps": 1, "roles": ["worker"]},
{"name": "w1", "ip": "10.82.0.11", "up_gbps": 1, "down_gbps": 1, "roles": ["worker"]},
{"name": "w2", "ip": "10.82.0.12", "up_gbps": 1, "down_gbps": 1, "roles": ["worker"]}]}
EOF
trap fab_cleanup EXIT
"$TB" up "$CLUSTER" >/dev/null 2>"$WORK/up.log" || { cat "$WORK/up.log" >&2; fail "mlf-testbed up $CLUSTER"; }
for h in ps w0 w1 w2; do dp_start $h; done

N=500000 # 2 MB models: 160 ms from the server, 16 ms from a worker

# one scheduler and server for both parts: a restarted scheduler would number its transfers
# from 1 again, and the dataplanes drop a transfer id they already delivered
mkdir -p "$WORK/rec"
# pulls that share a plan while the server's uplink is busy are held for a tree and planned
# together when it frees (docs/scheduler.md "Distribution trees"); a pull alone in its plan is
# not held (its tree ends no sooner than its direct copy). The workers' first pulls leave
# together (--go), but under make test-under-load they reached the scheduler 4 ms apart, each
# alone in a plan of the default 2 ms replan interval, and no tree formed: --replan-ms 50 lets
# an arrival wait 50 ms for the others to share its plan
bg sched "$TB" exec "$CLUSTER" ps "$ROOT/build/mlf-scheduler" --cluster "$CLUSTER" --records "$WORK/rec" \
	--replan-ms 50
bg server "$DAPP" server --cluster "$CLUSTER" --host ps --n $N
wait_for "$WORK/server.out" "server ready" 15
T="$WORK/rec/transfers.jsonl"

# run TAG GETS VERSION: the three workers (2 updates, GETS gets each) in the background; their
# gets start together once the server applied all six updates, at VERSION (a start file, not a
# sleep): a pull is answered only after its worker's own updates (fresh pulls), so pulls made
# right after pushes that a loaded machine spread out become ready one by one, each finds no
# other pull to share a tree with, and they stay apart (each worker's next pull follows its copy)
run() {
	local tag=$1 gets=$2 version=$3 w
	for w in w0 w1 w2; do
		bg "${w}_$tag" "$DAPP" worker --cluster "$CLUSTER" --host $w --server ps --n $N \
			--count 2 --gets "$gets" --timeout 20 --go "$WORK/go_$tag"
	done
	for w in w0 w1 w2; do wait_for "$WORK/${w}_$tag.out" '^pushed$' 20; done
	wait_for "$WORK/server.out" "^model version=$version " 20
	touch "$WORK/go_$tag"
}

# gets_exact TAG W...: every get of these workers matches the server's model at its version
gets_exact() {
	local tag=$1 w line v h n=0; shift
	for w in "$@"; do
		while read -r line; do
			v=$(field "$line" version); h=$(field "$line" hash)
			grep -q "^model version=$v hash=$h\$" "$WORK/server.out" ||
				fail "$w got version $v with hash $h: not the server's model at that version ($(grep "^model version=$v " "$WORK/server.out"))"
			n=$((n + 1))
		done < <(grep '^get ' "$WORK/${w}_$tag.out")
	done
	echo $n
}

# --- 1. pulls answered through a tree, byte-exact
run tree 8 6
for w in w0 w1 w2; do
	wait "$(eval echo \$PID_${w}_tree)" || fail "worker $w failed (exit $?): $(tail -3 "$WORK/${w}_tree.err")"
done
# python: transfer ids are 1 << 62 | n, beyond jq's doubles
read -r fwd srv bad by < <(python3 - "$T" <<'PY'
import json, sys
xs = [json.loads(l) for l in open(sys.argv[1])]
m = [x for x in xs if x["what"] == "model"]
to = {x["xfer"]: x["dst"] for x in m if x["src"] == "ps"}
f = [x for x in m if "forwarded_by" in x]
bad = [x for x in f if to.get(x["from_xfer"]) != x["forwarded_by"] or x["src"] != x["forwarded_by"]]
print(len(f), len(to), len(bad), ",".join(sorted({x["forwarded_by"] for x in f})) or "-")
PY
)
[ "$fwd" -ge 1 ] || fail "no model copy was forwarded ($srv copies from the server)"
[ "$bad" = 0 ] || fail "$bad forwarded copies name no server copy to their distributor"
n=$(gets_exact tree w0 w1 w2)
[ "$n" = 24 ] || fail "$n gets checked, expected 24"
ok "$n gets byte-exact at their version; $fwd model copies forwarded by $by, $srv sent by the server"

# --- 2. a distributor killed while it holds forwards: their pulls are answered again
skip=$(wc -l <"$T") # the records of part 1
run kill 12 12
victim=""
# the first forward, looked for while any worker still runs (not for a fixed time)
alive() { local w; for w in w0 w1 w2; do kill -0 "$(eval echo \$PID_${w}_kill)" 2>/dev/null && return 0; done; return 1; }
while [ -z "$victim" ] && alive; do
	victim=$(tail -n +$((skip + 1)) "$T" | grep -o '"forwarded_by":"[^"]*"' | head -1 | cut -d'"' -f4 || true)
	[ -n "$victim" ] || sleep 0.02
done
[ -n "$victim" ] || fail "no forward while the workers of part 2 ran"
sleep 0.05 # the server's copy to it is on its way (160 ms), its forwards follow
kill -9 "$(eval echo \$PID_${victim}_kill)"
others=""
for w in w0 w1 w2; do
	[ "$w" = "$victim" ] && continue
	others="$others $w"
	wait "$(eval echo \$PID_${w}_kill)" || fail "worker $w failed (exit $?) after $victim was killed: $(tail -3 "$WORK/${w}_kill.err")"
done
n=$(gets_exact kill $others)
[ "$n" = 24 ] || fail "$n gets of$others checked, expected 24"
# the forwards the victim held: their pulls got another model transfer later
read -r held again < <(python3 - "$T" "$victim" "$skip" <<'PY'
import json, sys
m = [x for x in map(json.loads, open(sys.argv[1]).readlines()[int(sys.argv[3]):]) if x["what"] == "model"]
v = sys.argv[2]
held = {x["pull"] for x in m if x.get("forwarded_by") == v}
again = {p for p in held if any(x["pull"] == p and x.get("forwarded_by") != v for x in m)}
print(len(held), len(again))
PY
)
[ "$again" -ge 1 ] || fail "pulls forwarded by $victim: $held, none answered again"
ok "distributor $victim killed: $again of its $held forwarded pull(s) answered again (the rest were delivered before),$others got all 24 models byte-exact"
