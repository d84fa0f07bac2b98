#!/usr/bin/env bash
# fabric_auth.sh - the authenticated control plane (docs/security.md): on a cluster whose
# config names a key_file, the dataplanes of ps and w0 authenticate to mlf-scheduler (HMAC-SHA256
# challenge-response) and are welcomed; an outsider in w0's namespace that says hello as ps
# without a nonce, or answers the challenge with a wrong MAC, is refused and closed, ps keeps its
# connection; a forged commit without hello is refused; a holder of the key saying hello as w0
# replaces w0's connection (as a restarted dataplane must). Before authentication the outsider's
# hello replaced ps and its forged commit was accepted.
TEST_NAME=fabric_auth
. "$(dirname "$0")/fabric_lib.sh"
[ -x "$ROOT/build/mlf-scheduler" ] || { echo "SKIP $TEST_NAME: build/mlf-scheduler not built"; exit 0; }
FAB_KEY=1 fab_begin fauth 'ps:1:"server","scheduler"' 'w0:10:"worker"'
bg sched "$TB" exec "$CLUSTER" ps "$ROOT/build/mlf-scheduler" --cluster "$CLUSTER"
wait_for "$WORK/sched.err" "listening on" 5
dp_start ps
dp_start w0
wait_for "$WORK/dp-ps.log" "welcome" 5
wait_for "$WORK/dp-w0.log" "welcome" 5
grep -q "peer w0 connected" "$WORK/sched.err" || fail "w0 not connected: $(tail -3 "$WORK/sched.err")"
grep -q "not authenticated" "$WORK/sched.err" && fail "the scheduler says it does not authenticate"

# client.py MODE: an outsider (or, with MODE holder, a holder of the key) talking to the scheduler
cat >"$WORK/client.py" <<'PY'
import hmac, json, os, socket, sys
mode, key_path = sys.argv[1], sys.argv[2]
s = socket.create_connection(("10.82.0.1", 7070), timeout=5)
f = s.makefile("rw")
def send(o):
    f.write(json.dumps(o) + "\n"); f.flush()
def recv():
    line = f.readline()
    return json.loads(line) if line else None
def closed():
    try:
        return f.readline() == ""
    except OSError:
        return True
mac = lambda k, role, host, nc, ns: hmac.new(k, ("mlfabric-auth-v1\n%s\n%s\n%s\n%s" % (role, host, nc, ns)).encode(), "sha256").hexdigest()
nc = os.urandom(16).hex()
if mode == "no-nonce":
    send({"type": "hello", "host": "ps", "proto": 1})
    print("reply", json.dumps(recv())); print("closed", closed())
elif mode == "wrong-key":
    send({"type": "hello", "host": "ps", "proto": 1, "nonce": nc})
    ch = recv(); print("challenge", json.dumps(ch))
    send({"type": "auth", "mac": mac(os.urandom(32), "host", "ps", nc, ch["nonce"])})
    print("reply", json.dumps(recv())); print("closed", closed())
elif mode == "commit":
    send({"type": "commit", "app": "server@ps", "host": "ps", "xfer": 1, "version": 1000000})
    print("reply", json.dumps(recv())); print("closed", closed())
elif mode == "holder":
    k = open(key_path, "rb").read()
    send({"type": "hello", "host": "w0", "proto": 1, "nonce": nc})
    ch = recv()
    ok = hmac.compare_digest(ch.get("mac", ""), mac(k, "scheduler", "w0", nc, ch["nonce"]))
    print("scheduler proved the key", ok)
    send({"type": "auth", "mac": mac(k, "host", "w0", nc, ch["nonce"])})
    print("reply", json.dumps(recv()))
PY
PROTO=$(sed -n 's/.*#define MLF_PROTO_VERSION \([0-9]*\).*/\1/p' "$ROOT/lib/proto/proto.h")
sed -i "s/\"proto\": 1/\"proto\": $PROTO/" "$WORK/client.py"
run_client() { "$TB" exec "$CLUSTER" w0 python3 "$WORK/client.py" "$1" "$FAB_DIR/cluster.key" >"$WORK/c-$1.out" 2>&1 ||
	fail "client $1: $(cat "$WORK/c-$1.out")"; }

run_client no-nonce
grep -q 'authenticates its hosts' "$WORK/c-no-nonce.out" && grep -q "closed True" "$WORK/c-no-nonce.out" ||
	fail "hello as ps without a nonce was not refused and closed: $(cat "$WORK/c-no-nonce.out")"
