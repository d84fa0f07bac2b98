"""The experiment file (conf/exp-*.json, docs/experiments.md): load, validate, defaults.

Every error is one line naming the file and the key (ExperimentError); nothing is started
before the experiment is valid.
"""
import json
import os
import re
import shutil

from . import validate

KNOWN_SYSTEMS = ["mlfabric-a", "mlfabric-s", "async", "rr-sync", "gloo", "ssp", "asp", "esync", "adsp",
                 "local-sgd", "hop"]
# hop (hop-asplos2019) is decentralized: the workers average with their neighbours on the graph
# hop_graph, no server and no scheduler (mlf-worker --system hop); worker 0 evaluates its own model
# systems run by mlf-scheduler: ssp and asp are MLfabric-A's scheduler with its (adaptive)
# stale-synchronous gate; esync is MLfabric-S with workers that train locally between rounds,
# asking the scheduler's State Server (esync.txt); local-sgd is the same with local_steps fixed
# local iterations per round (ADSP's "Fixed ADACOMM" baseline); adsp is MLfabric-A whose
# workers train without waiting and commit at the scheduler's commit rate (adsp-aaai2020)
SCHEDULED = {"mlfabric-a", "mlfabric-s", "ssp", "asp", "esync", "adsp", "local-sgd"}
WORKER_PROGRAMS = ["c", "torch"]
# the PyTorch example (worker_program "torch") and the interpreter that has torch (Debian's)
TORCH_SCRIPT = os.path.join("examples", "torch_fashion_mnist.py")
GLOO_PORT = 29500       # the gloo rendezvous port on the first worker (system gloo)
RATES = ["1", "2.5", "3.3", "5", "10"]
STRAGGLE = {"C1": "0.10,2", "C2": "0.10,4", "C3": "0.04,2"}
NET_PROBS = {"N1": "0 0 0 0.1 0.9", "N2": "0 0.1 0.1 0.1 0.7", "N3": "0.5 0 0 0 0.5"}
REQUIRED = ["name", "cluster", "systems", "compute", "network", "rate_scale", "period_s",
            "target_accuracy", "time_limit_s", "seed"]
POSITIVE = ["rate_scale", "period_s", "target_accuracy", "time_limit_s", "seed"]
# optional keys and their defaults (docs/fabric.md); lr_sync defaults to lr
OPTIONAL = {"model": "784,1024,10", "batch": 32, "lr": 0.05, "momentum": 0.9, "lr_sync": None,
            "compute_s": 0, "tau_max": 8, "eval_every_s": 2, "eval_images": 1000,
            "batch_ms": 100, "t_lag": 0.2, "workers": None, "aggregators": None,
            "replication": None, "faults": None, "worker_program": "c",
            "scheduler_args": None, "shards": 1, "momentum_at": None,
            "speeds": None, "speeds_at_s": 0, "ssp_s": 3, "asp_w": 1, "esync_global_lr": None,
            "data_split": "iid", "capacity": "declared", "local_steps": 4, "adsp_period_s": 1, "adsp_eval_s": 6,
            "adsp_rate": None, "adsp_global_lr": None, "hop_graph": "ring", "hop_backups": 0,
            "hop_staleness": 0, "hop_max_ig": 4, "hop_jump": None, "hop_jump_behind": 1,
            "esync_nonblocking": False, "overlap": False, "init_weights": None, "worker_command": None}
# range of each optional numeric key: (low, low included, high or None, integer only, expected)
RANGES = {"batch": (1, True, None, True, "an integer >= 1"),
          "lr": (0, False, None, False, "a number > 0"),
          "lr_sync": (0, False, None, False, "a number > 0"),
          "momentum": (0, True, 1, False, "a number in [0, 1)"),
          "compute_s": (0, True, None, False, "a number >= 0"),
          "tau_max": (0, True, None, False, "a number >= 0"),
          "eval_every_s": (0, False, None, False, "a number > 0"),
          "eval_images": (1, True, None, True, "an integer >= 1"),
          "batch_ms": (0, False, None, False, "a number > 0"),
          "t_lag": (0, True, None, False, "a number >= 0"),
          "speeds_at_s": (0, True, None, False, "a number >= 0"),
          "ssp_s": (0, True, None, True, "an integer >= 0"),
          "asp_w": (0, True, None, True, "an integer >= 0"),
          "esync_global_lr": (0, False, 4096, False, "a number in (0, 4096]"),
          "local_steps": (1, True, 100000, True, "an integer in [1, 100000]"),
          "adsp_period_s": (0.01, True, 3600, False, "seconds in [0.01, 3600]"),
          "adsp_eval_s": (0.01, True, 86400, False, "seconds in [0.01, 86400]"),
          "adsp_rate": (1, True, 4096, True, "an integer in [1, 4096]"),
          "adsp_global_lr": (0, False, 4096, False, "a number in (0, 4096]"),
          "hop_backups": (0, True, 64, True, "an integer in [0, 64]"),
          "hop_staleness": (0, True, 100000, True, "an integer in [0, 100000]"),
          "hop_max_ig": (0, True, 100000, True, "an integer in [0, 100000]"),
          "hop_jump": (1, True, 100000, True, "an integer in [1, 100000]"),
          "hop_jump_behind": (1, True, 100000, True, "an integer in [1, 100000]")}
