#!/usr/bin/python3
"""torch_fashion_mnist.py - a LeNet-5 size CNN trained on Fashion-MNIST by one worker of a cluster.

Two ways to train (docs/torch-example.md):

* over MLfabric (the default): a plain user script of the Python package ``mlfabric``
  (pip-installed, or PYTHONPATH=<repo>/build/python). ``mlfabric.init()`` reads what the
  launcher set (``tools/mlf-cluster run EXP -- python3 this.py``: MLF_CLUSTER, MLF_HOST, MLF_MODE,
  MLF_RANK, MLF_SIZE, MLF_RECORDS...; ``--cluster``, ``--host``, ``--server``, ``--mode`` win);
  the shard is rank/size. ``DistributedOptimizer`` gives the server rank 0's initial model and
  loads it everywhere, ``broadcast_parameters(state_dict, root_rank=0)`` makes every worker start
  from rank 0's parameters; each iteration computes a mini-batch gradient, the optimizer's hooks
  push the update u = -lr * gradient during backward (paper eq. 1, a plain SGD step without
  momentum: the server applies momentum, eq. 2) and ``step()`` loads the model the fabric
  returns.
* the PyTorch baseline (``--backend gloo``): ``torch.distributed`` with the gloo backend, the
  initial parameters broadcast from rank 0, every step the gradients averaged by one all-reduce
  and a local SGD step with momentum (synchronous data parallelism, PyTorch's own way).

The mini-batch sampling, the shards and the straggler model are those of mlf-worker
(apps/wk_sgd.c, apps/learn/train_straggle.c and train_data.c): splitmix64 streams seeded the same way, batches drawn
uniformly with replacement from the worker's contiguous shard, an iteration straggles (sleeps
(S - 1) x its compute time) with probability R, ``--compute-s`` pads a gradient to a minimum time.
Rank 0 evaluates the model every
``--eval-every`` seconds and appends {"t","version","accuracy","loss"} lines to
``<records>/accuracy.jsonl`` (``--records``, default $MLF_RECORDS or .). Every worker writes ``pushes.jsonl`` and ``worker.json``.
Stops on SIGTERM/SIGINT, ``--duration``, ``--iterations`` or ``--target-accuracy`` (exit 0).
Exit status: 0 done, 1 a runtime failure (named on stderr), 2 bad usage.
"""
import argparse
import gzip
import json
import math
import os
import signal
import sys
import time

PROG = "torch_fashion_mnist"
DEFAULT_DATA = "/usr/share/datasets/fashion-mnist"
MODES = ("mlfabric-a", "mlfabric-s", "async")
STRAGGLE_NAMED = {"c1": (0.10, 2.0), "c2": (0.10, 4.0), "c3": (0.04, 2.0), "none": (0.0, 1.0)}
M64 = (1 << 64) - 1
COMPONENT = "torch-worker"


def log(level, msg):
    """One log line on stderr like the C programs': CLOCK_REALTIME, level, component."""
    sys.stderr.write("%.6f %s %s: %s\n" % (time.time(), level, COMPONENT, msg))
    sys.stderr.flush()


class Fail(Exception):
    """A runtime failure: one line, exit status 1."""


# ---- the deterministic generators of apps/learn/train_straggle.c --------------------------------

class SplitMix64:
    """splitmix64, the generator of train_straggle.c (stragglers and mini-batch sampling)."""

    def __init__(self, state):
        self.state = state & M64

    def next(self):
        """The next 64-bit value (train_rng_next)."""
        self.state = (self.state + 0x9E3779B97F4A7C15) & M64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        return z ^ (z >> 31)


