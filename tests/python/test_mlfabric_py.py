"""Unit tests of the Python package mlfabric (python/mlfabric, docs/python.md), run by
/usr/bin/python3 with PYTHONPATH=build/python (tests/python/run_tests.sh):

- errors before the library is called: a missing cluster file, malformed JSON, a file without
  hosts, an unknown host or server, an unknown mode -> mlfabric.Error naming the problem;
- no dataplane (no socket, a socket nobody listens on) and no scheduler (a fake dataplane that
  accepts the connection and never answers) -> mlfabric.Error naming it within 5 s, with the
  GIL released while the library waits, and a second thread's call refused (EBUSY);
- buffers: anything but a C-contiguous float32 buffer -> TypeError naming float32;
- mlfabric.torch: the flat parameter vector (backed and copied), and DistributedOptimizer.step
  against a fake endpoint (u = p_after - p_before, the version passed, the model loaded,
  allreduce in mlfabric-s, on_drop).
"""
import array
import errno
import json
import os
import shutil
import socket
import tempfile
import threading
import time
import unittest

import numpy as np
import torch

import mlfabric
import mlfabric.torch as mt


def write_cluster(d, hosts=(("ps", "server"), ("w0", "worker"), ("w1", "worker"))):
    """A cluster file in directory d; returns its path."""
    path = os.path.join(d, "cluster.json")
    doc = {"name": "pyt", "hosts": [{"name": n, "ip": f"10.99.0.{i + 2}", "up_gbps": 10, "down_gbps": 10,
                                      "roles": [r]} for i, (n, r) in enumerate(hosts)]}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f)
    return path