# Each system's own settings from its paper, used for the keys an experiment leaves out (an
# explicit key wins; docs/experiments.md "Each system's defaults"): system -> [(key, value or
# f(experiment), where the paper gives it)]. Experiment.settings(system) applies them, for
# `check` and `run` alike.
SYSTEM_DEFAULTS = {
    "adsp": [("adsp_global_lr", lambda e: 1.0 / e.nw,
              "adsp-aaai2020 §5.1 Default Settings: the global learning rate 1/M, M = {nw} workers")],
    "esync": [("esync_global_lr", 1, "esync.txt Alg. 1: the global learning rate epsilon, default 1")],
    "hop": [("hop_graph", "ring-based", "hop-asplos2019 §7.3: the ring-based graph (Fig. 11)")],
}
MOMENTUM_AT = ["server", "worker"]
REPL_KEYS = ["mode", "div_max", "replica", "replica_aggregators", "checkpoint_every", "verify_every"]
REPL_MODES = ["none", "mlfabric", "chain", "checkpoint"]
FAULT_KEYS = ["at_s", "kind", "host", "duration_s", "loss", "restart_s", "new_replica_s"]
FAULT_KINDS = ["kill-server", "kill-aggregator", "kill-worker", "kill-scheduler", "cut-link", "loss-burst"]


def _float_ok(v, lo, hi):
    """@v (a string) is a number in [lo, hi]."""
    try:
        return lo <= float(v) <= hi
    except ValueError:
        return False


class ExperimentError(Exception):
    """A bad experiment: one line, exit status 2."""


