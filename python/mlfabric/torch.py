"""mlfabric.torch - train a PyTorch model over MLfabric (Horovod's names; docs/python.md).

    import mlfabric.torch as mt
    mt.init()                                           # what tools/mlf-cluster set (MLF_*)
    opt = mt.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.05),
                                  named_parameters=model.named_parameters())
    mt.broadcast_parameters(model.state_dict(), root_rank=0)
    loss.backward(); opt.step()                         # pushed and got back during backward

Each iteration pushes u = p - p0 with ||u||_2 at model version v (the paper's worker loop, §3.1):
the update of the wrapped optimizer's step. The parameters are split into one group per server
(init()'s servers, MLF_SERVERS; BytePS's partitioning): a gradient hook pushes a group's update
as soon as backward has produced all its gradients, so the pushes of the last layers travel
while backward still runs for the first ones, and the group's model is got back (modes
mlfabric-a, async) on a background thread right after its push; the next forward waits for
each group before its first layer. Mode mlfabric-s push_gets the whole model in step(). The parameters are gathered into one preallocated float32 vector: when every
parameter is a CPU float32 tensor, the parameters become views of that vector (no copies at all;
do not move the model to another device afterwards); otherwise they are copied in and out of it.
"""
import atexit as _atexit
import errno as _errno
import json as _json
import os as _os
import time as _time

import torch as _torch

import mlfabric as _mlf

# MLF_TRACE=FILE: DistributedOptimizer appends one JSON line per event of its overlap path to
# FILE at exit ({"t": time.time() seconds, "ev": name, "g": group, ...}; docs/python.md
# "Tracing the overlap"): grad (backward produced a group's last gradient), pushed (the push
# was handed to the dataplane), get (a background get: t0 began, t its answer arrived), wait
# (a forward waited for groups: t0 began, t ended), step (step() called). Off: no cost but a
# test of a global.
_TRACE_FILE = _os.environ.get("MLF_TRACE") or None
_trace_buf = []


def _trace(ev, g=None, t=None, **kw):
    kw.update(t=_time.time() if t is None else t, ev=ev)
    if g is not None:
        kw["g"] = g
    _trace_buf.append(kw)


def _trace_flush():
    if _trace_buf:
        with open(_TRACE_FILE, "a") as f:
            f.writelines(_json.dumps(e) + "\n" for e in _trace_buf)
        del _trace_buf[:]


if _TRACE_FILE:
    _atexit.register(_trace_flush)


def _param_list(params):
    """The distinct tensors of a module, a dict name -> tensor, or an iterable of tensors or
    (name, tensor) pairs, in order."""
    if isinstance(params, _torch.nn.Module):
        params = params.parameters()
    elif isinstance(params, dict):
        params = params.values()
    out, seen = [], set()
    for p in params:
        if isinstance(p, tuple):
            p = p[1]
        if not isinstance(p, _torch.Tensor):
            raise TypeError(f"expected tensors or (name, tensor) pairs, got {type(p).__name__}")
        if id(p) not in seen:
            seen.add(id(p))
            out.append(p)
    if not out:
        raise ValueError("no parameters given")
    return out


class FlatParams:
    """One float32 CPU vector holding the parameters `params` (a list of tensors) back to back.

    .flat is the vector (torch tensor, .numpy() shares its memory). When every parameter is a
    CPU float32 tensor it is re-pointed at its slice of .flat (backed=True): the vector IS the
    parameters. Otherwise gather()/scatter() copy between the parameters and the vector.
    """

    def __init__(self, params, back=True):
        self.params = list(params)
        self.n = sum(p.numel() for p in self.params)
        self.flat = _torch.empty(self.n, dtype=_torch.float32)
        self.slices, off = [], 0
        for p in self.params:
            self.slices.append(self.flat[off:off + p.numel()])
            off += p.numel()
        self.backed = back and all(p.device.type == "cpu" and p.dtype == _torch.float32 for p in self.params)
        with _torch.no_grad():
            for p, s in zip(self.params, self.slices):
                s.copy_(p.detach().reshape(-1))
                if self.backed:
                    p.data = s.view_as(p)

    def gather(self):
        """Copy the parameters into .flat (a no-op when backed); returns .flat."""
        if not self.backed:
            with _torch.no_grad():
                for p, s in zip(self.params, self.slices):
                    s.copy_(p.detach().reshape(-1))
        return self.flat

    def scatter(self):
        """Copy .flat into the parameters (a no-op when backed)."""
        if not self.backed:
            with _torch.no_grad():
                for p, s in zip(self.params, self.slices):
                    p.copy_(s.view_as(p))

    def load(self, vec):
        """Set the parameters to the float32 vector `vec` (tensor or buffer of n values)."""
        if not isinstance(vec, _torch.Tensor):
            vec = _torch.frombuffer(vec, dtype=_torch.float32)
        if vec.numel() != self.n:
            raise ValueError(f"model of {vec.numel()} values, the parameters have {self.n}")
        with _torch.no_grad():
            self.flat.copy_(vec.reshape(-1))
        self.scatter()


