"""Tests of config validation (tools/mlfcluster/validate.py, docs/experiments.md "Ranges",
docs/cluster-config.md): a corpus of bad experiment and cluster files, each refused with one line
naming the file and the exact key (by Experiment, `check` and `run`, and for clusters by the C
parser too), bounds applied before parsing, and every shipped conf/*.json still accepted.
Run: python3 -m unittest discover -s tests/python"""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

from exp_case import ROOT, ExpCase

sys.path.insert(0, os.path.join(ROOT, "tools"))
from mlfcluster import validate  # noqa: E402
from mlfcluster.experiment import OPTIONAL, REQUIRED, Experiment, ExperimentError  # noqa: E402

CLI = os.path.join(ROOT, "tools", "mlf-cluster")
TESTBED = os.path.join(os.environ.get("MLF_BUILD") or os.path.join(ROOT, "build"), "mlf-testbed")
NAN, INF = float("nan"), float("inf")

# (key the refusal must name, change to conf/exp-default.json); python's json writes NaN/Infinity
BAD_EXPERIMENTS = [
    ("period_s", {"period_s": 1e-9}), ("period_s", {"period_s": 0}), ("period_s", {"period_s": NAN}),
    ("rate_scale", {"rate_scale": 1e9}), ("rate_scale", {"rate_scale": NAN}), ("rate_scale", {"rate_scale": 0}),
    ("seed", {"seed": 1.5}), ("seed", {"seed": 1e300}), ("seed", {"seed": 0}), ("seed", {"seed": -INF}),
    ("time_limit_s", {"time_limit_s": 1e12}), ("time_limit_s", {"time_limit_s": INF}),
    ("target_accuracy", {"target_accuracy": 2}), ("target_accuracy", {"target_accuracy": 0}),
    ("target_accuracy", {"target_accuracy": NAN}),
    ("lr", {"lr": INF}), ("lr", {"lr": -0.1}), ("lr_sync", {"lr_sync": NAN}), ("t_lag", {"t_lag": INF}),
    ("batch", {"batch": 1e20}), ("batch", {"batch": 0}), ("momentum", {"momentum": NAN}),
    ("compute_s", {"compute_s": 1e9}), ("tau_max", {"tau_max": INF}), ("eval_every_s", {"eval_every_s": 1e-300 * 0}),
    ("eval_images", {"eval_images": 1e9}), ("batch_ms", {"batch_ms": INF}), ("speeds_at_s", {"speeds_at_s": 1e12}),
    ("ssp_s", {"ssp_s": 1e15}), ("asp_w", {"asp_w": -1}), ("shards", {"shards": 33}),
    ("model", {"model": "784,1e8,10"}), ("model", {"model": "784,100000000,10"}), ("model", {"model": [784, 0, 10]}),
    ("model", {"model": "784," * 20 + "10"}),
    ("workers", {"workers": ["w0", "w0"]}), ("workers", {"workers": "w0,w1,w0"}),
    ("aggregators", {"aggregators": ["w0", "w0"]}),
    ("systems", {"systems": ["mlfabric-a", "mlfabric-a"]}), ("systems", {"systems": []}),
    ("name", {"name": ".."}), ("name", {"name": "."}), ("name", {"name": "a/b"}), ("name", {"name": "x" * 65}),
    ("network", {"network": "N7"}), ("cluster", {"cluster": ""}),
    ("replication.div_max", {"replication": {"mode": "mlfabric", "div_max": INF}}),
    ("replication.checkpoint_every", {"replication": {"mode": "checkpoint", "checkpoint_every": 1.5}}),
    ("faults[0].at_s", {"faults": [{"at_s": NAN, "kind": "kill-worker", "host": "w1"}]}),
    ("faults[0].duration_s", {"faults": [{"at_s": 1, "kind": "cut-link", "host": "w1", "duration_s": 1e9}]}),
    ("faults[0].loss", {"faults": [{"at_s": 1, "kind": "loss-burst", "host": "w1", "duration_s": 1, "loss": 2}]}),
    ("faults", {"faults": [{"at_s": 1, "kind": "kill-worker", "host": "w1"}] * 10001}),
    ("speeds[1]", {"speeds": [1, INF, 1, 1]}), ("adsp_rate", {"adsp_rate": 1e6}),
    ("hop_backups", {"hop_backups": 65}), ("esync_global_lr", {"esync_global_lr": NAN}),
    ("scheduler_args[0]", {"scheduler_args": ["--x" * 100]}),
    ("period_s", {"period_s": 0.1, "time_limit_s": 86400}),  # 864,000 rate periods
]

