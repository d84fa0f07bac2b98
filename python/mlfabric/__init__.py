"""mlfabric - Python bindings of libmlfabric (include/mlfabric.h, the paper's Table-1 API, §4).

    import mlfabric
    ep = mlfabric.init("conf/cluster-mini.json", "w0")        # a worker of the cluster's server
    vid = ep.push(update, norm, version)                       # float32 buffers, never copied
    version = ep.get(model)                                    # fills `model` in place
    mlfabric.shutdown()

Vectors are C-contiguous float32 buffers (numpy float32 arrays, torch CPU tensors' .numpy(),
array.array('f')). Blocking calls release the GIL. Failures raise mlfabric.Error (an OSError:
.errno, and a message naming what failed: the file, the host, the server, the socket).
See docs/python.md; mlfabric.torch has the PyTorch optimizer wrapper.
"""
import atexit as _atexit
import errno as _errno
import json as _json

from . import _mlfabric
from ._mlfabric import Error
from ._version import __version__

__all__ = ["Error", "Endpoint", "init", "shutdown", "endpoint", "MODES", "ROLES", "read_cluster"]

#: fabric modes as experiment files and --mode flags spell them (docs/fabric.md)
MODES = ("mlfabric-a", "mlfabric-s", "async")
#: what init(role=...) registers the endpoint as (None: open only)
ROLES = ("worker", "server", "aggregator", None)

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
        pushed updates are sent or dropped). Idempotent."""
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
    def _server_or_fail(self):
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
        """Worker counters: dict(pushed, sent, dropped, aggregated, models), monotonic."""
        return self._h.stats()

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


def init(cluster, host, role="worker", server=None, mode="mlfabric-a", sock=None, timeout_s=10.0):
    """Open an Endpoint (see Endpoint) and make it the module's default endpoint.

    role "worker" registers as a worker of `server` (default: the cluster's host with the role
    "server"); "server" only opens (call register_server); "aggregator" registers as one; None
    only opens. The cluster file and the host names are checked here first: a missing or bad
    file, or an unknown host, raises Error naming it without touching the library.
    """
    global _default
    ep = Endpoint(cluster, host, role=role, server=server, mode=mode, sock=sock, timeout_s=timeout_s)
    if _default is not None and not _default.closed:
        _default.close()
    _default = ep
    return ep


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