class Straggler:
    """train_straggle_*: an iteration is slowed down by FACTOR with probability RATE."""

    def __init__(self, spec, seed):
        """SPEC "R,S", "C1" (0.10, 2), "C2" (0.10, 4), "C3" (0.04, 2) or "none"; ValueError if bad."""
        self.rng = SplitMix64(seed ^ 0x5374726167676C65)
        if spec.lower() in STRAGGLE_NAMED:
            self.rate, self.factor = STRAGGLE_NAMED[spec.lower()]
            return
        parts = spec.split(",")
        if len(parts) != 2:
            raise ValueError(spec)
        self.rate, self.factor = float(parts[0]), float(parts[1])
        if not (0 <= self.rate <= 1) or not self.factor >= 1:
            raise ValueError(spec)

    def next(self):
        """This iteration's slowdown factor (train_straggle_next)."""
        u = (self.rng.next() >> 11) * (1.0 / 9007199254740992.0)
        return self.factor if u < self.rate else 1.0


def compute_pad(t_start, min_s):
    """train_compute_pad: sleep until T_START + MIN_S; the iteration's compute time."""
    elapsed = time.time() - t_start
    if min_s > elapsed:
        time.sleep(min_s - elapsed)
        return min_s
    return elapsed


def straggle_sleep(compute_s, factor):
    """train_straggle_sleep: the straggler's extra (factor - 1) x compute time."""
    extra = (factor - 1) * compute_s
    if extra > 0:
        time.sleep(extra)


def shard_range(total, i, n):
    """train_shard_range: worker I of N trains on examples [begin, end) of TOTAL."""
    return total * i // n, total * (i + 1) // n


def parse_shard(spec):
    """ "I/N" with 0 <= I < N -> (I, N); ValueError otherwise."""
    a, sep, b = spec.partition("/")
    i, n = int(a), int(b)
    if not sep or n < 1 or n > 1 << 20 or i < 0 or i >= n:
        raise ValueError(spec)
    return i, n


# ---- data: gzip IDX files as Debian ships them ---------------------------------------------

def read_idx(path, magic, limit):
    """The array of the gzip IDX file PATH (uint8; at most LIMIT items, 0 = all); Fail naming the file."""
    import numpy as np
    try:
        with gzip.open(path, "rb") as f:
            raw = f.read()
    except (OSError, EOFError) as e:
        raise Fail("cannot read %s: %s" % (path, e))
    ndim = magic & 0xFF
    if len(raw) < 4 + 4 * ndim or int.from_bytes(raw[0:4], "big") != magic:
        raise Fail("%s: not an IDX file of the expected kind (magic %d)" % (path, magic))
    dims = [int.from_bytes(raw[4 + 4 * k:8 + 4 * k], "big") for k in range(ndim)]
    count = math.prod(dims)
    if len(raw) - 4 - 4 * ndim < count:
        raise Fail("%s: truncated (%d bytes of data, %d expected)" % (path, len(raw) - 4 - 4 * ndim, count))
    a = np.frombuffer(raw, dtype=np.uint8, count=count, offset=4 + 4 * ndim).reshape(dims)
    return a[:limit] if limit else a


def load_set(data, test, limit):
    """Fashion-MNIST training (TEST false) or test set of DATA, at most LIMIT examples (0 = all):
    (images as float32 N x 1 x 28 x 28 tensors scaled to [0, 1], int64 labels)."""
    import numpy as np
    import torch
    stem = "t10k" if test else "train"
    x = read_idx(os.path.join(data, "%s-images-idx3-ubyte.gz" % stem), 2051, limit)
    y = read_idx(os.path.join(data, "%s-labels-idx1-ubyte.gz" % stem), 2049, limit)
    if len(x) != len(y) or x.shape[1:] != (28, 28):
        raise Fail("%s: %s images (%s) and labels (%d) do not match" % (data, stem, "x".join(map(str, x.shape)), len(y)))
    xs = torch.from_numpy(x.astype(np.float32) * np.float32(1.0 / 255.0)).reshape(-1, 1, 28, 28)
    return xs, torch.from_numpy(y.astype(np.int64))


