"""Unit tests of the fault driver's waits (tools/mlfcluster/faults.py, docs/experiments.md "What the
runner does"): a kill-worker waits for the worker's first push, is injected once it is there,
and is recorded as not injected, naming the event, when the run ends first."""
import json
import os
import shutil
import sys
import tempfile
import time
import types
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from mlfcluster.experiment import Fault  # noqa: E402
from mlfcluster.faults import FaultDriver  # noqa: E402


class FakeProcs:
    """Procs.live: a live 'worker@w3' (a name only: the tests replace the injection, nothing is
    signalled)."""

    def __init__(self):
        self.proc = types.SimpleNamespace(name="worker@w3", pid=0)

    def live(self, name):
        return self.proc if name == "worker@w3" else None


class TestKillWorkerWaitsForAPush(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="mlf-faultwait-")
        os.makedirs(os.path.join(self.dir, "records", "w3"))
        self.fault = Fault(1, 0, "kill-worker", "w3", 0, 0, {})
        self.fd = FaultDriver([self.fault], self.dir, FakeProcs(), None, time.time(),
                              os.path.join(self.dir, "faults.log"))
        # no process is killed here: the injection itself is not under test
        self.fd.event = lambda i, phase, f: "injected %d %s" % (i, phase)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def records(self):
        with open(os.path.join(self.dir, "faults.jsonl")) as f:
            return [json.loads(l) for l in f if l.strip()]

    def test_waits_for_the_first_push(self):
        self.assertIn("first push of worker w3", self.fd.awaited("start", self.fault))
        with open(os.path.join(self.dir, "records", "w3", "pushes.jsonl"), "w") as f:
            f.write('{"t": 1, "id": 1}\n')
        self.assertEqual(self.fd.awaited("start", self.fault), "")
        self.fd.run()
        with open(os.path.join(self.dir, "faults.log")) as f:
            log = f.read()
        self.assertIn("injected 1 start", log)

    def test_not_injected_when_the_run_ends_first(self):
        self.fd.start()
        time.sleep(0.3)
        self.fd.stop()
        recs = self.records()
        self.assertEqual(len(recs), 1, recs)
        self.assertFalse(recs[0]["ok"])
        self.assertIn("not injected: the run ended before the first push of worker w3", recs[0]["action"])
        with open(os.path.join(self.dir, "faults.log")) as f:
            self.assertIn("waiting for the first push of worker w3", f.read())


if __name__ == "__main__":
    unittest.main()
