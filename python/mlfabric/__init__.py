"""mlfabric - Python bindings of libmlfabric (include/mlfabric.h, the paper's Table-1 API, §4).

    import mlfabric
    ep = mlfabric.init()                     # what the launcher set (MLF_* variables, see init)
    ep = mlfabric.init("conf/cluster-mini.json", "w0")        # or explicitly
    vid = ep.push(update, norm, version)                       # float32 buffers, never copied
    version = ep.get(model)                                    # fills `model` in place
    mlfabric.shutdown()

Vectors are C-contiguous float32 buffers (numpy float32 arrays, torch CPU tensors' .numpy(),
array.array('f')). Blocking calls release the GIL. Failures raise mlfabric.Error (an OSError:
.errno, and a message naming what failed: the file, the host, the server, the socket).
rank(), size(), local_rank() and the collectives allreduce() and broadcast_object() (through
the dataplane's peer channel) follow Horovod's names. See docs/python.md; mlfabric.torch has the
PyTorch optimizer wrapper.
"""
import atexit as _atexit
import errno as _errno
import json as _json
import os as _os
import pickle as _pickle
import time as _time

import numpy as _np

from . import _mlfabric
from ._mlfabric import Error
from ._version import __version__

__all__ = ["Error", "Endpoint", "init", "shutdown", "endpoint", "MODES", "ROLES", "ENV", "read_cluster",
           "rank", "size", "local_rank", "workers", "allreduce", "broadcast_object"]

#: fabric modes as experiment files and --mode flags spell them (docs/fabric.md)
MODES = ("mlfabric-a", "mlfabric-s", "async")
#: what init(role=...) registers the endpoint as (None: open only)
ROLES = ("worker", "server", "aggregator", None)

#: the launcher's variables init() reads (tools/mlf-cluster sets them for a worker_command;
#: docs/python.md "Environment"): init() argument -> variable
ENV = {"cluster": "MLF_CLUSTER", "host": "MLF_HOST", "role": "MLF_ROLE", "server": "MLF_SERVER",
       "mode": "MLF_MODE", "sock": "MLF_SOCK", "timeout_s": "MLF_TIMEOUT", "rank": "MLF_RANK",
       "size": "MLF_SIZE", "local_rank": "MLF_LOCAL_RANK", "workers": "MLF_WORKERS",
       "servers": "MLF_SERVERS"}
#: collectives wait this long for a peer by default (seconds): stragglers are slow, not dead
COLLECTIVE_TIMEOUT_S = 120.0

_default = None


def _fail(code, msg):
    """Raise Error(code, msg)."""
    raise Error(code, msg)


def read_cluster(path):
    """The cluster config at `path` as a dict, checked enough to name hosts and roles.

    Raises Error naming the file when it is missing, unreadable, not JSON, or has no
    "hosts" list of objects with a "name".
    """
    try:
        with open(path, encoding="utf-8") as f:
            doc = _json.load(f)
    except OSError as e:
        _fail(e.errno or _errno.EIO, f"cluster file {path}: {e.strerror or e}")
    except (ValueError, UnicodeDecodeError) as e:
        _fail(_errno.EINVAL, f"cluster file {path}: not valid JSON: {e}")
    hosts = doc.get("hosts") if isinstance(doc, dict) else None
    if not isinstance(hosts, list) or not all(isinstance(h, dict) and isinstance(h.get("name"), str)
                                              for h in hosts):
        _fail(_errno.EINVAL, f"cluster file {path}: needs a \"hosts\" list of objects with a \"name\"")
    return doc


def _host_names(doc):
    return [h["name"] for h in doc["hosts"]]


def _server_of(doc, path):
    """The name of the cluster's host with role "server" (the first one)."""
    for h in doc["hosts"]:
        if "server" in (h.get("roles") or []):
            return h["name"]
    _fail(_errno.EINVAL, f"cluster file {path}: no host has the role \"server\"; pass server=")