def load_shard(data, total, i, n):
    """Shard I of N of the first TOTAL training images (train_load_shard)."""
    x, y = load_set(data, False, total)
    if len(x) < total:
        raise Fail("%s holds %d training images, fewer than the %d asked for" % (data, len(x), total))
    b, e = shard_range(total, i, n)
    return x[b:e].clone(), y[b:e].clone()


# ---- the model ------------------------------------------------------------------------------

def make_model():
    """LeNet-5 size CNN: conv 6@5x5 (pad 2), max-pool, conv 16@5x5, max-pool, fc 120, 84, 10
    (61,706 float32 parameters)."""
    import torch.nn as nn
    return nn.Sequential(
        nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(16 * 5 * 5, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))


def evaluate(model, xt, yt):
    """(accuracy 0..1, mean cross-entropy in nats) of MODEL on the test images XT, YT."""
    import torch
    import torch.nn.functional as F
    with torch.no_grad():
        out = model(xt)
        return (out.argmax(1) == yt).float().mean().item(), F.cross_entropy(out, yt).item()


# ---- records --------------------------------------------------------------------------------

class Records:
    """pushes.jsonl (one line per iteration), accuracy.jsonl (root worker), worker.json."""

    def __init__(self, folder, evaluates):
        self.dir = folder
        try:
            os.makedirs(folder, exist_ok=True)
            self.pushes = open(os.path.join(folder, "pushes.jsonl"), "w")
            self.acc = open(os.path.join(folder, "accuracy.jsonl"), "w") if evaluates else None
        except OSError as e:
            raise Fail("cannot open the records in %s: %s" % (folder, e))

    @staticmethod
    def _line(f, obj):
        f.write(json.dumps(obj, separators=(",", ":")) + "\n")
        f.flush()

    def push(self, pid, version, norm, compute_s, straggled):
        self._line(self.pushes, {"t": time.time(), "id": pid, "version": version, "norm": norm,
                                 "compute_s": compute_s, "straggled": straggled})

    def accuracy(self, version, acc, loss):
        self._line(self.acc, {"t": time.time(), "version": version, "accuracy": acc, "loss": loss})

    def worker(self, obj):
        path = os.path.join(self.dir, "worker.json")
        try:
            with open(path, "w") as f:
                json.dump(obj, f, indent=2)
                f.write("\n")
        except OSError as e:
            raise Fail("cannot write %s: %s" % (path, e))

    def close(self):
        self.pushes.close()
        if self.acc:
            self.acc.close()


# ---- the command line -----------------------------------------------------------------------

class Parser(argparse.ArgumentParser):
    def error(self, message):
        sys.stderr.write("%s: %s (see --help)\n" % (PROG, message))
        sys.exit(2)