class SilentDataplane:
    """A UNIX SOCK_SEQPACKET socket that accepts connections and never answers: a dataplane
    whose scheduler is not running, as far as registration is concerned."""

    def __init__(self, path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock.bind(path)
        self.sock.listen(8)
        self.conns = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(c)

    def close(self):
        self.sock.close()
        for c in self.conns:
            c.close()


class Base(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="mlf-py-")
        self.cluster = write_cluster(self.dir)

    def tearDown(self):
        mlfabric.shutdown()
        shutil.rmtree(self.dir, ignore_errors=True)

    def assertError(self, fn, *needles, code=None, within=5.0):
        """fn() raises mlfabric.Error within `within` s, its message containing every needle."""
        t = time.monotonic()
        with self.assertRaises(mlfabric.Error) as cm:
            fn()
        took = time.monotonic() - t
        self.assertLess(took, within, f"{cm.exception} took {took:.1f} s")
        for n in needles:
            self.assertIn(n, str(cm.exception))
        if code is not None:
            self.assertEqual(cm.exception.errno, code, str(cm.exception))
        return cm.exception


class TestInitErrors(Base):
    def test_error_is_oserror(self):
        self.assertTrue(issubclass(mlfabric.Error, OSError))
        e = mlfabric.Error(errno.ETIMEDOUT, "get: server ps stopped answering")
        self.assertEqual(e.errno, errno.ETIMEDOUT)
        self.assertEqual(e.strerror, "get: server ps stopped answering")

    def test_missing_cluster_file(self):
        path = os.path.join(self.dir, "nope.json")
        self.assertError(lambda: mlfabric.init(path, "w0"), path, "No such file", code=errno.ENOENT)

    def test_malformed_json(self):
        path = os.path.join(self.dir, "bad.json")
        with open(path, "w") as f:
            f.write('{"name": "x", "hosts": [')
        self.assertError(lambda: mlfabric.init(path, "w0"), path, "not valid JSON", code=errno.EINVAL)

    def test_no_hosts_list(self):
        path = os.path.join(self.dir, "nohosts.json")
        with open(path, "w") as f:
            json.dump({"name": "x", "hosts": {"w0": {}}}, f)
        self.assertError(lambda: mlfabric.init(path, "w0"), path, '"hosts"', code=errno.EINVAL)

    def test_unknown_host_names_the_known_hosts(self):
        e = self.assertError(lambda: mlfabric.init(self.cluster, "w7"), "'w7'", "ps, w0, w1", self.cluster)
        self.assertEqual(e.errno, errno.EINVAL)

    def test_unknown_server(self):
        self.assertError(lambda: mlfabric.init(self.cluster, "w0", server="px"), "'px'", "ps, w0, w1")

    def test_no_server_role(self):
        path = write_cluster(os.path.join(self.dir), hosts=(("a", "worker"), ("b", "worker")))
        self.assertError(lambda: mlfabric.init(path, "a"), path, 'role "server"')

    def test_unknown_mode_and_role(self):
        self.assertError(lambda: mlfabric.init(self.cluster, "w0", mode="mlfabric-x"), "mlfabric-x", "async")
        self.assertError(lambda: mlfabric.init(self.cluster, "w0", role="boss"), "boss")
        self.assertError(lambda: mlfabric.init(self.cluster, "w0", timeout_s=0), "timeout_s")

    def test_no_dataplane_socket(self):
        sock = os.path.join(self.dir, "none.sock")
        self.assertError(lambda: mlfabric.init(self.cluster, "w0", mode="async", sock=sock),
                         sock, "is mlf-dataplane running", code=errno.ENOTCONN)

    def test_default_socket_is_named(self):
        # the default socket of a cluster named "pyt" does not exist on this machine
        self.assertError(lambda: mlfabric.init(self.cluster, "w1", mode="async"), "/run/mlfabric/pyt-w1.sock")

    def test_dataplane_not_listening(self):
        sock = os.path.join(self.dir, "dead.sock")
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.bind(sock)  # bound, never listening: like a dataplane that died and left its socket
        try:
            self.assertError(lambda: mlfabric.init(self.cluster, "w0", mode="async", sock=sock),
                             sock, "refused")
        finally:
            s.close()

    def test_endpoint_before_init(self):
        self.assertError(mlfabric.endpoint, "mlfabric.init()", code=errno.ENOTCONN)


class TestFakeDataplane(Base):
    def setUp(self):
        super().setUp()
        self.dp = SilentDataplane(os.path.join(self.dir, "dp.sock"))

    def tearDown(self):
        super().tearDown()
        self.dp.close()

    def test_no_scheduler_fails_in_time_releasing_the_gil(self):
        ticks = [0]
        stop = threading.Event()

        def spin():
            while not stop.is_set():
                ticks[0] += 1
                time.sleep(0.01)

        t = threading.Thread(target=spin)
        t.start()
        try:
            self.assertError(lambda: mlfabric.init(self.cluster, "w0", mode="mlfabric-a", sock=self.dp.path,
                                                   timeout_s=1.0), "scheduler", "1.0 s")
        finally:
            stop.set()
            t.join()
        # about 100 ticks in 1 s: the other thread ran while the library waited
        self.assertGreater(ticks[0], 30)

    def test_one_call_at_a_time(self):
        # a registration that waits for the (silent) scheduler occupies the endpoint: a second
        # thread's close or call is refused with EBUSY instead of racing the library
        h = mlfabric._mlfabric.Handle(self.cluster, "w0", "mlfabric-a", self.dp.path, 1.0)
        errs = []

        def register():
            try:
                h.register_as_worker("ps")
            except mlfabric.Error as e:
                errs.append(e)

        t = threading.Thread(target=register)
        t.start()
        time.sleep(0.3)
        self.assertError(h.close, "another thread", code=errno.EBUSY)
        self.assertError(h.register_as_aggregator, "another thread", code=errno.EBUSY)
        self.assertEqual(h.stats()["pushed"], 0)  # getters still answer
        t.join()
        self.assertEqual(len(errs), 1)
        self.assertIn("scheduler", str(errs[0]))
        h.close()
        self.assertTrue(h.closed)

    def test_chained_gets_begin_one_after_another(self):
        # gets_start(..., chain=True) (DistributedOptimizer's prefetch): each get begins only when
        # the one before it ended. Against a dataplane that never answers, each get fails at its
        # timeout T, so two chained gets take at least 2 T before the batch is reaped, where two
        # gets at once (chain=False) both begin at the start
        t_out = 0.3
        os.environ["MLF_DP_TIMEOUT_S"] = "1"   # the silent dataplane holds the event thread 1 s at most
        try:
            h = mlfabric._mlfabric.Handle(self.cluster, "w0", "async", self.dp.path, 1.0)
        finally:
            del os.environ["MLF_DP_TIMEOUT_S"]
        try:
            h.register_as_worker("ps")
            a, b = np.zeros(4, np.float32), np.zeros(4, np.float32)
            t = time.monotonic()
            h.gets_start([("ps", a), ("ps", b)], t_out, 2, True)
            with self.assertRaises(mlfabric.Error) as cm:
                h.gets_wait(0)                  # fails; the failure reaps the batch: joins get 1
            took = time.monotonic() - t
            self.assertIn("ps", str(cm.exception))
            self.assertGreaterEqual(took, 2 * t_out)
            t0, t1 = h.last_get_times
            self.assertGreaterEqual(t1 - t0, t_out * 0.99)
        finally:
            h.close()

    def test_open_only_and_close(self):
        ep = mlfabric.init(self.cluster, "w0", role=None, mode="async", sock=self.dp.path, timeout_s=1)
        self.assertIs(mlfabric.endpoint(), ep)
        self.assertEqual(ep.role, "")
        self.assertIsNone(ep.server)
        self.assertEqual(ep.stats(), dict(pushed=0, sent=0, dropped=0, aggregated=0, models=0,
                                         push_buffers=0, push_buffers_reused=0))
        self.assertError(lambda: ep.push(np.zeros(3, np.float32), 0.0, 0), "no server")
        with ep:
            pass
        self.assertTrue(ep.closed)
        ep.close()  # idempotent
        self.assertError(ep.stats, "closed", code=errno.ENOTCONN)

    def test_buffers_must_be_float32(self):
        ep = mlfabric.init(self.cluster, "w0", role=None, mode="async", sock=self.dp.path, timeout_s=1)
        h = ep._h
        bad = {
            "float64 numpy": np.zeros(4),
            "int32 numpy": np.zeros(4, np.int32),
            "array('d')": array.array("d", [0.0] * 4),
            "bytes": b"\0" * 16,
            "torch float64": torch.zeros(4, dtype=torch.float64).numpy(),
        }
        for what, buf in bad.items():
            with self.subTest(what), self.assertRaises(TypeError) as cm:
                h.push("ps", buf, 1.0, 0)
            self.assertIn("float32", str(cm.exception))
        with self.assertRaises(TypeError) as cm:
            h.push("ps", np.zeros((4, 4), np.float32)[:, 1], 1.0, 0)  # not contiguous
        self.assertIn("C-contiguous", str(cm.exception))
        with self.assertRaises(TypeError) as cm:
            h.push("ps", [1.0, 2.0], 1.0, 0)
        self.assertIn("float32", str(cm.exception))
        ro = np.zeros(4, np.float32)
        ro.flags.writeable = False
        with self.assertRaises(TypeError) as cm:
            h.get("ps", ro, 0.1)  # the output must be writable
        self.assertIn("writable", str(cm.exception))
        with self.assertRaises(TypeError):
            h.push_get("ps", np.zeros(4, np.float32), 1.0, 0, np.zeros(4, np.float64), 0.1)
        ep.close()


# ---- mlfabric.torch ----------------------------------------------------------------------


def small_net(dtype=torch.float32):
    torch.manual_seed(3)
    return torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.ReLU(), torch.nn.Linear(4, 3)).to(dtype)


