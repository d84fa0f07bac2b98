#!/usr/bin/env bash
# torch_bench.sh - `make bench-torch` (docs/torch-example.md): the PyTorch example (examples/torch_fashion_mnist.py,
# LeNet-5, 61,706 floats) trained by 4 workers to test accuracy 0.85 with MLfabric-A, Async and
# torch.distributed gloo in C2-N1 (conf/exp-torch.json), seeds 1..3, one tools/mlf-cluster run per
# seed and system (each under `flock /tmp/mlf-netns.lock`); then the Python layer's cost per
# push+get: bench/torch_pushget.c (C) against bench/torch_pushget.py (the mlfabric package; also
# DistributedOptimizer.step()) on a two-host testbed (tpg, 10.89.0.0/24, 1 Gbit/s) in async (direct)
# mode against mlf-ps --init-file; then the overlap row: bench/torch_overlap.py (an MLP of 3.96 M
# floats, one parameter group on each of 4 servers) with and without pushes from gradient hooks
# (tov, 10.91.0.0/24, 1 Gbit/s), one run per seed. Prints the table and replaces the section
# "PyTorch over the fabric" of docs/results/torch.md. Needs root.
# Options: --seeds "1 2 3"  --systems "mlfabric-a async gloo"  --rounds N (push+get rounds, 500)
#          --out DIR (run folders)  --no-overhead  --no-overlap  --only-overlap
#          --table DIR (only rebuild the table from DIR)
#          --trace (the overlap row's worker writes MLF_TRACE timelines, DIR/overlap/trace-sSEED.jsonl:
#          bench/torch_overlap_model.py reads them)
#          --pkg DIR (the mlfabric package the overlap row measures, default build/python: an
#          older build's to compare with, alternating runs)  --results FILE (the markdown file
#          whose sections are replaced, default docs/results/torch.md)
#          --mtu N (the overlap row's cluster MTU, default 1500; 9000: jumbo frames, a sixth of
#          the frames and of the emulated links' per-frame kernel work)
#          --no-pin (the overlap row: let the kernel place every process on the machine's cores;
#          by default the dataplanes and servers run on core 0 and the worker on core 1, taskset,
#          as a deployment gives the DPDK dataplane an lcore of its own, docs/results/torch.md)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
B="$ROOT/build"
PY=/usr/bin/python3
SEEDS="1 2 3" SYSTEMS="mlfabric-a async gloo" ROUNDS=500 OVERHEAD=1 TABLE_ONLY="" OVERLAP=1
OUT="$ROOT/runs/bench-torch-$(date -u +%Y%m%dT%H%M%SZ)"
PKG="$B/python" RESULTS="$ROOT/docs/results/torch.md" TRACE="" MTU=1500 PIN=1
die() { echo "bench-torch: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
	case "$1" in
	--seeds) SEEDS=$2; shift 2;;
	--systems) SYSTEMS=$2; shift 2;;
	--rounds) ROUNDS=$2; shift 2;;
	--out) OUT=$2; shift 2;;
	--no-overhead) OVERHEAD=""; shift;;
	--no-overlap) OVERLAP=""; shift;;
	--only-overlap) OVERHEAD="" SYSTEMS=""; shift;;
	--table) TABLE_ONLY=1; OUT=$2; shift 2;;
	--pkg) PKG=$(cd "$2" && pwd) || die "--pkg $2: no such folder"; shift 2;;
	--results) RESULTS=$2; shift 2;;
	--trace) TRACE=1; shift;;
	--no-pin) PIN=""; shift;;
	--mtu) MTU=$2; shift 2
		case "$MTU" in ''|*[!0-9]*) die "--mtu $MTU: not a number of bytes";; esac;;
	-h|--help) sed -n '2,/^[^#]/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0;;
	*) die "unknown option $1 (see --help)";;
	esac
done
LOCK=(flock -o /tmp/mlf-netns.lock)
command -v flock >/dev/null || LOCK=()

