"""One run: every system of the experiment in turn, from mlf-testbed up to teardown, then
results.json, the plots and the summary table (docs/experiments.md "What a run does")."""
import json
import os
import signal
import subprocess
import sys
import time

from . import cpu, launcher, plots, results
from .experiment import GLOO_PORT, num_str
from .faults import FaultDriver, killed_pids
from .network import NetDriver, apply_period, read_schedule, rate_schedule, schedule_lines
from .procs import NotReady, Procs, last_line, log_has, stop, wait_ready
from .records import RecordError, count_records, first_planned_after_kills, read_json, read_jsonl

# readiness timeouts (s): how long each process may take to show it is ready
READY_SCHED_S = 15      # scheduler.log: "listening on"
READY_SOCK_S = 5        # /run/mlfabric/<cluster>-<host>.sock (mlf-testbed dataplane waits for it too)
READY_WELCOME_S = 15    # dp-<host>.log: "welcome" (the scheduler registered the host's dataplane)
READY_AGG_S = 15        # aggregator-<host>.log: "registered as aggregator@<host>"
READY_SERVER_S = 60     # ps.log: "serving" / replica.log: "replica of" (model built, registered)
READY_WORKER_S = 60     # worker-<host>.log: "worker of" (the worker registered), counted from t0
# worker_program torch: mlf-ps --init-from logs this before it waits for the root worker's model
WAITING_MODEL = "waiting for the initial model from"
PROGRESS_S = 2
NETDEV_S = 0.25         # the switch's byte counters are sampled this often (netdev.jsonl)
NETDEV = os.path.join(os.path.dirname(os.path.abspath(__file__)), "netdev.py")
TICK_S = 0.25
OK_REASONS = ("target", "time_limit", "rr-sync_exited", "all workers exited")


def last_lines(path, n=3):
    """The last N non-empty lines of a log joined with ' | ', or '(empty log PATH)' when there
    are none, so a process that exits at start is never reported with an empty reason."""
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - 8192))
            lines = [l.strip() for l in f.read().decode("utf-8", "replace").splitlines() if l.strip()]
    except OSError as x:
        return "(no log %s: %s)" % (path, x.strerror)
    return " | ".join(lines[-n:]) if lines else "(empty log %s)" % path


def log_count(path, text):
    """How often TEXT occurs in the log PATH (0 when unreadable)."""
    try:
        with open(path, "rb") as f:
            return f.read().count(text.encode())
    except OSError:
        return 0

class Interrupted(Exception):
    pass


