"""Shared fixture of the runner's Python tests (test_mlfcluster.py, test_torch_runner.py): a
temporary folder per test, and experiment files made from the test class's BASE dict and loaded
with tools/mlfcluster's Experiment (programs not checked, so no build is needed)."""
import json
import os
import shutil
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))

from mlfcluster.experiment import Experiment, ExperimentError  # noqa: E402


class ExpCase(unittest.TestCase):
    """A test case with self.dir (removed afterwards), exp(**kv): BASE updated by kv (a value
    of None removes the key), written to self.dir/exp.json and loaded, and bad(word, **kv):
    such an experiment is refused with one line containing `word` (returns the message)."""
    BASE = {}

    def setUp(self):
        self.dir = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.dir)

    def exp(self, **kv):
        x = dict(self.BASE, **kv)
        for k in [k for k, v in x.items() if v is None]:
            del x[k]
        p = os.path.join(self.dir, "exp.json")
        with open(p, "w") as f:
            json.dump(x, f)
        return Experiment(p, ROOT, os.path.join(ROOT, "build"), "mpirun", check_programs=False)

    def bad(self, word, **kv):
        with self.assertRaises(ExperimentError) as cm:
            self.exp(**kv)
        msg = str(cm.exception)
        self.assertIn(word, msg)
        self.assertNotIn("\n", msg)
        return msg