if [ -z "$TABLE_ONLY" ]; then
	[ "$(id -u)" = 0 ] || die "needs root (network namespaces)"
	mkdir -p "$OUT"
	for s in $SEEDS; do
		for sys in $SYSTEMS; do
			"$PY" -c 'import json,sys; x=json.load(open(sys.argv[1])); x.update(name="bench-torch-s"+sys.argv[2], seed=int(sys.argv[2])); json.dump(x, open(sys.argv[3], "w"), indent=1)' \
				"$ROOT/conf/exp-torch.json" "$s" "$OUT/exp-s$s.json"
			echo "bench-torch: seed $s $sys" >&2
			# the machine's CPU time (all cores, /proc/stat busy ticks: tools/mlfcluster/cpu.py, as
			# the runner and bench-table2 measure it) and the wall time of the whole run, setup and
			# teardown included
			read -r cpu0 hz < <("$PY" "$ROOT/tools/mlfcluster/cpu.py" ticks); t0=$(date +%s.%N)
			"${LOCK[@]}" "$ROOT/tools/mlf-cluster" run "$OUT/exp-s$s.json" --systems "$sys" --out "$OUT/s$s-$sys" \
				>"$OUT/s$s-$sys.out" 2>&1 || echo "bench-torch: seed $s $sys: mlf-cluster exited $? (see $OUT/s$s-$sys.out)" >&2
			read -r cpu1 hz < <("$PY" "$ROOT/tools/mlfcluster/cpu.py" ticks); t1=$(date +%s.%N)
			echo "{\"cpu_ticks\": $((cpu1 - cpu0)), \"hz\": $hz, \"wall_s\": $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b - a}')}" >"$OUT/s$s-$sys.cpu.json"
		done
	done
fi

# ---- the Python layer's cost per push+get ------------------------------------------------
if [ -z "$TABLE_ONLY" ] && [ -n "$OVERHEAD" ]; then
	W="$OUT/overhead"
	mkdir -p "$W"
	CL="$W/tpg.json"
	cat >"$CL" <<'EOF'
{"name": "tpg", "mtu": 1500, "prefix_len": 24, "udp_port": 47000, "control_port": 7070, "hosts": [
 {"name": "ps", "ip": "10.89.0.2", "up_gbps": 1, "down_gbps": 1, "roles": ["server"]},
 {"name": "w0", "ip": "10.89.0.10", "up_gbps": 1, "down_gbps": 1, "roles": ["worker"]}]}
EOF
	head -c $((61706 * 4)) /dev/zero >"$W/zeros.f32"
	"${LOCK[@]}" bash -s "$B" "$CL" "$W" "$ROUNDS" "$ROOT" <<'EOS' || echo "bench-torch: overhead measurement failed (see $W)" >&2
set -euo pipefail
B=$1 CL=$2 W=$3 ROUNDS=$4 ROOT=$5
ps_pid=""
trap '[ -n "$ps_pid" ] && kill $ps_pid 2>/dev/null; "$B/mlf-testbed" down "$CL" >/dev/null 2>&1 || true' EXIT
"$B/mlf-testbed" up "$CL" >"$W/up.log" 2>&1
for h in ps w0; do "$B/mlf-testbed" dataplane "$CL" "$h" --log "$W/dp-$h.log" -- --scheduler none >/dev/null; done
"$B/mlf-testbed" exec "$CL" ps "$B/mlf-ps" --cluster "$CL" --host ps --mode async --workers 1 \
	--init-file "$W/zeros.f32" --records "$W" >"$W/ps.log" 2>&1 &
ps_pid=$!
for i in $(seq 100); do grep -q serving "$W/ps.log" && break; sleep 0.1; done
grep -q serving "$W/ps.log" || { echo "mlf-ps not serving: $(tail -n 1 "$W/ps.log")" >&2; exit 1; }
ex() { "$B/mlf-testbed" exec "$CL" w0 env PYTHONPATH="$B/python" "$@"; }
ex "$B/bench-torch-pushget" --cluster "$CL" --host w0 --server ps --rounds "$ROUNDS" >"$W/c.json"
ex /usr/bin/python3 "$ROOT/bench/torch_pushget.py" --cluster "$CL" --host w0 --server ps --rounds "$ROUNDS" >"$W/python.json"
ex /usr/bin/python3 "$ROOT/bench/torch_pushget.py" --cluster "$CL" --host w0 --server ps --rounds "$ROUNDS" \
	--optimizer >"$W/optimizer.json"
