"""Unit tests of tools/mlfcluster's pure parts: the seeded rate schedule, results from a tiny
hand-made records folder, the record reader (records.py: a malformed line named, a partial last
line skipped), experiment validation errors, readiness waits (with sh stand-ins), the local
Slurm's allocation when squeue does not answer (sh stand-ins of salloc and squeue).
Run: python3 -m unittest discover -s tests/python"""
import json
import os
import sys
import tempfile
import unittest
import unittest.mock

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))

from exp_case import ExpCase  # noqa: E402
from mlfcluster import results  # noqa: E402
from mlfcluster.network import rate_schedule, schedule_lines  # noqa: E402
from mlfcluster.procs import NotReady, Procs, log_has, wait_ready  # noqa: E402
from mlfcluster.records import RecordError, count_records, read_json, read_jsonl  # noqa: E402
from mlfcluster.runner import last_lines  # noqa: E402
from mlfcluster import slurm  # noqa: E402

BASE = {"name": "t", "cluster": os.path.join(ROOT, "conf/cluster-fabric.json"), "systems": ["mlfabric-a"],
        "compute": "C1", "network": "N2", "rate_scale": 0.1, "period_s": 5, "target_accuracy": 0.8,
        "time_limit_s": 240, "seed": 1}


class Tmp(ExpCase):
    BASE = BASE


class RateSchedule(Tmp):
    def test_known_values(self):
        # conf/exp-c1-n2.json's first two periods as network.tsv holds them (%g)
        want = ("0 0 ps 0.33 1\n0 0 w0 1 0.25\n0 0 w1 1 1\n0 0 w2 1 1\n0 0 w3 0.5 1\n"
                "1 5 ps 0.5 1\n1 5 w0 1 1\n1 5 w1 1 1\n1 5 w2 0.33 1\n1 5 w3 1 1\n")
        self.assertEqual(schedule_lines(rate_schedule(self.exp(), 1)), want)

    def test_deterministic_per_seed(self):
        a = schedule_lines(rate_schedule(self.exp(), 40))
        self.assertEqual(a, schedule_lines(rate_schedule(self.exp(), 40)))
        self.assertNotEqual(a, schedule_lines(rate_schedule(self.exp(seed=2), 40)))
        self.assertEqual(len(a.splitlines()), 41 * 5)

    def test_n3_rates_only(self):
        s = rate_schedule(self.exp(network="N3"), 200)
        self.assertEqual({r for row in s for r in row[3:]}, {0.1, 1.0})