# (key the refusal must name, change to conf/cluster-fabric.json given as Python code on c and H);
# the C parser names the same key (C_KEY where it words it otherwise; a NaN or Infinity is not JSON)
BAD_CLUSTERS = [
    ("hosts[1].up_gbps", "H[1]['up_gbps'] = 0"), ("hosts[1].down_gbps", "H[1]['down_gbps'] = -1"),
    ("hosts[1].down_gbps", "H[1]['down_gbps'] = NAN"), ("hosts[0].up_gbps", "H[0]['up_gbps'] = INF"),
    ("hosts[2].up_gbps", "H[2]['up_gbps'] = 1e9"),
    ("mtu", "c['mtu'] = 100"), ("mtu", "c['mtu'] = 1107"), ("mtu", "c['mtu'] = 9001"), ("mtu", "c['mtu'] = 1500.5"),
    ("prefix_len", "c['prefix_len'] = 31"), ("udp_port", "c['udp_port'] = 70000"),
    ("control_port", "c['control_port'] = 0"),
    ("hosts[1].name", "H[1]['name'] = H[0]['name']"), ("hosts[1].ip", "H[1]['ip'] = H[0]['ip']"),
    ("hosts[1].mac", "H[0]['mac'] = H[1]['mac'] = '02:00:00:00:00:09'"),
    ("hosts[1].ip", "H[1]['ip'] = '10.99.9.9'"), ("hosts[1].ip", "H[1]['ip'] = '10.84.0.255'"),
    ("hosts[1].ip", "H[1]['ip'] = '224.0.0.1'"), ("hosts[1].ip", "H[1]['ip'] = '10.84.0.300'"),
    ("hosts[1].roles", "H[1]['roles'] = ['worker', 'scheduler']"),
    ("hosts[1].roles[0]", "H[1]['roles'] = ['chef']"),
    ("hosts", "H.extend({'name': 'h%d' % i, 'ip': '10.84.%d.%d' % (i // 200, 1 + i % 200)} for i in range(3000))"),
    ('unknown key "colour"', "c['colour'] = 1"), ('hosts[0]: unknown key "colour"', "H[0]['colour'] = 1"),
    ("name", "c['name'] = 'a' * 16"), ("name", "c['name'] = '-x'"), ("hosts[0].name", "H[0]['name'] = '.a'"),
    ("frame_auth", "c['frame_auth'] = True"),
    ("graph", "c['graph'] = {'w0': ['ps'], 'ps': ['w0']}"),
]

C_KEY = {'unknown key "colour"': "colour: unknown key", 'hosts[0]: unknown key "colour"': "hosts[0].colour: unknown key",
         "hosts[1].roles[0]": "hosts[1].roles[0]: unknown role", "graph": "graph: \"ps\" is not a worker"}


def exp_doc(**kv):
    with open(os.path.join(ROOT, "conf", "exp-default.json")) as f:
        x = json.load(f)
    x["cluster"] = os.path.join(ROOT, "conf", "cluster-fabric.json")
    x.update(kv)
    return x


def cluster_doc(change):
    with open(os.path.join(ROOT, "conf", "cluster-fabric.json")) as f:
        c = json.load(f)
    c.pop("key_file", None)
    exec(change, {"c": c, "H": c["hosts"], "NAN": NAN, "INF": INF})
    return c