EOS
fi

# ---- the overlap row: per-group pushes from gradient hooks against pushes after backward ----
if [ -z "$TABLE_ONLY" ] && [ -n "$OVERLAP" ]; then
	W="$OUT/overlap"
	mkdir -p "$W"
	CL="$W/tov.json"
	cat >"$CL" <<EOF
{"name": "tov", "mtu": $MTU, "prefix_len": 24, "udp_port": 47000, "control_port": 7070, "hosts": [
 {"name": "ps0", "ip": "10.91.0.2", "up_gbps": 1, "down_gbps": 1, "roles": ["server"]},
 {"name": "ps1", "ip": "10.91.0.3", "up_gbps": 1, "down_gbps": 1, "roles": ["server"]},
 {"name": "ps2", "ip": "10.91.0.4", "up_gbps": 1, "down_gbps": 1, "roles": ["server"]},
 {"name": "ps3", "ip": "10.91.0.5", "up_gbps": 1, "down_gbps": 1, "roles": ["server"]},
 {"name": "w0", "ip": "10.91.0.10", "up_gbps": 1, "down_gbps": 1, "roles": ["worker"]}]}
EOF
	for s in $SEEDS; do
		echo "bench-torch: overlap seed $s" >&2
		"${LOCK[@]}" bash -s "$B" "$CL" "$W" "$s" "$ROOT" "$PKG" "$TRACE" "$PIN" <<'EOS' || echo "bench-torch: overlap seed $s failed (see $W)" >&2
set -euo pipefail
B=$1 CL=$2 W=$3 SEED=$4 ROOT=$5 PKG=$6 TRACE=$7 PIN=$8
pids=""
trap 'for p in $pids; do kill $p 2>/dev/null || true; done; "$B/mlf-testbed" down "$CL" >/dev/null 2>&1 || true' EXIT
"$B/mlf-testbed" up "$CL" >"$W/up-s$SEED.log" 2>&1
for h in ps0 ps1 ps2 ps3 w0; do "$B/mlf-testbed" dataplane "$CL" "$h" --log "$W/dp-$h-s$SEED.log" -- --scheduler none >/dev/null; done
for k in 0 1 2 3; do
	"$B/mlf-testbed" exec "$CL" ps$k "$B/mlf-ps" --cluster "$CL" --host ps$k --mode async --workers 1 \
		--init-from w0 --momentum 0 --records "$W/ps$k-s$SEED" >"$W/ps$k-s$SEED.log" 2>&1 &
	pids="$pids $!"
done
for k in 0 1 2 3; do
	for i in $(seq 100); do grep -q "waiting for the initial model" "$W/ps$k-s$SEED.log" && break; sleep 0.1; done
done
rm -f "$W/trace-s$SEED.jsonl"
WPIN=()
: >"$W/placement"
if [ -n "$PIN" ]; then   # every thread of the dataplanes and servers on core 0, the worker on core 1
	n=0
	for p in $(pgrep -f "file-prefix=tov-|mlf-ps --cluster $CL"); do
		taskset -a -cp 0 "$p" >/dev/null 2>&1 && n=$((n + 1))   # (a wrapper may end meanwhile)
	done
	[ "$n" -ge 9 ] || { echo "bench-torch: pinned $n processes to core 0, expected 9 (5 dataplanes, 4 servers)" >&2; exit 1; }
	echo pinned >"$W/placement"
	WPIN=(taskset -c 1)
fi
"$B/mlf-testbed" exec "$CL" w0 "${WPIN[@]}" env PYTHONPATH="$PKG" MLF_CLUSTER="$CL" MLF_HOST=w0 MLF_MODE=async \
	MLF_SERVERS=ps0,ps1,ps2,ps3 ${TRACE:+MLF_TRACE="$W/trace-s$SEED.jsonl"} \
	/usr/bin/python3 "$ROOT/bench/torch_overlap.py" --seed "$SEED" >"$W/s$SEED.json"
EOS
	done
fi

# ---- the table and docs/results/torch.md -------------------------------------------------
"$PY" - "$OUT" "$RESULTS" "$SYSTEMS" <<'EOF'
import glob, json, os, re, statistics, sys, time
out, bm, systems = sys.argv[1], sys.argv[2], sys.argv[3].split()
rows, seeds = [], sorted({int(m.group(1)) for p in glob.glob(out + "/s*-*/results.json")
                          for m in [re.search(r"/s(\d+)-", p)] if m})
