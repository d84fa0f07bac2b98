#!/usr/bin/python3
"""torch_pushget.py - `make bench-torch`: the Python side of the push+get overhead comparison.

Times N rounds of ``ep.push`` (an n-float numpy update, default 61,706 floats: the LeNet-5 of
examples/torch_fashion_mnist.py) followed by ``ep.get`` of the model through the mlfabric
package, after W untimed rounds; with ``--optimizer`` instead N calls of
``mlfabric.torch.DistributedOptimizer.step()`` on that LeNet-5 (flatten, push, get, load).
Prints one JSON line like bench/torch_pushget.c: program, n, rounds, mean_s, p50_s, min_s, max_s.
Run with PYTHONPATH=<repo>/build/python in the worker host's namespace. Exit 0, 1 on a fabric
error (named), 2 bad usage.
"""
import argparse
import json
import math
import os
import sys
import time


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cluster", required=True)
    p.add_argument("--host", required=True)
    p.add_argument("--server", required=True)
    p.add_argument("--mode", default="async", choices=("async", "mlfabric-a"))
    p.add_argument("--n", type=int, default=61706)
    p.add_argument("--rounds", type=int, default=200)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--timeout", type=float, default=10.0)
    p.add_argument("--optimizer", action="store_true", help="time DistributedOptimizer.step() on the LeNet-5")
    a = p.parse_args()
    if a.n < 1 or a.rounds < 1 or a.warmup < 0:
        p.error("--n and --rounds must be positive")
    import numpy as np
    import mlfabric
    try:
        ep = mlfabric.init(a.cluster, a.host, role="worker", server=a.server, mode=a.mode, timeout_s=a.timeout)
    except mlfabric.Error as e:
        print("torch_pushget: %s" % e, file=sys.stderr)
        return 1
    times = []
    try:
        if a.optimizer:
            import torch
            sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
            import torch_fashion_mnist as ex
            import mlfabric.torch as mt
            torch.set_num_threads(1)
            model = ex.make_model()
            a.n = sum(q.numel() for q in model.parameters())
            opt = mt.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=1e-6, momentum=0),
                                          model.named_parameters(), mode=a.mode, endpoint=ep)
            for q in model.parameters():
                q.grad = torch.full_like(q, 1.0)
            for r in range(a.warmup + a.rounds):
                t0 = time.monotonic()
                opt.step()
                if r >= a.warmup:
                    times.append(time.monotonic() - t0)
                for q in model.parameters():   # step loads the server's model; keep a gradient
                    if q.grad is None:
                        q.grad = torch.full_like(q, 1.0)
        else:
            u = np.full(a.n, 1e-6, dtype=np.float32)
            w = np.zeros(a.n, dtype=np.float32)
            norm, version = 1e-6 * math.sqrt(a.n), 0
            for r in range(a.warmup + a.rounds):
                t0 = time.monotonic()
                ep.push(u, norm, version)
                version = ep.get(w, timeout_s=a.timeout)
                if r >= a.warmup:
                    times.append(time.monotonic() - t0)
    except mlfabric.Error as e:
        print("torch_pushget: round %d to %s: %s" % (len(times), a.server, e), file=sys.stderr)
        return 1
    finally:
        ep.close()
    s = sorted(times)
    print(json.dumps({"program": "python-optimizer" if a.optimizer else "python", "n": a.n, "rounds": a.rounds,
                      "mean_s": sum(s) / len(s), "p50_s": s[(len(s) - 1) // 2], "min_s": s[0], "max_s": s[-1]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