class Corpus(ExpCase):
    def write(self, name, doc):
        p = os.path.join(self.dir, name)
        with open(p, "w") as f:
            f.write(doc if isinstance(doc, str) else json.dumps(doc))
        return p

    def refused(self, path, key):
        """PATH is refused by Experiment with one line "FILE: KEY: ..." (FILE the file at fault)."""
        with self.assertRaises(ExperimentError) as cm:
            Experiment(path, ROOT, os.path.join(ROOT, "build"), "mpirun", check_programs=False)
        msg = str(cm.exception)
        self.assertNotIn("\n", msg)
        self.assertRegex(msg, r"^\S+: %s%s" % (re.escape(key), "" if "unknown key" in key else ": "), msg)
        return msg

    def test_bad_experiments(self):
        for key, change in BAD_EXPERIMENTS:
            with self.subTest(key=key, change=str(change)[:80]):
                msg = self.refused(self.write("exp.json", exp_doc(**change)), key)
                self.assertTrue(msg.startswith(os.path.join(self.dir, "exp.json") + ": " + key + ": "), msg)

    def test_bad_clusters(self):
        """Refused by Experiment naming the cluster file and the key, and by the C parser
        (mlf-testbed, lib/proto/cluster.c) naming the same key."""
        for key, change in BAD_CLUSTERS:
            with self.subTest(key=key, change=change[:80]):
                cp = self.write("c.json", cluster_doc(change))
                msg = self.refused(self.write("exp.json", exp_doc(cluster=cp)), key)
                self.assertTrue(msg.startswith(cp + ": " + key + ("" if "unknown key" in key else ": ")), msg)
                if os.access(TESTBED, os.X_OK):
                    r = subprocess.run([TESTBED, "status", cp], capture_output=True, text=True, timeout=30)
                    self.assertNotEqual(r.returncode, 0, r.stdout)
                    want = "line 1: malformed JSON" if "NAN" in change or "INF" in change else C_KEY.get(key, key + ":")
                    self.assertIn(cp + ": " + want, r.stderr)

    def test_ranges_named_in_messages(self):
        """The message gives the range: the MTU minimum with how it is made up, (0, 1] for accuracy."""
        cp = self.write("c.json", cluster_doc("c['mtu'] = 100"))
        msg = self.refused(self.write("exp.json", exp_doc(cluster=cp)), "mtu")
        self.assertIn("mtu: an integer in [%d, 9000] (the minimum: IPv4 20 + UDP 8 + MLfabric 40 + frame tag 36 (stamp 8, nonce 12, MAC 16)"
                      % validate.MTU_MIN, msg)
        msg = self.refused(self.write("exp.json", exp_doc(target_accuracy=2)), "target_accuracy")
        self.assertIn("target_accuracy: a number in (0, 1] expected, got 2", msg)
        msg = self.refused(self.write("exp.json", exp_doc(rate_scale=NAN)), "rate_scale")
        self.assertIn("rate_scale: a number in [0.0001, 40] expected, got NaN", msg)

    def test_bounded_before_parsing(self):
        """A 100,000-deep document, a 50 MB name and a cluster that is /dev/zero or a FIFO are
        refused with one line, without a traceback or reading the whole input."""
        deep = self.write("exp.json", "[" * 100000 + "]" * 100000)
        self.assertIn(": nesting: arrays and objects at most 8 deep expected", self.refused(deep, "nesting"))
        big = self.write("exp.json", exp_doc(name="a" * (50 << 20)))
        self.assertIn("file size: at most", self.refused(big, "file size"))
        self.assertIn("/dev/zero: file type: a regular file expected",
                      self.refused(self.write("exp.json", exp_doc(cluster="/dev/zero")), "file type"))
        fifo = os.path.join(self.dir, "fifo.json")
        os.mkfifo(fifo)
        self.refused(self.write("exp.json", exp_doc(cluster=fifo)), "file type")
        dup = self.write("exp.json", '{"name": "a", "name": "b"}')
        with self.assertRaises(ExperimentError) as cm:
            Experiment(dup, ROOT, os.path.join(ROOT, "build"), "mpirun", check_programs=False)
        self.assertIn('key "name" appears twice', str(cm.exception))

    def test_check_run_and_rates_refuse(self):
        """check, run and rates exit 2 with the same single line (one code path); rates on a
        1e-9 s period is refused before it builds a schedule."""
        cp = self.write("c.json", cluster_doc("H[1]['up_gbps'] = 0"))
        cases = [(self.write("e1.json", exp_doc(period_s=1e-9)), "period_s"),
                 (self.write("e2.json", exp_doc(cluster=cp)), "hosts[1].up_gbps"),
                 (self.write("e3.json", "[" * 100000 + "]" * 100000), "nesting")]
        for path, key in cases:
            lines = set()
            for cmd in (["check", path], ["run", path, "--out", os.path.join(self.dir, "run")], ["rates", path]):
                r = subprocess.run([CLI] + cmd, capture_output=True, text=True, timeout=60)
                self.assertEqual(r.returncode, 2, (cmd, r.stderr))
                self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
                self.assertIn(": %s: " % key, r.stderr)
                lines.add(r.stderr)
            self.assertEqual(len(lines), 1, lines)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "run")))
        r = subprocess.run([CLI, "rates", os.path.join(ROOT, "conf", "exp-default.json"), "--periods", "100000000"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertIn("rates: --periods: an integer in [0, 100000] expected (5 hosts), got 100000000", r.stderr)


class Shipped(unittest.TestCase):
    def test_shipped_configs_pass(self):
        """Every shipped experiment and the cluster it names pass validation, and `check`
        accepts each whose init_weights (a built file) exists; every shipped cluster passes."""
        conf = os.path.join(ROOT, "conf")
        n = 0
        for f in sorted(os.listdir(conf)):
            p = os.path.join(conf, f)
            if f.startswith("cluster-"):
                validate.cluster(p, p)
                continue
            if not re.match(r"(exp-|fault-|soak)", f):
                continue  # plans and table2 grids
            with open(p) as fh:
                x = json.load(fh)
            with self.subTest(f=f):
                validate.experiment(p)
                if x.get("init_weights") and not os.path.exists(os.path.join(ROOT, x["init_weights"])):
                    continue
                Experiment(p, ROOT, os.path.join(ROOT, "build"), "mpirun", check_programs=False)
                n += 1
        self.assertGreater(n, 25)

    def test_schema_covers_every_key(self):
        """The experiment schema knows exactly the keys experiment.py does, and each has a range."""
        with open(os.path.join(ROOT, "tools", "mlfcluster", "schema", "experiment.schema.json")) as f:
            s = json.load(f)
        self.assertEqual(set(s["properties"]), set(REQUIRED) | set(OPTIONAL))
        self.assertEqual(set(s["required"]), set(REQUIRED))
        for k, v in s["properties"].items():
            self.assertIn("x-expected", v, k)

    def test_ranges_documented(self):
        """Every key's range (x-expected) is written in its docs page."""
        for schema, doc in (("experiment", "experiments.md"), ("cluster", "cluster-config.md")):
            with open(os.path.join(ROOT, "docs", doc)) as f:
                text = f.read()
            with open(os.path.join(ROOT, "tools", "mlfcluster", "schema", schema + ".schema.json")) as f:
                props = json.load(f)["properties"]
            for k, v in props.items():
                if k == "hosts":
                    for hk, hv in v["items"]["properties"].items():
                        self.assertIn("`hosts[].%s` | %s |" % (hk, hv["x-expected"]), text)
                    continue
                self.assertIn("`%s` | %s |" % (k, v["x-expected"]), text, (doc, k))

    def test_mtu_minimum_from_c_headers(self):
        """validate.MTU_MIN is CLUSTER_MTU_MIN: the sizes in lib/proto/wire.h."""
        with open(os.path.join(ROOT, "lib", "proto", "wire.h")) as f:
            h = f.read()
        for name, v in validate.MTU_HEADERS.items():
            self.assertRegex(h, r"#define %s %d\b" % (name, v))
        with open(os.path.join(ROOT, "lib", "proto", "cluster.h")) as f:
            self.assertIn("#define CLUSTER_MTU_MIN (%s)" % " + ".join(validate.MTU_HEADERS), f.read())
        self.assertEqual(validate.MTU_MIN, 1128)


if __name__ == "__main__":
    unittest.main()