class Endpoint:
    """One MLfabric endpoint on `host`'s dataplane (mlf_open), optionally registered.

    Attributes: cluster (path), host, server (the server host its worker calls use, or None),
    mode ("mlfabric-a", "mlfabric-s" or "async"), timeout_s (default wait, seconds).
    Use one thread per endpoint at a time; blocking calls release the GIL. Usable as a
    context manager (closes on exit).
    """

    def __init__(self, cluster, host, role="worker", server=None, mode="mlfabric-a", sock=None,
                 timeout_s=10.0):
        if mode not in MODES:
            _fail(_errno.EINVAL, f"unknown mode {mode!r} (one of {', '.join(MODES)})")
        if role not in ROLES:
            _fail(_errno.EINVAL, f"unknown role {role!r} (worker, server, aggregator or None)")
        if not (isinstance(timeout_s, (int, float)) and timeout_s > 0):
            _fail(_errno.EINVAL, f"timeout_s must be a number of seconds > 0, got {timeout_s!r}")
        doc = read_cluster(cluster)
        names = _host_names(doc)
        if host not in names:
            _fail(_errno.EINVAL, f"cluster file {cluster}: no host named {host!r} (hosts: {', '.join(names)})")
        if server is None and role == "worker":
            server = _server_of(doc, cluster)
        if server is not None and server not in names:
            _fail(_errno.EINVAL, f"cluster file {cluster}: no server host named {server!r} "
                                 f"(hosts: {', '.join(names)})")
        self.cluster, self.host, self.server, self.mode = cluster, host, server, mode
        self.timeout_s = float(timeout_s)
        self.workers = [h["name"] for h in doc["hosts"] if "worker" in (h.get("roles") or [])] or [host]
        self.servers = [server] if server is not None else []
        self.rank = self.workers.index(host) if host in self.workers else 0
        self.size = len(self.workers)
        self.local_rank = 0
        self._peer = None          # the peer endpoint of the collectives, opened on first use
        self._seq = 0              # collectives made (the tag of the next one)
        self._stash = {}           # (tag, host) -> data that arrived before its collective
        self.pending = None        # a DistributedOptimizer's wait() while its background gets run
        self._sock = sock
        self._h = _mlfabric.Handle(cluster, host, mode, sock, self.timeout_s)
        try:
            if role == "worker":
                self._h.register_as_worker(server)
            elif role == "aggregator":
                self._h.register_as_aggregator()
        except BaseException:
            self._h.close()
            raise
        # role "server" registers with register_server(), which needs the model size and callbacks

    # ---- life ----------------------------------------------------------------------------
    def close(self):
        """Close the endpoint (mlf_close: a worker first waits, at most timeout_s, until its
        pushed updates are sent or dropped) and its peer endpoint. Idempotent."""
        if not self.closed:
            self._settle()
        if self._peer is not None:
            self._peer.close()
            self._peer = None
        self._h.close()

    @property
    def closed(self):
        """True once close() ran."""
        return self._h.closed

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        state = "closed" if self.closed else (self.role or "open")
        return f"<mlfabric.Endpoint {self.host} {self.mode} {state} server={self.server}>"

    @property
    def role(self):
        """What the endpoint is now: "worker", "server", "replica", "aggregator" or ""."""
        return self._h.role()

    def error(self):
        """The library's last error text of this endpoint (mlf_error; "" when none)."""
        return self._h.error()

    # ---- worker --------------------------------------------------------------------------
    def _settle(self):
        """Let a DistributedOptimizer's background gets finish first (the endpoint is busy)."""
        if self.pending is not None:
            self.pending()

    def _server_or_fail(self):
        self._settle()
        if self.server is None:
            _fail(_errno.EINVAL, f"endpoint {self.host} has no server: init(..., server=HOST) or register_worker(HOST)")
        return self.server

    def _timeout(self, timeout_s):
        return self.timeout_s if timeout_s is None else float(timeout_s)

    def register_worker(self, server=None):
        """Register as a worker of `server` (default: this endpoint's server)."""
        if server is not None:
            self.server = server
        self._h.register_as_worker(self._server_or_fail())

    def push(self, update, norm, version):
        """Hand `update` (float32 buffer, computed from model `version`, L2 norm `norm`) to the
        fabric for the server; the library copies it and returns at once. Returns the update id."""
        return self._h.push(self._server_or_fail(), update, float(norm), int(version))

    def get(self, out, timeout_s=None):
        """Pull the server's latest model into the writable float32 buffer `out` (blocks up to
        timeout_s, default the endpoint's). Returns the model version."""
        return self._h.get(self._server_or_fail(), out, self._timeout(timeout_s))

    def push_get(self, update, norm, version, out, timeout_s=None):
        """MLfabric-S (§6): push `update` for this iteration, then fill `out` with the model
        after every worker's update of the iteration. Returns the new model version."""
        return self._h.push_get(self._server_or_fail(), update, float(norm), int(version), out,
                                 self._timeout(timeout_s))

    def send_model(self, model, version=0, timeout_s=None):
        """Send the whole `model` (float32 buffer) at `version` to the server, which installs it
        (mlf-ps --init-from HOST; Horovod's broadcast_parameters). Blocks until the server
        has it or timeout_s."""
        self._h.send_model(self._server_or_fail(), model, int(version), self._timeout(timeout_s))

    def stats(self):
        """Worker counters: dict(pushed, sent, dropped, aggregated, models, push_buffers,
        push_buffers_reused), monotonic (push_buffers: pushes that created a buffer; _reused:
        pushes written into the buffer of an earlier one whose transfer ended)."""
        return self._h.stats()

    # ---- collectives (the dataplane's peer channel, docs/python.md "Collectives") ----------
    def _host_of(self, r):
        if not 0 <= r < self.size:
            _fail(_errno.EINVAL, f"rank {r} out of range: {self.size} workers ({', '.join(self.workers)})")
        return self.workers[r]

    def _peer_handle(self):
        """The second endpoint on this host's dataplane, in mode async, registered as a peer."""
        if self._peer is None:
            h = _mlfabric.Handle(self.cluster, self.host, "async", self._sock, self.timeout_s)
            try:
                h.register_as_peer()
            except BaseException:
                h.close()
                raise
            self._peer = h
        return self._peer

    def _recv_from(self, what, tag, host, timeout_s):
        """The data (bytes) of collective `tag` from `host`; Error naming both after timeout_s."""
        key = (tag, host)
        deadline = _time.monotonic() + timeout_s
        while key not in self._stash:
            left = deadline - _time.monotonic()
            if left <= 0:
                _fail(_errno.ETIMEDOUT, f"{what} #{tag} on {self.host}: nothing from peer {host} "
                                        f"(rank {self.workers.index(host)}) within {timeout_s:g} s")
            m = self._peer_handle().peer_recv(min(left, 1.0))
            if m is not None:
                self._stash[(m[1], m[0])] = m[2]
        return self._stash.pop(key)

    def _send_to(self, what, tag, host, data):
        try:
            self._peer_handle().peer_send(host, data, tag)
        except Error as e:
            _fail(e.errno, f"{what} #{tag} on {self.host}: sending to peer {host}: {e.strerror}")

    def allreduce(self, values, average=True, timeout_s=None):
        """The sum (average=True: the mean) over all workers of `values` (float32 array-like,
        small: metrics); every worker gets the same float32 numpy array back. Rank 0 gathers
        in rank order, sums and sends the result back. Error naming the silent peer."""
        a = _np.ascontiguousarray(values, dtype=_np.float32)
        tag, self._seq = self._seq, self._seq + 1
        t = COLLECTIVE_TIMEOUT_S if timeout_s is None else float(timeout_s)
        if self.size == 1:
            return a.copy()
        flat = a.reshape(-1)
        if self.rank == 0:
            acc = flat.astype(_np.float64)
            for h in self.workers[1:]:
                got = _np.frombuffer(self._recv_from("allreduce", tag, h, t), dtype=_np.float32)
                if got.size != flat.size:
                    _fail(_errno.EINVAL, f"allreduce #{tag}: peer {h} sent {got.size} values, "
                                         f"{self.host} has {flat.size}")
                acc += got
            out = (acc / self.size if average else acc).astype(_np.float32)
            for h in self.workers[1:]:
                self._send_to("allreduce", tag, h, out)
        else:
            self._send_to("allreduce", tag, self.workers[0], flat)
            out = _np.frombuffer(self._recv_from("allreduce", tag, self.workers[0], t), dtype=_np.float32).copy()
            if out.size != flat.size:
                _fail(_errno.EINVAL, f"allreduce #{tag}: rank 0 ({self.workers[0]}) answered {out.size} values, "
                                     f"{self.host} sent {flat.size}")
        return out.reshape(a.shape)

    def broadcast_object(self, obj, root_rank=0, timeout_s=None):
        """`obj` of rank `root_rank` (pickled) on every worker; returns it (root: `obj`)."""
        root = self._host_of(root_rank)
        tag, self._seq = self._seq, self._seq + 1
        t = COLLECTIVE_TIMEOUT_S if timeout_s is None else float(timeout_s)
        if self.size == 1:
            return obj
        if self.host == root:
            raw = _pickle.dumps(obj, protocol=_pickle.HIGHEST_PROTOCOL)
            pad = len(raw).to_bytes(8, "little") + raw + b"\0" * (-len(raw) % 4)
            data = _np.frombuffer(pad, dtype=_np.float32)
            for h in self.workers:
                if h != root:
                    self._send_to("broadcast", tag, h, data)
            return obj
        raw = self._recv_from("broadcast", tag, root, t)
        n = int.from_bytes(raw[:8], "little")
        return _pickle.loads(raw[8:8 + n])

    # ---- server / aggregator --------------------------------------------------------------
    def register_server(self, n, on_update, on_request, tau_max=8, momentum=0.9, n_workers=1, version0=0):
        """Serve a model of `n` float32 values (mlf_register_as_server).

        on_update(u, info) -> version: apply `u` (read-only float32 memoryview of n values, the
        sum of info["parts"] = [(update id, version), ...]; info also has "xfer", "src") and
        return the model version after it. on_request(model) -> version: copy the model into
        the writable float32 memoryview `model`, return its version. Both run on the library's
        event thread (holding the GIL); the memoryviews are valid only during the call.
        """
        if not 0 <= momentum < 1:
            _fail(_errno.EINVAL, f"momentum must be in [0, 1), got {momentum}")
        self._h.register_as_server(int(n), on_update, on_request, int(tau_max), float(momentum),
                                   int(n_workers), int(version0))

    def register_aggregator(self):
        """Serve the scheduler's aggregate commands on this host until close()."""
        self._h.register_as_aggregator()


