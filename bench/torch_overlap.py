#!/usr/bin/python3
"""torch_overlap.py - `make bench-torch` overlap row: does pushing each server's parameter group
from a gradient hook (mlfabric.torch.DistributedOptimizer, overlap=True) hide the communication
behind backward and the next forward?

An MLP with several large layers (--layers, default 784,1024,1024,1024,1024,10: 3.96 M floats)
trains on random data (batch --batch) on one worker whose parameter groups live on the servers
MLF_SERVERS (one group each). Four kinds of iteration, timed round-robin (per round and kind,
after the fabric is idle: one iteration untimed, then --per iterations timed back to back, so
that the machine's load drifts alike for all four; an iteration's time is that span over --per:
in steady state every iteration's forward waits for the previous one's gets, so the span holds
--per such waits, the first for the untimed iteration's gets. The wait for the last timed
iteration's gets comes after the span, reported as `tail_s`: until 2026-11-28 (third session)
it was inside the span, so an overlapped iteration counted 1 + 1/--per waits, about E/4 = 17 ms
too many at E = 68 ms; `with_tail_s` is that earlier measure, for comparison):
  compute     forward, backward and the local SGD step only (no fabric);
  comm        push every group's update and get every group's model (no compute);
  sequential  forward, backward, then step() pushes and gets (overlap off: their sum);
  overlap     forward, backward whose hooks push each group as soon as its gradients exist,
              each group's get starts right after its push on a thread of its own, the next
              forward waits per layer (overlap on);
  prefetch    as overlap, but step() gets every group's model for the next iteration, one get
              after another, and each hook loads its group's model right after its push: the
              forward waits for nothing (DistributedOptimizer(prefetch=True); left out with a
              package without it).
Prints one JSON object: per kind the median, min and max iteration seconds, and the median CPU
seconds per iteration of the fabric's processes (this worker, and every process whose command
line names the testbed's cluster file or its dataplanes' file prefix: /proc/PID/stat utime +
stime), so that a ceiling from the CPU (2 cores shared by compute and communication) can be
put next to the times. Run inside the
worker's namespace with the MLF_* variables set (mlfabric.init()). Exit 0, 1 on a fabric error
(named).
"""
import argparse
import inspect
import json
import os
import statistics
import sys
import time

import torch

import mlfabric
import mlfabric.torch as mt


def mlp(layers):
    mods = []
    for i in range(len(layers) - 1):
        mods.append(torch.nn.Linear(layers[i], layers[i + 1]))
        if i < len(layers) - 2:
            mods.append(torch.nn.ReLU())
    return torch.nn.Sequential(*mods)


def fabric_cpu_s(cluster):
    """CPU seconds so far (user + system) of this process and of every process whose command line
    names `cluster` or the dataplanes' file prefix of its testbed (servers, dataplanes)."""
    tag = "file-prefix=%s-" % json.load(open(cluster))["name"]
    hz, total = os.sysconf("SC_CLK_TCK"), 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = open("/proc/%s/cmdline" % pid, "rb").read().decode(errors="replace")
            if int(pid) != os.getpid() and cluster not in cmd and tag not in cmd:
                continue
            f = open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()
            total += int(f[11]) + int(f[12])       # utime, stime (fields 14, 15)
        except (OSError, ValueError, IndexError):
            continue                               # gone meanwhile
    return total / hz


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layers", default="784,1024,1024,1024,1024,10")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--per", type=int, default=4, help="iterations timed back to back per round and kind")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--kinds", default="compute,comm,sequential,overlap,prefetch",
                   help="the kinds of iteration to time (comma-separated; fewer to profile one)")
    a = p.parse_args()
    torch.manual_seed(a.seed)
    torch.set_num_threads(a.threads)
    layers = [int(x) for x in a.layers.split(",")]
    net = mlp(layers)
    x = torch.randn(a.batch, layers[0])
    y = torch.randint(0, layers[-1], (a.batch,))
    loss_fn = torch.nn.CrossEntropyLoss()
    mt.init(timeout_s=30)
    has_prefetch = "prefetch" in inspect.signature(mt.DistributedOptimizer).parameters
    opt = mt.DistributedOptimizer(torch.optim.SGD(net.parameters(), lr=0.001),
                                  named_parameters=net.named_parameters(), overlap=True)
    opt.prefetch = False
    local = torch.optim.SGD(net.parameters(), lr=0.001)

    def compute():
        opt.overlap = False
        local.zero_grad()
        loss_fn(net(x), y).backward()
        local.step()

    def comm():
        opt.overlap = False
        for q in net.parameters():
            q.grad = torch.zeros_like(q)
        opt.step()          # push every group (a zero update), get every group

    def iteration(overlap, prefetch=False):
        def it():
            opt.overlap = overlap
            opt.prefetch = prefetch
            opt.zero_grad()
            loss_fn(net(x), y).backward()
            opt.step()
        return it
    kinds = {"compute": compute, "comm": comm, "sequential": iteration(False), "overlap": iteration(True),
             "prefetch": iteration(True, True)}
    want = a.kinds.split(",")
    if not has_prefetch and "prefetch" in want:
        want.remove("prefetch")   # an older package: nothing to measure
    bad = [k for k in want if k not in kinds]
    if bad or not want:
        p.error("--kinds: unknown kind %s (of %s)" % (", ".join(bad) or "''", ", ".join(kinds)))
    kinds = {k: kinds[k] for k in want}
    ts = {k: [] for k in kinds}
    cpu = {k: [] for k in kinds}
    tails = {k: [] for k in kinds}
    cluster = os.path.abspath(os.environ["MLF_CLUSTER"])
    for r in range(a.warmup + a.rounds):
        for k, fn in kinds.items():
            opt.wait()
            fn()                  # untimed: the first forward finds the model there
            c = fabric_cpu_s(cluster)   # (scanning /proc takes 1-6 ms: outside the span)
            t = time.perf_counter()
            for _ in range(a.per):
                fn()              # each forward waits for the previous iteration's gets
            t1 = time.perf_counter()
            c1 = fabric_cpu_s(cluster)
            opt.wait()            # the last iteration's gets: the next iteration would wait for them
            if r >= a.warmup:
                ts[k].append((t1 - t) / a.per)
                tails[k].append(time.perf_counter() - t1)
                cpu[k].append((c1 - c) / a.per)
    opt.wait()
    out = {"layers": a.layers, "floats": sum(q.numel() for q in net.parameters()), "batch": a.batch,
           "seed": a.seed, "servers": mlfabric.endpoint().servers,
           "groups": [[s, hi - lo] for s, lo, hi in opt.groups], "pushed": mlfabric.endpoint().stats()["pushed"]}
    for k, v in ts.items():
        out[k] = {"median_s": statistics.median(v), "min_s": min(v), "max_s": max(v), "n": len(v),
                  "cpu_s": statistics.median(cpu[k]), "tail_s": statistics.median(tails[k]),
                  "with_tail_s": statistics.median(x + y / a.per for x, y in zip(v, tails[k]))}
    st = mlfabric.endpoint().stats()
    out["push_buffers"] = [st.get("push_buffers"), st.get("push_buffers_reused")]  # None: an older package
    print(json.dumps(out))
    mlfabric.shutdown()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except mlfabric.Error as e:
        print("torch_overlap: %s" % e, file=sys.stderr)
        sys.exit(1)
