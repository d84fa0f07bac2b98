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
from mlfcluster.records import SCHED_FRESH  # noqa: E402
from mlfcluster.runner import Runner  # noqa: E402


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


class FakeWorker:
    """A live worker process whose log is PATH, started at T_START (s)."""

    def __init__(self, log, t_start):
        self.log, self.t_start = log, t_start

    def alive(self):
        return True


class TestTargetWaitsForARestartedScheduler(unittest.TestCase):
    """Runner.faults_over: after a kill-scheduler a fault run may stop on its target only when
    every worker registered again ("a scheduler is back") and the restarted scheduler planned a
    transfer (a fresh id chosen after the kill in records/transfers.jsonl). A loaded machine once
    reached the target in the tick of the kill, before the restarted scheduler planned anything,
    and mlf-fault's "scheduler restart" check failed."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="mlf-faultover-")
        os.makedirs(os.path.join(self.dir, "records"))
        self.log = os.path.join(self.dir, "worker-w0.log")
        open(self.log, "w").close()
        self.t0, self.kill = 1000.0, 1006.0
        with open(os.path.join(self.dir, "faults.jsonl"), "w") as f:
            f.write(json.dumps({"t": self.kill, "event": "start", "kind": "kill-scheduler", "ok": True}) + "\n")
        self.me = types.SimpleNamespace(exp=types.SimpleNamespace(faults=[Fault(1, 6, "kill-scheduler", "ps", 0, 0, {})]))
        procs = types.SimpleNamespace(matching=lambda pat: [FakeWorker(self.log, self.t0)])
        self.c = {"sysdir": self.dir, "procs": procs}

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def over(self):
        return Runner.faults_over(self.me, self.c, self.t0)

    def transfers(self, *ids):
        with open(os.path.join(self.dir, "records", "transfers.jsonl"), "w") as f:
            for x in ids:
                f.write(json.dumps({"xfer": x, "start": self.kill + 0.5}) + "\n")

    def test_waits_for_registration_and_a_plan(self):
        old = SCHED_FRESH | (int((self.kill - 5) * 1000) << 20) | 3
        new = SCHED_FRESH | (int((self.kill + 0.2) * 1000) << 20) | 1
        self.transfers(old)
        self.assertEqual(self.over(), -1)  # the worker is not back
        with open(self.log, "w") as f:
            f.write("INFO w0: a scheduler is back\n")
        self.assertEqual(self.over(), -1)  # back, but only the killed scheduler's transfers
        with open(os.path.join(self.dir, "records", "transfers.jsonl"), "w") as f:
            f.write('{"xfer": 1, "st\n' + json.dumps({"xfer": new, "start": self.kill + 0.5}) + "\n")
        self.assertEqual(self.over(), -1)  # a malformed record: no stop yet, and no exception
        self.transfers(old, 42, new)
        self.assertEqual(self.over(), self.kill)  # the planned end t0 + at_s is the kill time
        os.remove(os.path.join(self.dir, "records", "transfers.jsonl"))
        self.assertEqual(self.over(), self.kill)  # found once: not read again


if __name__ == "__main__":
    unittest.main()
