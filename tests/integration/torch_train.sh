#!/usr/bin/env bash
# torch_train.sh - the PyTorch example (examples/torch_fashion_mnist.py) as the worker program of
# tools/mlf-cluster (docs/torch-example.md): conf/exp-torch.json (conf/cluster-fabric.json, 4 workers, C2-N1)
# with MLfabric-A must reach test accuracy >= 0.80 (time limit 420 s), evaluated by the root worker
# w0 on the model the server built from w0's initial model (mlf-ps --init-from w0); the gloo
# baseline (torch.distributed all-reduce, no fabric process) must run 30 s in the same namespaces,
# every rank making the same number of steps, and write evaluations that rise above chance.
# Reads results.json and the records; about 3 minutes (up to 8 on a slow machine). Needs root; run under
# `flock /tmp/mlf-netns.lock`.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/workdir.sh"   # work_done
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TEST_NAME=torch_train
TB="$ROOT/build/mlf-testbed"
CL="$ROOT/conf/cluster-fabric.json"
PY=/usr/bin/python3
fail() { echo "FAIL $TEST_NAME: $*" >&2; exit 1; }
ok() { echo "ok   $TEST_NAME: $*"; }
[ "$(id -u)" = 0 ] || { echo "SKIP $TEST_NAME: needs root"; exit 0; }
for p in mlf-dataplane mlf-tel mlf-scheduler mlf-aggregator mlf-ps mlf-testbed; do
	[ -x "$ROOT/build/$p" ] || { echo "SKIP $TEST_NAME: build/$p not built"; exit 0; }
done
# make test installs python3-torch (make deps) and make builds the extension: their absence is a failure
ls "$ROOT"/build/python/mlfabric/_mlfabric*.so >/dev/null 2>&1 || fail "build/python/mlfabric not built (make)"
"$PY" -c 'import torch, numpy' 2>/dev/null || fail "$PY has no torch/numpy (make deps installs python3-torch)"

WORK="$(mktemp -d --tmpdir=/dev/shm)"
cleanup() {
	local rc=$?
	"$TB" down "$CL" >/dev/null 2>&1 || true
	if [ $rc -ne 0 ]; then
		for f in "$WORK"/*.out "$WORK"/*/*/logs/{ps,worker-w0,worker-w1}.log; do
			[ -f "$f" ] && { echo "--- tail of $f"; tail -n 6 "$f"; }
		done >&2
		echo "FAIL $TEST_NAME (exit $rc)"
	fi
	if [ -n "${TORCH_KEEP:-}" ]; then echo "kept $WORK" >&2; else work_done $rc; fi
	exit $rc
}
trap cleanup EXIT

# the two variants of conf/exp-torch.json: MLfabric-A to 0.80, gloo for 30 s. The test checks that
# PyTorch workers train through the fabric, not how fast (make bench-torch measures that, to the
# file's 0.85). 0.85 is where MLfabric-A's accuracy levels off in this setting: bench-torch had one
# seed of three at 0.828 after 150 s, and a CI run on 2026-11-26 was still below 0.85 after 412 s
# and 8,454 model versions (535 of 2,621 updates of w1 dropped), so as a test target it failed
# at random. 0.80 was passed in every run on record (a CI run at 0.823 after 240 s). The limit
# (420 s) only bounds a run that fails.
"$PY" - "$ROOT/conf/exp-torch.json" "$WORK" <<'EOF'
import json, sys
x = json.load(open(sys.argv[1]))
for name, systems, limit, target in (("a", ["mlfabric-a"], 420, 0.80), ("g", ["gloo"], 30, 0.85)):
    json.dump(dict(x, name="torch-test-" + name, systems=systems, time_limit_s=limit,
                   target_accuracy=target),
              open("%s/exp-%s.json" % (sys.argv[2], name), "w"))
EOF

"$ROOT/tools/mlf-cluster" check "$WORK/exp-a.json" >/dev/null || fail "mlf-cluster check refused exp-a.json"
"$ROOT/tools/mlf-cluster" run "$WORK/exp-a.json" --out "$WORK/a" >"$WORK/a.out" 2>&1 ||
	fail "mlf-cluster run (mlfabric-a) exited with status $?: $(tail -n 2 "$WORK/a.out" | tr '\n' ' ')"