def parse(argv):
    p = Parser(prog=PROG, formatter_class=argparse.RawDescriptionHelpFormatter,
               description="Train a LeNet-5 size CNN on Fashion-MNIST as one worker: over MLfabric\n"
                           "(--mode, the mlfabric Python package) or with torch.distributed gloo\n"
                           "all-reduce (--backend gloo). Records: pushes.jsonl, worker.json and, on the\n"
                           "root worker, accuracy.jsonl in --records.",
               epilog="examples (docs/torch-example.md; by hand inside the hosts' namespaces):\n"
                      "  tools/mlf-cluster run conf/exp-torch.json --systems mlfabric-a -- \\\n      /usr/bin/python3 examples/%(prog)s.py\n"
                      "  PYTHONPATH=build/python %(prog)s --cluster conf/cluster-fabric.json --host w0 \\\n"
                      "      --server ps --mode mlfabric-a --shard 0/4 --records /tmp/w0\n"
                      "  %(prog)s --backend gloo --rank 0 --world 4 --master-addr 10.84.0.10 \\\n"
                      "      --master-port 29500 --records /tmp/w0")
    p.add_argument("--cluster", help="cluster config (fabric path)")
    p.add_argument("--host", help="this worker's host in the cluster (fabric path)")
    p.add_argument("--server", help="the parameter server's host (default: the cluster's server)")
    p.add_argument("--mode", choices=MODES, help="mlfabric-a, mlfabric-s or async (fabric path)")
    p.add_argument("--shard", help="I/N: train on shard I of N of the training set (default: rank/size; "
                   "gloo: rank/world)")
    p.add_argument("--sock", help="dataplane socket (default /run/mlfabric/<cluster>-<host>.sock)")
    p.add_argument("--backend", choices=("gloo",), help="train with torch.distributed instead of MLfabric")
    p.add_argument("--rank", type=int, help="gloo: this process's rank")
    p.add_argument("--world", type=int, help="gloo: number of ranks")
    p.add_argument("--master-addr", help="gloo: IP of rank 0")
    p.add_argument("--master-port", type=int, default=29500, help="gloo: TCP port of rank 0 (default 29500)")
    p.add_argument("--batch", type=int, default=32, help="mini-batch size (default 32)")
    p.add_argument("--lr", type=float, default=0.01, help="learning rate (default 0.01)")
    p.add_argument("--momentum", type=float, default=0.9,
                   help="gloo: the local SGD's momentum (default 0.9); over MLfabric the server applies it")
    p.add_argument("--straggle", default="none", help="R,S|C1|C2|C3|none: slow an iteration down by S with "
                   "probability R (default none)")
    p.add_argument("--compute-s", type=float, default=0.0, help="a gradient takes at least this many seconds "
                   "(emulated accelerator; default 0)")
    p.add_argument("--seed", type=int, default=1, help="sampling, straggler and initialisation seed (default 1)")
    p.add_argument("--records", default=os.environ.get("MLF_RECORDS") or ".",
                   help="records folder (default $MLF_RECORDS or .)")
    p.add_argument("--data", default=DEFAULT_DATA, help="Fashion-MNIST folder (default %s)" % DEFAULT_DATA)
    p.add_argument("--train-images", type=int, default=60000, help="shard the first N training images (default 60000)")
    p.add_argument("--duration", type=float, default=0, help="stop after S seconds (default: no limit)")
    p.add_argument("--iterations", type=int, default=0, help="stop after N iterations (default: no limit)")
    p.add_argument("--eval-every", type=float, default=2.0, help="root worker: evaluate every S seconds (default 2)")
    p.add_argument("--eval-images", type=int, default=1000, help="evaluate on the first K test images (default 1000)")
    p.add_argument("--target-accuracy", type=float, default=0, help="root worker: stop when an evaluation reaches "
                   "it (gloo: every rank stops)")
    p.add_argument("--timeout", type=float, default=10.0, help="a fabric call or a collective waits this long "
                   "(gloo: at least 60 s; default 10)")
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    a = p.parse_args(argv)
    if a.backend:
        miss = [o for o, v in (("--rank", a.rank), ("--world", a.world), ("--master-addr", a.master_addr)) if v is None]
        if miss:
            p.error("--backend gloo needs %s" % ", ".join(miss))
        if a.mode or a.cluster:
            p.error("--backend gloo trains without the fabric: drop --mode and --cluster")
        if a.world < 1 or not 0 <= a.rank < a.world:
            p.error("--rank %d / --world %d: expected 0 <= rank < world" % (a.rank, a.world))
        if not 0 < a.master_port < 65536:
            p.error("--master-port %d: expected 1..65535" % a.master_port)
        a.shard_i, a.shard_n = a.rank, a.world
    else:
        a.shard_i = a.shard_n = None
        try:
            if a.shard:
                a.shard_i, a.shard_n = parse_shard(a.shard)
        except ValueError:
            p.error("bad --shard '%s': expected I/N with 0 <= I < N" % a.shard)
    try:
        Straggler(a.straggle, 0)
    except ValueError:
        p.error("bad --straggle '%s': R,S with R in [0,1] and S >= 1, or C1, C2, C3, none" % a.straggle)
    for k in ("batch", "train_images", "eval_images", "threads"):
        if getattr(a, k) < 1:
            p.error("--%s must be positive" % k.replace("_", "-"))
    for k in ("lr", "eval_every", "timeout"):
        if not getattr(a, k) > 0:
            p.error("--%s must be positive" % k.replace("_", "-"))
    for k in ("duration", "iterations", "compute_s", "target_accuracy"):
        if getattr(a, k) < 0:
            p.error("--%s must not be negative" % k.replace("_", "-"))
    if not 0 <= a.momentum < 1:
        p.error("--momentum must be in [0, 1)")
    return a