def _grad_hook(p, fn):
    """Call fn() once backward has accumulated p's gradient into p.grad (the post-accumulate
    hook of torch >= 2.1, else the hook of p's AccumulateGrad node, as Horovod does). Returns
    the objects to keep alive."""
    if hasattr(p, "register_post_accumulate_grad_hook"):
        return [p.register_post_accumulate_grad_hook(lambda _p: fn())]
    acc = p.expand_as(p).grad_fn.next_functions[0][0]
    acc.register_hook(lambda *_: fn())
    return [acc]


def partition(sizes, n):
    """Split parameters of `sizes` (floats, in the model's order) into min(n, len(sizes))
    contiguous groups of about equal size (each cut where the running total is nearest to its
    share); returns [(first, end)] index ranges covering all."""
    k, total = min(n, len(sizes)), sum(sizes)
    out, first, acc = [], 0, 0
    for i, s in enumerate(sizes):
        rest = k - len(out) - 1            # groups still to open after the current one
        if i > first and rest > 0:
            share = total * (len(out) + 1) / k
            if len(sizes) - i == rest or abs(acc - share) <= abs(acc + s - share):
                out.append((first, i))
                first = i
        acc += s
    out.append((first, len(sizes)))
    return out


class DistributedOptimizer:
    """Wrap `optimizer` so that training runs over MLfabric (see the module docstring).

    named_parameters: the parameters to train (model.named_parameters(), or tensors; default the
    optimizer's). backward_passes_per_step: backward passes whose gradients accumulate before
    an update is pushed (Horovod's). servers: the server hosts, one parameter group each
    (default: the endpoint's servers, MLF_SERVERS, else its server). overlap: push each group
    from a gradient hook during backward (default; False: push in step()). mode: "mlfabric-a",
    "mlfabric-s" or "async" (default: the endpoint's). endpoint: default mlfabric.endpoint().
    on_drop(n): called after a step when the fabric dropped n more of this worker's updates
    (delay bound, MLfabric-A). prefetch (mode async, overlap): each step() starts getting every
    group's model for the next iteration at once, one get after another in push order, into a
    staging vector, and each hook of the next iteration copies its group's model into the
    parameters right after its push, so the next forward waits for nothing (docs/python.md
    "Prefetch"). init_model: start() at once (rank 0's parameters become the
    servers' initial model when they wait for one; every worker loads the servers' models).
    Attributes: version (model version the parameters hold; the
    lowest of the servers'), dropped (drops seen), steps, groups [(server, first, end) float
    ranges]; .overlap may be switched off (and on again, when it was on at construction) between
    steps. Other attributes go to the optimizer. Errors name the server and the parameters.
    """

    def __init__(self, optimizer, named_parameters=None, mode=None, endpoint=None, on_drop=None,
                 backward_passes_per_step=1, servers=None, overlap=True, init_model=True, prefetch=False):
        self.optimizer = optimizer
        self.endpoint = endpoint if endpoint is not None else _mlf.endpoint()
        self.mode = mode or getattr(self.endpoint, "mode", "mlfabric-a")
        if self.mode not in _mlf.MODES:
            raise _mlf.Error(_errno.EINVAL, f"unknown mode {self.mode!r} (one of {', '.join(_mlf.MODES)})")
        if not (isinstance(backward_passes_per_step, int) and backward_passes_per_step >= 1):
            raise ValueError(f"backward_passes_per_step must be an int >= 1, got {backward_passes_per_step!r}")
        self.on_drop = on_drop
        if prefetch and self.mode != "async":
            raise _mlf.Error(_errno.EINVAL, f"prefetch: mode async only (with a scheduler a group's get must "
                                            f"follow its push, docs/scheduler.md \"Fresh pulls\"), got mode {self.mode}")
        self.prefetch = bool(prefetch)
        self._pre = None                          # prefetch batch: {"order", "next", "got", "used"}
        self._stage = None                        # where the prefetched models land
        self._push_order = []                     # groups in the order this step pushed them
        if named_parameters is None:
            named_parameters = [p for g in optimizer.param_groups for p in g["params"]]
        named = list(named_parameters)
        self.names = {id(p[1]): p[0] for p in named if isinstance(p, tuple)}
        self.params = FlatParams(_param_list(named))
        servers = list(servers or getattr(self.endpoint, "servers", None) or [self.endpoint.server])
        if self.mode == "mlfabric-s" and len(servers) > 1:
            raise _mlf.Error(_errno.EINVAL, "mode mlfabric-s: one server (its push_get is per model), "
                                            f"got servers {', '.join(servers)}")
        n = self.params.n
        self._p0 = _torch.empty(n, dtype=_torch.float32)   # parameters before the local step
        self._u = _torch.empty(n, dtype=_torch.float32)    # the update u = p - p0
        # the model from the server lands here; straight in the parameters when they are backed
        self._model = self.params.flat if self.params.backed else _torch.empty(n, dtype=_torch.float32)
        sizes = [p.numel() for p in self.params.params]
        offs = [0]
        for k in sizes:
            offs.append(offs[-1] + k)
        # group i: parameters [a, b) -> floats [offs[a], offs[b]) on servers[i]
        self._pgroups = partition(sizes, len(servers))
        self.groups = [(servers[i], offs[a], offs[b]) for i, (a, b) in enumerate(self._pgroups)]
        self.backward_passes_per_step = backward_passes_per_step
        self.overlap = bool(overlap) and self.mode != "mlfabric-s"
        self.version = 0
        self.versions = [0] * len(self.groups)
        self.steps = 0
        self.dropped = 0
        self.last_id = None
        self._passes = 0                          # backward passes since the last push
        self._left = [0] * len(self.groups)       # gradients still to come in this pass, per group
        self._pushed = [False] * len(self.groups)
        self._group_of = {}
        for g, (a, b) in enumerate(self._pgroups):
            for p in self.params.params[a:b]:
                self._group_of[id(p)] = g
        self._drops_seen = int(self.endpoint.stats()["dropped"])
        # background gets (overlap): None, or {"order": groups in the order their gets were
        # given, "next": the first get not yet waited for, "step": the step they belong to}
        self._gets = None
        if init_model:
            self.start(root_rank=0)
        self._hooks = []
        if self.overlap:
            for p in self.params.params:
                if p.requires_grad:
                    self._hooks += _grad_hook(p, self._make_hook(p))
            # the next forward waits, module by module, only for the groups it is about to use
            self._hooks.append(_torch.nn.modules.module.register_module_forward_pre_hook(self._before_forward))
        self._reset_pass()

    def __getattr__(self, name):
        # only called for attributes not found normally: param_groups, state, state_dict, ...
        if name == "optimizer":
            raise AttributeError(name)
        return getattr(self.optimizer, name)

    def _name(self, g):
        a, b = self._pgroups[g]
        ps = self.params.params[a:b]
        nm = [self.names.get(id(p), "#%d" % (a + i)) for i, p in enumerate(ps)]
        return ", ".join(nm) if len(nm) <= 3 else "%s ... %s (%d tensors)" % (nm[0], nm[-1], len(nm))

    def _reset_pass(self):
        for g, (a, b) in enumerate(self._pgroups):
            self._left[g] = sum(1 for p in self.params.params[a:b] if p.requires_grad)

    def _make_hook(self, p):
        g = self._group_of[id(p)]

        def hook():
            self._left[g] -= 1
            if self._left[g] == 0 and self.overlap and self._passes + 1 >= self.backward_passes_per_step:
                if _TRACE_FILE:
                    _trace("grad", g)
                self._push_group(g)
        return hook

    def zero_grad(self, *args, **kwargs):
        """The wrapped optimizer's zero_grad; with backward_passes_per_step > 1 only after the
        step that pushed (the gradients of the passes in between accumulate)."""
        if self._passes % self.backward_passes_per_step == 0:
            return self.optimizer.zero_grad(*args, **kwargs)
        return None

    def _local_step(self, g):
        """The wrapped optimizer's step on group g's parameters only; returns its update
        u = p - p0 (a slice of self._u)."""
        a, b = self._pgroups[g]
        _, lo, hi = self.groups[g]
        self._p0[lo:hi].copy_(self.params.gather()[lo:hi])
        keep = set(id(p) for p in self.params.params[a:b])
        saved = self.optimizer.param_groups
        if len(self.groups) > 1:
            self.optimizer.param_groups = [dict(pg, params=[p for p in pg["params"] if id(p) in keep])
                                           for pg in saved]
        try:
            self.optimizer.step()
        finally:
            self.optimizer.param_groups = saved
        return _torch.sub(self.params.gather()[lo:hi], self._p0[lo:hi], out=self._u[lo:hi])

    def _background(self):
        """Whether the gets run in the background (overlap, a real endpoint, parameters backed:
        the models land straight in them)."""
        return self.overlap and self.params.backed and hasattr(getattr(self.endpoint, "_h", None), "gets_start")

    def _before_forward(self, module, inputs):
        if self._gets is None:
            return
        need = [self._group_of[id(p)] for p in module.parameters(recurse=False) if id(p) in self._group_of]
        if need:
            if _TRACE_FILE and self._gets is not None:
                t0 = _time.time()
                self._wait(need)
                _trace("wait", need[0], t0=t0)
                return
            self._wait(need)

    def _wait(self, groups=None):
        """Wait for the background gets of `groups` (default: every get given so far). The gets
        run at once (one thread each) but are waited for in the order they were given (the order
        of the pushes), so this waits for those before them too; the last of the step's gets
        ends the batch."""
        st = self._gets
        if st is None:
            return
        order = st["order"]
        if groups is None:
            last = len(order) - 1
        else:
            ks = [order.index(g) for g in set(groups) if g in order]
            if not ks:
                return
            last = max(ks)
        h = self.endpoint._h
        while self._gets is not None and st["next"] <= last:
            k = st["next"]
            g = order[k]
            try:
                self.versions[g] = int(h.gets_wait(k))
                if _TRACE_FILE:
                    t0, t1 = h.last_get_times
                    _trace("get", g, t=t1, t0=t0, v=self.versions[g])
            except _mlf.Error as e:
                self._gets = None
                self.endpoint.pending = None
                server = self.groups[g][0]
                raise _mlf.Error(e.errno, f"get of parameters {self._name(g)} from server {server}: "
                                          f"{e.strerror}") from e
            st["next"] = k + 1
            if k == len(self.groups) - 1:
                self._gets = None          # the batch's last get: the library ended the batch
        if self._gets is None:
            self.version = min(self.versions)
            self.endpoint.pending = None

    def _wait_done(self):
        """Wait for an earlier step's gets still running (not for this step's)."""
        if self._gets is not None and self._gets["step"] != self.steps:
            self._wait()

    def _add_get(self, g):
        """Start getting group g's model in the background, right after its update was pushed
        (its pull names that update: the model includes it, docs/scheduler.md "Fresh pulls");
        the first of a step starts the batch, the rest join it in push order."""
        server, lo, hi = self.groups[g]
        ep = self.endpoint
        out = self._model[lo:hi].numpy()
        if self._gets is None:
            ep._h.gets_start([(server, out)], ep.timeout_s, len(self.groups))
            self._gets = {"order": [g], "next": 0, "step": self.steps}
            ep.pending = self._wait
        else:
            ep._h.gets_add(server, out)
            self._gets["order"].append(g)

    def wait(self):
        """Wait until the parameters hold the servers' models (the next forward does it by itself,
        layer by layer). A prefetch batch is let end and its models forgotten: the parameters
        keep the models got after the last pushes."""
        self._wait()
        if self._pre is not None:
            self._drop_prefetch()

    def _push_group(self, g):
        self._wait_done()
        server, lo, hi = self.groups[g]
        with _torch.no_grad():
            u = self._local_step(g)
        norm = float(_torch.linalg.vector_norm(u))
        try:
            self.last_id = self._endpoint_push(server, u, norm, self.versions[g])
        except _mlf.Error as e:
            raise _mlf.Error(e.errno, f"push of parameters {self._name(g)} to server {server}: {e.strerror}") from e
        self._pushed[g] = True
        self._push_order.append(g)
        if _TRACE_FILE:
            _trace("pushed", g)
        if self._pre is not None and not self._prefetching():
            self._drop_prefetch()
        if self._pre is not None:
            self._take_prefetched(g)
        elif self._background():
            self._add_get(g)

    def _prefetching(self):
        """Whether step() prefetches the next iteration's models (prefetch on, gets in the background)."""
        return self.prefetch and self._background()

    def _start_prefetch(self):
        """At the end of step(): get every group's model into the staging vector, one get after
        another in the order this step pushed the groups (the order the next backward's hooks
        need them), in one batch of the extension (chain=True)."""
        if self._gets is not None:
            self._wait()                  # this step's own gets first: one batch at a time
        n_groups = len(self.groups)
        order = [g for g in self._push_order if g < n_groups]
        order = list(dict.fromkeys(order)) + [g for g in range(n_groups) if g not in order]
        if self._stage is None:
            self._stage = _torch.empty(self.params.n, dtype=_torch.float32)
        ep = self.endpoint
        jobs = [(self.groups[g][0], self._stage[self.groups[g][1]:self.groups[g][2]].numpy()) for g in order]
        ep._h.gets_start(jobs, ep.timeout_s, len(jobs), True)
        self._pre = {"order": order, "next": 0, "got": {}, "used": 0}
        ep.pending = self._pre_wait

    def _pre_wait(self, k=None):
        """Wait for the prefetched gets up to index k of the batch (default all); their models
        stay in the staging vector until the hooks take them."""
        st = self._pre
        if st is None:
            return
        order = st["order"]
        last = len(order) - 1 if k is None else k
        h = self.endpoint._h
        while st["next"] <= last:
            j = st["next"]
            g = order[j]
            try:
                st["got"][g] = int(h.gets_wait(j))
                if _TRACE_FILE:
                    t0, t1 = h.last_get_times
                    _trace("get", g, t=t1, t0=t0, v=st["got"][g], prefetch=True)
            except _mlf.Error as e:
                self._pre = None
                self.endpoint.pending = None
                raise _mlf.Error(e.errno, f"prefetch of parameters {self._name(g)} from server "
                                          f"{self.groups[g][0]}: {e.strerror}") from e
            st["next"] = j + 1
        if st["next"] == len(order) and self.endpoint.pending == self._pre_wait:
            self.endpoint.pending = None

    def _take_prefetched(self, g):
        """After group g's push: its prefetched model into its parameters."""
        st = self._pre
        self._pre_wait(st["order"].index(g))
        _, lo, hi = self.groups[g]
        with _torch.no_grad():
            self._model[lo:hi].copy_(self._stage[lo:hi])
        self.versions[g] = st["got"][g]
        st["used"] += 1
        if st["used"] == len(st["order"]):
            self._pre = None

    def _drop_prefetch(self):
        """Let a prefetch batch end and forget its models (prefetch switched off, wait())."""
        self._pre_wait()
        self._pre = None

    def _endpoint_push(self, server, u, norm, version):
        """Push u to `server` through the endpoint (its own server when it is the only one)."""
        ep = self.endpoint
        if len(self.groups) == 1 and self._gets is None:
            return ep.push(u.numpy(), norm, version)
        # beside the running gets (a push is allowed beside a batch of gets)
        return ep._h.push(server, u.numpy(), float(norm), int(version))

    def _get_group(self, g):
        server, lo, hi = self.groups[g]
        ep = self.endpoint
        out = self._model[lo:hi].numpy()
        try:
            if len(self.groups) == 1:
                return int(ep.get(out))
            return int(ep._h.get(server, out, ep.timeout_s))
        except _mlf.Error as e:
            raise _mlf.Error(e.errno, f"get of parameters {self._name(g)} from server {server}: {e.strerror}") from e

    def synchronize(self):
        """Push the groups the hooks have not pushed (overlap off, or parameters without a
        gradient in this pass)."""
        self._wait_done()
        for g in range(len(self.groups)):
            if not self._pushed[g]:
                self._push_group(g)

    def step(self, closure=None):
        """After backward_passes_per_step passes: push what the hooks have not pushed yet, get
        every server's model into the parameters. Returns what the closure returned, if any."""
        loss = None
        if _TRACE_FILE:
            _trace("step", overlap=self.overlap, prefetch=self._prefetching())
        if closure is not None:
            with _torch.enable_grad():
                loss = closure()
        self._passes += 1
        if self._passes < self.backward_passes_per_step:
            self._reset_pass()
            return loss
        self._passes = 0
        self._wait_done()
        if self._pre is not None and not self._prefetching():
            self._drop_prefetch()
        if self.mode == "mlfabric-s":
            ep = self.endpoint
            u = self._local_step(0)
            norm = float(_torch.linalg.vector_norm(u))
            v = ep.push_get(u.numpy(), norm, self.version, self._model.numpy())
            self.versions = [int(v)]
        elif self._background():
            # every group's get was given right after its push (from the gradient hooks during
            # backward, the rest here): the next forward waits, layer by layer, for its groups
            self.synchronize()
        else:
            self.synchronize()
            self.versions = [self._get_group(g) for g in range(len(self.groups))]
        if self._model is not self.params.flat:
            self.params.load(self._model)
        if self._gets is None:
            self.version = min(self.versions)
        self._pushed = [False] * len(self.groups)
        self._reset_pass()
        self.steps += 1
        if self._prefetching() and self._pre is None:
            self._start_prefetch()
        self._push_order = []
        self._check_drops()
        return loss

    def _check_drops(self):
        d = int(self.endpoint.stats()["dropped"])
        new = d - self._drops_seen
        if new > 0:
            self._drops_seen = d
            self.dropped += new
            if self.on_drop is not None:
                self.on_drop(new)

    def start(self, root_rank=0, timeout_s=120.0):
        """Give every server its group of rank root_rank's parameters as its initial model (when
        it waits for one: the runner's mlf-ps --init-from) and load the servers' models on every
        worker: all workers then start from the same model. Returns the version."""
        self.wait()
        ep = self.endpoint
        root = ep.workers[root_rank] if getattr(ep, "workers", None) else ep.host
        flat = self.params.gather()
        if ep.host == root:
            for server, lo, hi in self.groups:
                try:
                    if len(self.groups) == 1:
                        ep.send_model(flat.numpy(), 0, timeout_s)
                    else:
                        ep._h.send_model(server, flat[lo:hi].numpy(), 0, timeout_s)
                except _mlf.Error as e:
                    raise _mlf.Error(e.errno, f"initial model to server {server}: {e.strerror}") from e
        deadline = _time.monotonic() + timeout_s
        for g in range(len(self.groups)):
            while True:
                try:
                    self.versions[g] = self._get_group(g)
                    break
                except _mlf.Error as e:
                    if e.errno != _errno.ETIMEDOUT or _time.monotonic() >= deadline:
                        raise
        if self._model is not self.params.flat:
            self.params.load(self._model)
        self.version = min(self.versions)
        return self.version