exp = json.load(open(glob.glob(out + "/exp-s*.json")[0])) if glob.glob(out + "/exp-s*.json") else {}
lines = ["| system | seeds reached | time to %s (s): median | min-max | per seed | final accuracy | iteration s | machine busy cores (median) |"
         % exp.get("target_accuracy", 0.85), "|---|---|---|---|---|---|---|---|"]
for s in systems:
    per, fin, its, busy = [], [], [], []
    for seed in seeds:
        p = "%s/s%d-%s/results.json" % (out, seed, s)
        c = "%s/s%d-%s.cpu.json" % (out, seed, s)
        if os.path.exists(c):
            cj = json.load(open(c))
            busy.append(cj["cpu_ticks"] / cj["hz"] / cj["wall_s"])
        r = json.load(open(p))["systems"].get(s) if os.path.exists(p) else None
        per.append("no run" if r is None else r["time_to_target_s"] if r["reached"] else None)
        if r:
            fin.append(r["final_accuracy"] or 0)
            its.append(r["mean_iteration_s"] or 0)
    got = [t for t in per if isinstance(t, (int, float))]
    # a seed that missed the target counts as "over the time limit" (inf), so the median and
    # the max are those of every seed, not of the lucky ones
    allv = sorted(got + [float("inf")] * sum(1 for t in per if t is None))
    lim = exp.get("time_limit_s", "limit")
    f1 = lambda v: "%.1f" % v if v != float("inf") else "> %s" % lim
    lines.append("| %s | %d/%d | %s | %s | %s | %s | %s | %s |" % (
        s, len(got), len(seeds), f1(statistics.median(allv)) if allv else "-",
        "%s-%s" % (f1(min(allv)), f1(max(allv))) if allv else "-",
        ", ".join(t if isinstance(t, str) else f1(t) if t is not None else "not reached" for t in per),
        " ".join("%.3f" % a for a in fin) or "-", " ".join("%.3f" % a for a in its) or "-",
        "%.2f of 2 (%.2f-%.2f)" % (statistics.median(busy), min(busy), max(busy)) if busy else "-"))
ov = {}
for k in ("c", "python", "optimizer"):
    p = "%s/overhead/%s.json" % (out, k)
    if os.path.exists(p) and os.path.getsize(p):
        ov[k] = json.load(open(p))
if ov.get("c") and ov.get("python"):
    c, py = ov["c"], ov["python"]
    lines += ["", "Push+get round trip of a %d-float update, async (direct) mode, two hosts at 1 Gbit/s, %d rounds:"
              % (c["n"], c["rounds"]), "",
              "| client | mean ms | p50 ms | min ms | max ms | vs C (mean) |", "|---|---|---|---|---|---|"]
    for k, name in (("c", "C (bench/torch_pushget.c)"), ("python", "Python ep.push + ep.get"),
                    ("optimizer", "Python DistributedOptimizer.step()")):
        if k in ov:
            v = ov[k]
            lines.append("| %s | %.3f | %.3f | %.3f | %.3f | %.2fx (%+.3f ms) |" % (
                name, v["mean_s"] * 1e3, v["p50_s"] * 1e3, v["min_s"] * 1e3, v["max_s"] * 1e3,
                v["mean_s"] / c["mean_s"], (v["mean_s"] - c["mean_s"]) * 1e3))
table = "\n".join(lines) + "\n"
sys.stdout.write(table)
head = "## PyTorch over the fabric (bench-torch)"
sec = (head + "\n\n`make bench-torch` (bench/torch_bench.sh), %s, run folders %s: examples/torch_fashion_mnist.py "
       "(LeNet-5, 61,706 floats) on 4 workers of %s, %s-%s, rate_scale %s, compute_s %s, batch_ms %s, batch %s, lr %s "
       "(MLfabric-A, Async: the workers' update -lr*g, momentum %s at the server), lr_sync %s (gloo: the averaged "
       "gradient, local SGD with momentum %s), time limit %s s, seeds %s.\n\n%s"
       % (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), out, exp.get("cluster"), exp.get("compute"),
          exp.get("network"), exp.get("rate_scale"), exp.get("compute_s"), exp.get("batch_ms"), exp.get("batch"), exp.get("lr"),
          exp.get("momentum"), exp.get("lr_sync"), exp.get("momentum"), exp.get("time_limit_s"),
          " ".join(map(str, seeds)), table))