# ---- training ------------------------------------------------------------------------------

class Trainer:
    """The loop both paths share: sample a batch, compute the gradient, pad and straggle, hand it
    to SYNC (the path's step), record, evaluate on the root worker, check the stop conditions."""

    def __init__(self, a, evaluates):
        import torch
        self.a, self.evaluates = a, evaluates
        a.straggler = Straggler(a.straggle, a.seed * 1000003 + a.shard_i)
        torch.set_num_threads(a.threads)
        torch.manual_seed(a.seed)
        self.x, self.y = load_shard(a.data, a.train_images, a.shard_i, a.shard_n)
        self.xt = self.yt = None
        if evaluates:
            self.xt, self.yt = load_set(a.data, True, a.eval_images)
        self.model = make_model()
        self.params = [p for p in self.model.parameters()]
        self.n = sum(p.numel() for p in self.params)
        self.rng = SplitMix64(a.seed * 7919 + a.shard_i + 1)
        self.rec = Records(a.records, evaluates)
        self.stop = 0          # signal number, or -1 once the target is reached
        self.it = self.straggled = 0
        self.busy = 0.0
        self.reached = False

    def on_signal(self, sig, frame):
        self.stop = sig

    def batch(self):
        """A mini-batch drawn uniformly with replacement from the shard (train_sample_batch)."""
        import torch
        span = len(self.x)
        idx = torch.tensor([self.rng.next() % span for _ in range(self.a.batch)], dtype=torch.int64)
        return self.x[idx], self.y[idx]

    def want_stop(self, t0):
        a = self.a
        return bool(self.stop or (a.iterations and self.it >= a.iterations)
                    or (a.duration and time.time() - t0 >= a.duration))

    def maybe_eval(self, version, now):
        """Evaluate when due (root worker); True when the target is reached."""
        if not self.evaluates or now < self.next_eval:
            return False
        while self.next_eval <= now:
            self.next_eval += self.a.eval_every
        acc, loss = evaluate(self.model, self.xt, self.yt)
        self.rec.accuracy(version, acc, loss)
        if self.a.target_accuracy and acc >= self.a.target_accuracy and not self.reached:
            self.reached = True
            log("info", "target accuracy %g reached: %.4f at model version %d" % (self.a.target_accuracy, acc, version))
        return self.reached

    def run(self, sync, version_of, stop_agreed=None):
        """Train until a stop condition. SYNC(norm_hint) makes the step (push/get or all-reduce) and
        returns the push id (or None); VERSION_OF() the model version; STOP_AGREED(local) (gloo)
        turns this rank's wish to stop into the decision of all ranks."""
        import torch
        import torch.nn.functional as F
        a = self.a
        signal.signal(signal.SIGTERM, self.on_signal)
        signal.signal(signal.SIGINT, self.on_signal)
        t0 = time.time()
        self.next_eval = t0
        next_progress = t0 + 2
        loss = float("nan")
        while True:
            local = self.want_stop(t0) or self.reached
            if stop_agreed is None:
                if local:
                    break
            elif stop_agreed(local):
                break
            ts = time.time()
            x, y = self.batch()
            for p in self.params:
                p.grad = None
            out = F.cross_entropy(self.model(x), y)
            out.backward()
            loss = out.item()
            compute_s = compute_pad(ts, a.compute_s)
            factor = a.straggler.next()
            straggle_sleep(compute_s, factor)
            self.straggled += factor > 1
            v_g = version_of()
            with torch.no_grad():
                norm = a.lr * math.sqrt(sum(float(p.grad.pow(2).sum()) for p in self.params))
            pid = sync()
            self.it += 1
            self.busy += time.time() - ts
            self.rec.push(pid, v_g, norm, compute_s, factor > 1)
            now = time.time()
            if now >= next_progress:
                log("info", "t=%.1fs iteration %d model version %d loss %.4f" % (now - t0, self.it, version_of(), loss))
                next_progress += 2
            self.maybe_eval(version_of(), now)
        return loss

    def mean_iteration_s(self):
        return self.busy / self.it if self.it else 0.0