"$ROOT/tools/mlf-cluster" run "$WORK/exp-g.json" --out "$WORK/g" >"$WORK/g.out" 2>&1 ||
	fail "mlf-cluster run (gloo) exited with status $?: $(tail -n 2 "$WORK/g.out" | tr '\n' ' ')"

# assertions on results.json and the records (one line each; the first failure ends the test)
"$PY" - "$WORK" <<'EOF' || exit 1
import glob, json, os, sys
W = sys.argv[1]
def fail(msg):
    print("FAIL torch_train: " + msg, file=sys.stderr)
    sys.exit(1)
def ok(msg):
    print("ok   torch_train: " + msg)
def lines(p):
    return [json.loads(l) for l in open(p) if l.strip()]

a = json.load(open(W + "/a/results.json"))["systems"]["mlfabric-a"]
rec = W + "/a/mlfabric-a/records"
if not a["reached"] or a["stop_reason"] != "target":
    fail("mlfabric-a did not reach 0.80: final accuracy %s, stop %s" % (a["final_accuracy"], a["stop_reason"]))
acc = lines(rec + "/w0/accuracy.jsonl")
best = max(x["accuracy"] for x in acc)
if best < 0.80 or a["evaluations"] != len(acc):
    fail("mlfabric-a: best evaluation %.3f of %d in w0/accuracy.jsonl, results say %d" % (best, len(acc), a["evaluations"]))
for h in ("w1", "w2", "w3"):
    if os.path.exists("%s/%s/accuracy.jsonl" % (rec, h)):
        fail("worker %s evaluated: only the root worker w0 should" % h)
if a["dead_workers"]:
    fail("mlfabric-a: workers died: %s" % a["dead_workers"])
ws = {os.path.basename(os.path.dirname(p)): json.load(open(p)) for p in glob.glob(rec + "/w*/worker.json")}
if sorted(ws) != ["w0", "w1", "w2", "w3"] or any(w["iterations"] < 10 or w["pushed"] != w["iterations"] for w in ws.values()):
    fail("mlfabric-a worker records: %s" % {h: (w["iterations"], w["pushed"]) for h, w in ws.items()})
applied = lines(rec + "/applied.jsonl")
if not applied or a["applied"] < 10 or max(x["delay"] for x in applied) > 8:
    fail("mlfabric-a: %d applied updates, max delay %s (tau_max 8)" % (len(applied), a["delay"]["max"]))
ps = open(W + "/a/mlfabric-a/logs/ps.log").read()
if "waiting for the initial model from w0" not in ps or "61706 floats" not in ps:
    fail("mlf-ps did not take the 61706-float initial model from w0: %s" % ps.splitlines()[:3])
ok("mlfabric-a reached %.3f at t=%.1f s (target 0.80); %d updates applied, max delay %s, %d dropped; "
   "server model = w0's 61706-float LeNet-5" % (best, a["time_to_target_s"], a["applied"], a["delay"]["max"], a["dropped"]))

g = json.load(open(W + "/g/results.json"))["systems"]["gloo"]
grec = W + "/g/gloo/records"
gacc = lines(grec + "/w0/accuracy.jsonl")
if g["evaluations"] < 5 or len(gacc) != g["evaluations"]:
    fail("gloo: %s evaluations (w0/accuracy.jsonl: %d lines)" % (g["evaluations"], len(gacc)))
if max(x["accuracy"] for x in gacc) < 0.5:
    fail("gloo: accuracy stayed near chance: %s" % [x["accuracy"] for x in gacc])
its = {h: json.load(open("%s/%s/worker.json" % (grec, h)))["iterations"] for h in ("w0", "w1", "w2", "w3")}
if len(set(its.values())) != 1 or its["w0"] < 20:
    fail("gloo ranks made different numbers of all-reduce steps: %s" % its)
logs = os.listdir(W + "/g/gloo/logs")
if any(l.startswith(("ps", "dp-", "scheduler", "aggregator")) for l in logs):
    fail("gloo started fabric processes: %s" % logs)
ok("gloo baseline ran: %d steps on each of 4 ranks, %d evaluations, best %.3f, stop %s"
   % (its["w0"], len(gacc), max(x["accuracy"] for x in gacc), g["stop_reason"]))
EOF
left=$(ip netns list | grep -c '^clu-' || true)
[ "$left" = 0 ] || fail "$left clu-* namespaces left after the runs"
ok "no namespace or process left"
