#!/usr/bin/python3
"""torch_overlap.py - `make bench-torch` overlap row: does pushing each server's parameter group
from a gradient hook (mlfabric.torch.DistributedOptimizer, overlap=True) hide the communication
behind backward?

An MLP with several large layers (--layers, default 784,1024,1024,1024,1024,10: 3.96 M floats)
trains on random data (batch --batch) on one worker whose parameter groups live on the servers
MLF_SERVERS (one group each). Four phases of --iters timed iterations each (after --warmup):
  compute   forward, backward and the local SGD step only (no fabric);
  comm      push every group's update and get every group's model (no compute);
  sequential  forward, backward, then step() pushes and gets (overlap=False: their sum);
  overlap   forward, backward whose hooks push each group as soon as its gradients exist, then
            step() gets (overlap=True).
Prints one JSON object: per phase the median and min/max iteration seconds. Run inside the worker's
namespace with the MLF_* variables set (mlfabric.init()). Exit 0, 1 on a fabric error (named).
"""
import argparse
import json
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


def timed(n, warmup, fn):
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return {"median_s": statistics.median(ts), "min_s": min(ts), "max_s": max(ts), "n": n}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layers", default="784,1024,1024,1024,1024,10")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args()
    torch.manual_seed(a.seed)
    torch.set_num_threads(a.threads)
    layers = [int(x) for x in a.layers.split(",")]
    net = mlp(layers)
    x = torch.randn(a.batch, layers[0])
    y = torch.randint(0, layers[-1], (a.batch,))
    loss_fn = torch.nn.CrossEntropyLoss()
    mt.init(timeout_s=30)
    out = {"layers": a.layers, "floats": sum(q.numel() for q in net.parameters()), "batch": a.batch,
           "seed": a.seed, "servers": mlfabric.endpoint().servers}
    local = torch.optim.SGD(net.parameters(), lr=0.001)

    def compute():
        local.zero_grad()
        loss_fn(net(x), y).backward()
        local.step()
    out["compute"] = timed(a.iters, a.warmup, compute)
    seq = mt.DistributedOptimizer(torch.optim.SGD(net.parameters(), lr=0.001),
                                  named_parameters=net.named_parameters(), overlap=False)
    out["groups"] = [[s, hi - lo] for s, lo, hi in seq.groups]
    for p_ in net.parameters():
        p_.grad = torch.zeros_like(p_)

    def comm():
        seq.step()          # the gradients stay: push every group, get every group
    out["comm"] = timed(a.iters, a.warmup, comm)

    def iteration(opt):
        def it():
            opt.zero_grad()
            loss_fn(net(x), y).backward()
            opt.step()
        return it
    out["sequential"] = timed(a.iters, a.warmup, iteration(seq))
    ovl = mt.DistributedOptimizer(torch.optim.SGD(net.parameters(), lr=0.001),
                                  named_parameters=net.named_parameters(), overlap=True, init_model=False)
    ovl.versions = list(seq.versions)
    out["overlap"] = timed(a.iters, a.warmup, iteration(ovl))
    out["pushed"] = mlfabric.endpoint().stats()["pushed"]
    print(json.dumps(out))
    mlfabric.shutdown()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except mlfabric.Error as e:
        print("torch_overlap: %s" % e, file=sys.stderr)
        sys.exit(1)
