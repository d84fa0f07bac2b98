"""Reading and validating experiment and cluster files before anything uses them (docs/experiments.md
"Ranges", docs/cluster-config.md).

Every file is bounded before it is parsed (a regular file of at most MAX_BYTES, JSON nested at most
MAX_DEPTH deep: counted by a scan, not by recursion), parsed with finite numbers only (NaN,
Infinity and overflowing literals refused) and without repeated keys, then checked against its
JSON Schema (schema/*.schema.json, python3-jsonschema: types, ranges, sizes, unknown keys) and by
the cross-field rules below (layer sizes, distinct hosts, one subnet, one scheduler, ...). Each
refusal is one line naming the file, the key and the range expected (ConfigError).
`tools/mlf-cluster check` and `run` both reach these functions through Experiment (one code path).
"""
import ipaddress
import json
import os
import re
import stat

import jsonschema

MAX_BYTES = 4 << 20          # largest experiment or cluster file read, bytes
MAX_DEPTH = 8                # deepest nesting of arrays and objects in either file
MAX_PERIODS = 100000         # time_limit_s / period_s: rate periods of one run
MAX_SCHEDULE_ROWS = 1000000  # rate periods x hosts: rows of network.tsv and `rates`
MAX_LAYER = 65536            # widest model layer
MAX_PARAMS = 10000000        # model parameters (40 MB of float32)
MAX_LAYERS = 16              # model layers (sizes) including input and output
HOSTS_MAX = 1024             # hosts of a cluster (CLUSTER_HOSTS_MAX, lib/proto/cluster.h)
SERVERS_MAX = 32             # hosts with role server: the shard servers (CLUSTER_SERVERS_MAX)
# the smallest cluster MTU, CLUSTER_MTU_MIN (lib/proto/cluster.h): IPv4, UDP, MLfabric headers, a
# frame tag (stamp, nonce and MAC, lib/proto/wire.h) and a 1024-byte body (WIRE_SACK_MAX_BYTES, the largest SACK bitmap)
MTU_HEADERS = {"WIRE_IP_LEN": 20, "WIRE_UDP_LEN": 8, "WIRE_MLF_LEN": 40, "WIRE_STAMP_LEN": 8, "WIRE_NONCE_LEN": 12,
               "WIRE_MAC_LEN": 16,
               "WIRE_SACK_MAX_BYTES": 1024}
MTU_MIN = sum(MTU_HEADERS.values())

_SCHEMA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "schema")
_validators = {}


def reachable(graph, start):
    """The nodes of GRAPH ({node: [neighbours]}) reachable from START, START included."""
    seen, stack = {start}, [start]
    while stack:
        for x in graph.get(stack.pop(), []):
            if x not in seen:
                seen.add(x)
                stack.append(x)
    return seen


class ConfigError(ValueError):
    """A refused experiment or cluster file: one line naming the file and the key."""


class NonFinite:
    """A number JSON cannot hold as a finite double (NaN, Infinity, -Infinity, 1e999): kept as a
    value of no JSON type, so the schema refuses it at its key with the key's range."""

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


def _float(text):
    v = float(text)
    return v if v not in (float("inf"), float("-inf")) else NonFinite(text)


