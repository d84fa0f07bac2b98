#!/usr/bin/env bash
# python_fabric.sh - the Python package mlfabric (python/mlfabric, docs/python.md) against a live
# testbed: mlf-ps in Async mode (MLF_MODE_DIRECT, no scheduler) on host ps, Python workers on w0
# w1, w2 (Debian's /usr/bin/python3, PYTHONPATH=build/python).
#  1. mlf-ps --model 784,10 --momentum 0: a worker gets the model w (version v), pushes a random
#     update u at v and gets w + u exactly at version v + 1 (eq. 2 without momentum history);
#     the worker counters say 1 pushed, 0 dropped, models received.
#  2. mlf-ps --init-from w1 (a flat model of any size): mlfabric.torch.broadcast_parameters sends
#     a torch model's parameters and gets them back byte-exact at version 0; three steps of
#     DistributedOptimizer (plain SGD) each move the server's model by exactly the worker's update.
#  3. the server is stopped: a worker's get fails with mlfabric.Error naming the server within
#     its timeout (2 s, checked < 5 s).
#  4. a Python server (Endpoint.register_server, callbacks on the library's thread): a worker
#     (w2) gets its model, pushes u, gets model + u at version 1; the server's on_update saw the
#     update id and version the worker pushed, from w2.
#  5. the collectives (peer channel, no server): w0, w1, w2 call mlfabric.init() with only the
#     launcher's MLF_* variables; rank()/size() match MLF_WORKERS; allreduce of each rank's value
#     gives the mean (and the sum) on all three; broadcast_parameters and broadcast_optimizer_state
#     give every rank rank 0's tensors and state byte-exact.
. "$(dirname "$0")/apps_lib.sh"
PY=/usr/bin/python3
[ -x $PY ] && [ -f "$ROOT/build/python/mlfabric/__init__.py" ] && ls "$ROOT"/build/python/mlfabric/_mlfabric*.so >/dev/null 2>&1 ||
	{ echo "SKIP $TEST_NAME: build/python/mlfabric not built"; exit 0; }

# each part's worker on its own host: update ids are (host, per-endpoint sequence), so a second
# worker process on the same host would reuse the first one's ids, and the server's dataplane
# drops a transfer id it finished moments ago as a late duplicate
apps_begin apppy 12 'ps:2:"server"' 'w0:10:"worker"' 'w1:11:"worker"' 'w2:12:"worker"'
for h in ps w0 w1 w2; do dp_start $h --scheduler none; done

# pyrun NAME HOST: run the Python program on stdin (saved in the work directory) on HOST with
# the arguments CLUSTER WORK
pyrun() {
	cat >"$WORK/py_$1.py"
	"$TB" exec "$CLUSTER" "$2" env PYTHONPATH="$ROOT/build/python" $PY "$WORK/py_$1.py" "$CLUSTER" "$WORK" \
		>"$WORK/$1.log" 2>&1
}

# wait_log FILE PATTERN SECONDS
wait_log() {
	local i
	for ((i = 0; i < $3 * 10; i++)); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
	fail "no line matching '$2' in $(basename "$1") within $3 s: $(tail -3 "$1")"
}

## 1. push and get with numpy buffers
apps_run ps ps "$PS" --cluster "$CLUSTER" --host ps --mode async --workers 1 --model 784,10 --momentum 0 \
	--eval-every 100 --records "$WORK/ps"
wait_log "$WORK/ps.log" "serving" 10
pyrun push w0 <<'EOF' || fail "push/get worker failed: $(tail -5 "$WORK/push.log")"
import sys, time
import numpy as np
import mlfabric

ep = mlfabric.init(sys.argv[1], "w0", mode="async", timeout_s=5)
assert ep.server == "ps" and ep.role == "worker", (ep.server, ep.role)
n = 784 * 10 + 10
w0 = np.empty(n, np.float32)
v0 = ep.get(w0)
u = (np.random.default_rng(7).standard_normal(n) * 0.01).astype(np.float32)
uid = ep.push(u, float(np.linalg.norm(u)), v0)
assert uid > 0, uid
w1 = np.empty(n, np.float32)
deadline = time.monotonic() + 5
while True:  # the push travels on its own; the model of version v0 + 1 has it applied
    v1 = ep.get(w1)
    if v1 > v0 or time.monotonic() > deadline:
        break
    time.sleep(0.05)
