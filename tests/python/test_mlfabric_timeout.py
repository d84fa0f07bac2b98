"""The dataplane timeout from Python (docs/api.md "Timeouts"): against a fake dataplane that
accepts the connection and never answers, an async worker's push raises mlfabric.Error with
errno ETIMEDOUT naming the dataplane's socket within the dataplane timeout (plus the slack of a
busy machine), and close returns; MLF_DP_TIMEOUT_S sets that timeout, whatever timeout_s says.
Against a hung dataplane that never accepts (its listen backlog full), init raises ETIMEDOUT
naming the host and the socket within the timeout instead of blocking for ever.
Run by tests/python/run_tests.sh."""
import errno
import os
import socket
import subprocess
import sys
import time
import unittest

import numpy as np

import mlfabric
from test_mlfabric_py import Base, SilentDataplane

SLACK_S = 5.0


class TestDataplaneTimeout(Base):
    def setUp(self):
        super().setUp()
        self.dp = SilentDataplane(os.path.join(self.dir, "dp.sock"))

    def tearDown(self):
        os.environ.pop("MLF_DP_TIMEOUT_S", None)
        super().tearDown()
        self.dp.close()

    def push_until_error(self, ep, timeout_s):
        """Pushes until one raises; returns (the exception, seconds since the first push)."""
        t = time.monotonic()
        u = np.ones(4, np.float32)
        while time.monotonic() - t < timeout_s + SLACK_S:
            try:
                ep.push(u, 1.0, 0)
            except mlfabric.Error as e:
                return e, time.monotonic() - t
            time.sleep(0.02)
        self.fail("no push failed within %.1f s of a silent dataplane" % (timeout_s + SLACK_S))

    def test_push_names_the_socket_and_close_returns(self):
        os.environ["MLF_DP_TIMEOUT_S"] = "0.5"  # else max(timeout_s, 10 s)
        ep = mlfabric.init(self.cluster, "w0", mode="async", sock=self.dp.path, timeout_s=0.5)
        e, took = self.push_until_error(ep, 0.5)
        self.assertEqual(e.errno, errno.ETIMEDOUT, str(e))
        self.assertIn(self.dp.path, str(e))
        self.assertGreaterEqual(took, 0.45)
        t = time.monotonic()
        ep.close()
        self.assertLess(time.monotonic() - t, 0.5 + SLACK_S)

    def test_env_overrides_the_endpoint_timeout(self):
        os.environ["MLF_DP_TIMEOUT_S"] = "0.5"
        ep = mlfabric.init(self.cluster, "w0", mode="async", sock=self.dp.path, timeout_s=60)
        e, took = self.push_until_error(ep, 0.5)
        self.assertEqual(e.errno, errno.ETIMEDOUT, str(e))
        self.assertIn("within 0.5 s", str(e))
        ep.close()


# Run in a child: a use-after-free of the batch crashes it (a double free aborts) instead of
# the test runner. Two threads wait for the same get, or one waits while another closes: the
# batch is reaped by one of them while the other still waits on it.
TWO_WAITERS = r"""
import sys, threading, numpy as np, mlfabric
cluster, sock, how = sys.argv[1], sys.argv[2], sys.argv[3]
ep = mlfabric.init(cluster, "w0", mode="async", sock=sock, timeout_s=0.3)
h = ep._h
errs = []
for rnd in range(10 if how == "wait" else 4):
    h.gets_start([("ps", np.zeros(4, np.float32))], 0.3)
    def wait():
        try:
            h.gets_wait(0)
            errs.append("no error")
        except mlfabric.Error as e:
            errs.append(e.errno)
    ts = [threading.Thread(target=wait) for _ in range(2 if how == "wait" else 1)]
    for t in ts:
        t.start()
    if how == "close":
        while True:
            try:
                h.close()
                break
            except mlfabric.Error:
                pass
    for t in ts:
        t.join()
    if how == "close":
        ep = mlfabric.init(cluster, "w0", mode="async", sock=sock, timeout_s=0.3)
        h = ep._h
print("ok", len(errs), sorted(set(map(str, errs))))
"""


class TestGetsReapedWhileWaiting(Base):
    """gets_wait beside another thread's gets_wait or close: the batch is freed once, after
    its last waiter (it was freed under the other waiter: a crash, or a double free)."""

    def setUp(self):
        super().setUp()
        self.dp = SilentDataplane(os.path.join(self.dir, "dp.sock"))

    def tearDown(self):
        super().tearDown()
        self.dp.close()

    def run_child(self, how, dp_timeout_s):
        env = dict(os.environ, MLF_DP_TIMEOUT_S=dp_timeout_s)
        r = subprocess.run([sys.executable, "-c", TWO_WAITERS, self.cluster, self.dp.path, how],
                           env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        self.assertIn("ok", r.stdout)
        return r.stdout

    def test_two_waiters(self):
        out = self.run_child("wait", "5")
        # each waiter times out, or finds the batch already reaped by the other (EINVAL)
        self.assertRegex(out, r"ok 20 \['%d'(, '%d')?\]" % (errno.ETIMEDOUT, errno.EINVAL))

    def test_close_beside_a_waiter(self):
        # each round lasts the dataplane timeout (the get's transfer request waits for it): 1 s
        # keeps the four rounds at 4 s (20 s at 5 s); the old code still hangs or double-frees
        # in the first round or two with 1 s
        self.run_child("close", "1")


class HungDataplane:
    """A UNIX SOCK_SEQPACKET socket that listens and never accepts, its backlog full: the next
    connect blocks (a dataplane stopped or stuck in its loop)."""

    def __init__(self, path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock.bind(path)
        self.sock.listen(0)
        self.fill = []
        for _ in range(4):  # Linux queues backlog + 1 connections
            c = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            c.setblocking(False)
            try:
                c.connect(path)
            except BlockingIOError:
                c.close()
                return
            self.fill.append(c)
        raise AssertionError("the backlog of the hung dataplane never filled")

    def close(self):
        for c in self.fill:
            c.close()
        self.sock.close()


class TestHungDataplane(Base):
    def setUp(self):
        super().setUp()
        self.dp = HungDataplane(os.path.join(self.dir, "dp.sock"))

    def tearDown(self):
        os.environ.pop("MLF_DP_TIMEOUT_S", None)
        super().tearDown()
        self.dp.close()

    def test_init_times_out_naming_host_and_socket(self):
        os.environ["MLF_DP_TIMEOUT_S"] = "0.5"
        t = time.monotonic()
        with self.assertRaises(mlfabric.Error) as cm:
            mlfabric.init(self.cluster, "w0", mode="async", sock=self.dp.path, timeout_s=0.5)
        took = time.monotonic() - t
        e = cm.exception
        self.assertEqual(e.errno, errno.ETIMEDOUT, str(e))
        self.assertIn(self.dp.path, str(e))
        self.assertIn("w0", str(e))
        self.assertIn("did not accept", str(e))
        self.assertGreaterEqual(took, 0.45)
        self.assertLess(took, 0.5 + SLACK_S)


if __name__ == "__main__":
    unittest.main()