class Validation(Tmp):

    def test_errors_name_file_and_key(self):
        msg = self.bad('"C9"', compute="C9")
        self.assertTrue(msg.startswith(os.path.join(self.dir, "exp.json") + ": compute:"), msg)
        self.bad('missing field "seed"', seed=None)
        self.bad('unknown key "sed"', sed=3)
        self.bad("N7", network="N7")
        self.bad('unknown system "bogus"', systems=["bogus"])
        self.bad('host "w9" is not in cluster', aggregators=["w0", "w9"])
        self.bad("period_s: seconds in [0.1, 3600] expected", period_s=0)
        self.bad("cannot read", cluster="conf/no-such-cluster.json")

    def test_ranges_name_the_key(self):
        """Each bad value is refused with one line naming the key and what was expected."""
        self.bad('model: layer sizes expected', model="784,abc,10")
        self.bad('model: layer sizes expected', model="784")
        for v in [0, -3, 2.5, "32"]:
            self.bad("batch: an integer in [1, 65536] expected", batch=v)
        self.bad("lr: a number in (0, 100] expected", lr="0.05")
        self.bad("lr: a number in (0, 100] expected", lr=0)
        self.bad("momentum: a number in [0, 1) expected", momentum=1.2)
        self.bad("momentum: a number in [0, 1) expected", momentum=1)
        self.bad("tau_max: a number in [0, 1000000] expected", tau_max=-1)
        self.bad("t_lag: seconds in [0, 3600] expected", t_lag=-0.1)
        self.bad("batch_ms: milliseconds in (0, 60000] expected", batch_ms=0)
        self.bad("eval_every_s: seconds in (0, 3600] expected", eval_every_s=0)
        self.bad("compute_s: seconds in [0, 3600] expected", compute_s=-1)

    def test_check_and_run_refuse_before_starting(self):
        """check and run exit 2 with one line naming file and key; run creates no run folder
        (so no namespace: the testbed is built after the folder)."""
        import subprocess
        from exp_case import ROOT
        try:
            self.exp(batch=0)
        except Exception:
            pass
        p = os.path.join(self.dir, "exp.json")
        out = os.path.join(self.dir, "run")
        for cmd in (["check", p], ["run", p, "--out", out]):
            r = subprocess.run([os.path.join(ROOT, "tools", "mlf-cluster")] + cmd, capture_output=True,
                               text=True, timeout=60)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn(p + ": batch: an integer in [1, 65536] expected", r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertFalse(os.path.exists(out))

    def test_replication_and_faults(self):
        self.bad('replication: unknown key "every"', replication={"every": 3})
        self.bad("checkpoint_every", replication={"mode": "checkpoint"})
        self.bad('faults[0]: kind: "meteor" unknown', faults=[{"at_s": 1, "kind": "meteor"}])
        self.bad("duration_s", faults=[{"at_s": 1, "kind": "cut-link", "host": "w3"}])
        self.bad("faults[0].loss: a fraction in (0, 1] expected", faults=[{"at_s": 1, "kind": "loss-burst", "host": "w3",
                                                   "duration_s": 1, "loss": 1.5}])

    def test_momentum_at(self):
        """Where eq. 2's momentum goes: the server by default, the workers with mlfabric replication
        (the replica would group updates into momentum steps unlike the server and drift)."""
        repl = {"cluster": os.path.join(ROOT, "conf/cluster-repl.json"), "replication": {"mode": "mlfabric"}}
        self.assertEqual(self.exp().momentum_at, "server")
        self.assertEqual(self.exp(momentum_at="worker").momentum_at, "worker")
        self.assertEqual(self.exp(**repl).momentum_at, "worker")
        self.assertEqual(self.exp(momentum_at="server", momentum=0, **repl).momentum_at, "server")
        self.bad("the replica groups updates into momentum steps unlike the server", momentum_at="server",
                 momentum=0.9, **repl)
        self.bad('momentum_at: "server" or "worker" expected, got "ps"', momentum_at="ps")
        self.bad('momentum_at: "worker" needs worker_program "c"', momentum_at="worker", worker_program="torch")

    def test_speeds_and_ssp(self):
        """Deterministic stragglers (speeds, one factor per worker, from speeds_at_s) and
        system ssp (the scheduler's stale-synchronous gate with threshold ssp_s)."""
        e = self.exp(speeds=[1, 1, 1, 4], speeds_at_s=5, systems=["ssp", "async"])
        self.assertEqual((e.speeds, e.s["speeds_at_s"], e.s["ssp_s"]), (["1", "1", "1", "4"], "5", "3"))
        self.assertIsNone(self.exp().speeds)
        self.assertEqual(self.exp(ssp_s=0).s["ssp_s"], "0")
        self.bad("speeds: 3 factors for 4 workers", speeds=[1, 1, 4])
        self.bad("speeds[2]: a factor in [1, 1000] expected", speeds=[1, 1, 0.5, 4])
        self.bad("speeds: an array of factors in [1, 1000] expected", speeds="1,1,1,4")
        self.bad("speeds: not supported by system gloo yet", speeds=[1, 1, 1, 4], systems=["gloo"],
                 worker_program="torch")
        self.assertEqual(self.exp(speeds=[1, 1, 1, 4], systems=["rr-sync"]).speeds, ["1", "1", "1", "4"])
        self.assertEqual(self.exp(data_split="by-label").data_split, "by-label")
        self.bad('data_split: "iid" or "by-label" expected', data_split="random")
        self.assertEqual(self.exp().capacity, "declared")
        self.assertEqual(self.exp(capacity="measured").capacity, "measured")
        self.bad('capacity: declared or measured expected, got "guessed"', capacity="guessed")
        self.bad('data_split: "by-label" is not supported by system rr-sync', data_split="by-label",
                 systems=["rr-sync"])
        self.bad("ssp_s: an integer in [0, 100000] expected", ssp_s=1.5)
        self.bad("ssp_s: an integer in [0, 100000] expected", ssp_s=-1)
        self.bad("speeds_at_s: seconds in [0, 86400] expected", speeds_at_s=-2)
        self.assertEqual(self.exp(systems=["asp"], ssp_s=4, asp_w=2).s["asp_w"], "2")
        self.bad("asp_w: 5 is above ssp_s 3", systems=["asp"], asp_w=5)

    def test_hop_graph(self):
        """System hop's graph (ring, ring-based, an object) and settings; a graph naming
        an unknown host, one-way or disconnected, and backups that leave nothing, are refused."""
        e = self.exp(systems=["hop"], hop_graph="ring")
        self.assertEqual(e.hop_nb["w0"], ["w1", "w3"])
        self.assertEqual(self.exp(systems=["hop"], hop_graph="ring-based").hop_nb["w0"], ["w1", "w2", "w3"])
        self.assertEqual(self.exp(systems=["hop"]).hop_nb["w0"], ["w1", "w2", "w3"])  # Hop's default
        a = self.exp(systems=["hop"], hop_graph="ring", hop_backups=1, hop_staleness=2, hop_max_ig=3, hop_jump=4).hop_args("w1")
        self.assertEqual(a, ["--hop-neighbours", "w0,w2", "--hop-backups", "1", "--hop-staleness", "2", "--hop-max-ig", "3",
                             "--init-seed", "1", "--hop-jump", "4@1"])
        g = {"w0": ["w1"], "w1": ["w0", "w2"], "w2": ["w1", "w3"], "w3": ["w2"]}
        self.assertEqual(self.exp(systems=["hop"], hop_graph=g).hop_nb["w3"], ["w2"])
        self.bad('hop_graph: "w9" is not a worker', systems=["hop"], hop_graph=dict(g, w9=["w0"]))
        self.bad('hop_graph: "w0" names "ps", not a worker', systems=["hop"], hop_graph=dict(g, w0=["w1", "ps"]))
        self.bad("must be undirected", systems=["hop"], hop_graph=dict(g, w0=["w1", "w2"]))
        self.bad("not connected (w0 cannot reach w2, w3)", systems=["hop"],
                 hop_graph={"w0": ["w1"], "w1": ["w0"], "w2": ["w3"], "w3": ["w2"]})
        self.bad('hop_graph: "ring", "ring-based" or an object', systems=["hop"], hop_graph="star")
        # the cluster config's "graph" is the default, restricted to the experiment's workers;
        # hop_graph overrides it; a graph that leaves a worker out is refused
        with open(os.path.join(ROOT, "conf/cluster-fabric.json")) as f:
            cl = json.load(f)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "cluster.json")
            with open(path, "w") as f:
                json.dump(dict(cl, graph={"w0": ["w1"], "w1": ["w0", "w2"], "w2": ["w1", "w3"], "w3": ["w2"]}), f)
            self.assertEqual(self.exp(systems=["hop"], cluster=path).hop_nb["w1"], ["w0", "w2"])
            self.assertEqual(self.exp(systems=["hop"], cluster=path).hop_nb["w0"], ["w1"])
            self.assertEqual(self.exp(systems=["hop"], cluster=path, hop_graph="ring").hop_nb["w0"], ["w1", "w3"])
            with open(path, "w") as f:
                json.dump(dict(cl, graph={"w0": ["w1"], "w1": ["w0", "w2"], "w2": ["w1"]}), f)
            self.bad("the graph of %s gives no neighbour to w3 (set hop_graph)" % path, systems=["hop"], cluster=path)
        self.bad("hop_backups: 2 leaves no neighbour", systems=["hop"], hop_graph="ring", hop_backups=2)
        self.bad("hop_jump: skipping iterations needs token queues", systems=["hop"], hop_jump=2, hop_max_ig=0)
        self.bad("does not apply to system hop", systems=["hop"], replication={"mode": "chain"},
                 cluster=os.path.join(ROOT, "conf/cluster-repl.json"))
        # random slowdowns "R,S" (Hop's 6x at probability 1/n)
        self.assertEqual(self.exp(compute="0.125,6").straggle, "0.125,6")
        self.bad("compute: unknown setting", compute="0.125,0.5")
        self.bad("compute: unknown setting", compute="2,6")

    def test_keys_by_default(self):
        # docs/security.md "Keys by default": every shipped cluster has a key or opts out; an
        # unkeyed cluster without "insecure": true is refused naming both fixes
        import glob
        for path in glob.glob(os.path.join(ROOT, "conf/cluster-*.json")):
            with open(path) as f:
                cl = json.load(f)
            self.assertTrue(cl.get("key_file") or cl.get("insecure") is True, path)
        with open(os.path.join(ROOT, "conf/cluster-fabric.json")) as f:
            cl = json.load(f)
        del cl["key_file"]
        path = os.path.join(self.dir, "cluster.json")
        with open(path, "w") as f:
            json.dump(cl, f)
        msg = self.bad("has no key_file", cluster=path)
        self.assertIn('"key_file": "clu.key"', msg)
        self.assertIn('"insecure": true', msg)
        with open(path, "w") as f:
            json.dump(dict(cl, insecure=True), f)
        self.assertTrue(self.exp(cluster=path).insecure)
        self.assertFalse(self.exp().insecure)

    def test_adsp_and_local_sgd(self):
        """Systems adsp (commit rates from the scheduler) and local-sgd (fixed local
        iterations per round): their keys, defaults and bad values."""
        e = self.exp(systems=["adsp", "local-sgd", "mlfabric-s"])
        self.assertEqual((e.s["adsp_period_s"], e.s["adsp_eval_s"], e.s["adsp_rate"], e.s["adsp_global_lr"],
                          e.s["local_steps"]), ("1", "6", None, None, "4"))
        e = self.exp(systems=["adsp"], adsp_period_s=0.5, adsp_eval_s=2, adsp_rate=3, adsp_global_lr=0.25)
        self.assertEqual((e.s["adsp_period_s"], e.s["adsp_eval_s"], e.s["adsp_rate"], e.s["adsp_global_lr"]),
                         ("0.5", "2", "3", "0.25"))
        self.bad("adsp_eval_s: 0.5 is shorter than adsp_period_s 1", systems=["adsp"], adsp_eval_s=0.5)
        self.bad("adsp_rate: an integer in [1, 4096] expected", systems=["adsp"], adsp_rate=0)
        self.bad("adsp_period_s: seconds in [0.01, 3600] expected", systems=["adsp"], adsp_period_s="1")
        self.bad("local_steps: an integer in [1, 100000] expected", systems=["local-sgd"], local_steps=2.5)
        self.bad("adsp_global_lr: a number in (0, 4096] expected", systems=["adsp"], adsp_global_lr=0)
        self.bad("unknown system", systems=["adsp2"])

    def test_system_defaults(self):
        """Each system's paper defaults apply for the keys the experiment leaves out (ADSP's
        global learning rate 1/M, ESync's epsilon 1, Hop's ring-based graph), only to that
        system; an explicit key wins; the cluster config's graph stays Hop's default."""
        e = self.exp(systems=["adsp", "esync", "hop", "mlfabric-a"], workers=["w0", "w1", "w2", "w3"])
        self.assertEqual(e.settings("adsp")["adsp_global_lr"], "0.25")
        self.assertEqual(e.settings("esync")["esync_global_lr"], "1")
        self.assertEqual(e.settings("hop")["hop_graph"], "ring-based")
        self.assertEqual(e.hop_nb["w0"], ["w1", "w2", "w3"])
        self.assertIsNone(e.settings("mlfabric-a")["adsp_global_lr"])
        self.assertIsNone(e.settings("esync")["adsp_global_lr"])
        self.assertIsNone(e.s["adsp_global_lr"])  # the experiment's own keys are unchanged
        self.assertEqual([a[:3] for a in e.applied], [("adsp", "adsp_global_lr", "0.25"),
                                                       ("esync", "esync_global_lr", "1"),
                                                       ("hop", "hop_graph", "ring-based")])
        self.assertIn("adsp-aaai2020 §5.1", e.applied[0][3])
        self.assertIn("M = 4 workers", e.applied[0][3])
        self.assertEqual(self.exp(systems=["adsp"], workers=["w0", "w1"]).settings("adsp")["adsp_global_lr"], "0.5")
        # explicit keys win, and nothing is reported as a default
        e = self.exp(systems=["adsp", "esync", "hop"], adsp_global_lr=1, esync_global_lr=4, hop_graph="ring")
        self.assertEqual((e.settings("adsp")["adsp_global_lr"], e.settings("esync")["esync_global_lr"],
                          e.settings("hop")["hop_graph"]), ("1", "4", "ring"))
        self.assertEqual(e.hop_nb["w0"], ["w1", "w3"])
        self.assertEqual(e.applied, [])
        # a system without paper defaults gets none
        self.assertEqual(self.exp(systems=["ssp", "asp", "local-sgd", "async"]).applied, [])

    def test_check_prints_defaults(self):
        """`mlf-cluster check` prints one line per default it applied (system, key, value, the
        paper's section), and none for a key the experiment sets."""
        import subprocess
        from exp_case import ROOT
        self.exp(systems=["adsp", "esync", "mlfabric-a"], workers=["w0", "w1", "w2", "w3"])
        p = os.path.join(self.dir, "exp.json")
        run = lambda: subprocess.run([os.path.join(ROOT, "tools", "mlf-cluster"), "check", p],
                                     capture_output=True, text=True, timeout=60)
        r = run()
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = [x for x in r.stdout.splitlines() if " default " in x]
        self.assertEqual(len(lines), 2, r.stdout)
        self.assertIn("mlf-cluster: default adsp: adsp_global_lr = 0.25 (adsp-aaai2020 §5.1", lines[0])
        self.assertIn("mlf-cluster: default esync: esync_global_lr = 1 (esync.txt Alg. 1", lines[1])
        self.exp(systems=["adsp", "esync", "mlfabric-a"], adsp_global_lr=0.5)
        r = run()
        self.assertEqual([x for x in r.stdout.splitlines() if " default " in x],
                         ["mlf-cluster: default esync: esync_global_lr = 1 (esync.txt Alg. 1: the global "
                          "learning rate epsilon, default 1)"])

    def test_overlap(self):
        """overlap (mlf-worker --overlap) is a boolean, off by default, C workers only."""
        self.assertIs(self.exp(systems=["mlfabric-a"]).overlap, False)
        self.assertIs(self.exp(systems=["mlfabric-a", "async"], overlap=True).overlap, True)
        self.bad("overlap: true or false expected, got 1", systems=["mlfabric-a"], overlap=1)
        self.bad("overlap: needs worker_program c", systems=["mlfabric-a"], overlap=True,
                 worker_program="torch")

    def test_init_weights(self):
        """init_weights names a file of exactly the model's float32 parameters (the
        paper's Table 2 starts from a pre-trained model); refused with one line otherwise."""
        self.assertIsNone(self.exp(systems=["mlfabric-a"]).init_weights)
        n = 784 * 8 + 8 + 8 * 10 + 10
        good = os.path.join(self.dir, "w.f32")
        with open(good, "wb") as f:
            f.write(b"\0" * 4 * n)
        e = self.exp(systems=["mlfabric-a", "async", "rr-sync", "mlfabric-s"], model="784,8,10", init_weights=good)
        self.assertEqual(e.init_weights, good)
        self.bad("init_weights: %s holds %d bytes; model 784,16,10 needs" % (good, 4 * n),
                 systems=["mlfabric-a"], model="784,16,10", init_weights=good)
        self.bad("init_weights: cannot read %s/none.f32" % self.dir, systems=["mlfabric-a"], model="784,8,10",
                 init_weights=os.path.join(self.dir, "none.f32"))
        self.bad("init_weights: a file name expected, got 3", systems=["mlfabric-a"], init_weights=3)
        self.bad("init_weights: only for systems", systems=["mlfabric-a", "hop"], model="784,8,10",
                 init_weights=good)

    def test_esync_nonblocking(self):
        """esync_nonblocking (esync.txt §4.2) is a boolean, off by default."""
        self.assertIs(self.exp(systems=["esync"]).esync_nb, False)
        self.assertIs(self.exp(systems=["esync"], esync_nonblocking=True).esync_nb, True)
        self.bad("esync_nonblocking: true or false expected, got 1", systems=["esync"], esync_nonblocking=1)
        self.bad('esync_nonblocking: true or false expected, got "yes"', systems=["esync"],
                 esync_nonblocking="yes")

    def test_kill_scheduler(self):
        """kill-scheduler: MLfabric-A only, the scheduler host by default, not with chain replication."""
        f = self.exp(faults=[{"at_s": 3, "kind": "kill-scheduler"}]).faults[0]
        self.assertEqual((f.kind, f.host), ("kill-scheduler", self.exp().sched))
        self.bad("kill-scheduler applies to system mlfabric-a only", systems=["mlfabric-a", "async"],
                 faults=[{"at_s": 3, "kind": "kill-scheduler"}])
        self.bad('kill-scheduler: "w1" is not the scheduler host', faults=[{"at_s": 3, "kind": "kill-scheduler",
                                                                             "host": "w1"}])
        self.bad("kill-scheduler with replication mode chain",
                 cluster=os.path.join(ROOT, "conf/cluster-repl.json"), replication={"mode": "chain"},
                 faults=[{"at_s": 3, "kind": "kill-scheduler"}])

    def test_scheduler_args(self):
        self.assertEqual(self.exp().scheduler_args, [])
        e = self.exp(scheduler_args=["--sync-batching", "all"])
        self.assertEqual(e.scheduler_args, ["--sync-batching", "all"])
        self.bad("scheduler_args: must be a list", scheduler_args="--sync-batching all")
        self.bad("scheduler_args: must be a list", scheduler_args=["--distributors", 0])
        self.bad('must start with an option ("--name"), not "all"', scheduler_args=["all"])

    def test_defaults_and_faults_order(self):
        e = self.exp(faults=[{"at_s": 9, "kind": "kill-worker", "host": "w1"}, {"at_s": 2, "kind": "kill-server"}])
        self.assertEqual((e.s["model"], e.s["tau_max"], e.s["lr_sync"]), ("784,1024,10", "8", "0.05"))
        self.assertEqual(e.straggle, "0.10,2")
        self.assertEqual([(f.index, f.kind, f.host) for f in e.faults], [(1, "kill-server", "ps"), (2, "kill-worker", "w1")])
        self.assertEqual(e.workers, ["w0", "w1", "w2", "w3"])