class Runner:
    def __init__(self, exp, run):
        self.exp, self.run = exp, run
        self.tb = launcher.make(exp, run)   # local testbed, ssh or slurm (docs/deploy.md "Launch")
        self.runlog = os.path.join(run, "run.log")
        self.teardown_ok = True
        self.cur = None          # the current system's state (a dict) until its teardown
        self.interrupted = False

    # ---- output ----
    def log(self, msg):
        line = "[%s] %s" % (time.strftime("%H:%M:%S", time.gmtime()), msg)
        print(line, flush=True)
        with open(self.runlog, "a") as f:
            f.write(line + "\n")

    # ---- signals ----
    def on_signal(self, signum, frame):
        if self.interrupted:
            return
        self.interrupted = True
        raise Interrupted()

    # ---- run.json ----
    def set_run_json(self, **kv):
        c = self.cur
        c["runjson"].update(kv)
        path = os.path.join(c["sysdir"], "run.json")
        with open(path + ".tmp", "w") as f:
            json.dump(c["runjson"], f, indent=2)
            f.write("\n")
        os.replace(path + ".tmp", path)

    # ---- the whole run ----
    def main(self):
        e = self.exp
        os.makedirs(self.run, exist_ok=True)
        open(self.runlog, "w").close()
        raw = dict(e.raw, systems=e.systems)
        with open(os.path.join(self.run, "experiment.json"), "w") as f:
            json.dump(raw, f, indent=2)
            f.write("\n")
        kmax = int(float(e.time_limit_s) / float(e.period_s) + 2)
        with open(os.path.join(self.run, "network.tsv"), "w") as f:
            f.write(schedule_lines(rate_schedule(e, kmax)))
        self.rows = read_schedule(os.path.join(self.run, "network.tsv"))
        signal.signal(signal.SIGINT, self.on_signal)
        signal.signal(signal.SIGTERM, self.on_signal)
        failed = []
        try:
            self.log("experiment %s: systems %s, %s-%s (straggle %s), rate_scale %s, target %s within %ss; run folder %s"
                     % (e.name, ",".join(e.systems), e.compute, e.network, e.straggle, e.s["rate_scale"],
                        e.s["target_accuracy"], e.s["time_limit_s"], self.run))
            for s in e.systems:
                if not self.run_system(s):
                    failed.append(s)
        except Interrupted:
            self.interrupted = True
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            self.log("interrupted: tearing down")
            self.teardown()
            try:
                res = results.compute(self.run, e.target_accuracy)
                results.write(self.run, res)
                plots.plots(self.run)
            except Exception:
                pass
            return 130
        finally:
            self.teardown()  # a crash of the runner: nothing is left behind
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        res = results.compute(self.run, e.target_accuracy)
        results.write(self.run, res)
        plots.plots(self.run)
        table = results.summary(res)
        sys.stdout.write(table)
        sys.stdout.flush()
        with open(self.runlog, "a") as f:
            f.write(table)
        self.log("run folder: %s" % self.run)
        if failed:
            self.log("failed: %s" % " ".join(failed))
            return 1
        return 0 if self.teardown_ok else 1

    # ---- one system ----
    def start(self, name, log, host, argv, env=None):
        return self.tb.start(self.cur["procs"], name, log, host, argv, env)

    def worker_env(self, i, mode, rec):
        """The MLF_* variables of worker I (docs/python.md "Environment"): what mlfabric.init()
        reads; MLF_RECORDS is the worker's records folder."""
        e = self.exp
        h = e.workers[i]
        env = {"MLF_CLUSTER": e.cluster, "MLF_HOST": h, "MLF_ROLE": "worker", "MLF_SERVER": e.server,
               "MLF_SERVERS": e.server, "MLF_MODE": mode, "MLF_RANK": str(i), "MLF_SIZE": str(e.nw),
               "MLF_LOCAL_RANK": "0", "MLF_WORKERS": ",".join(e.workers), "MLF_RECORDS": os.path.join(rec, h),
               "MLF_SEED": str(int(e.seed) * 1000 + i + 1)}
        if e.pythonpath:
            env["PYTHONPATH"] = e.pythonpath
        return env

    def torch_workers(self, sys_, mode, rec, L):
        """worker_program torch: examples/torch_fashion_mnist.py on every worker host, over the
        fabric (MODE) or, for system gloo, with torch.distributed (master: the first worker's IP);
        worker_command: the user's argv with the MLF_* variables (worker_env)."""
        e = self.exp
        if e.worker_command:
            started = []
            for i, h in enumerate(e.workers):
                os.makedirs(os.path.join(rec, h), exist_ok=True)
                started.append(self.start("worker@" + h, L("worker-%s.log" % h), h, e.worker_command,
                                          self.worker_env(i, mode, rec)))
            self.cur["t_workers"] = time.time()
            return started
        started = []
        for i, h in enumerate(e.workers):
            os.makedirs(os.path.join(rec, h), exist_ok=True)
            # over the fabric the example is a plain user script: the MLF_* variables say where it runs
            env = dict(self.worker_env(i, mode, rec), GLOO_SOCKET_IFNAME="eth0")
            if sys_ == "gloo":
                how = ["--backend", "gloo", "--rank", str(i), "--world", str(e.nw), "--master-addr",
                       e.ips[e.workers[0]], "--master-port", str(GLOO_PORT), "--lr", e.s["lr_sync"],
                       "--momentum", e.s["momentum"]]
            else:
                how = ["--lr", e.s["lr"]]
            started.append(self.start("worker@" + h, L("worker-%s.log" % h), h,
                                      [e.python, e.torch_script] + how +
                                      ["--batch", e.s["batch"], "--straggle", e.straggle, "--compute-s", e.s["compute_s"],
                                       "--seed", str(int(e.seed) * 1000 + i + 1), "--records", os.path.join(rec, h),
                                       "--eval-every", e.s["eval_every_s"], "--eval-images", e.s["eval_images"]], env))
        self.cur["t_workers"] = time.time()
        return started

    def run_system(self, sys_):
        e = self.exp
        sysdir = os.path.join(self.run, sys_)
        logs, rec = os.path.join(sysdir, "logs"), os.path.join(sysdir, "records")
        os.makedirs(logs, exist_ok=True)
        os.makedirs(rec, exist_ok=True)
        procs = Procs(sysdir)
        self.cur = c = {"sys": sys_, "sysdir": sysdir, "procs": procs, "runjson": {}, "drivers": [],
                        "argv": {}, "pending": [], "down": set()}
        open(os.path.join(sysdir, "pids.tsv"), "w").close()
        # ssp, asp: MLfabric-A's scheduler and servers with its (adaptive) stale-synchronous gate
        # esync: MLfabric-S's scheduler and servers; its workers train locally between rounds
        # local-sgd: MLfabric-S's with a fixed number of local iterations per round
        # adsp: MLfabric-A's; the scheduler sends commit rates, the workers never wait
        # hop: no scheduler and no server, the workers exchange parameters with their neighbours
        mode = (sys_ if sys_ in ("mlfabric-a", "mlfabric-s") else "mlfabric-a" if sys_ in ("ssp", "asp", "adsp")
                else "mlfabric-s" if sys_ in ("esync", "local-sgd") else "async")
        if e.insecure:
            self.log('%s: WARN: cluster %s says "insecure": true: no key, anybody who reaches its '
                     'network can take its control plane and forge its frames (docs/security.md)'
                     % (sys_, e.cname))
        if e.key_file and not os.path.exists(e.key_file):
            # a fresh checkout: the cluster's secret is made here, once (docs/security.md)
            r = subprocess.run([os.path.join(e.root, "tools", "mlf-keygen"), e.key_file], capture_output=True, text=True)
            self.log("%s: %s" % (sys_, (r.stdout or r.stderr).strip()))
        for s_, k, v, src in e.applied:
            if s_ == sys_:
                self.log("%s: default %s = %s (%s)" % (s_, k, v, src))
        self.log("%s: building cluster %s (%s)" % (sys_, e.cname, e.cluster))
        if not self.tb.up(os.path.join(logs, "testbed.log")):
            self.log("%s: mlf-testbed up failed: %s" % (sys_, last_line(os.path.join(logs, "testbed.log"))))
            self.teardown()
            return False
        declare = sys_ not in ("rr-sync", "gloo")   # no dataplane to declare capacities to
        self.start_netdev(c)
        torch = e.worker_program in ("torch", "command")
        with open(os.path.join(logs, "network.log"), "w") as out:
            apply_period(self.tb, self.rows, 0, False, out)
        self.set_run_json(system=sys_, n_workers=e.nw, server=e.server, workers=e.workers,
                          worker_program=e.worker_program, momentum_at=e.momentum_at,
                          defaults={k: v for s_, k, v, _ in e.applied if s_ == sys_},
                          replication={"mode": e.repl_mode, "div_max": e.div_max, "replica": e.replica or None,
                                       "checkpoint_every": e.ckpt_every, "verify_every": e.verify_every,
                                       "replica_aggregators": e.repl_aggs})
        b = lambda p: os.path.join(e.build, p)
        S = e.settings(sys_)  # the experiment's settings with the system's paper defaults
        # the parameter server's flags, shared by the server, the replica and a restarted server
        # momentum_at worker: the workers apply eq. 2's momentum, the servers add updates as they are
        ps_mom = "0" if e.momentum_at == "worker" else e.s["momentum"]
        ps_common = ["--cluster", e.cluster, "--mode", mode, "--workers", str(e.nw), "--model", e.s["model"],
                     "--momentum", ps_mom, "--tau-max", e.s["tau_max"], "--eval-every", e.s["eval_every_s"],
                     "--eval-images", e.s["eval_images"], "--seed", e.s["seed"]]
        if e.init_weights:
            ps_common += ["--init-weights", e.init_weights]
        ps_extra, verify, sched_extra = [], [], []
        if torch:
            # the model is the root worker's (broadcast_parameters): an opaque vector, no evaluation
            ps_common = ["--cluster", e.cluster, "--mode", mode, "--workers", str(e.nw), "--momentum", e.s["momentum"],
                         "--tau-max", e.s["tau_max"], "--seed", e.s["seed"]]
            ps_extra = ["--init-from", e.workers[0]]
        if e.verify_every > 0:
            os.makedirs(os.path.join(rec, "verify"), exist_ok=True)
            verify = ["--verify", os.path.join(rec, "verify")]
            sched_extra += ["--verify-every", str(e.verify_every)]
        if e.repl_aggs:
            sched_extra += ["--replica-aggregators", ",".join(e.repl_aggs)]
        if e.capacity == "measured":   # the scheduler plans with what it measures (docs/experiments.md)
            sched_extra += ["--capacity", "measured"]
        if sys_ in ("ssp", "asp"):
            sched_extra += ["--ssp", e.s["ssp_s"]]
        if sys_ == "asp":
            sched_extra += ["--asp", "--asp-weak", e.s["asp_w"]]
        if sys_ == "adsp":
            sched_extra += ["--adsp", e.s["adsp_period_s"], "--adsp-eval", e.s["adsp_eval_s"]]
            if e.s["adsp_rate"] is not None:
                sched_extra += ["--adsp-rate", e.s["adsp_rate"]]
        if e.repl_mode == "checkpoint":
            os.makedirs(os.path.join(sysdir, "checkpoint"), exist_ok=True)
            ps_extra = ["--checkpoint-every", str(e.ckpt_every), "--checkpoint-dir", os.path.join(sysdir, "checkpoint")]
        c.update(ps_common=ps_common, ps_extra=ps_extra, verify=verify)
        L = lambda n: os.path.join(logs, n)
        try:
            if sys_ == "gloo":
                self.torch_workers(sys_, mode, rec, L)
            elif sys_ != "rr-sync":
                if mode != "async":
                    c["sched_argv"] = ([b("mlf-scheduler"), "--cluster", e.cluster, "--batch-ms", e.s["batch_ms"],
                                        "--t-lag", e.s["t_lag"], "--records", rec]
                                       + (["--aggregators", ",".join(e.aggs)] if e.aggs else []) + sched_extra
                                       + e.scheduler_args)
                    p = self.start("scheduler@" + e.sched, L("scheduler.log"), e.sched, c["sched_argv"])
                    wait_ready("scheduler@%s (no 'listening on' in scheduler.log)" % e.sched,
                               log_has(p.log, "listening on"), READY_SCHED_S, [p])
                dpargs = ["--scheduler", "none"] if mode == "async" else []
                for h in e.hosts:
                    pid = self.tb.dataplane(h, L("dp-%s.log" % h), L("dp-%s.pid" % h), L("dp-%s.start" % h), dpargs)
                    if pid is None:
                        first = ""
                        try:
                            with open(L("dp-%s.start" % h)) as f:
                                first = f.readline().rstrip("\n")
                        except OSError:
                            pass
                        self.log("%s: dataplane of %s did not start: %s" % (sys_, h, first))
                        self.teardown()
                        return False
                    dp = self.tb.adopt(procs, "dataplane@" + h, pid, L("dp-%s.log" % h))
                    wait_ready("dataplane@%s (no socket %s)" % (h, self.tb.socket(h)), self.tb.socket_ready(h),
                               READY_SOCK_S, [dp])
                # period 0 declared now that the dataplanes run
                if declare:
                    with open(L("network.log"), "a") as out:
                        apply_period(self.tb, self.rows, 0, True, out, capacity=e.capacity == "declared")
                if mode != "async":
                    for dp in procs.matching("dataplane@*"):
                        wait_ready("%s (no 'welcome' from the scheduler in %s)" % (dp.name, os.path.basename(dp.log)),
                                   log_has(dp.log, "welcome"), READY_WELCOME_S, [dp])
                    for h in e.aggs:
                        c["argv"]["aggregator@" + h] = (h, [b("mlf-aggregator"), "--cluster", e.cluster, "--host", h])
                    aggs = [self.start(n, L("aggregator-%s.log" % n[len("aggregator@"):]), *c["argv"][n])
                            for n in ["aggregator@" + h for h in e.aggs]]
                    for a in aggs:
                        h = a.name.split("@", 1)[1]
                        wait_ready("%s (no 'registered as aggregator@%s' in %s)" % (a.name, h, os.path.basename(a.log)),
                                   log_has(a.log, "registered as aggregator@" + h), READY_AGG_S, [a])
                sharded = sys_ in ("mlfabric-a", "mlfabric-s") and e.shards > 1
                for k, h in enumerate(e.shard_hosts[1:] if sharded else [], 1):
                    # shard servers 1..S-1 (§10.2); shard 0 is the server below
                    srec = os.path.join(rec, "shard-%d" % k)
                    os.makedirs(srec, exist_ok=True)
                    q = self.start("server@" + h, L("ps-shard%d.log" % k), h,
                                   [b("mlf-ps")] + ps_common + ["--host", h, "--records", srec,
                                                                "--shard", "%d/%d" % (k, e.shards)])
                    wait_ready("server@%s (no 'serving' in %s)" % (h, os.path.basename(q.log)),
                               log_has(q.log, "serving"), READY_SERVER_S, [q])
                if sharded:
                    ps_extra = ps_extra + ["--shard", "0/%d" % e.shards]
                if sys_ != "hop":  # Hop is decentralized: no server; w0 evaluates its model
                    p = self.start("server@" + e.server, L("ps.log"), e.server,
                                   [b("mlf-ps")] + ps_common + ["--host", e.server, "--records", rec] + verify + ps_extra)
                    ready_word = WAITING_MODEL if torch else "serving"
                    wait_ready("server@%s (no '%s' in ps.log)" % (e.server, ready_word), log_has(p.log, ready_word),
                               READY_SERVER_S, [p])
                if e.replica:
                    os.makedirs(os.path.join(rec, "replica"), exist_ok=True)
                    p = self.start("replica@" + e.replica, L("replica.log"), e.replica,
                                   [b("mlf-ps")] + ps_common + ["--host", e.replica, "--records", os.path.join(rec, "replica"),
                                    "--replica", "--server", e.server, "--div-max", num_str(e.div_max),
                                    "--replication", e.repl_mode] + verify)
                    wait_ready("replica@%s (no 'replica of' in replica.log)" % e.replica, log_has(p.log, "replica of"),
                               READY_SERVER_S, [p])
                for p in procs.matching("*"):
                    if not p.alive():
                        raise NotReady("%s exited at start: %s" % (p.name, last_lines(p.log)))
                if torch:
                    # the root worker sends the initial model; then the server registers ("serving")
                    ws = self.torch_workers(sys_, mode, rec, L)
                    wait_ready("server@%s (no 'serving' in ps.log %d s after the workers started)"
                               % (e.server, READY_SERVER_S), log_has(p.log, "serving"), READY_SERVER_S, [p] + ws)
                for i, h in enumerate([] if torch else e.workers):
                    os.makedirs(os.path.join(rec, h), exist_ok=True)
                    c["argv"]["worker@" + h] = (h,
                               [b("mlf-worker"), "--cluster", e.cluster, "--host", h, "--server", e.server,
                                "--system", sys_, "--shard", "%d/%d" % (i, e.nw), "--model", e.s["model"],
                                "--batch", e.s["batch"], "--lr", e.s["lr"], "--straggle", e.straggle,
                                "--compute-s", e.s["compute_s"], "--seed", str(int(e.seed) * 1000 + i + 1),
                                "--records", os.path.join(rec, h)] +
                               (["--momentum", e.s["momentum"] if e.momentum_at == "worker" else "0"]
                                if sys_ in ("mlfabric-a", "mlfabric-s", "async", "ssp", "asp") else []) +
                               (["--speed", "%s@%s" % (e.speeds[i], e.s["speeds_at_s"])] if e.speeds else []) +
                               (["--esync-workers", str(e.nw)] if sys_ == "esync" else []) +
                               (["--local-workers", str(e.nw), "--local-steps", e.s["local_steps"]]
                                if sys_ == "local-sgd" else []) +
                               (["--global-lr", S["adsp_global_lr"]]
                                if sys_ == "adsp" and S["adsp_global_lr"] is not None else []) +
                               (["--shard-by-label"] if e.data_split == "by-label" else []) +
                               (["--global-lr", S["esync_global_lr"]]
                                if sys_ == "esync" and S["esync_global_lr"] is not None else []) +
                               (["--esync-nonblocking"] if sys_ == "esync" and e.esync_nb else []) +
                               (["--overlap"] if sys_ in ("mlfabric-a", "async") and e.overlap else []) +
                               (["--eval-every", e.s["eval_every_s"], "--eval-images", e.s["eval_images"]]
                                if (sharded or sys_ == "hop") and i == 0 else []) +
                               (e.hop_args(h) if sys_ == "hop" else []))
                    self.start("worker@" + h, L("worker-%s.log" % h), *c["argv"]["worker@" + h])
            else:
                procs.start("mpirun", L("rrsync.log"),
                            [e.mpirun, e.cluster, ",".join(e.workers), "--", b("mlf-rrsync"),
                             "--model", e.s["model"], "--batch", e.s["batch"], "--lr", e.s["lr_sync"],
                             "--momentum", e.s["momentum"], "--straggle", e.straggle, "--compute-s", e.s["compute_s"],
                             "--eval-every", e.s["eval_every_s"], "--eval-images", e.s["eval_images"],
                             "--records", rec, "--time-limit", e.s["time_limit_s"],
                             "--target-accuracy", e.s["target_accuracy"], "--seed", e.s["seed"]] +
                            (["--init-weights", e.init_weights] if e.init_weights else []) +
                            # deterministic stragglers: rank i runs on workers[i] (mlf-mpirun)
                            (["--speeds", ",".join(e.speeds), "--speeds-at", e.s["speeds_at_s"]] if e.speeds else []))
        except NotReady as x:
            self.log("%s: %s" % (sys_, x))
            self.teardown()
            return False
        procs.write_pids()
        t0 = c.get("t_workers") or time.time()   # torch: the workers started before the server served
        self.set_run_json(t0=t0)
        self.cpu_sample(c)
        nd = NetDriver(self.tb, self.rows, e.period_s, t0, declare, L("network.log"),
                       capacity=e.capacity == "declared")
        c["drivers"].append(nd)
        nd.start()
        if e.faults:
            fd = FaultDriver(e.faults, sysdir, procs, self.tb, t0, L("faults.log"), c["pending"])
            c["drivers"].append(fd)
            fd.start()
        reason, dead, restarts = self.watch(sys_, c, t0, rec, logs)
        self.cpu_sample(c)
        self.log("%s: stopping (%s)" % (sys_, reason))
        self.stop_drivers()  # no shaping or declaration after t_end
        self.set_run_json(t_end=time.time(), stop_reason=reason, dead_workers=dead, restarts=restarts,
                          cpu=cpu.usage(c["cpu"][0], cpu.last_known(c["cpu"])) if c.get("cpu") else None)
        self.teardown()
        return reason in OK_REASONS

    def watch(self, sys_, c, t0, rec, logs):
        """Every 0.25 s: processes that died (a fault's kill, a crash; the checkpoint supervisor
        restarts a killed server at once), workers that never became ready; every 2 s: a progress
        line, the target, the time limit. Returns (reason, dead workers, restarts)."""
        e, procs = self.exp, c["procs"]
        reason, dead, restarts, failed_over, cur = "", [], 0, False, rec
        sched_restarts = 0
        ready = set()
        next_progress = t0 + PROGRESS_S
        tlimit = int(float(e.time_limit_s))
        while True:
            time.sleep(TICK_S)
            now = time.time()
            el = "%.0f" % (now - t0)
            for p in list(procs.list):
                if p.handled or p.alive():
                    continue
                p.handled = True
                st = p.status()
                how = "exited with status %s" % st
                if p.pid in killed_pids(c["sysdir"]):
                    how = "killed by a fault"
                nm, killed = p.name, how == "killed by a fault"
                if nm.startswith("worker@"):
                    h = nm[len("worker@"):]
                    dead.append(h)
                    c["down"].add(h)
                    self.log("%s: worker %s (pid %d) %s at t=%ss: %s; the run goes on without it"
                             % (sys_, h, p.pid, how, el, last_line(p.log)))
                elif nm == "mpirun":
                    reason = "rr-sync_exited"
                elif nm == "server@" + e.server and killed:
                    if e.repl_mode == "checkpoint":
                        restarts += 1
                        cur = os.path.join(rec, "restart-%d" % restarts)
                        os.makedirs(cur, exist_ok=True)
                        ck = os.path.join(c["sysdir"], "checkpoint", "checkpoint.bin")
                        restore = ["--restore", ck] if os.path.isfile(ck) and os.path.getsize(ck) > 0 else []
                        np_ = self.start("server@" + e.server, os.path.join(logs, "ps-restart-%d.log" % restarts),
                                         e.server, [os.path.join(e.build, "mlf-ps")] + c["ps_common"]
                                         + ["--host", e.server, "--records", cur] + c["verify"] + c["ps_extra"] + restore)
                        procs.write_pids()
                        self.log("%s: server (pid %d) killed by a fault at t=%ss: restarted %s (pid %d, records %s)"
                                 % (sys_, p.pid, el, " ".join(restore) or "from scratch (no checkpoint yet)",
                                    np_.pid, cur))
                    elif e.replica and procs.live("replica@" + e.replica):
                        failed_over = True
                        cur = os.path.join(rec, "replica")
                        self.log("%s: server (pid %d) killed by a fault at t=%ss: the run goes on with the replica "
                                 "at %s (the scheduler promotes it)" % (sys_, p.pid, el, e.replica))
                        nr = [f.new_replica_s for f in e.faults if f.kind == "kill-server" and f.new_replica_s]
                        if nr:
                            c["pending"].append((now + nr[0], "new-replica", "replica@" + e.server, 0))
                    else:
                        reason = "server killed by a fault (no replica, no checkpoint)"
                        self.log("%s: %s at t=%ss" % (sys_, reason, el))
                elif nm == "replica@" + e.replica and killed:
                    if failed_over:
                        reason = "the promoted replica was killed by a fault"
                        self.log("%s: %s at t=%ss" % (sys_, reason, el))
                    else:
                        self.log("%s: replica at %s (pid %d) killed by a fault at t=%ss: the run goes on without a replica"
                                 % (sys_, e.replica, p.pid, el))
                elif nm == "scheduler@" + e.sched and killed:
                    # a restarted scheduler rebuilds its state from the hosts (docs/scheduler.md "Restart")
                    sched_restarts += 1
                    np_ = self.start(nm, os.path.join(logs, "scheduler-restart-%d.log" % sched_restarts), e.sched,
                                     c["sched_argv"])
                    procs.write_pids()
                    self.log("%s: scheduler (pid %d) killed by a fault at t=%ss: restarted (pid %d)"
                             % (sys_, p.pid, el, np_.pid))
                elif nm.startswith("aggregator@") and killed:
                    self.log("%s: aggregator %s (pid %d) killed by a fault at t=%ss: the run goes on without it"
                             % (sys_, nm[len("aggregator@"):], p.pid, el))
                else:
                    reason = nm + " exited"
                    self.log("%s: %s (pid %d) %s at t=%ss: %s" % (sys_, nm, p.pid, how, el, last_line(p.log)))
            if reason:
                break
            self.run_pending(sys_, c, rec, logs, now, t0)
            if len(c["down"]) >= e.nw and not any(x[1] == "restart" and x[2].startswith("worker@")
                                                  for x in c["pending"]):
                reason = "all workers exited"
                break
            # workers become ready (registered: "worker of" logged) within READY_WORKER_S of t0
            for p in procs.matching("worker@*"):
                if p.pid in ready or p.handled:
                    continue
                if log_has(p.log, "worker of")():
                    ready.add(p.pid)
                elif now - max(t0, getattr(p, "t_start", t0)) > READY_WORKER_S:
                    reason = "%s not ready within %d s (no 'worker of' in %s)" % (p.name, READY_WORKER_S,
                                                                                  os.path.basename(p.log))
                    self.log("%s: %s" % (sys_, reason))
            if reason:
                break
            if now < next_progress:
                continue
            while next_progress <= now:
                next_progress += PROGRESS_S
            self.tb.gather(c["sysdir"], lambda m: None)  # hosts without the run folder: their records now
            acc, ver = results.last_acc(rec)
            extra = ""
            if sys_ == "rr-sync":
                applied, dropped = count_records(os.path.join(rec, "iterations.jsonl")) * e.nw, 0
            elif sys_ == "gloo":  # every step applies the (averaged) gradients of all ranks
                applied, dropped = count_records(os.path.join(rec, e.workers[0], "pushes.jsonl")) * e.nw, 0
            else:
                applied = count_records(os.path.join(cur, "applied.jsonl"))
                if os.path.isfile(os.path.join(rec, "updates.jsonl")):
                    dropped = sum(1 for u in read_jsonl(os.path.join(rec, "updates.jsonl"))
                                  if u.get("fate") in ("dropped", "lost"))
                else:
                    dropped = 0
                    for h in os.listdir(rec):
                        try:
                            w = read_json(os.path.join(rec, h, "worker.json"))
                        except RecordError:
                            w = None  # the worker is writing it as it exits
                        if isinstance(w, dict):
                            dropped += w.get("dropped") or 0
                if e.replica and not failed_over:
                    extra = " replica_applied=%d" % count_records(os.path.join(rec, "replica", "applied.jsonl"))
                if e.faults:
                    nf = sum(1 for x in read_jsonl(os.path.join(c["sysdir"], "faults.jsonl")) if x.get("event") == "start")
                    extra += " faults=%d" % nf
            u = self.cpu_sample(c)
            if u and u.get("machine_cores") is not None:
                extra += " cpu=%.2f" % u["machine_cores"]
            self.log("%s: t=%ss accuracy=%s version=%s applied=%d dropped=%s%s"
                     % (sys_, el, acc, ver, applied, dropped, extra))
            # any evaluation since the start, not only the last one, may have reached the target;
            # a fault scenario stops for it only when an evaluation after every fault ended (and
            # after every restart it schedules) reached it: the system recovered from its faults
            since = None
            if e.faults:
                since = self.faults_over(c, t0)
            if since is not None and since < 0:
                pass  # a fault not injected or not recovered from yet (faults_over)
            elif (since is None or not c.get("pending")) and \
                    reached(results.acc_files(rec), float(e.target_accuracy), since):
                reason = "target"
                break
            if int(el) >= tlimit:
                reason = "time_limit"
                break
        return reason, dead, restarts

    def faults_over(self, c, t0):
        """When every fault of the experiment was injected and ended (the latest of the planned
        t0 + at_s + duration_s and the events of faults.jsonl: a kill-worker may wait for its
        worker's first push), or -1 while one is not, or while a worker that ran when the
        scheduler was killed has not yet registered again with the restarted one (its log says
        "a scheduler is back" once per kill-scheduler), or while the scheduler restarted after a
        kill has not planned a transfer yet (records/transfers.jsonl): counts, not seconds, tell
        the recovery. A loaded machine once reached the target in the tick of the kill, before
        the restarted scheduler planned anything."""
        e = self.exp
        planned = sum(2 if f.kind in ("cut-link", "loss-burst") else 1 for f in e.faults)
        ev = [x for x in read_jsonl(os.path.join(c["sysdir"], "faults.jsonl"))
              if x.get("event") in ("start", "end")]
        if len(ev) < planned:
            return -1
        kills = [x["t"] for x in ev if x.get("kind") == "kill-scheduler" and x.get("ok")]
        for p in c["procs"].matching("worker@*"):
            if kills and p.alive() and getattr(p, "t_start", 0) < kills[-1] and \
                    log_count(p.log, "a scheduler is back") < len(kills):
                return -1
        if kills and c.get("planned_after_kills") != len(kills):
            # read again each tick until every kill's restarted scheduler planned one; a malformed
            # record does not end the run here (it waits on; mlf-fault's check names the line)
            try:
                if None in first_planned_after_kills(os.path.join(c["sysdir"], "records", "transfers.jsonl"), kills):
                    return -1
            except RecordError:
                return -1
            c["planned_after_kills"] = len(kills)
        return max([t0 + f.at + (f.dur or 0) for f in e.faults] + [x.get("t_done", x["t"]) for x in ev])

    def run_pending(self, sys_, c, rec, logs, now, t0):
        """The restarts that are due (c["pending"]: (time, what, name, fault)): "restart" starts a
        killed worker or aggregator again with its command line (a worker's records and log get a
        suffix -rK), "new-replica" starts a replica of the promoted server on the old server's
        host (records/replica-2, docs/replication.md); each is logged and added to faults.jsonl."""
        e, procs = self.exp, c["procs"]
        due = [x for x in list(c["pending"]) if x[0] <= now]
        for x in due:
            c["pending"].remove(x)
            _, what, name, fault = x
            k = c.setdefault("restarted", {}).get(name, 0) + 1
            c["restarted"][name] = k
            host = name.split("@", 1)[1]
            if what == "restart":
                h, argv = c["argv"][name]
                argv = list(argv)
                base = name.replace("@", "-")
                if "--records" in argv:
                    i = argv.index("--records") + 1
                    argv[i] = "%s-r%d" % (argv[i], k)
                    os.makedirs(argv[i], exist_ok=True)
                log = os.path.join(logs, "%s-r%d.log" % (base, k))
            else:
                srv = e.replica   # the promoted replica serves now
                recd = os.path.join(rec, "replica-%d" % (k + 1))
                os.makedirs(recd, exist_ok=True)
                argv = ([os.path.join(e.build, "mlf-ps")] + c["ps_common"] +
                        ["--host", host, "--records", recd, "--replica", "--server", srv,
                         "--div-max", num_str(e.div_max), "--replication", e.repl_mode] + c["verify"])
                log = os.path.join(logs, "replica-%d.log" % (k + 1))
            p = self.start(name, log, host, argv)
            p.t_start = now
            procs.write_pids()
            if name.startswith("worker@"):
                c["down"].discard(host)
            rec_ = {"t": now, "t_s": round(now - t0, 3), "fault": fault,
                    "event": what, "kind": what, "host": host, "pid": p.pid, "ok": True,
                    "action": "started %s (pid %d, log %s)" % (name, p.pid, os.path.basename(log))}
            with open(os.path.join(c["sysdir"], "faults.jsonl"), "a") as out:
                out.write(json.dumps(rec_, separators=(",", ":")) + "\n")
            self.log("%s: t=%.0fs %s" % (sys_, now - t0, rec_["action"]))

    def start_netdev(self, c):
        """The switch's byte counters every NETDEV_S into <system>/netdev.jsonl (module netdev.py in
        namespace <cluster>-sw); not essential: the run goes on if it fails."""
        e = self.exp
        argv = self.tb.netdev_argv(e.python, NETDEV, os.path.join(c["sysdir"], "netdev.jsonl"), str(NETDEV_S))
        if not argv:
            return  # no emulated switch
        try:
            p = c["procs"].start("netdev@sw", os.path.join(c["sysdir"], "logs", "netdev.log"), argv)
            p.handled = True
        except OSError as x:
            self.log("%s: switch counters not sampled: %s" % (c["sys"], x))

    def cpu_sample(self, c):
        """A CPU sample of the system's processes (cpu.jsonl); returns the usage since the
        previous sample (None for the first)."""
        named = [(p.name, p.pid) for p in c["procs"].matching("*") if p.alive()]
        s = cpu.snapshot(named)
        c.setdefault("cpu", []).append(s)
        with open(os.path.join(c["sysdir"], "cpu.jsonl"), "a") as f:
            f.write(json.dumps(s, separators=(",", ":")) + "\n")
        return cpu.usage(c["cpu"][-2], s) if len(c["cpu"]) > 1 else None

    def stop_drivers(self):
        for d in self.cur["drivers"]:
            d.stop()
        self.cur["drivers"] = []

    def teardown(self):
        """Stop the system's processes (workers first, so the server writes its final records after
        the last update), the drivers, measure eth0 counters, bring the testbed down and check that
        no namespace or process of ours is left. Idempotent."""
        c = self.cur
        if c is None:
            return
        e, procs = self.exp, c["procs"]
        self.stop_drivers()
        stop(procs.matching("worker@*", "mpirun"), 5)
        stop(procs.matching("server@*", "replica@*"), 10)
        stop(procs.matching("aggregator@*", "scheduler@*"), 3)
        rxs = {}
        if self.tb.namespaces():
            for h in e.hosts:
                rxs[h] = self.tb.host_rx(h)
        if os.path.isfile(os.path.join(c["sysdir"], "run.json")):
            self.set_run_json(eth0_rx_bytes=rxs)
        stop(procs.matching("*"), 3)
        self.tb.gather(c["sysdir"], lambda m: self.log("%s: %s" % (c["sys"], m)))
        left_hosts = self.tb.leftovers()
        if left_hosts:
            self.log("%s: could not clean hosts: %s" % (c["sys"], "; ".join(left_hosts)))
            self.teardown_ok = False
        if not self.tb.down():
            self.log("%s: mlf-testbed down %s failed" % (c["sys"], e.cluster))
        left_ns = self.tb.namespaces()
        left_p = ["%s(%d)" % (p.name, p.pid) for p in procs.matching("*") if p.alive()]
        if left_ns or left_p:
            self.log("%s: teardown left namespaces [%s] processes [%s]" % (c["sys"], " ".join(left_ns), " ".join(left_p)))
            self.teardown_ok = False
        else:
            self.log("%s: teardown done: no namespace %s-* and no process left" % (c["sys"], e.cname))
        self.cur = None


def reached(files, target, since=None):
    """An evaluation of FILES at or above TARGET (a partly written last line is skipped); with
    SINCE (CLOCK_REALTIME s), only an evaluation taken at or after it counts."""
    for fn in files:
        for x in read_jsonl(fn):
            acc, t = x.get("accuracy"), x.get("t")
            if since is not None and not (isinstance(t, (int, float)) and t >= since):
                continue
            if isinstance(acc, (int, float)) and not isinstance(acc, bool) and acc >= target:
                return True
    return False