class TestFlatParams(unittest.TestCase):
    def test_backed_round_trip(self):
        net = small_net()
        before = torch.nn.utils.parameters_to_vector(net.parameters()).clone()
        fp = mt.FlatParams(mt._param_list(net.named_parameters()))
        self.assertTrue(fp.backed)
        self.assertEqual(fp.n, 5 * 4 + 4 + 4 * 3 + 3)
        self.assertTrue(torch.equal(fp.flat, before))   # the values survived the re-pointing
        # the parameters are views of the vector: writes go both ways, no copies
        fp.flat[0] = 42.0
        self.assertEqual(float(net[0].weight.view(-1)[0]), 42.0)
        with torch.no_grad():
            net[2].bias[2] = -7.0
        self.assertEqual(float(fp.flat[-1]), -7.0)
        vec = torch.arange(fp.n, dtype=torch.float32)
        fp.load(vec.numpy())
        self.assertTrue(torch.equal(torch.nn.utils.parameters_to_vector(net.parameters()), vec))
        # the module still trains: gradients flow to the re-pointed parameters
        net(torch.ones(2, 5)).sum().backward()
        self.assertIsNotNone(net[0].weight.grad)
        self.assertEqual(net[0].weight.grad.shape, (4, 5))

    def test_copied_round_trip(self):
        net = small_net(torch.float64)  # not float32: gathered and scattered by copies
        fp = mt.FlatParams(mt._param_list(net))
        self.assertFalse(fp.backed)
        want = torch.nn.utils.parameters_to_vector(net.parameters()).float()
        self.assertTrue(torch.equal(fp.gather(), want))
        vec = torch.linspace(-1, 1, fp.n)
        fp.load(vec)
        self.assertTrue(torch.allclose(torch.nn.utils.parameters_to_vector(net.parameters()).float(), vec))
        with self.assertRaises(ValueError):
            fp.load(torch.zeros(fp.n + 1))

    def test_param_list(self):
        net = small_net()
        a = mt._param_list(net)
        self.assertEqual([p.shape for p in a], [p.shape for p in net.parameters()])
        self.assertEqual(len(mt._param_list(list(net.parameters()) * 2)), 4)  # duplicates once
        with self.assertRaises(ValueError):
            mt._param_list([])