assert v1 == v0 + 1, f"version {v0} -> {v1}, expected {v0 + 1}"
err = float(np.abs(w1 - (w0 + u)).max())
assert np.array_equal(w1, w0 + u), f"model moved by u with max error {err}"
s = ep.stats()
assert s["pushed"] == 1 and s["dropped"] == 0 and s["models"] >= 2, s
mlfabric.shutdown()
print(f"push/get: version {v0} -> {v1}, w1 == w0 + u exactly ({n} floats), stats {s}")
EOF
ok "$(tail -1 "$WORK/push.log")"
kill -TERM "$PID_ps"; wait "$PID_ps" || fail "mlf-ps did not exit cleanly: $(tail -2 "$WORK/ps.log")"
[ "$(jq .applied "$WORK/ps/server.json")" = 1 ] || fail "server.json: $(cat "$WORK/ps/server.json")"

## 2. torch: broadcast_parameters to mlf-ps --init-from w0, DistributedOptimizer steps
apps_run ps2 ps "$PS" --cluster "$CLUSTER" --host ps --mode async --workers 1 --init-from w1 --momentum 0 \
	--records "$WORK/ps2"
wait_log "$WORK/ps2.log" "waiting for the initial model from w1" 10
pyrun torch w1 <<'EOF' || fail "torch worker failed: $(tail -5 "$WORK/torch.log")"
import sys, time
import numpy as np
import torch
import mlfabric
import mlfabric.torch as mt

torch.manual_seed(1)
net = torch.nn.Sequential(torch.nn.Linear(20, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))
want = torch.nn.utils.parameters_to_vector(net.parameters()).detach().clone()
ep = mlfabric.init(sys.argv[1], "w1", mode="async", timeout_s=5)
v = mt.broadcast_parameters(net, root="w1")
got = torch.nn.utils.parameters_to_vector(net.parameters()).detach()
assert v == 0 and torch.equal(got, want), f"broadcast: version {v}, max diff {float((got - want).abs().max())}"
opt = mt.DistributedOptimizer(torch.optim.SGD(net.parameters(), lr=0.1), net.named_parameters())
x, y = torch.randn(32, 20), torch.randint(0, 3, (32,))
prev = want.numpy().copy()          # the server's model, version 0
server = np.empty(want.numel(), np.float32)
for step in range(3):
    opt.zero_grad()
    torch.nn.functional.cross_entropy(net(x), y).backward()
    grads = torch.cat([p.grad.reshape(-1) for p in net.parameters()]).clone()
    opt.step()
    deadline = time.monotonic() + 5
    while (sv := ep.get(server)) < step + 1 and time.monotonic() < deadline:
        time.sleep(0.05)  # the update travels on its own; wait until it is applied
    # the server's model moved by this step's update u = -lr * grad (one worker, no momentum)
    assert sv == step + 1, f"step {step}: server at version {sv}"
    assert np.allclose(server, prev - 0.1 * grads.numpy(), atol=1e-6), f"step {step}: server model != w + u"
    # the parameters hold the model the step's get returned (with or without this update)
    now = torch.nn.utils.parameters_to_vector(net.parameters()).detach().numpy()
    loaded = {step + 1: server, step: prev}.get(opt.version)
    assert loaded is not None and np.array_equal(now, loaded), f"step {step}: version {opt.version} not loaded"
    prev = server.copy()
assert opt.dropped == 0 and ep.stats()["pushed"] == 3
mlfabric.shutdown()
print(f"torch: broadcast {want.numel()} parameters byte-exact at version 0, 3 steps, server at version {sv}")
EOF
ok "$(tail -1 "$WORK/torch.log")"
grep -q "serving the model from w1" "$WORK/ps2.log" || fail "mlf-ps did not serve w1's model: $(tail -3 "$WORK/ps2.log")"
kill -TERM "$PID_ps2"; wait "$PID_ps2" || fail "mlf-ps (init-from) did not exit cleanly: $(tail -2 "$WORK/ps2.log")"

## 3. the server is gone: get fails in time naming it
pyrun gone w0 <<'EOF' || fail "no-server worker: $(tail -5 "$WORK/gone.log")"
import sys, time
import numpy as np
import mlfabric

ep = mlfabric.init(sys.argv[1], "w0", mode="async", timeout_s=2)
t = time.monotonic()
try:
    ep.get(np.empty(7850, np.float32))
except mlfabric.Error as e:
    took = time.monotonic() - t
    assert "ps" in str(e) and took < 5, (str(e), took)
    print(f"get without a server: mlfabric.Error after {took:.1f} s: {e}")
else:
    sys.exit("get without a server succeeded")
EOF
ok "$(tail -1 "$WORK/gone.log")"

## 4. a Python server: callbacks on the library's event thread
pyrun server ps <<'EOF' &
import sys, time, os
import numpy as np
import mlfabric

n = 1000
w = np.ones(n, np.float32)
state = {"version": 0, "seen": []}

def on_update(u, info):
    w[:] += np.frombuffer(u, np.float32)
    state["version"] += len(info["parts"])
    state["seen"].append((info["src"], info["parts"]))
    return state["version"]

