#!/usr/bin/env bash
# python_newuser.sh - a new user's own training script on the fabric (docs/python.md "Your own
# script"): a fresh venv of Debian's python3 with --system-site-packages, `pip install
# --no-build-isolation .` (offline, the library make built), then the 20-line script of
# docs/python.md (init(), rank/size, DistributedOptimizer, broadcast_parameters, allreduce of
# the loss) run on two workers of conf/cluster-fabric.json in mode async by
# `tools/mlf-cluster run EXP -- VENV/bin/python3 train.py`, with the venv's package (the runner
# adds no PYTHONPATH: MLF_PYTHONPATH=""). Rank 0's model must reach accuracy 0.90 on the
# synthetic task (a linear rule on 20 Gaussian features; chance 0.5), both workers must exit 0
# having made 150 steps each with the same allreduced loss. About 15 s. Needs root; run under
# `flock /tmp/mlf-netns.lock`.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/workdir.sh"   # work_done
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TEST_NAME=python_newuser
PY=/usr/bin/python3
fail() { echo "FAIL $TEST_NAME: $*" >&2; exit 1; }
ok() { echo "ok   $TEST_NAME: $*"; }
[ "$(id -u)" = 0 ] || { echo "SKIP $TEST_NAME: needs root"; exit 0; }
for p in mlf-dataplane mlf-tel mlf-ps mlf-testbed; do
	[ -x "$ROOT/build/$p" ] || { echo "SKIP $TEST_NAME: build/$p not built"; exit 0; }
done
"$PY" -c 'import torch' 2>/dev/null || fail "$PY has no torch (make deps installs python3-torch)"

WORK="$(mktemp -d --tmpdir=/dev/shm)"
cleanup() {
	local rc=$?
	"$ROOT/build/mlf-testbed" down "$ROOT/conf/cluster-fabric.json" >/dev/null 2>&1 || true
	if [ $rc -ne 0 ]; then
		for f in "$WORK"/pip.log "$WORK"/run.out "$WORK"/run/async/logs/{ps,worker-w0,worker-w1}.log; do
			[ -f "$f" ] && { echo "--- tail of $f"; tail -n 6 "$f"; }
		done >&2
	fi
	work_done $rc
	exit $rc
}
trap cleanup EXIT

t0=$(date +%s)
"$PY" -m venv --system-site-packages "$WORK/venv" >"$WORK/venv.log" 2>&1 || fail "python3 -m venv: $(tail -2 "$WORK/venv.log")"
(cd "$ROOT" && MLFABRIC_LIBRARY=tree PIP_NO_CACHE_DIR=1 "$WORK/venv/bin/pip" install --no-build-isolation --no-index \
	--disable-pip-version-check . >"$WORK/pip.log" 2>&1) || fail "pip install --no-build-isolation .: $(tail -2 "$WORK/pip.log")"

# the user's script: what docs/python.md "Your own script" shows, line for line
cat >"$WORK/train.py" <<'EOF'
import torch
import mlfabric.torch as mf

mf.init()                                                # what mlf-cluster set: MLF_CLUSTER, MLF_HOST, ...
torch.manual_seed(0)                                     # the same data on every worker
X = torch.randn(4000, 20)
Y = (X @ torch.randn(20) > 0).long()
Xs, Ys = X[mf.rank()::mf.size()], Y[mf.rank()::mf.size()]   # this worker's shard
model = torch.nn.Sequential(torch.nn.Linear(20, 64), torch.nn.ReLU(), torch.nn.Linear(64, 2))
opt = mf.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.05),
                              named_parameters=model.named_parameters())
mf.broadcast_parameters(model.state_dict(), root_rank=0)
for step in range(150):
    i = torch.randint(0, len(Xs), (32,))
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(Xs[i]), Ys[i])
    loss.backward()
    opt.step()
    avg = mf.allreduce(loss.detach(), name="loss")       # the mean over the workers
acc = (model(X).argmax(1) == Y).float().mean().item()
print(f"rank {mf.rank()} of {mf.size()}: {step + 1} steps, loss {avg.item():.4f}, accuracy {acc:.3f}")
EOF
"$PY" - "$ROOT/conf/exp-torch.json" "$WORK/exp.json" <<'EOF'
import json, sys
x = json.load(open(sys.argv[1]))
x.pop("worker_program")
json.dump(dict(x, name="newuser", systems=["async"], workers="w0,w1", time_limit_s=80), open(sys.argv[2], "w"))
EOF
cd "$WORK"
MLF_PYTHONPATH="" "$ROOT/tools/mlf-cluster" run "$WORK/exp.json" --out "$WORK/run" -- "$WORK/venv/bin/python3" train.py \
	>"$WORK/run.out" 2>&1 || fail "mlf-cluster run -- python3 train.py exited with status $?: $(tail -n 2 "$WORK/run.out" | tr '\n' ' ')"
L="$WORK/run/async/logs"
for r in 0 1; do
	line=$(grep "^rank $r of 2:" "$L/worker-w$r.log" || true)
	[ -n "$line" ] || fail "worker w$r printed no result: $(tail -n 3 "$L/worker-w$r.log" | tr '\n' ' ')"
	set -- $line
	[ "$5" = 150 ] || fail "w$r: $line (150 steps expected)"
	eval "loss$r=\${8%,}"
	awk -v a="${10}" 'BEGIN { exit !(a >= 0.90) }' || fail "w$r: accuracy ${10} below 0.90: $line"
done
[ "$loss0" = "$loss1" ] || fail "the allreduced loss differs: w0 $loss0, w1 $loss1"
grep -q "stopping (all workers exited)" "$WORK/run.out" || fail "the run did not end with its workers: $(grep stopping "$WORK/run.out")"
where=$("$WORK/venv/bin/python3" -c 'import mlfabric; print(mlfabric.__file__)')
case "$where" in "$WORK/venv/"*) ;; *) fail "the venv's python3 imports mlfabric from $where, not the venv";; esac
ok "$(grep '^rank 0' "$L/worker-w0.log"); loss allreduced alike on both; venv + pip install + run in $(( $(date +%s) - t0 )) s"