_UNSET = object()


def _env_int(name, what):
    v = _os.environ.get(name)
    if v is None or v == "":
        return None
    try:
        return int(v)
    except ValueError:
        _fail(_errno.EINVAL, f"{name}={v!r}: {what} must be an integer")


def init(cluster=None, host=None, role=_UNSET, server=_UNSET, mode=None, sock=None, timeout_s=None,
         rank=None, size=None, local_rank=None, workers=None, servers=None):
    """Open an Endpoint (see Endpoint) and make it the module's default endpoint.

    Every argument left out is read from the launcher's variable (ENV: MLF_CLUSTER, MLF_HOST,
    MLF_ROLE, MLF_SERVER, MLF_MODE, MLF_SOCK, MLF_TIMEOUT, MLF_RANK, MLF_SIZE, MLF_LOCAL_RANK,
    MLF_WORKERS and MLF_SERVERS, comma-separated hosts in rank order), then the default
    (role "worker", mode "mlfabric-a", timeout 10 s; workers: the cluster's hosts with the role
    "worker"; rank: this host's index among them; local_rank 0). Explicit arguments win.

    role "worker" registers as a worker of `server` (default: the cluster's host with the role
    "server"); "server" only opens (call register_server); "aggregator" registers as one; None
    only opens. The cluster file and the host names are checked here first: a missing or bad
    file, an unknown host, or no cluster or host at all raises Error naming it without touching
    the library.
    """
    global _default
    env = _os.environ.get
    cluster = cluster or env("MLF_CLUSTER")
    host = host or env("MLF_HOST")
    if not cluster or not host:
        _fail(_errno.EINVAL, "mlfabric.init(): no cluster file and host: pass init(cluster, host) or run "
                             "under tools/mlf-cluster (it sets MLF_CLUSTER and MLF_HOST)")
    if role is _UNSET:
        role = env("MLF_ROLE") or "worker"
    if server is _UNSET:
        server = env("MLF_SERVER") or None
    mode = mode or env("MLF_MODE") or "mlfabric-a"
    sock = sock or env("MLF_SOCK") or None
    if timeout_s is None:
        t = env("MLF_TIMEOUT")
        try:
            timeout_s = float(t) if t else 10.0
        except ValueError:
            _fail(_errno.EINVAL, f"MLF_TIMEOUT={t!r}: the timeout must be a number of seconds")
    ep = Endpoint(cluster, host, role=role, server=server, mode=mode, sock=sock, timeout_s=timeout_s)
    try:
        names = _host_names(read_cluster(cluster))
        workers = workers or [w for w in (env("MLF_WORKERS") or "").split(",") if w] or ep.workers
        servers = servers or [s for s in (env("MLF_SERVERS") or "").split(",") if s] or ep.servers
        for h in list(workers) + list(servers):
            if h not in names:
                _fail(_errno.EINVAL, f"cluster file {cluster}: no host named {h!r} (MLF_WORKERS/MLF_SERVERS; "
                                     f"hosts: {', '.join(names)})")
        ep.workers, ep.servers = list(workers), list(servers)
        ep.size = size if size is not None else _env_int("MLF_SIZE", "the number of workers") or len(ep.workers)
        r = rank if rank is not None else _env_int("MLF_RANK", "the rank")
        ep.rank = r if r is not None else (ep.workers.index(host) if host in ep.workers else 0)
        lr = local_rank if local_rank is not None else _env_int("MLF_LOCAL_RANK", "the local rank")
        ep.local_rank = lr or 0
        if not 0 <= ep.rank < ep.size or ep.size != len(ep.workers):
            _fail(_errno.EINVAL, f"host {host}: rank {ep.rank} of size {ep.size} does not fit the workers "
                                 f"{', '.join(ep.workers)} (MLF_RANK, MLF_SIZE, MLF_WORKERS)")
    except BaseException:
        ep.close()
        raise
    if _default is not None and not _default.closed:
        _default.close()
    _default = ep
    return ep