class FakeEndpoint:
    """A Python stand-in for mlfabric.Endpoint: a server holding model w (float32) that applies
    pushed updates with eq. 2 without momentum, plus `drift` per push (other workers' updates),
    so that the model a worker gets differs from its own parameters."""

    def __init__(self, w0, mode="async", drift=0.5):
        self.mode, self.host, self.server = mode, "w0", "ps"
        self.w = np.array(w0, dtype=np.float32)
        self.version = 0
        self.drift = drift
        self.pushes = []     # (u copy, norm, version)
        self.dropped = 0

    def push(self, u, norm, version):
        u = np.frombuffer(u, dtype=np.float32).copy()
        self.pushes.append((u, norm, version))
        self.w += u + self.drift
        self.version += 2    # this update and another worker's
        return len(self.pushes)

    def get(self, out, timeout_s=None):
        np.frombuffer(out, dtype=np.float32)[:] = self.w
        return self.version

    def push_get(self, u, norm, version, out, timeout_s=None):
        self.push(u, norm, version)
        return self.get(out)

    def send_model(self, m, version=0, timeout_s=None):
        self.w[:] = np.frombuffer(m, dtype=np.float32)

    def stats(self):
        return dict(pushed=len(self.pushes), sent=len(self.pushes), dropped=self.dropped, aggregated=0, models=0)