def _no_repeats(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise ValueError('key "%s" appears twice in one object' % k[:64])
        d[k] = v
    return d


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_BRACKET = re.compile(r"[\[\]{}]")


def _depth(text):
    """Deepest nesting of arrays and objects in TEXT (strings skipped), by a linear scan."""
    depth = deepest = 0
    for m in _BRACKET.finditer(_STRING.sub("", text)):
        depth += 1 if m.group() in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


def _kind(mode):
    """The kind of file MODE describes, in words."""
    for test, word in ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return word
    return "not a regular file"


def read_json(path, what, shown=None):
    """The JSON document of the regular file PATH (WHAT: "experiment" or "cluster config", SHOWN:
    the name in messages, default PATH), bounded before it is parsed: at most MAX_BYTES, at
    most MAX_DEPTH deep, numbers finite (NonFinite values are left for the schema to name),
    no key twice in an object. ConfigError with one line otherwise."""
    shown = shown or path
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise ConfigError("cannot read %s %s: %s" % (what, shown, e.strerror))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError("%s: file type: a regular file expected (the %s), got %s"
                              % (shown, what, _kind(st.st_mode)))
        if st.st_size > MAX_BYTES:
            raise ConfigError("%s: file size: at most %d bytes expected (the %s), got %d"
                              % (shown, MAX_BYTES, what, st.st_size))
        data = os.read(fd, MAX_BYTES + 1)
    except OSError as e:
        raise ConfigError("cannot read %s %s: %s" % (what, shown, e.strerror))
    finally:
        os.close(fd)
    if len(data) > MAX_BYTES:
        raise ConfigError("%s: file size: at most %d bytes expected (the %s), got more" % (shown, MAX_BYTES, what))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError("%s: not UTF-8 text (byte %d)" % (shown, e.start))
    d = _depth(text)
    if d > MAX_DEPTH:
        raise ConfigError("%s: nesting: arrays and objects at most %d deep expected (the %s), got %d"
                          % (shown, MAX_DEPTH, what, d))
    try:
        return json.loads(text, parse_constant=NonFinite, parse_float=_float, object_pairs_hook=_no_repeats)
    except ValueError as e:  # json.JSONDecodeError, a repeated key, an integer of too many digits
        raise ConfigError("%s: not JSON (%s)" % (shown, str(e).splitlines()[0][:200]))


def _validator(name):
    if name not in _validators:
        with open(os.path.join(_SCHEMA_DIR, name + ".schema.json")) as f:
            schema = json.load(f)
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        _validators[name] = cls(schema)
    return _validators[name]


def shown_value(v):
    """V as a refusal shows it: JSON, at most 60 characters."""
    if isinstance(v, NonFinite):
        return v.text
    if isinstance(v, (list, dict)) and len(v) > 8:
        return "an %s of %d" % (("array", "object")[isinstance(v, dict)], len(v))
    try:
        s = json.dumps(v, default=repr)
    except ValueError:
        s = repr(v)
    return s if len(s) <= 60 else s[:57] + "..."


def key_path(parts):
    """["hosts", 2, "ip"] -> "hosts[2].ip"."""
    out = ""
    for p in parts:
        out += "[%d]" % p if isinstance(p, int) else ("." if out else "") + str(p)
    return out


def _message(e):
    """One line for the jsonschema error E: "KEY: RANGE expected, got VALUE" (or the missing or
    unknown key)."""
    where = key_path(e.absolute_path)
    pre = where + ": " if where else ""
    if e.validator == "required":
        missing = [k for k in e.validator_value if k not in e.instance]
        return '%smissing field "%s"' % (pre, missing[0])
    if e.validator == "additionalProperties" and e.validator_value is False:
        known = list(e.schema.get("properties", {}))
        extra = [k for k in e.instance if k not in known]
        return '%sunknown key "%s" (known: %s)' % (pre, extra[0][:64], ", ".join(known))
    if e.validator == "propertyNames":
        return "%sa key of at most 15 characters expected" % pre
    what = e.schema.get("x-expected") or e.message.splitlines()[0][:120]
    return "%s%s expected, got %s" % (pre, what, shown_value(e.instance))


def schema_check(doc, name, shown):
    """DOC against schema/NAME.schema.json; ConfigError naming SHOWN and the first bad key."""
    errors = sorted(_validator(name).iter_errors(doc),
                    key=lambda e: ([str(p) for p in e.absolute_path], e.validator != "required"))
    if errors:
        raise ConfigError("%s: %s" % (shown, _message(errors[0])))
    bad = _first_nonfinite(doc, [])
    if bad is not None:
        raise ConfigError("%s: %s: a finite number expected, got %s" % (shown, key_path(bad[0]), bad[1].text))


def _first_nonfinite(v, path):
    """(path, value) of the first NonFinite in V, iteratively; None when there is none."""
    stack = [(path, v)]
    while stack:
        p, x = stack.pop()
        if isinstance(x, NonFinite):
            return p, x
        if isinstance(x, dict):
            stack.extend((p + [k], y) for k, y in reversed(list(x.items())))
        elif isinstance(x, list):
            stack.extend((p + [i], y) for i, y in reversed(list(enumerate(x))))
    return None


def model_sizes(m):
    """The layer sizes of "model" ("784,1024,10" or [784, 1024, 10]) or None when malformed."""
    parts = [str(q).strip() for q in m] if isinstance(m, list) else str(m).split(",")
    if not all(re.fullmatch(r"[1-9][0-9]{0,8}", q) for q in parts):
        return None
    return [int(q) for q in parts]


def experiment(path):
    """The experiment file PATH read and checked on its own (schema and cross-field rules); the
    cluster it names is checked by cluster(). Returns the document (a dict)."""
    x = read_json(path, "experiment")
    schema_check(x, "experiment", path)

    def bad(key, what, v):
        raise ConfigError("%s: %s: %s expected, got %s" % (path, key, what, shown_value(v)))
    m = x.get("model")
    if m is not None:
        sizes = model_sizes(m)
        what = ('layer sizes expected (2..%d integers in [1, %d], at most %d parameters, e.g. "784,1024,10"), got %s'
                % (MAX_LAYERS, MAX_LAYER, MAX_PARAMS, shown_value(m)))
        if (sizes is None or not 2 <= len(sizes) <= MAX_LAYERS or max(sizes) > MAX_LAYER
                or sum(a * b + b for a, b in zip(sizes, sizes[1:])) > MAX_PARAMS):
            raise ConfigError("%s: model: %s" % (path, what))
    for k in ("workers", "aggregators"):
        v = x.get(k)
        if isinstance(v, str):
            names = [h for h in v.split(",") if h] if v else []
            if len(names) != len(set(names)) or len(names) > HOSTS_MAX:
                bad(k, "distinct host names (a comma list or an array of at most %d)" % HOSTS_MAX, v)
    periods = x["time_limit_s"] / x["period_s"]
    if periods > MAX_PERIODS:
        bad("period_s", "at least time_limit_s / %d (%g s: at most %d rate periods per run)"
            % (MAX_PERIODS, x["time_limit_s"] / MAX_PERIODS, MAX_PERIODS), x["period_s"])
    return x


def _ipv4(s):
    """The address of S (dotted quad) as an int, or None."""
    try:
        return int(ipaddress.IPv4Address(s))
    except ValueError:
        return None


def cluster(path, shown, exp=None, exp_path=""):
    """The cluster config PATH (SHOWN in messages) read and checked: its schema and the rules of
    lib/proto/cluster.c (docs/cluster-config.md), and with EXP (the experiment dict of the file
    EXP_PATH) the rate schedule's size. Returns the document (a dict)."""
    cl = read_json(path, "cluster config", shown)
    schema_check(cl, "cluster", shown)

    def bad(key, msg):
        raise ConfigError("%s: %s: %s" % (shown, key, msg))
    prefix = cl.get("prefix_len", 24)
    hostmask = 0xffffffff >> prefix
    first = None
    names, ips, macs, sched, servers = {}, {}, {}, None, 0
    for i, h in enumerate(cl["hosts"]):
        w = "hosts[%d]" % i
        a = _ipv4(h["ip"])
        if a is None:
            bad(w + ".ip", "an IPv4 address string expected, got %s" % shown_value(h["ip"]))
        if a in (0, 0xffffffff) or a >> 28 == 0xe:
            bad(w + ".ip", "a unicast address expected (not 0.0.0.0, 255.255.255.255 or multicast 224.0.0.0/4), "
                "got %s" % shown_value(h["ip"]))
        first = a if first is None else first
        if a & ~hostmask != first & ~hostmask:
            bad(w + ".ip", "an address in the cluster's subnet %s/%d (hosts[0]'s, prefix_len) expected, got %s"
                % (ipaddress.IPv4Address(first & ~hostmask & 0xffffffff), prefix, shown_value(h["ip"])))
        if a & hostmask in (0, hostmask):
            bad(w + ".ip", "not the network or broadcast address of its /%d subnet, got %s" % (prefix, h["ip"]))
        mac = [int(b, 16) for b in h["mac"].split(":")] if "mac" in h else [2, 0] + list(a.to_bytes(4, "big"))
        if mac[0] & 1 or not any(mac):
            bad(w + ".mac", "a unicast, non-zero address expected (low bit of the first octet clear), got %s" % h["mac"])
        for key, seen, v in (("name", names, h["name"]), ("ip", ips, a), ("mac", macs, tuple(mac))):
            if v in seen:
                bad(w + "." + key, "distinct from every other host's expected, repeats hosts[%d].%s" % (seen[v], key))
            seen[v] = i
        roles = h.get("roles") or []
        servers += "server" in roles
        if servers > SERVERS_MAX:
            bad(w + ".roles", "at most %d hosts with role server (one per shard) expected" % SERVERS_MAX)
        if "scheduler" in roles:
            if sched is not None:
                bad(w + ".roles", "at most one scheduler per cluster expected, hosts[%d] is one" % sched)
            sched = i
    _check_control(cl, bad)
    if cl.get("insecure") and cl.get("key_file"):
        bad("insecure", "true with key_file (a keyed cluster is not insecure: drop one of them)")
    if cl.get("frame_auth") and not cl.get("key_file"):
        bad("frame_auth", "true needs key_file (the frame key is derived from the cluster secret)")
    _check_graph(cl, bad)
    if exp is not None:
        rows = (int(exp["time_limit_s"] / exp["period_s"]) + 1) * len(cl["hosts"])
        if rows > MAX_SCHEDULE_ROWS:
            raise ConfigError("%s: period_s: at least %g s expected for time_limit_s %g on %d hosts (at most %d "
                              "rate schedule rows, periods x hosts), got %s"
                              % (exp_path, exp["time_limit_s"] * len(cl["hosts"]) / MAX_SCHEDULE_ROWS,
                                 exp["time_limit_s"], len(cl["hosts"]), MAX_SCHEDULE_ROWS, shown_value(exp["period_s"])))
    return cl


def _check_control(cl, bad):
    """Management addresses and EAL settings (docs/cluster-config.md "Management network"), as
    lib/proto/cluster.c checks them: control_ip unicast and distinct, exactly one of dpdk.pci and
    dpdk.vdev, socket_mem only with hugepages, a scheduler on a DPDK-owned PCI port needs a
    control_ip, launch.emulate only with via ssh or slurm."""
    seen = {}
    for i, h in enumerate(cl["hosts"]):
        w = "hosts[%d]" % i
        if "control_ip" in h:
            c = _ipv4(h["control_ip"])
            if c is None or c in (0, 0xffffffff) or c >> 28 == 0xe:
                bad(w + ".control_ip", "a unicast IPv4 address string expected (the host's management interface), "
                    "got %s" % shown_value(h["control_ip"]))
            if c in seen:
                bad(w + ".control_ip", "repeats hosts[%d].control_ip" % seen[c])
            seen[c] = i
        d = h.get("dpdk")
        if d is None:
            continue
        if ("pci" in d) == ("vdev" in d):
            bad(w + ".dpdk", "exactly one of pci (a real port) and vdev (a virtual device) expected")
        if d.get("socket_mem") and not d.get("hugepages", "pci" in d):
            bad(w + ".dpdk.socket_mem", "needs hugepages (--no-huge memory is not per socket)")
        if "scheduler" in (h.get("roles") or []) and "pci" in d and h.get("control_ip", h["ip"]) == h["ip"]:
            bad(w, 'the scheduler would listen on %s, the address of DPDK port %s, which the kernel does not own '
                'once the port is bound to DPDK: add "control_ip": the address of %s\'s management interface '
                '(docs/deploy.md)' % (h["ip"], d["pci"], h["name"]))
    la = cl.get("launch") or {}
    if la.get("emulate") and la.get("via") not in ("ssh", "slurm"):
        bad("launch.emulate", "true only with via ssh or slurm (the hosts are this machine's testbed namespaces, "
            "each with its own sshd or slurmd)")


def _check_graph(cl, bad):
    """"graph": worker hosts only, no self edge, undirected, connected (lib/proto/cluster.c)."""
    g = cl.get("graph")
    if g is None:
        return
    roles = {h["name"]: h.get("roles") or [] for h in cl["hosts"]}
    for h, nb in g.items():
        if h not in roles:
            bad("graph", '"%s" is not a host of the cluster' % h)
        if "worker" not in roles[h]:
            bad("graph", '"%s" is not a worker (roles)' % h)
        for j, x in enumerate(nb):
            if x not in roles:
                bad("graph.%s[%d]" % (h, j), '"%s" is not the name of a host of the cluster' % x)
            if x == h:
                bad("graph." + h, "names itself (a worker always counts its own model)")
        if len(set(nb)) != len(nb):
            bad("graph." + h, "names a host twice")
    for h, nb in g.items():
        for x in nb:
            if h not in g.get(x, []):
                bad("graph", "%s names %s but not the other way round (the graph is undirected)" % (h, x))
    start = next(iter(g))
    seen = reachable(g, start)
    rest = [h for h in g if h not in seen]
    if rest:
        bad("graph", "not connected (%s cannot reach %s)" % (start, rest[0]))