run_client wrong-key
grep -q '"type": "challenge"' "$WORK/c-wrong-key.out" || fail "no challenge: $(cat "$WORK/c-wrong-key.out")"
grep -q 'authentication as host ps failed' "$WORK/c-wrong-key.out" && grep -q "closed True" "$WORK/c-wrong-key.out" ||
	fail "a wrong MAC for ps was not refused and closed: $(cat "$WORK/c-wrong-key.out")"
grep -q "control connection from 10.82.0.10:[0-9]*: authentication as host ps failed" "$WORK/sched.err" ||
	fail "the scheduler did not log the failed authentication with the peer's address"
run_client commit
grep -q 'expected hello first' "$WORK/c-commit.out" && grep -q "closed True" "$WORK/c-commit.out" ||
	fail "a commit without hello was not refused: $(cat "$WORK/c-commit.out")"
grep -q "peer ps connected again" "$WORK/sched.err" && fail "an outsider replaced ps's connection"
grep -q "peer ps disconnected" "$WORK/sched.err" && fail "ps lost its connection to an outsider"
ok "outsider refused: hello without nonce, wrong MAC (logged with its address), commit without hello; ps kept its connection"

run_client holder
grep -q "scheduler proved the key True" "$WORK/c-holder.out" || fail "the scheduler's challenge MAC is wrong: $(cat "$WORK/c-holder.out")"
grep -q '"type": "welcome"' "$WORK/c-holder.out" || fail "a holder of the key was not welcomed: $(cat "$WORK/c-holder.out")"
wait_for "$WORK/sched.err" "peer w0 connected again: closing its previous connection" 3
ok "a holder of the key is welcomed as w0 and replaces its connection (mutual: the scheduler proved the key too)"

# status viewers (tools/mlf-top): a plain `status` is refused and closed on a keyed cluster; mlf-top
# authenticates with the key (a viewer's challenge-response) and gets the status; a wrong key fails
cat >"$WORK/viewer.py" <<'PY'
import json, socket
s = socket.create_connection(("10.82.0.1", 7070), timeout=5)
f = s.makefile("rw")
f.write('{"type":"status"}\n'); f.flush()
print("reply", f.readline().strip()); print("closed", f.readline() == "")
PY
"$TB" exec "$CLUSTER" w0 python3 "$WORK/viewer.py" >"$WORK/c-viewer.out" 2>&1 || fail "viewer client: $(cat "$WORK/c-viewer.out")"
grep -q 'authenticates its viewers' "$WORK/c-viewer.out" && grep -q "closed True" "$WORK/c-viewer.out" ||
	fail "an unauthenticated status request was answered: $(head -c 300 "$WORK/c-viewer.out")"
grep -q "control connection from 10.82.0.10:[0-9]*: status without authenticating: refused" "$WORK/sched.err" ||
	fail "the scheduler did not log the refused viewer with its address"
"$TB" exec "$CLUSTER" w0 python3 "$ROOT/tools/mlf-top" --cluster "$CLUSTER" --once --json >"$WORK/top.out" 2>&1 ||
	fail "mlf-top with the key failed: $(cat "$WORK/top.out")"
grep -q '"type": "status"' "$WORK/top.out" && grep -q '"cluster": "fauth"' "$WORK/top.out" ||
	fail "mlf-top with the key got no status: $(head -c 300 "$WORK/top.out")"
"$ROOT/tools/mlf-keygen" "$WORK/other.key" >/dev/null
sed 's/"key_file": *"[^"]*"/"key_file": "other.key"/' "$CLUSTER" >"$WORK/other.json"
grep -q other.key "$WORK/other.json" || fail "could not write a cluster config with another key"
"$TB" exec "$CLUSTER" w0 python3 "$ROOT/tools/mlf-top" --cluster "$WORK/other.json" --once >"$WORK/top-bad.out" 2>&1 &&
	fail "mlf-top with another key got a status: $(head -c 300 "$WORK/top-bad.out")"
grep -q 'did not prove the cluster key' "$WORK/top-bad.out" ||
	fail "mlf-top with another key: $(cat "$WORK/top-bad.out"), expected the scheduler not to prove the key"
ok "status viewers: a plain status refused and closed (logged with its address); mlf-top with the key authenticated and read the status; with another key it refused the scheduler"