class TestDistributedOptimizer(unittest.TestCase):
    def run_steps(self, mode, dtype=torch.float32):
        net = small_net(dtype)
        w0 = torch.nn.utils.parameters_to_vector(net.parameters()).detach().float().numpy().copy()
        ep = FakeEndpoint(w0, mode=mode)
        ep.dropped = 3  # drops before the optimizer existed are not this optimizer's
        drops = []
        opt = mt.DistributedOptimizer(torch.optim.SGD(net.parameters(), lr=0.1), net.named_parameters(),
                                      endpoint=ep, on_drop=drops.append)
        self.assertEqual(opt.mode, mode)  # from the endpoint
        x = torch.randn(8, 5, dtype=dtype)
        for step in range(3):
            p_before = torch.nn.utils.parameters_to_vector(net.parameters()).detach().float().clone()
            version_before = opt.version
            opt.zero_grad()
            net(x).pow(2).sum().backward()
            grads = torch.cat([p.grad.reshape(-1) for p in net.parameters()]).float().clone()
            if step == 1:
                ep.dropped += 2
            opt.step()
            u, norm, version = ep.pushes[-1]
            # u = p_after_local_step - p_before = -lr * grad (plain SGD)
            np.testing.assert_allclose(u, (-0.1 * grads).numpy(), rtol=1e-5, atol=1e-6)
            self.assertAlmostEqual(norm, float(np.linalg.norm(u)), places=4)
            self.assertEqual(version, version_before)
            self.assertGreater(np.abs(u).max(), 0)
            # the parameters now hold the server's model (w + u + drift), not the local step
            after = torch.nn.utils.parameters_to_vector(net.parameters()).detach().float()
            np.testing.assert_allclose(after.numpy(), ep.w, rtol=1e-6, atol=1e-6)
            np.testing.assert_allclose(after.numpy(), p_before.numpy() + u + 0.5, rtol=1e-5, atol=1e-5)
            self.assertEqual(opt.version, ep.version)
        self.assertEqual(len(ep.pushes), 3)
        self.assertEqual(drops, [2])
        self.assertEqual(opt.dropped, 2)
        self.assertEqual(opt.steps, 3)
        self.assertIs(opt.param_groups, opt.optimizer.param_groups)  # delegated
        return opt

    def test_step_async(self):
        opt = self.run_steps("async")
        self.assertTrue(opt.params.backed)

    def test_step_sync_uses_push_get(self):
        calls = []
        orig = FakeEndpoint.push_get

        def spy(self, *a, **k):
            calls.append(a[2])
            return orig(self, *a, **k)
        FakeEndpoint.push_get = spy
        try:
            self.run_steps("mlfabric-s")
        finally:
            FakeEndpoint.push_get = orig
        self.assertEqual(calls, [0, 2, 4])  # versions passed to push_get

    def test_step_float64_params(self):
        opt = self.run_steps("mlfabric-a", dtype=torch.float64)
        self.assertFalse(opt.params.backed)

    def test_bad_mode(self):
        net = small_net()
        ep = FakeEndpoint(np.zeros(1, np.float32))
        with self.assertRaises(mlfabric.Error):
            mt.DistributedOptimizer(torch.optim.SGD(net.parameters(), lr=0.1), net.named_parameters(),
                                    mode="allreduce", endpoint=ep)


class TestBroadcast(unittest.TestCase):
    def test_root_sends_then_all_get(self):
        src = small_net()
        want = torch.nn.utils.parameters_to_vector(src.parameters()).detach().clone()
        ep = FakeEndpoint(np.zeros(want.numel(), np.float32))
        sent = []
        ep.send_model = lambda m, version=0, timeout_s=None: (sent.append(version),
                                                               ep.w.__setitem__(slice(None), np.frombuffer(m, np.float32)))
        self.assertEqual(mt.broadcast_parameters(src, root="w0", endpoint=ep), 0)
        self.assertEqual(sent, [0])
        np.testing.assert_array_equal(ep.w, want.numpy())
        other = small_net()
        with torch.no_grad():
            for p in other.parameters():
                p.zero_()
        ep.host = "w1"  # not the root: only gets
        mt.broadcast_parameters(other.named_parameters(), root="w0", endpoint=ep)
        self.assertEqual(sent, [0])
        self.assertTrue(torch.equal(torch.nn.utils.parameters_to_vector(other.parameters()), want))


if __name__ == "__main__":
    unittest.main()