def init(*args, **kwargs):
    """mlfabric.init (re-exported for Horovod's `hvd.init()`)."""
    return _mlf.init(*args, **kwargs)


rank, size, local_rank = _mlf.rank, _mlf.size, _mlf.local_rank


def _named(params):
    """(name, tensor) pairs of a state_dict, a module, a dict or an iterable of pairs/tensors."""
    if isinstance(params, _torch.nn.Module):
        params = params.state_dict()
    if isinstance(params, dict):
        return list(params.items())
    return [p if isinstance(p, tuple) else ("#%d" % i, p) for i, p in enumerate(params)]


def broadcast_parameters(params, root_rank=0, endpoint=None, timeout_s=120.0, root=None):
    """Set every worker's `params` (a state_dict, a module, named parameters or tensors) in
    place to rank root_rank's values (Horovod's broadcast_parameters), through the dataplane's
    peer channel (mlfabric.broadcast_object): no server flag needed. Returns 0.

    root="HOST" (the former form) instead makes HOST send the parameters to the server as its
    initial model (mlf-ps --init-from HOST) and every worker get it back, retrying for up to
    timeout_s while the server does not serve yet; returns the model version (0).
    """
    ep = endpoint if endpoint is not None else _mlf.endpoint()
    if root is not None:
        return _broadcast_via_server(params, root, ep, timeout_s)
    named = _named(params)
    mine = {k: v.detach().cpu() for k, v in named if isinstance(v, _torch.Tensor)}
    got = ep.broadcast_object(mine, root_rank=root_rank, timeout_s=timeout_s)
    with _torch.no_grad():
        for k, v in named:
            if not isinstance(v, _torch.Tensor):
                continue
            if k not in got or got[k].shape != v.shape:
                raise _mlf.Error(_errno.EINVAL, f"broadcast_parameters: parameter {k} of shape {tuple(v.shape)} "
                                                f"differs on rank {root_rank} ({ep.workers[root_rank]})")
            v.copy_(got[k])
    return 0