def on_request(model):
    np.frombuffer(model, np.float32)[:] = w
    return state["version"]

ep = mlfabric.init(sys.argv[1], "ps", role="server", mode="async", timeout_s=5)
ep.register_server(n, on_update, on_request, momentum=0.0, n_workers=1)
print("python server: serving", flush=True)
stop = os.path.join(sys.argv[2], "stop-server")
deadline = time.monotonic() + 60
while not os.path.exists(stop) and time.monotonic() < deadline:
    time.sleep(0.05)
print(f"python server: role {ep.role}, version {state['version']}, seen {state['seen']}", flush=True)
mlfabric.shutdown()
EOF
SERVER_PID=$!
APP_PIDS="$APP_PIDS $SERVER_PID"
wait_log "$WORK/server.log" "python server: serving" 10
pyrun client w2 <<'EOF' || fail "worker of the Python server: $(tail -5 "$WORK/client.log")"
import sys, time
import numpy as np
import mlfabric

ep = mlfabric.init(sys.argv[1], "w2", mode="async", timeout_s=5)
w = np.empty(1000, np.float32)
v0 = ep.get(w)
assert v0 == 0 and np.all(w == 1), (v0, w[:3])
u = np.arange(1000, dtype=np.float32) / 1000
uid = ep.push(u, float(np.linalg.norm(u)), v0)
deadline = time.monotonic() + 5
while (v1 := ep.get(w)) < 1 and time.monotonic() < deadline:
    time.sleep(0.05)
assert v1 == 1 and np.array_equal(w, 1 + u), (v1, float(np.abs(w - 1 - u).max()))
print(f"pushed id {uid}: the Python server's model moved by u at version {v1}")
EOF
uid=$(sed -n 's/^pushed id \([0-9]*\):.*/\1/p' "$WORK/client.log")
touch "$WORK/stop-server"
wait "$SERVER_PID" || fail "the Python server failed: $(tail -5 "$WORK/server.log")"
grep -qF "python server: role server, version 1, seen [('w2', [($uid, 0)])]" "$WORK/server.log" ||
	fail "on_update did not see update $uid at version 0 from w2: $(tail -2 "$WORK/server.log")"
ok "$(tail -1 "$WORK/client.log"); on_update saw ($uid, version 0) from w2"

## 5. collectives through the peer channel, init() from the MLF_* variables
cat >"$WORK/py_coll.py" <<'EOF'
import torch
import mlfabric.torch as mt

ep = mt.init()
r, n = mt.rank(), mt.size()
assert (ep.host, n, mt.local_rank()) == (["w0", "w1", "w2"][r], 3, 0), (ep.host, r, n)
m = mt.allreduce(torch.tensor([float(r), 10.0 * r]))
assert torch.equal(m, torch.tensor([1.0, 10.0])), m
s = mt.allreduce(torch.tensor(2.0 + r), average=False)
assert float(s) == 9.0, s
torch.manual_seed(r)
net = torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.BatchNorm1d(4))
opt = torch.optim.SGD(net.parameters(), lr=0.1 * (r + 1), momentum=0.9)
net(torch.randn(5, 6)).sum().backward()
opt.step()
mt.broadcast_parameters(net.state_dict(), root_rank=0)
mt.broadcast_optimizer_state(opt, root_rank=0)
torch.manual_seed(0)
ref = torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.BatchNorm1d(4))
ropt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
ref(torch.randn(5, 6)).sum().backward()
ropt.step()
for (k, a), b in zip(net.state_dict().items(), ref.state_dict().values()):
    assert torch.equal(a, b), k
assert opt.param_groups[0]["lr"] == 0.1
for p, q in zip(net.parameters(), ref.parameters()):
    assert torch.equal(opt.state[p]["momentum_buffer"], ropt.state[q]["momentum_buffer"])
print(f"rank {r} of {n} on {ep.host}: allreduce mean {m.tolist()} sum {float(s)}, rank 0's parameters and optimizer state")
EOF
for h in w0 w1 w2; do
	"$TB" exec "$CLUSTER" $h env PYTHONPATH="$ROOT/build/python" MLF_CLUSTER="$CLUSTER" MLF_HOST=$h MLF_MODE=async \
		MLF_WORKERS=w0,w1,w2 MLF_TIMEOUT=5 $PY "$WORK/py_coll.py" >"$WORK/coll-$h.log" 2>&1 &
	eval "COLL_$h=\$!"
done
for h in w0 w1 w2; do
	eval "pid=\$COLL_$h"
	wait "$pid" || fail "collectives on $h: $(tail -3 "$WORK/coll-$h.log")"
done
ok "$(tail -1 "$WORK/coll-w0.log")"