def run_fabric(a):
    """Train over MLfabric through the mlfabric package (docs/python.md): the launcher's MLF_*
    variables, rank and size, DistributedOptimizer and broadcast_parameters."""
    try:
        import mlfabric
        import mlfabric.torch as mt
    except ImportError as e:
        raise Fail("cannot import the mlfabric package (%s): pip install . in the repository, or set "
                   "PYTHONPATH=<repo>/build/python after make" % e)
    import torch
    global COMPONENT
    given = {k: v for k, v in (("cluster", a.cluster), ("host", a.host), ("server", a.server), ("mode", a.mode),
                               ("sock", a.sock)) if v}
    try:
        ep = mlfabric.init(timeout_s=a.timeout, **given)
    except mlfabric.Error as e:
        raise Fail("cannot join the fabric: %s" % e)
    COMPONENT = "torch-worker[%s]" % ep.host
    if a.shard_i is None:
        a.shard_i, a.shard_n = mt.rank(), mt.size()
    tr = Trainer(a, mt.rank() == 0)
    drops = [0]

    def on_drop(k):
        drops[0] += k

    opt = None
    try:
        opt = mt.DistributedOptimizer(torch.optim.SGD(tr.model.parameters(), lr=a.lr, momentum=0),
                                      named_parameters=tr.model.named_parameters(), on_drop=on_drop)
        mt.broadcast_parameters(tr.model.state_dict(), root_rank=0)
        log("info", "worker of %s, mode %s, rank %d of %d, shard %d/%d (%d images), LeNet-5 %d parameters"
            % (ep.server, ep.mode, mt.rank(), mt.size(), a.shard_i, a.shard_n, len(tr.x), tr.n))

        def sync():
            opt.step()
        loss = tr.run(sync, lambda: int(opt.version))
    except mlfabric.Error as e:
        if not tr.stop:
            raise Fail("server %s: %s (after %d iterations)" % (ep.server, e, tr.it))
        loss = float("nan")
    finally:
        # let the pushed updates leave before closing (close fails what is still pending)
        st = {}
        until = time.time() + a.timeout
        while True:
            try:
                st = ep.stats()
            except mlfabric.Error:
                break
            if st.get("sent", 0) + st.get("dropped", 0) + st.get("aggregated", 0) >= st.get("pushed", 0) \
                    or time.time() >= until:
                break
            time.sleep(0.01)
        left = st.get("pushed", 0) - st.get("sent", 0) - st.get("dropped", 0) - st.get("aggregated", 0)
        if left > 0:
            log("warn", "%d pushed updates still unsent to %s after %.1f s" % (left, ep.server, a.timeout))
        mlfabric.shutdown()
        log("info", "stopped after %d iterations (%d straggled): pushed %s sent %s dropped %s aggregated %s"
            % (tr.it, tr.straggled, st.get("pushed"), st.get("sent"), st.get("dropped"), st.get("aggregated")))
        tr.rec.worker({"iterations": tr.it, "pushed": st.get("pushed", 0), "sent": st.get("sent", 0),
                       "dropped": st.get("dropped", 0), "aggregated": st.get("aggregated", 0),
                       "mean_iteration_s": tr.mean_iteration_s(), "program": "torch", "mode": ep.mode,
                       "reached_target": tr.reached, "last_loss": loss})
        tr.rec.close()