def replace(text, head, sec):
    m = re.search(r"^" + re.escape(head) + r".*?(?=^## |\Z)", text, re.S | re.M)
    return text[:m.start()] + sec + "\n" + text[m.end():] if m else text.rstrip("\n") + "\n\n" + sec
text = open(bm).read() if os.path.exists(bm) else ""
if systems:
    text = replace(text, head, sec)
ovl = [json.load(open(p)) for p in sorted(glob.glob(out + "/overlap/s*.json")) if os.path.getsize(p)]
if ovl:
    o0 = ovl[0]
    ph = lambda k: [o[k]["median_s"] for o in ovl]
    mm = lambda v: "%.0f (%.0f-%.0f)" % (statistics.median(v) * 1e3, min(v) * 1e3, max(v) * 1e3)
    bound = [max(o["compute"]["median_s"], o["comm"]["median_s"]) for o in ovl]
    total = [o["compute"]["median_s"] + o["comm"]["median_s"] for o in ovl]
    tov = json.load(open(out + "/overlap/tov.json"))
    pinned = os.path.exists(out + "/overlap/placement") and open(out + "/overlap/placement").read().strip() == "pinned"
    where = ("the dataplanes and servers pinned to core 0, the worker to core 1 (`--no-pin`: the kernel places them)"
             if pinned else "every process placed by the kernel on both cores (`--no-pin`)")
    olines = ["Overlap (bench/torch_overlap.py): an MLP %s (%d floats, batch %d) on one worker, its parameters "
              "in %d groups on servers %s (async mode, 1 Gbit/s links, MTU %s; %s); iteration ms: median over seeds %s of "
              "each seed's median of %d iterations (min-max of the seeds); per seed, the ratio to "
              "max(compute, comm):" % (o0["layers"], o0["floats"], o0["batch"], len(o0["groups"]),
                                       " ".join(o0["servers"]), tov["mtu"], where, " ".join(str(o["seed"]) for o in ovl),
                                       o0["compute"]["n"]), "",
              "| iteration | ms | / max(compute, comm) per seed | fabric CPU s per iteration (median of seeds) |",
              "|---|---|---|---|"]
    cpu = lambda k: ("%.3f" % statistics.median([o[k]["cpu_s"] for o in ovl])
                     if all("cpu_s" in o[k] for o in ovl) else "-")
    for k, name in (("compute", "compute only (forward, backward, local step)"),
                    ("comm", "communication only (push + get of every group)"),
                    ("sequential", "pushes after backward (overlap=False)"),
                    ("overlap", "per-group pushes from gradient hooks (overlap=True)"),
                    ("prefetch", "the same, next models prefetched (prefetch=True)")):
        if not all(k in o for o in ovl):
            continue
        olines.append("| %s | %s | %s | %s |" % (name, mm(ph(k)), " ".join("%.2f" % (v / b) for v, b in zip(ph(k), bound)),
                                                 cpu(k)))
    olines.append("| compute + comm | %s | %s | - |" % (mm(total), " ".join("%.2f" % (t / b) for t, b in zip(total, bound))))
    otable = "\n".join(olines) + "\n"
    sys.stdout.write("\n" + otable)
    text = replace(text, "## Overlap of pushes with backward (bench-torch)",
                   "## Overlap of pushes with backward (bench-torch)\n\n`bench/torch_bench.sh --only-overlap` "
                   "(part of `make bench-torch`), %s, run folder %s/overlap.\n\n%s"
                   % (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), out, otable))
open(bm, "w").write(text)
print("bench-torch: %s of %s replaced; run folders in %s" % (" and ".join(
    n for n, on in (("\"PyTorch over the fabric\"", systems), ("\"Overlap of pushes with backward\"", ovl)) if on) or "nothing",
    bm, out), file=sys.stderr)
EOF