def num_str(v):
    """A JSON value as a command-line argument or log word (integral numbers without a fraction)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e17:
        return str(int(v))
    if isinstance(v, list):
        return ",".join(num_str(x) for x in v)
    return str(v)


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


class Fault:
    def __init__(self, index, at, kind, host, dur, loss, raw):
        self.index, self.at, self.kind, self.host = index, at, kind, host
        self.dur, self.loss, self.raw = dur, loss, raw
        # kill-worker / kill-aggregator: start the process again this many s after the kill (0: never);
        # kill-server with a replica: start a new replica on the killed server's host this many s
        # after the fail-over (0: never)
        self.restart_s = raw.get("restart_s") or 0 if isinstance(raw, dict) else 0
        self.new_replica_s = raw.get("new_replica_s") or 0 if isinstance(raw, dict) else 0


class Experiment:
    """A validated experiment; attributes hold the settings every module needs."""

    def __init__(self, path, root, build, mpirun, systems=None, check_programs=True, worker_command=None):
        self.path, self.root, self.build, self.mpirun = path, root, build, mpirun
        self.tb = os.path.join(build, "mlf-testbed")
        self.command_arg = worker_command   # tools/mlf-cluster run EXP -- ARGV (wins over the key)
        self._load(systems, check_programs)

    def err(self, msg):
        raise ExperimentError("%s: %s" % (self.path, msg))

    def _load(self, systems, check_programs):
        p = self.path
        try:
            x = validate.experiment(p)  # docs/experiments.md "Ranges"
        except validate.ConfigError as e:
            raise ExperimentError(str(e))
        if not isinstance(x, dict):
            self.err("not a JSON object")
        if self.command_arg:
            x = dict(x, worker_command=list(self.command_arg))
            x.pop("worker_program", None)
        self.raw = x
        for k in REQUIRED:
            if k not in x:
                self.err('missing field "%s"' % k)
        for k in x:
            if k not in REQUIRED and k not in OPTIONAL:
                self.err('unknown key "%s" (known: %s)' % (k, ", ".join(REQUIRED + list(OPTIONAL))))
        if not isinstance(x["systems"], list) or not x["systems"]:
            self.err("systems: a non-empty array expected")
        for k in POSITIVE:
            if not is_num(x[k]) or x[k] <= 0:
                self.err("%s: a positive number expected" % k)
        self.name = num_str(x["name"])
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", self.name):
            self.err("name: letters, digits, '.', '_' or '-' expected")
        self.systems = [num_str(s) for s in x["systems"]]
        if systems:
            self.systems = [s for s in systems.split(",") if s]
        for s in self.systems:
            if s not in KNOWN_SYSTEMS:
                raise ExperimentError('unknown system "%s" (known: %s)' % (s, ", ".join(KNOWN_SYSTEMS)))
        self.compute = num_str(x["compute"])
        m = re.fullmatch(r"([0-9.]+),([0-9.]+)", self.compute)
        if m and _float_ok(m.group(1), 0, 1) and _float_ok(m.group(2), 1, 1000):
            # "R,S": every iteration S times slower with probability R (Hop's random 6x
            # slowdowns at 1/n: "0.125,6" for 8 workers)
            self.straggle = self.compute
        elif self.compute not in STRAGGLE:
            self.err('compute: unknown setting "%s" (C1, C2, C3, or "R,S": probability R in [0, 1] '
                     'of an S-times slower iteration, S in [1, 1000])' % self.compute)
        else:
            self.straggle = STRAGGLE[self.compute]
        self.network = num_str(x["network"])
        if self.network not in NET_PROBS:
            self.err('network: unknown setting "%s" (N1, N2, N3)' % self.network)
        self.probs = NET_PROBS[self.network]
        for k in POSITIVE:
            setattr(self, k, x[k])
        self._check_ranges(x)
        # each setting as the string its command-line option takes (num_str: 2.0 -> "2")
        g = lambda k: num_str(x[k]) if k in x and x[k] is not None else OPTIONAL[k]
        self.s = {k: num_str(g(k)) for k in ["model", "batch", "lr", "momentum", "compute_s", "tau_max",
                                             "eval_every_s", "eval_images", "batch_ms", "t_lag",
                                             "speeds_at_s", "ssp_s", "asp_w", "local_steps",
                                             "adsp_period_s", "adsp_eval_s", "hop_backups",
                                             "hop_staleness", "hop_max_ig", "hop_jump_behind"]}
        self.s["hop_jump"] = num_str(x["hop_jump"]) if x.get("hop_jump") is not None else None
        for k in ("adsp_rate", "adsp_global_lr"):
            self.s[k] = num_str(x[k]) if x.get(k) is not None else None
        if float(self.s["adsp_eval_s"]) < float(self.s["adsp_period_s"]):
            self.err("adsp_eval_s: %s is shorter than adsp_period_s %s (each commit rate the search "
                     "tries runs at least one check period)" % (self.s["adsp_eval_s"], self.s["adsp_period_s"]))
        self.s["lr_sync"] = num_str(x["lr_sync"]) if x.get("lr_sync") is not None else self.s["lr"]
        self.s["esync_global_lr"] = num_str(x["esync_global_lr"]) if x.get("esync_global_lr") is not None else None
        # esync_nonblocking: ESync's delayed-ACK mode (esync.txt §4.2, mlf-worker --esync-nonblocking)
        self.esync_nb = x.get("esync_nonblocking", False)
        if not isinstance(self.esync_nb, bool):
            self.err("esync_nonblocking: true or false expected, got %s" % json.dumps(self.esync_nb))
        # overlap: MLfabric-A and Async workers compute each gradient while the next model's get is
        # in flight (mlf-worker --overlap, docs/experiments.md "Experiment files"); other systems
        # ignore it
        self.overlap = x.get("overlap", False)
        if not isinstance(self.overlap, bool):
            self.err("overlap: true or false expected, got %s" % json.dumps(self.overlap))
        if self.overlap and x.get("worker_program", "c") != "c":
            self.err("overlap: needs worker_program c (mlf-worker --overlap)")
        # data_split: "iid" (each worker a slice of the set) or "by-label" (non-i.i.d.: worker i
        # holds the classes l with l % workers == i; mlf-worker --shard-by-label,
        # docs/experiments.md "Experiment files")
        self.data_split = x.get("data_split", "iid")
        if self.data_split not in ("iid", "by-label"):
            self.err('data_split: "iid" or "by-label" expected, got %s' % json.dumps(self.data_split))
        # capacity: "declared" (the runner tells each dataplane its link capacities per rate
        # period, /mlfabric/capacity) or "measured" (the links are shaped the same, the scheduler
        # is not told: it plans with its estimates, mlf-scheduler --capacity measured;
        # docs/experiments.md "Measured capacities")
        self.capacity = x.get("capacity", "declared")
        if self.capacity not in ("declared", "measured"):
            self.err('capacity: "declared" or "measured" expected, got %s' % json.dumps(self.capacity))
        for k in ["rate_scale", "period_s", "seed", "target_accuracy", "time_limit_s"]:
            self.s[k] = num_str(x[k])
        self.tau_max = float(self.s["tau_max"])
        self._load_worker_program()
        self._load_cluster()
        self._load_system_defaults()
        self._check_programs(check_programs)
        self._load_replication()
        self._load_momentum_at()
        self._load_faults()
        self._load_scheduler_args()
        self._load_shards()
        self._load_speeds()
        self._check_data_split()
        self._load_hop()
        self._load_init_weights()

    # systems whose model starts at the server (the workers get it) or at every RR-Sync rank
    INIT_WEIGHTS_SYSTEMS = ("mlfabric-a", "mlfabric-s", "async", "rr-sync")

    def _load_init_weights(self):
        """init_weights: a file of pre-trained weights (raw little-endian float32, exactly the
        model's parameter count) that every system starts from instead of the seed's
        initialisation (mlf-ps / mlf-rrsync --init-weights; the paper's Table 2 starts from a
        pre-trained model, §7; `bench-sgd-delay --pretrain G --pretrain-only --save-model F`
        writes one). A relative path is tried from the current directory, then the repository."""
        v = self.raw.get("init_weights")
        self.init_weights = None
        if v is None:
            return
        if not isinstance(v, str) or not v:
            self.err("init_weights: a file name expected, got %s" % json.dumps(v))
        path = v if v.startswith("/") or os.access(v, os.R_OK) else os.path.join(self.root, v)
        try:
            size = os.path.getsize(path)
        except OSError as e:
            self.err("init_weights: cannot read %s (%s; `bench-sgd-delay --pretrain G --pretrain-only "
                     "--save-model F` writes one, `make build/pretrained-t2.f32` the Table 2 one)" % (v, e.strerror))
        sizes = [int(t) for t in self.s["model"].split(",")]
        n = sum(a * b + b for a, b in zip(sizes, sizes[1:]))
        if size != 4 * n:
            self.err("init_weights: %s holds %d bytes; model %s needs %d float32 (%d bytes)"
                     % (v, size, self.s["model"], n, 4 * n))
        bad = [s for s in self.systems if s not in self.INIT_WEIGHTS_SYSTEMS]
        if bad:
            self.err("init_weights: only for systems %s (not %s)" % (", ".join(self.INIT_WEIGHTS_SYSTEMS), ", ".join(bad)))
        if self.worker_program != "c":
            self.err("init_weights: needs worker_program c")
        self.init_weights = os.path.abspath(path)

    def _load_system_defaults(self):
        """Each system's settings: the experiment's, with SYSTEM_DEFAULTS for the keys it leaves
        out (hop_graph also stays the cluster config's graph when it has one). self.sys_s:
        system -> settings as command-line strings; self.applied: (system, key, value, source)
        of every default applied, in the order of the systems."""
        self.sys_s, self.applied = {}, []
        for sys_ in self.systems:
            s = dict(self.s, hop_graph=self.raw.get("hop_graph"))
            for key, val, src in SYSTEM_DEFAULTS.get(sys_, []):
                if self.raw.get(key) is not None or (key == "hop_graph" and isinstance(self.cluster_graph, dict)):
                    continue
                s[key] = num_str(val(self) if callable(val) else val)
                self.applied.append((sys_, key, s[key], src.format(nw=self.nw)))
            self.sys_s[sys_] = s

    def settings(self, sys_):
        """System @sys_'s settings (strings, as self.s): the experiment's keys, its paper's
        defaults for the keys left out (SYSTEM_DEFAULTS)."""
        return self.sys_s[sys_]

    def defaults_lines(self):
        """One line per default applied: `system: key = value (source)`."""
        return ["%s: %s = %s (%s)" % a for a in self.applied]

    def _load_hop(self):
        """hop_graph (system hop): "ring" (each worker with the previous and the next in the
        order of workers), "ring-based" (the ring plus the most distant worker, Hop's Fig. 11), or
        an object {worker: [neighbours]}: an undirected, connected graph of the workers. Without
        hop_graph, the cluster config's "graph" restricted to the experiment's workers, else
        Hop's default "ring-based" (SYSTEM_DEFAULTS)."""
        self.hop_nb = None
        if "hop" not in self.systems:
            return
        w, n = self.workers, self.nw
        if "hop_graph" in self.raw or not isinstance(self.cluster_graph, dict):
            g = self.settings("hop")["hop_graph"]
        else:
            g = {h: [x for x in v if x in w] for h, v in self.cluster_graph.items()
                 if h in w and isinstance(v, list)}
            g = {h: v for h, v in g.items() if v}  # a worker whose neighbours all lie outside
            if set(g) != set(w):
                self.err('hop_graph: the graph of %s gives no neighbour to %s (set hop_graph)'
                         % (self.cluster, ", ".join(sorted(set(w) - set(g)))))
        if n < 2:
            self.err("hop_graph: Hop needs at least 2 workers")
        if g in ("ring", "ring-based"):
            nb = {h: {w[(i - 1) % n], w[(i + 1) % n]} - {h} for i, h in enumerate(w)}
            if g == "ring-based" and n >= 4:
                for i, h in enumerate(w):
                    nb[h].add(w[(i + n // 2) % n])
        elif isinstance(g, dict):
            nb = {}
            for h, v in g.items():
                if h not in w:
                    self.err('hop_graph: "%s" is not a worker of this experiment (%s)' % (h, ", ".join(w)))
                if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
                    self.err('hop_graph: "%s": a list of worker names expected' % h)
                for x in v:
                    if x not in w:
                        self.err('hop_graph: "%s" names "%s", not a worker of this experiment' % (h, x))
                    if x == h:
                        self.err('hop_graph: "%s" names itself (the worker always counts its own model)' % h)
                nb[h] = set(v)
            for h in w:
                nb.setdefault(h, set())
            for h in w:
                for x in nb[h]:
                    if h not in nb[x]:
                        self.err('hop_graph: "%s" names "%s" but not the other way round (the graph must be '
                                 'undirected)' % (h, x))
        else:
            self.err('hop_graph: "ring", "ring-based" or an object {worker: [neighbours]} expected, got %s'
                     % json.dumps(g))
        seen = validate.reachable(nb, w[0])
        if len(seen) != n:
            self.err("hop_graph: the graph is not connected (%s cannot reach %s)"
                     % (w[0], ", ".join(sorted(set(w) - seen))))
        if int(self.s["hop_backups"]) >= min(len(v) for v in nb.values()):
            self.err("hop_backups: %s leaves no neighbour's update needed by a worker with %d neighbours"
                     % (self.s["hop_backups"], min(len(v) for v in nb.values())))
        if self.s["hop_jump"] is not None and int(self.s["hop_max_ig"]) == 0:
            self.err("hop_jump: skipping iterations needs token queues (hop_max_ig >= 1)")
        if self.worker_program != "c" or self.repl_mode != "none" or self.shards > 1 or self.raw.get("faults"):
            self.err("system hop: mlf-worker only, without replication, shards or faults (it has no server)")
        self.hop_nb = {h: [x for x in w if x in nb[h]] for h in w}

    def hop_args(self, host):
        """mlf-worker's Hop flags for @host."""
        a = ["--hop-neighbours", ",".join(self.hop_nb[host]), "--hop-backups", self.s["hop_backups"],
             "--hop-staleness", self.s["hop_staleness"], "--hop-max-ig", self.s["hop_max_ig"],
             "--init-seed", self.s["seed"]]
        if self.s["hop_jump"] is not None:
            a += ["--hop-jump", "%s@%s" % (self.s["hop_jump"], self.s["hop_jump_behind"])]
        return a

    def _load_speeds(self):
        """speeds: one slowdown factor >= 1 per worker (deterministic stragglers, docs/experiments.md
        "Experiment files"; e.g. [1, 1, 1, 4] makes the fourth worker 4x slower), from speeds_at_s
        seconds after the start (mlf-worker --speed F@T), on top of the compute setting's random
        stragglers."""
        v = self.raw.get("speeds")
        self.speeds = None
        if "asp" in self.systems and int(self.s["asp_w"]) > int(self.s["ssp_s"]):
            self.err("asp_w: %s is above ssp_s %s (ASP's weak threshold is the smallest it uses, ssp_s the "
                     "largest)" % (self.s["asp_w"], self.s["ssp_s"]))
        if v is None:
            return
        if not isinstance(v, list) or not all(is_num(f) and 1 <= f <= 1000 for f in v):
            self.err("speeds: an array of factors in [1, 1000] expected, got %s" % json.dumps(v))
        if len(v) != self.nw:
            self.err("speeds: %d factors for %d workers (one per worker, in the order of the workers)"
                     % (len(v), self.nw))
        for s in self.systems:
            if s == "gloo":
                self.err("speeds: not supported by system %s yet (mlf-worker systems only: %s)"
                         % (s, ", ".join(sorted(SCHEDULED | {"async", "rr-sync"}))))
        self.speeds = [num_str(f) for f in v]

    def _check_data_split(self):
        """by-label shards: mlf-worker only, at most 10 workers (one class each at least)."""
        if self.data_split != "by-label":
            return
        for s in self.systems:
            if s in ("rr-sync", "gloo") or self.worker_program != "c":
                self.err('data_split: "by-label" is not supported by system %s (mlf-worker systems only)' % s)
        if self.nw > 10:
            self.err('data_split: "by-label" needs at most 10 workers (10 classes), got %d' % self.nw)
    def _check_ranges(self, x):
        """Type and range of the optional numeric keys (RANGES) and of model (layer sizes)."""
        for k, (lo, lo_in, hi, integer, what) in RANGES.items():
            v = x.get(k)
            if v is None:
                continue
            ok = is_num(v) and (v >= lo if lo_in else v > lo) and (hi is None or v < hi)
            if ok and integer:
                ok = float(v).is_integer()
            if not ok:
                self.err("%s: %s expected, got %s" % (k, what, json.dumps(v)))
        m = x.get("model")
        if m is not None:
            parts = num_str(m).split(",") if isinstance(m, (str, list)) else []
            if len(parts) < 2 or not all(re.fullmatch(r"[1-9][0-9]*", q.strip()) for q in parts):
                self.err('model: layer sizes expected (positive integers, e.g. "784,1024,10"), got %s'
                         % json.dumps(m))

    def _load_shards(self):
        """shards: S >= 1 parameter servers for mlfabric-a and mlfabric-s (paper §10.2, docs/experiments.md):
        the first S hosts with role server each hold a slice of the model (mlf-ps --shard K/S),
        the first worker evaluates the models it gets (mlf-worker --eval-every). Default 1."""
        v = self.raw.get("shards", 1)
        if not is_num(v) or v != int(v) or not 1 <= v <= 32:
            self.err("shards: an integer in 1..32 expected")
        self.shards = int(v)
        self.shard_hosts = self.cluster_roles("server")[:self.shards] if self.shards > 1 else [self.server]
        if self.shards > 1:
            if len(self.shard_hosts) < self.shards:
                self.err('shards: %d shard servers need %d hosts with role server in %s (it has %d)'
                         % (self.shards, self.shards, self.cluster, len(self.shard_hosts)))
            if self.worker_program != "c":
                self.err("shards: needs worker_program c (mlf-worker evaluates the sharded model)")
            if self.repl_mode != "none":
                self.err("shards: a sharded model is not replicated (replication mode %s)" % self.repl_mode)
            for h in self.shard_hosts:
                if h in self.workers:
                    self.err('shards: server host "%s" is also a worker host' % h)
            self.aggs = [h for h in self.aggs if h not in self.shard_hosts]

    def _load_worker_program(self):
        """worker_program "c" (mlf-worker, the default) or "torch" (examples/torch_fashion_mnist.py
        under /usr/bin/python3, or $MLF_PYTHON); system gloo needs torch, rr-sync needs c.
        worker_command [argv] (the user's own program, worker_program "command"): run on every
        worker with the MLF_* variables (runner.py worker_env), the fabric's systems only."""
        x = self.raw
        wp = x.get("worker_program", "c")
        self.worker_program = wp if isinstance(wp, str) else num_str(wp)
        self.worker_command = None
        if x.get("worker_command") is not None:
            wc = x["worker_command"]
            if not (isinstance(wc, list) and wc and all(isinstance(a, str) and a for a in wc)):
                self.err("worker_command: a non-empty list of strings (argv) expected, got %s" % json.dumps(wc))
            if "worker_program" in x:
                self.err("worker_command: replaces worker_program (drop one of them)")
            self.worker_command, self.worker_program = list(wc), "command"
            for sys_ in self.systems:
                if sys_ not in ("mlfabric-a", "mlfabric-s", "async"):
                    self.err("worker_command: system %s runs its own workers; the user's program runs "
                             "under mlfabric-a, mlfabric-s or async" % sys_)
            for k in ("model", "replication", "faults"):
                if x.get(k):
                    self.err("%s: not supported with worker_command" % k)
        elif self.worker_program not in WORKER_PROGRAMS:
            self.err('worker_program: unknown "%s" (c, torch)' % self.worker_program)
        self.python = os.environ.get("MLF_PYTHON") or "/usr/bin/python3"
        self.torch_script = os.path.join(self.root, TORCH_SCRIPT)
        self.pythonpath = os.environ.get("MLF_PYTHONPATH", os.path.join(self.build, "python"))
        torch = self.worker_program == "torch"
        if "gloo" in self.systems and not torch:
            self.err('system gloo (torch.distributed) needs "worker_program": "torch"')
        if torch:
            if "rr-sync" in self.systems:
                self.err('worker_program torch: system rr-sync runs the C workload (mlf-rrsync); '
                         'the PyTorch baseline is system gloo')
            for sys_ in ("esync", "local-sgd", "adsp", "hop"):
                if sys_ in self.systems:
                    self.err("worker_program torch: system %s trains locally between synchronisations, "
                             "which only mlf-worker does (worker_program c)" % sys_)
            if "model" in x:
                self.err("model: not used with worker_program torch (the example's CNN is fixed)")
            for k in ("replication", "faults"):
                if x.get(k):
                    self.err("%s: not supported with worker_program torch" % k)

    def _load_cluster(self):
        x = self.raw
        c = num_str(x["cluster"])
        path = c
        if not c.startswith("/") and not os.access(c, os.R_OK):
            path = os.path.join(self.root, c)
        if not os.access(path, os.R_OK):
            self.err("cluster: cannot read %s" % c)
        try:
            cl = validate.cluster(path, path, x, self.path)  # docs/cluster-config.md
        except validate.ConfigError as e:
            raise ExperimentError(str(e))
        if (not isinstance(cl, dict) or not cl.get("name") or not isinstance(cl.get("hosts"), list)
                or not cl["hosts"]):
            raise ExperimentError('%s: a cluster config with "name" and "hosts" expected' % path)
        self.cluster = path
        self.cname = num_str(cl["name"])
        # the cluster secret (docs/security.md): relative to the config's directory
        kf = cl.get("key_file")
        self.key_file = (kf if kf.startswith("/") else os.path.join(os.path.dirname(path), kf)) \
            if isinstance(kf, str) and kf else ""
        # keys by default (docs/security.md "Keys by default"): an unkeyed cluster says so
        self.insecure = cl.get("insecure") is True
        if not self.key_file and not self.insecure:
            self.err('cluster %s has no key_file: add "key_file": "%s.key" (made by the first run) or '
                     'opt out with "insecure": true (docs/security.md "Keys by default")'
                     % (path, num_str(cl["name"])))
        self.hosts = [h["name"] for h in cl["hosts"]]
        # Hop's graph (docs/cluster-config.md "graph"), the default of hop_graph
        self.cluster_graph = cl.get("graph")
        self.ips = {h["name"]: num_str(h.get("ip") or "") for h in cl["hosts"]}

        def role(r):
            return [h["name"] for h in cl["hosts"] if r in (h.get("roles") or [])]
        self.cluster_roles = role
        self.server = (role("server") or [""])[0]
        self.sched = (role("scheduler") or [""])[0]
        workers, aggs = role("worker"), role("aggregator")
        if "workers" in x:
            workers = num_str(x["workers"]).split(",") if x["workers"] else []
        if "aggregators" in x:
            aggs = num_str(x["aggregators"]).split(",") if x["aggregators"] else []
        for h in workers + aggs:
            if h not in self.hosts:
                self.err('host "%s" is not in cluster %s' % (h, path))
        self.aggs = [h for h in aggs if h != self.server]
        self.workers = workers
        if not workers:
            raise ExperimentError("%s: no host with role worker" % path)
        self.nw = len(workers)

    def _check_programs(self, check):
        def need(p):
            if check and not os.access(p, os.X_OK):
                raise ExperimentError("missing program %s (run make first)" % p)
        need(self.tb)
        kinds = set(self.systems)
        torch = self.worker_program in ("torch", "command")
        if kinds & (SCHEDULED | {"async"}):
            if not self.server:
                raise ExperimentError("%s: no host with role server" % self.cluster)
            for k in ["mlf-dataplane", "mlf-tel", "mlf-ps"] + ([] if torch else ["mlf-worker"]):
                need(os.path.join(self.build, k))
            if self.worker_program == "torch" and check and \
                    not os.path.isfile(os.path.join(self.pythonpath, "mlfabric", "__init__.py")):
                raise ExperimentError("missing Python package %s/mlfabric (run make first)" % self.pythonpath)
        if self.worker_program == "torch":
            need(self.python)
            if check and not os.path.isfile(self.torch_script):
                raise ExperimentError("missing %s" % self.torch_script)
        if "gloo" in kinds and not self.ips.get(self.workers[0]):
            raise ExperimentError('%s: host "%s" has no "ip" (the gloo master)' % (self.cluster, self.workers[0]))
        if kinds & SCHEDULED:
            if not self.sched:
                raise ExperimentError("%s: no host with role scheduler" % self.cluster)
            need(os.path.join(self.build, "mlf-scheduler"))
            if self.aggs:
                need(os.path.join(self.build, "mlf-aggregator"))
        if "rr-sync" in kinds:
            need(os.path.join(self.build, "mlf-rrsync"))
            need(self.mpirun)
            if check and not os.environ.get("MLF_MPIRUN") and not shutil.which("mpirun"):
                raise ExperimentError("missing program mpirun (Debian package openmpi-bin)")
        if check and not shutil.which("gnuplot"):
            raise ExperimentError("missing program gnuplot (Debian package gnuplot-nox)")

    def _load_replication(self):
        self.repl_mode, self.div_max, self.replica = "none", 0, ""
        self.repl_aggs, self.ckpt_every, self.verify_every = [], 0, 0
        if "replication" not in self.raw:
            return
        r = self.raw["replication"]
        pre = "replication: "
        if not isinstance(r, dict):
            self.err(pre + "an object expected")
        for k in r:
            if k not in REPL_KEYS:
                self.err(pre + 'unknown key "%s" (%s)' % (k, ", ".join(REPL_KEYS)))
        self.repl_mode = num_str(r.get("mode") or "none")
        if self.repl_mode not in REPL_MODES:
            self.err(pre + 'mode: unknown "%s" (none, mlfabric, chain, checkpoint)' % self.repl_mode)
        if "div_max" in r:
            if not is_num(r["div_max"]) or r["div_max"] < 0:
                self.err(pre + "div_max: a number >= 0 expected")
            self.div_max = r["div_max"]
        for k in ["checkpoint_every", "verify_every"]:
            if k in r and (not is_num(r[k]) or r[k] < 0 or r[k] != int(r[k])):
                self.err(pre + "%s: an integer >= 0 expected" % k)
        self.ckpt_every = int(r.get("checkpoint_every") or 0)
        self.verify_every = int(r.get("verify_every") or 0)
        m = self.repl_mode
        for s in self.systems:
            okay = (m == "none" or (m in ("mlfabric", "chain") and s.startswith("mlfabric-"))
                    or (m == "checkpoint" and (s.startswith("mlfabric-") or s == "async")))
            if not okay:
                self.err("replication mode %s does not apply to system %s (mlfabric and chain need the "
                         "scheduler: mlfabric-a, mlfabric-s; checkpoint needs mlf-ps)" % (m, s))
        if m in ("mlfabric", "chain"):
            rep = num_str(r.get("replica") or "") or (self.cluster_roles("replica") or [""])[0]
            if not rep:
                self.err(pre + 'no replica host (give "replica" or a host with role replica in %s)'
                         % self.cluster)
            if rep not in self.hosts:
                self.err(pre + 'replica "%s" is not in cluster %s' % (rep, self.cluster))
            if rep == self.server:
                self.err(pre + 'replica "%s" is the server host' % rep)
            if rep in self.workers:
                self.err(pre + 'replica "%s" is a worker host' % rep)
            self.replica = rep
            if "replica_aggregators" in r:
                ra = r["replica_aggregators"]
                if not isinstance(ra, list) or not all(isinstance(h, str) for h in ra):
                    self.err(pre + "replica_aggregators: an array of host names expected")
                for h in ra:
                    if h not in self.hosts:
                        self.err(pre + 'replica aggregator "%s" is not in cluster %s' % (h, self.cluster))
                self.repl_aggs = [h for h in ra if h]
        elif m == "checkpoint" and self.ckpt_every <= 0:
            self.err(pre + "mode checkpoint needs checkpoint_every > 0")
        if self.verify_every and not self.replica:
            self.err(pre + "verify_every needs a replica (mode mlfabric or chain)")
        if m != "checkpoint" and self.ckpt_every:
            self.err(pre + "checkpoint_every needs mode checkpoint")

    def _load_momentum_at(self):
        """momentum_at: where eq. 2's momentum is applied (docs/replication.md). "server" (the
        default without mlfabric replication): mlf-ps applies each update or aggregate as one
        momentum step. "worker" (the default with mlfabric replication): each mlf-worker keeps its
        own h = gamma h + u and pushes h, the servers add updates as they are (--momentum 0), so
        a replica that receives the same updates aggregated differently applies the same sum."""
        v = self.raw.get("momentum_at")
        if v is not None and v not in MOMENTUM_AT:
            self.err('momentum_at: "server" or "worker" expected, got %s' % json.dumps(v))
        self.momentum_at = v or ("worker" if self.repl_mode == "mlfabric" and self.worker_program == "c"
                                 else "server")
        if (self.momentum_at == "server" and self.repl_mode == "mlfabric" and float(self.s["momentum"]) > 0):
            self.err('momentum_at: "server" with replication mode mlfabric and momentum %s: the replica '
                     'groups updates into momentum steps unlike the server and drifts (use "worker", the '
                     'default, or momentum 0)' % self.s["momentum"])
        if self.momentum_at == "worker" and self.worker_program != "c":
            self.err('momentum_at: "worker" needs worker_program "c" (mlf-worker --momentum)')

    def _load_scheduler_args(self):
        """scheduler_args: extra mlf-scheduler options (docs/scheduler.md), a list of strings,
        e.g. ["--sync-batching", "all"] or ["--distributors", "0"]; appended to its command line."""
        a = self.raw.get("scheduler_args")
        if a is None:
            self.scheduler_args = []
            return
        if not isinstance(a, list) or not all(isinstance(v, str) and v and "\n" not in v for v in a):
            self.err("scheduler_args: must be a list of non-empty strings (mlf-scheduler options)")
        if not a[0].startswith("--"):
            self.err('scheduler_args: must start with an option ("--name"), not "%s"' % a[0])
        self.scheduler_args = list(a)

    def _load_faults(self):
        self.faults = []
        if "faults" not in self.raw:
            return
        fl = self.raw["faults"]
        if not isinstance(fl, list):
            self.err("faults: an array expected")
        if not fl:
            return
        if "rr-sync" in self.systems:
            self.err("faults do not apply to system rr-sync")
        for i, f in enumerate(fl):
            pre = "faults[%d]: " % i
            if not isinstance(f, dict):
                self.err(pre + "an object expected")
            for k in f:
                if k not in FAULT_KEYS:
                    self.err(pre + 'unknown key "%s" (%s)' % (k, ", ".join(FAULT_KEYS)))
            kind = num_str(f.get("kind") or "")
            if kind not in FAULT_KINDS:
                self.err(pre + 'kind: "%s" unknown (%s)' % (kind, ", ".join(FAULT_KINDS)))
            if not is_num(f.get("at_s")) or f["at_s"] < 0:
                self.err(pre + "at_s: a number >= 0 expected")
            host = num_str(f.get("host") or "")
            if not host:
                if kind not in ("kill-server", "kill-scheduler"):
                    self.err(pre + '%s needs "host"' % kind)
                host = self.sched if kind == "kill-scheduler" else self.server
            if host not in self.hosts:
                self.err(pre + 'host "%s" is not in cluster %s' % (host, self.cluster))
            if kind == "kill-server" and host not in (self.server, self.replica):
                self.err(pre + 'kill-server: host "%s" runs no mlf-ps (server %s%s)'
                         % (host, self.server, ", replica " + self.replica if self.replica else ""))
            if kind == "kill-aggregator":
                if "async" in self.systems:
                    self.err(pre + "kill-aggregator does not apply to system async")
                if host not in self.aggs:
                    self.err(pre + 'kill-aggregator: "%s" is not an aggregator (%s)'
                             % (host, " ".join(self.aggs) or "none"))
            if kind == "kill-scheduler":
                if any(s != "mlfabric-a" for s in self.systems):
                    self.err(pre + "kill-scheduler applies to system mlfabric-a only (its restart rebuilds "
                             "MLfabric-A's state; docs/scheduler.md \"Restart\")")
                if host != self.sched:
                    self.err(pre + 'kill-scheduler: "%s" is not the scheduler host (%s)' % (host, self.sched))
                if self.repl_mode == "chain":
                    self.err(pre + "kill-scheduler with replication mode chain: a restarted scheduler does "
                             "not rebuild the chain's forwarding (not built; mlfabric replication is)")
            if "restart_s" in f and (kind not in ("kill-worker", "kill-aggregator") or not is_num(f["restart_s"])
                                     or f["restart_s"] <= 0):
                self.err(pre + "restart_s: a number > 0, for kill-worker and kill-aggregator only")
            if "new_replica_s" in f and (kind != "kill-server" or self.repl_mode != "mlfabric"
                                         or not is_num(f["new_replica_s"]) or f["new_replica_s"] <= 0):
                self.err(pre + "new_replica_s: a number > 0, for kill-server with mlfabric replication only")
            if kind == "kill-worker" and host not in self.workers:
                self.err(pre + 'kill-worker: "%s" is not a worker' % host)
            if kind in ("cut-link", "loss-burst") and (not is_num(f.get("duration_s")) or f["duration_s"] <= 0):
                self.err(pre + "%s needs duration_s > 0" % kind)
            if kind == "loss-burst" and (not is_num(f.get("loss")) or not 0 < f["loss"] <= 1):
                self.err(pre + "loss-burst needs loss in (0, 1]")
            dur = f.get("duration_s") or 0
            loss = f.get("loss") or 0
            self.faults.append(Fault(0, f["at_s"], kind, host, dur, loss, f))
        # sorted by at_s (stable: faults at the same time keep the file's order), then numbered 1, 2, ...
        # in that order; the number orders the start and end events of faults at the same instant
        self.faults.sort(key=lambda f: f.at)
        for n, f in enumerate(self.faults):
            f.index = n + 1

    def summary_line(self):
        return ("%s ok: systems %s on %s (%d %s workers, server %s, aggregators %s); momentum %s at the %s; "
                "replication %s%s; %d fault(s)"
                % (self.path, ",".join(self.systems), self.cluster, self.nw, self.worker_program, self.server,
                   " ".join(self.aggs) or "none", self.s["momentum"], self.momentum_at + "s", self.repl_mode,
                   " (replica %s, div_max %s)" % (self.replica, num_str(self.div_max)) if self.replica else "",
                   len(self.faults)))
