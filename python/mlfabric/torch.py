"""mlfabric.torch - train a PyTorch model over MLfabric (Horovod-style; docs/python.md).

    import mlfabric, mlfabric.torch as mt
    ep = mlfabric.init(cluster, host, mode="mlfabric-a")
    mt.broadcast_parameters(model, root="w0")          # everyone starts from w0's model
    opt = mt.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.05),
                                  model.named_parameters())
    loss.backward(); opt.step()                         # local step, push u, get the model

Each step: snapshot the parameters p0 (model version v), run the wrapped optimizer's step,
push u = p - p0 with ||u||_2 at version v (the paper's worker loop, §3.1), then get (modes
mlfabric-a, async) or push_get (mlfabric-s) the server's model and load it into the
parameters. The parameters are gathered into one preallocated float32 vector: when every
parameter is a CPU float32 tensor, the parameters become views of that vector (no copies at all;
do not move the model to another device afterwards); otherwise they are copied in and out of it.
"""
import errno as _errno
import time as _time

import torch as _torch

import mlfabric as _mlf


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


class DistributedOptimizer:
    """Wrap `optimizer` so that step() trains over MLfabric (see the module docstring).

    named_parameters: the parameters to train (model.named_parameters(), or tensors).
    mode: "mlfabric-a", "mlfabric-s" or "async" (default: the endpoint's). endpoint: default
    mlfabric.endpoint(). on_drop(n): called after a step when the fabric dropped n more of this
    worker's updates (delay bound, MLfabric-A). Attributes: version (model version the
    parameters hold), dropped (drops seen), steps. Other attributes go to the optimizer.
    """

    def __init__(self, optimizer, named_parameters, mode=None, endpoint=None, on_drop=None):
        self.optimizer = optimizer
        self.endpoint = endpoint if endpoint is not None else _mlf.endpoint()
        self.mode = mode or getattr(self.endpoint, "mode", "mlfabric-a")
        if self.mode not in _mlf.MODES:
            raise _mlf.Error(_errno.EINVAL, f"unknown mode {self.mode!r} (one of {', '.join(_mlf.MODES)})")
        self.on_drop = on_drop
        self.params = FlatParams(_param_list(named_parameters))
        n = self.params.n
        self._p0 = _torch.empty(n, dtype=_torch.float32)   # parameters before the local step
        self._u = _torch.empty(n, dtype=_torch.float32)    # the update u = p - p0
        # the model from the server lands here; straight in the parameters when they are backed
        self._model = self.params.flat if self.params.backed else _torch.empty(n, dtype=_torch.float32)
        self.version = 0
        self.steps = 0
        self.dropped = 0
        self._drops_seen = int(self.endpoint.stats()["dropped"])

    def __getattr__(self, name):
        # only called for attributes not found normally: param_groups, state, state_dict, ...
        if name == "optimizer":
            raise AttributeError(name)
        return getattr(self.optimizer, name)

    def zero_grad(self, *args, **kwargs):
        """The wrapped optimizer's zero_grad."""
        return self.optimizer.zero_grad(*args, **kwargs)

    def step(self, closure=None):
        """Local step, push u = p - p0 at the current version, load the server's model.
        Returns what the wrapped optimizer's step returned (the loss with a closure)."""
        ep = self.endpoint
        self._p0.copy_(self.params.gather())
        loss = self.optimizer.step(closure) if closure is not None else self.optimizer.step()
        u = _torch.sub(self.params.gather(), self._p0, out=self._u)
        norm = float(_torch.linalg.vector_norm(u))
        if self.mode == "mlfabric-s":
            v = ep.push_get(u.numpy(), norm, self.version, self._model.numpy())
        else:
            ep.push(u.numpy(), norm, self.version)
            v = ep.get(self._model.numpy())
        if self._model is not self.params.flat:
            self.params.load(self._model)
        self.version = int(v)
        self.steps += 1
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


def broadcast_parameters(model_or_named_params, root="w0", endpoint=None, timeout_s=120.0):
    """Make every worker start from the parameters of host `root` (Horovod's
    broadcast_parameters): on `root`, send them to the server as its initial model (version 0,
    mlf-ps --init-from ROOT); on every worker, then get the server's model and load it.

    A worker that is not `root` retries the get (the server serves only once it has the
    model) for up to `timeout_s` seconds in all. Returns the model version (0 at the start).
    """
    ep = endpoint if endpoint is not None else _mlf.endpoint()
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