def run_gloo(a):
    """The torch.distributed baseline: gloo all-reduce of the averaged gradients, local SGD."""
    import datetime
    import torch
    import torch.distributed as dist
    global COMPONENT
    COMPONENT = "torch-worker[gloo %d/%d]" % (a.rank, a.world)
    tr = Trainer(a, a.rank == 0)
    timeout = max(60.0, a.timeout)
    try:
        dist.init_process_group("gloo", init_method="tcp://%s:%d" % (a.master_addr, a.master_port),
                                rank=a.rank, world_size=a.world, timeout=datetime.timedelta(seconds=timeout))
    except (RuntimeError, ValueError) as e:
        raise Fail("torch.distributed gloo rendezvous at %s:%d (rank %d of %d) failed within %g s: %s"
                   % (a.master_addr, a.master_port, a.rank, a.world, timeout, str(e).splitlines()[0]))
    log("info", "worker of torch.distributed gloo, rank %d of %d (master %s:%d), shard %d/%d (%d images), "
        "LeNet-5 %d parameters" % (a.rank, a.world, a.master_addr, a.master_port, a.shard_i, a.shard_n,
                                    len(tr.x), tr.n))
    opt = torch.optim.SGD(tr.model.parameters(), lr=a.lr, momentum=a.momentum)
    flat = torch.zeros(tr.n + 1)   # the gradients and, last, the number of ranks that want to stop
    stopping, wish = [False], [False]

    def stop_agreed(local):
        # this rank's wish to stop travels with the next all-reduce; every rank stops after the
        # all-reduce in which any rank wished it, so all ranks make the same number of them
        wish[0] = wish[0] or local
        return stopping[0]

    def sync():
        off = 0
        for p in tr.params:
            k = p.numel()
            flat[off:off + k].copy_(p.grad.reshape(-1))
            off += k
        flat[tr.n] = 1.0 if wish[0] else 0.0
        dist.all_reduce(flat)
        if flat[tr.n] > 0:
            stopping[0] = True
        flat[:tr.n].div_(a.world)
        off = 0
        for p in tr.params:
            k = p.numel()
            p.grad.copy_(flat[off:off + k].view_as(p.grad))
            off += k
        opt.step()
        return None

    loss = float("nan")
    failure = None
    try:
        with torch.no_grad():
            v = torch.nn.utils.parameters_to_vector(tr.params)
            dist.broadcast(v, 0)
            torch.nn.utils.vector_to_parameters(v, tr.params)
        loss = tr.run(sync, lambda: tr.it, stop_agreed)
    except RuntimeError as e:
        if not tr.stop:
            failure = "torch.distributed gloo all-reduce (rank %d of %d, master %s:%d) failed after %d iterations: %s" % (
                a.rank, a.world, a.master_addr, a.master_port, tr.it, str(e).splitlines()[0])
    finally:
        log("info", "stopped after %d iterations (%d straggled)" % (tr.it, tr.straggled))
        tr.rec.worker({"iterations": tr.it, "pushed": tr.it, "sent": tr.it, "dropped": 0, "aggregated": 0,
                       "mean_iteration_s": tr.mean_iteration_s(), "program": "torch", "mode": "gloo",
                       "reached_target": tr.reached, "last_loss": loss})
        tr.rec.close()
        try:
            dist.destroy_process_group()
        except (RuntimeError, ValueError):
            pass
    if failure:
        raise Fail(failure)


def main(argv=None):
    a = parse(sys.argv[1:] if argv is None else argv)
    try:
        (run_gloo if a.backend else run_fabric)(a)
    except Fail as e:
        log("error", str(e))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