def broadcast_optimizer_state(optimizer, root_rank=0, endpoint=None, timeout_s=120.0):
    """Load rank root_rank's optimizer state (state_dict: momentum buffers, step counts, the
    param_groups' settings) into every worker's `optimizer` (Horovod's call; a
    DistributedOptimizer's wrapped optimizer), through the peer channel."""
    ep = endpoint if endpoint is not None else _mlf.endpoint()
    opt = optimizer.optimizer if isinstance(optimizer, DistributedOptimizer) else optimizer
    got = ep.broadcast_object(opt.state_dict(), root_rank=root_rank, timeout_s=timeout_s)
    if ep.host != ep.workers[root_rank]:
        opt.load_state_dict(got)


def allreduce(tensor, average=True, name=None, endpoint=None, timeout_s=None):
    """The mean (average=True) or sum over all workers of a small tensor (metrics: a loss, an
    accuracy), as a new tensor of tensor's shape and dtype on every worker (Horovod's
    allreduce; float32 on the wire). `name` only labels errors."""
    ep = endpoint if endpoint is not None else _mlf.endpoint()
    t = tensor if isinstance(tensor, _torch.Tensor) else _torch.as_tensor(tensor)
    try:
        out = ep.allreduce(t.detach().cpu().float().numpy(), average=average, timeout_s=timeout_s)
    except _mlf.Error as e:
        if name is None:
            raise
        raise _mlf.Error(e.errno, f"allreduce of {name}: {e.strerror}") from e
    return _torch.from_numpy(out).to(dtype=t.dtype, device=t.device)


def _broadcast_via_server(model_or_named_params, root, ep, timeout_s):
    """broadcast_parameters(root="HOST"): the initial model through the server."""
    fp = FlatParams(_param_list(model_or_named_params), back=False)
    flat = fp.gather()
    if ep.host == root:
        ep.send_model(flat.numpy(), 0)
    deadline = _time.monotonic() + timeout_s
    while True:
        try:
            v = ep.get(flat.numpy())
            break
        except _mlf.Error as e:
            if e.errno != _errno.ETIMEDOUT or _time.monotonic() >= deadline:
                raise _mlf.Error(e.errno, f"broadcast_parameters: no model from server {ep.server} "
                                          f"(sent by {root}) within {timeout_s:g} s: {e.strerror}") from e
    fp.scatter()
    return int(v)
