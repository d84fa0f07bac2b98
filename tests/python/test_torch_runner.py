"""Unit tests of tools/mlfcluster's worker_program "torch" and system gloo (docs/torch-example.md): validation,
the workers' command lines, and results.json from hand-made gloo / torch records folders.
Run: python3 -m unittest discover -s tests/python (no torch needed)."""
import json
import os
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))

from exp_case import ExpCase  # noqa: E402
from mlfcluster import results  # noqa: E402
from mlfcluster.experiment import GLOO_PORT, ExperimentError  # noqa: E402
from mlfcluster.runner import Runner  # noqa: E402

BASE = {"name": "t", "cluster": os.path.join(ROOT, "conf/cluster-fabric.json"), "systems": ["mlfabric-a", "gloo"],
        "compute": "C2", "network": "N1", "rate_scale": 0.1, "period_s": 5, "target_accuracy": 0.85,
        "time_limit_s": 120, "seed": 3, "worker_program": "torch", "lr": 0.01, "lr_sync": 0.04}


class Tmp(ExpCase):
    BASE = BASE

    def write(self, rel, obj=None, lines=None):
        p = os.path.join(self.dir, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            if lines is not None:
                f.write("".join(json.dumps(x) + "\n" for x in lines))
            else:
                json.dump(obj, f)


class Validation(Tmp):
    def bad(self, word, **kv):
        msg = super().bad(word, **kv)
        self.assertTrue(msg.startswith(os.path.join(self.dir, "exp.json") + ": "), msg)
        return msg

    def test_accepted(self):
        e = self.exp()
        self.assertEqual(e.worker_program, "torch")
        self.assertEqual(e.systems, ["mlfabric-a", "gloo"])
        self.assertEqual(e.ips["w0"], "10.84.0.10")
        self.assertEqual(self.exp(worker_program=None, systems=["mlfabric-a"]).worker_program, "c")

    def test_unknown_worker_program_names_the_key(self):
        msg = self.bad('worker_program: unknown "java"', worker_program="java")
        self.assertIn("c, torch", msg)

    def test_gloo_needs_torch(self):
        self.bad('system gloo (torch.distributed) needs "worker_program": "torch"', worker_program="c")
        self.bad('system gloo (torch.distributed) needs "worker_program": "torch"', worker_program=None)

    def test_torch_refuses_c_only_settings(self):
        self.bad("rr-sync runs the C workload", systems=["mlfabric-a", "rr-sync"])
        self.bad("model: not used with worker_program torch", model="784,64,10")
        self.bad("replication: not supported with worker_program torch", replication={"mode": "checkpoint",
                                                                                      "checkpoint_every": 5})
        self.bad("faults: not supported with worker_program torch", faults=[{"at_s": 1, "kind": "kill-server"}])

    def test_unknown_system_lists_gloo(self):
        with self.assertRaises(ExperimentError) as cm:
            self.exp(systems=["horovod"])
        self.assertIn("gloo", str(cm.exception))


class FakeProcs:
    def __init__(self):
        self.started = []

    def start(self, name, log, argv, env=None):
        self.started.append((name, argv, env))
        return name


class CommandLines(Tmp):
    def workers(self, sys_, **kv):
        e = self.exp(**kv)
        r = Runner(e, self.dir)
        fp = FakeProcs()
        r.cur = {"procs": fp}
        rec = os.path.join(self.dir, "rec")
        r.torch_workers(sys_, sys_ if sys_ != "gloo" else "async", rec, lambda n: os.path.join(self.dir, n))
        self.assertIn("t_workers", r.cur)
        return e, fp.started

    @staticmethod
    def opt(argv, k):
        return argv[argv.index(k) + 1]

    def test_gloo(self):
        e, st = self.workers("gloo")
        self.assertEqual([s[0] for s in st], ["worker@w0", "worker@w1", "worker@w2", "worker@w3"])
        for i, (name, argv, env) in enumerate(st):
            ns = argv.index(e.python)
            self.assertEqual(argv[:ns], [e.tb, "exec", e.cluster, name.split("@")[1]])
            self.assertEqual(argv[ns + 1], os.path.join(ROOT, "examples", "torch_fashion_mnist.py"))
            self.assertEqual(self.opt(argv, "--backend"), "gloo")
            self.assertEqual(self.opt(argv, "--rank"), str(i))
            self.assertEqual(self.opt(argv, "--world"), "4")
            self.assertEqual(self.opt(argv, "--master-addr"), "10.84.0.10")
            self.assertEqual(self.opt(argv, "--master-port"), str(GLOO_PORT))
            self.assertEqual(self.opt(argv, "--lr"), "0.04")          # lr_sync: the averaged gradient's
            self.assertEqual(self.opt(argv, "--straggle"), "0.10,4")  # C2
            self.assertEqual(self.opt(argv, "--seed"), str(3000 + i + 1))
            self.assertNotIn("--mode", argv)
            self.assertNotIn("--cluster", argv)
            self.assertEqual(env["GLOO_SOCKET_IFNAME"], "eth0")

    def test_fabric(self):
        # over the fabric the example is a plain user script: its place comes in the MLF_* variables
        e, st = self.workers("mlfabric-a")
        for i, (name, argv, env) in enumerate(st):
            h = name.split("@")[1]
            self.assertEqual((env["MLF_MODE"], env["MLF_RANK"], env["MLF_SIZE"]), ("mlfabric-a", str(i), "4"))
            self.assertEqual((env["MLF_SERVER"], env["MLF_HOST"], env["MLF_CLUSTER"]), ("ps", h, e.cluster))
            self.assertEqual(env["MLF_WORKERS"], "w0,w1,w2,w3")   # rank 0 = w0: evaluates, initial model
            self.assertEqual(self.opt(argv, "--lr"), "0.01")
            self.assertEqual(self.opt(argv, "--records"), os.path.join(self.dir, "rec", h))
            self.assertEqual(env["MLF_RECORDS"], os.path.join(self.dir, "rec", h))
            self.assertEqual(env["PYTHONPATH"], os.path.join(ROOT, "build", "python"))
            for k in ("--backend", "--mode", "--cluster", "--host", "--shard"):
                self.assertNotIn(k, argv)

    def test_worker_command(self):
        e, st = self.workers("async", worker_command=["python3", "train.py", "--epochs", "2"],
                             worker_program=None, lr_sync=None, systems=["async"])
        self.assertEqual(e.worker_program, "command")
        for i, (name, argv, env) in enumerate(st):
            ns = argv.index("python3")
            self.assertEqual(argv[ns:], ["python3", "train.py", "--epochs", "2"])
            self.assertEqual((env["MLF_MODE"], env["MLF_RANK"], env["MLF_HOST"]), ("async", str(i), name.split("@")[1]))

    def test_worker_command_checks(self):
        self.bad("worker_command: a non-empty list of strings", worker_command="python3 x.py", worker_program=None)
        self.bad("worker_command: a non-empty list of strings", worker_command=[], worker_program=None)
        self.bad("worker_command: replaces worker_program", worker_command=["x"])
        self.bad("worker_command: system gloo runs its own workers", worker_command=["x"], worker_program=None)


class Results(Tmp):
    def test_gloo_folder(self):
        t0 = 1000.0
        self.write("experiment.json", dict(BASE, systems=["gloo"]))
        self.write("gloo/run.json", {"system": "gloo", "t0": t0, "t_end": t0 + 40, "n_workers": 2,
                                     "worker_program": "torch", "stop_reason": "target"})
        self.write("gloo/records/w0/accuracy.jsonl", lines=[
            {"t": t0 + 2, "version": 10, "accuracy": 0.5, "loss": 1.5},
            {"t": t0 + 12.5, "version": 300, "accuracy": 0.86, "loss": 0.4},
            {"t": t0 + 14, "version": 350, "accuracy": 0.84, "loss": 0.42}])
        self.write("gloo/records/w0/worker.json", {"iterations": 360, "pushed": 360, "dropped": 0,
                                                   "mean_iteration_s": 0.1})
        self.write("gloo/records/w1/worker.json", {"iterations": 360, "pushed": 360, "dropped": 0,
                                                   "mean_iteration_s": 0.3})
        for h in ("w0", "w1"):
            self.write("gloo/records/%s/pushes.jsonl" % h, lines=[{"t": t0 + k, "id": None} for k in range(5)])
        res = results.compute(self.dir)
        g = res["systems"]["gloo"]
        self.assertTrue(g["reached"])
        self.assertAlmostEqual(g["time_to_target_s"], 12.5)
        self.assertAlmostEqual(g["final_accuracy"], 0.84)
        self.assertEqual(g["evaluations"], 3)
        self.assertEqual(g["applied"], 720)          # 360 steps x 2 ranks
        self.assertEqual(g["iterations"], 720)
        self.assertAlmostEqual(g["mean_iteration_s"], 0.2)
        self.assertEqual(g["dropped_fraction"], 0)
        self.assertEqual(g["worker_program"], "torch")
        self.assertIsNone(g["delay"]["max"])
        self.assertEqual(results.last_acc(os.path.join(self.dir, "gloo", "records")), ("0.84", "350"))
        self.assertIn("gloo", results.summary(res))

    def test_torch_fabric_folder_reads_the_root_workers_accuracy(self):
        t0 = 500.0
        self.write("experiment.json", dict(BASE, systems=["mlfabric-a"]))
        self.write("mlfabric-a/run.json", {"system": "mlfabric-a", "t0": t0, "t_end": t0 + 30, "n_workers": 2,
                                           "worker_program": "torch"})
        self.write("mlfabric-a/records/server.json", {"applied": 3, "version": 3, "rx_bytes": 740472})
        self.write("mlfabric-a/records/applied.jsonl", lines=[{"t": t0 + k, "delay": k, "id": k} for k in (1, 2, 3)])
        self.write("mlfabric-a/records/w0/accuracy.jsonl", lines=[
            {"t": t0 + 4, "version": 1, "accuracy": 0.6, "loss": 1.0},
            {"t": t0 + 9, "version": 3, "accuracy": 0.9, "loss": 0.3}])
        self.write("mlfabric-a/records/w1/worker.json", {"iterations": 2, "pushed": 2, "dropped": 1,
                                                         "mean_iteration_s": 0.05})
        m = results.compute(self.dir)["systems"]["mlfabric-a"]
        self.assertTrue(m["reached"])
        self.assertAlmostEqual(m["time_to_target_s"], 9)
        self.assertEqual(m["evaluations"], 2)
        self.assertEqual(m["applied"], 3)
        self.assertEqual(m["delay"]["max"], 3)
        # a folder without any evaluation: not reached, nothing invented
        os.remove(os.path.join(self.dir, "mlfabric-a/records/w0/accuracy.jsonl"))
        m = results.compute(self.dir)["systems"]["mlfabric-a"]
        self.assertFalse(m["reached"])
        self.assertEqual(m["evaluations"], 0)


if __name__ == "__main__":
    unittest.main()