class Results(Tmp):
    def write(self, rel, lines):
        p = os.path.join(self.dir, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            for x in lines:
                f.write(json.dumps(x) + "\n")

    def test_tiny_run(self):
        self.write("experiment.json", [{"systems": ["mlfabric-a"], "target_accuracy": 0.78, "tau_max": 4}])
        s = "mlfabric-a/"
        self.write(s + "run.json", [{"system": "mlfabric-a", "n_workers": 2, "t0": 1000, "t_end": 1010,
                                     "stop_reason": "target", "server": "ps", "eth0_rx_bytes": {"ps": 7}}])
        self.write(s + "records/accuracy.jsonl", [{"t": 1004, "version": 1, "accuracy": 0.6},
                                                  {"t": 1006.5, "version": 9, "accuracy": 0.8},
                                                  {"t": 1008, "version": 12, "accuracy": 0.75}])
        self.write(s + "records/applied.jsonl", [{"t": 1003, "id": i, "delay": d} for i, d in enumerate([3, 0, 8, 1, 2])])
        self.write(s + "records/updates.jsonl", [{"id": 1, "fate": "direct"}, {"id": 2, "fate": "dropped"},
                                                 {"id": 3, "fate": "aggregated"}, {"id": 1, "fate": "lost"}])
        self.write(s + "records/server.json", [{"applied": 5, "version": 5, "rx_bytes": 2500000}])
        self.write(s + "records/w0/worker.json", [{"iterations": 10, "dropped": 1, "mean_iteration_s": 0.1}])
        self.write(s + "records/w1/worker.json", [{"iterations": 12, "dropped": 0, "mean_iteration_s": 0.3}])
        self.write(s + "records/w0/pushes.jsonl", [{"id": 1}, {"id": 2}])
        self.write(s + "records/w1/pushes.jsonl", [{"id": 3}])
        r = results.compute(self.dir)
        v = r["systems"]["mlfabric-a"]
        self.assertEqual(r["experiment"]["target_accuracy"], 0.78)
        self.assertIs(v["reached"], True)
        self.assertEqual(v["time_to_target_s"], 6.5)
        self.assertEqual(v["final_accuracy"], 0.75)
        self.assertEqual(v["final_accuracy_t_s"], 8)
        self.assertEqual((v["first_accuracy"], v["best_accuracy"]), (0.6, 0.8))
        self.assertEqual(v["evaluations"], 3)
        self.assertEqual(v["applied"], 5)
        self.assertEqual(v["pushed"], 3)
        # fates by the last line of each id: lost, dropped, aggregated
        self.assertEqual((v["dropped"], v["lost"], v["dropped_only"], v["aggregated"]), (2, 1, 1, 1))
        self.assertAlmostEqual(v["dropped_fraction"], 2 / 3)
        self.assertEqual(v["lost_at_stop"], 0)
        self.assertEqual(v["delay"], {"mean": 2.8, "p50": 2, "p99": 3, "max": 8})
        self.assertAlmostEqual(v["mean_iteration_s"], 0.2)
        self.assertEqual(v["iterations"], 22)
        self.assertEqual(v["wall_s"], 10)
        self.assertEqual(v["server_host_rx_bytes"], 7)
        self.assertIsNone(v["recovery_s"])
        self.assertIsInstance(v["wall_s"], int)  # whole seconds in, whole seconds out
        table = results.summary(r).splitlines()
        self.assertEqual(table[1].split(), ["mlfabric-a", "yes", "6.5", "0.750", "5", "66.7", "2.80", "8", "2.5",
                                          "0.200"])


    def test_loss_at_the_teardown_is_not_lost(self):
        # the teardown took the server while 2 and 3 were planned: the scheduler recorded them
        # lost after t_end (1010); 1 was lost before the stop (a fault)
        self.write("experiment.json", [{"systems": ["mlfabric-a"], "target_accuracy": 0.78}])
        s = "mlfabric-a/"
        self.write(s + "run.json", [{"system": "mlfabric-a", "n_workers": 2, "t0": 1000, "t_end": 1010}])
        self.write(s + "records/updates.jsonl", [{"id": 1, "fate": "lost", "t": 1005.0},
                                                 {"id": 2, "fate": "direct", "t": 1009.9},
                                                 {"id": 2, "fate": "lost", "t": 1010.3},
                                                 {"id": 3, "fate": "lost", "t": 1010.0}])
        v = results.compute(self.dir)["systems"]["mlfabric-a"]
        self.assertEqual((v["lost"], v["lost_at_stop"], v["dropped"]), (1, 2, 1))
    def test_no_target(self):
        with self.assertRaises(ValueError):
            results.compute(self.dir)

    def test_malformed_record_named(self):
        """A malformed line of a record fails the results with its file and line."""
        self.write("experiment.json", [{"systems": ["async"], "target_accuracy": 0.5}])
        self.write("async/run.json", [{"system": "async", "t0": 1, "t_end": 2}])
        p = os.path.join(self.dir, "async/records/accuracy.jsonl")
        self.write("async/records/accuracy.jsonl", [{"t": 1.5, "accuracy": 0.4}])
        with open(p, "a") as f:
            f.write('{"t": 1.6, "accuracy": \n{"t": 1.7, "accuracy": 0.6}\n')
        with self.assertRaises(RecordError) as cm:
            results.compute(self.dir)
        self.assertEqual(str(cm.exception), p + ":2: malformed JSON record (Expecting value)")


class Records(Tmp):
    """records.read_jsonl: the one reader of JSON-lines records, and read_json."""

    def put(self, text):
        p = os.path.join(self.dir, "r.jsonl")
        with open(p, "w") as f:
            f.write(text)
        return p

    def test_records_in_order(self):
        p = self.put('{"a": 1}\n\n  \n{"a": 2, "b": [1]}\n')
        self.assertEqual(list(read_jsonl(p)), [{"a": 1}, {"a": 2, "b": [1]}])
        self.assertEqual(count_records(p), 2)
        self.assertEqual(list(read_jsonl(os.path.join(self.dir, "none.jsonl"))), [])

    def test_partial_last_line_skipped(self):
        """A file still being written: its last line without a newline is skipped when it is not
        JSON, read when it is."""
        self.assertEqual(list(read_jsonl(self.put('{"a": 1}\n{"a": 2, "b'))), [{"a": 1}])
        self.assertEqual(list(read_jsonl(self.put('{"a": 1}\n{"a": 2}'))), [{"a": 1}, {"a": 2}])

    def test_malformed_line_named(self):
        p = self.put('{"a": 1}\n{"a": 2,}\n{"a": 3}\n')
        with self.assertRaises(RecordError) as cm:
            list(read_jsonl(p))
        self.assertRegex(str(cm.exception), "^%s:2: malformed JSON record \\(" % p)
        p = self.put('{"a": 1}\n[1, 2]\n')
        with self.assertRaises(RecordError) as cm:
            list(read_jsonl(p))
        self.assertEqual(str(cm.exception), p + ":2: malformed JSON record (not an object)")

    def test_read_json(self):
        p = self.put('{\n  "t0": 1,\n  "t_end": 2.5\n}\n')
        self.assertEqual(read_json(p), {"t0": 1, "t_end": 2.5})
        self.assertIsNone(read_json(os.path.join(self.dir, "none.json")))
        self.assertIsNone(read_json(self.put("")))
        p = self.put('{\n  "t0": 1,\n  "t_end": \n}\n')
        with self.assertRaises(RecordError) as cm:
            read_json(p)
        self.assertEqual(str(cm.exception), p + ":4: malformed JSON (Expecting value)")


class Readiness(Tmp):
    def test_ready_timeout_and_exit(self):
        log = os.path.join(self.dir, "x.log")
        procs = Procs(self.dir)
        p = procs.start("scheduler@ps", log, ["sh", "-c", "echo starting; sleep 0.3; echo 'listening on x'; sleep 5"])
        wait_ready("scheduler@ps", log_has(log, "listening on"), 5, [p])  # ready after about 0.3 s
        with self.assertRaises(NotReady) as cm:
            wait_ready("scheduler@ps (no 'welcome')", log_has(log, "welcome"), 0.2, [p])
        self.assertEqual(str(cm.exception), "scheduler@ps (no 'welcome') not ready within 0.2 s")
        q = procs.start("server@ps", os.path.join(self.dir, "ps.log"), ["sh", "-c", "echo 'bad model'; exit 3"])
        with self.assertRaises(NotReady) as cm:
            wait_ready("server@ps", log_has(q.log, "serving"), 5, [q])
        self.assertEqual(str(cm.exception), "server@ps exited before it was ready: bad model")
        self.assertEqual(q.status(), 3)
        procs.write_pids()
        with open(os.path.join(self.dir, "pids.tsv")) as f:
            self.assertEqual(f.read(), "scheduler@ps %d\nserver@ps %d\n" % (p.pid, q.pid))
        p.popen.kill()
        p.popen.wait()
        self.assertEqual(p.status(), 137)

    def test_exited_at_start_reason(self):
        """A process that exits at start is reported with its log's last 3 non-empty lines."""
        log = os.path.join(self.dir, "ps.log")
        with open(log, "w") as f:
            f.write("one\n\ntwo\nthree\n  \nerror: bad model\n\n")
        self.assertEqual(last_lines(log), "two | three | error: bad model")
        open(log, "w").close()
        self.assertEqual(last_lines(log), "(empty log %s)" % log)
        self.assertTrue(last_lines(os.path.join(self.dir, "none.log")).startswith("(no log "))


class SlurmAllocate(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.addCleanup(self.tmp.cleanup)
        bin_ = os.path.join(self.dir, "bin")
        os.makedirs(bin_)
        for name, body in (("salloc", "echo 'salloc: Granted job allocation 7' >&2"),
                           ("squeue", "exec sleep 30")):   # squeue never answers
            path = os.path.join(bin_, name)
            with open(path, "w") as f:
                f.write("#!/bin/sh\n%s\n" % body)
            os.chmod(path, 0o755)
        self.local = slurm.LocalSlurm(self.dir, "t")
        self.local.env["PATH"] = bin_ + os.pathsep + self.local.env.get("PATH", "")

    def test_squeue_timeout_is_a_failed_allocation_naming_the_command(self):
        """squeue not answering after salloc granted the allocation: allocate returns None and
        the log names the command and its timeout (it raised TimeoutExpired); the job is kept
        for down() to cancel."""
        log = os.path.join(self.dir, "testbed.log")
        with open(log, "w") as f, unittest.mock.patch.object(slurm, "SQUEUE_S", 0.5, create=True):
            self.assertIsNone(self.local.allocate(["ps", "w0"], "mlf-t", f))
        with open(log) as f:
            text = f.read()
        self.assertIn("slurm: allocation 7 granted, but 'squeue -h -j 7 -o %N' did not answer within 0.5 s", text)
        self.assertEqual(self.local.job, "7")


if __name__ == "__main__":
    unittest.main()