def rank():
    """This worker's rank, 0..size()-1 (Horovod's hvd.rank()): the default endpoint's."""
    return endpoint().rank


def size():
    """The number of workers (Horovod's hvd.size())."""
    return endpoint().size


def local_rank():
    """This worker's rank among the workers of its machine (MLF_LOCAL_RANK; 0: one per host)."""
    return endpoint().local_rank


def workers():
    """The workers' hosts in rank order."""
    return list(endpoint().workers)


def allreduce(values, average=True, timeout_s=None):
    """Endpoint.allreduce on the default endpoint: the mean (or sum) over all workers of a small
    float32 array-like (metrics), the same numpy array on every worker."""
    return endpoint().allreduce(values, average=average, timeout_s=timeout_s)


def broadcast_object(obj, root_rank=0, timeout_s=None):
    """Endpoint.broadcast_object on the default endpoint: rank root_rank's picklable `obj`."""
    return endpoint().broadcast_object(obj, root_rank=root_rank, timeout_s=timeout_s)


def endpoint():
    """The default endpoint (the last init()'s); Error when init() was not called or it closed."""
    if _default is None or _default.closed:
        _fail(_errno.ENOTCONN, "no open mlfabric endpoint: call mlfabric.init() first")
    return _default


def shutdown():
    """Close the default endpoint (no-op when there is none)."""
    global _default
    if _default is not None:
        _default.close()
        _default = None


# close the default endpoint before the interpreter winds down (its event thread may call back
# into Python; a worker's close also waits for its pending pushes)
_atexit.register(shutdown)
