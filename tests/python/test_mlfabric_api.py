"""Unit tests of the Horovod-style API of the mlfabric package (docs/python.md "API"), without a
cluster: init() from the launcher's MLF_* variables (explicit arguments win; bad values raise
mlfabric.Error naming the variable), rank/size/local_rank, the parameter groups per server
(partition), and DistributedOptimizer's gradient hooks against a fake endpoint: each group is
pushed during backward as soon as its gradients exist (before backward returns), to its own
server, with u = -lr * grad; backward_passes_per_step accumulates; overlap=False pushes in
step(); errors name the parameters and the server.
"""
import errno
import json
import os
import tempfile
import unittest
from unittest import mock

import numpy as np
import torch

import mlfabric
import mlfabric.torch as mt
from test_mlfabric_py import Base, SilentDataplane, write_cluster


class TestInitFromEnv(Base):
    def setUp(self):
        super().setUp()
        self.cluster = write_cluster(self.dir, (("ps", "server"), ("w0", "worker"), ("w1", "worker"),
                                                ("w2", "worker")))
        self.dp = SilentDataplane(os.path.join(self.dir, "dp.sock"))
        self.env = {"MLF_CLUSTER": self.cluster, "MLF_HOST": "w1", "MLF_MODE": "async", "MLF_ROLE": "",
                    "MLF_SOCK": self.dp.path, "MLF_TIMEOUT": "1"}

    def tearDown(self):
        super().tearDown()
        self.dp.close()

    def init(self, env=None, **kw):
        with mock.patch.dict(os.environ, dict(self.env, **(env or {})), clear=True):
            return mlfabric.init(**kw)

    def test_reads_the_launcher_variables(self):
        ep = self.init(role=None)
        self.assertEqual((ep.cluster, ep.host, ep.mode, ep.timeout_s), (self.cluster, "w1", "async", 1.0))
        self.assertEqual((mlfabric.rank(), mlfabric.size(), mlfabric.local_rank()), (1, 3, 0))
        self.assertEqual(mlfabric.workers(), ["w0", "w1", "w2"])
        self.assertEqual(ep.servers, [])

    def test_rank_order_and_servers_from_env(self):
        ep = self.init({"MLF_WORKERS": "w2,w1", "MLF_SERVERS": "ps,w0", "MLF_LOCAL_RANK": "3"}, role=None)
        self.assertEqual((ep.rank, ep.size, ep.local_rank, ep.servers), (1, 2, 3, ["ps", "w0"]))

    def test_explicit_arguments_win(self):
        ep = self.init({"MLF_RANK": "2"}, host="w0", role=None, rank=0, timeout_s=2.5)
        self.assertEqual((ep.host, ep.rank, ep.timeout_s), ("w0", 0, 2.5))

    def test_worker_role_from_env_registers(self):
        # async: registration needs no scheduler; the server defaults to the cluster's
        ep = self.init({"MLF_ROLE": "worker"})
        self.assertEqual((ep.role, ep.server), ("worker", "ps"))

    def test_errors_name_the_variable(self):
        with mock.patch.dict(os.environ, {}, clear=True):
            self.assertError(mlfabric.init, "MLF_CLUSTER", "MLF_HOST", code=errno.EINVAL)
        self.assertError(lambda: self.init({"MLF_TIMEOUT": "soon"}, role=None), "MLF_TIMEOUT")
        self.assertError(lambda: self.init({"MLF_RANK": "one"}, role=None), "MLF_RANK")
        self.assertError(lambda: self.init({"MLF_WORKERS": "w0,w9"}, role=None), "w9", "MLF_WORKERS")
        self.assertError(lambda: self.init({"MLF_RANK": "5"}, role=None), "rank 5")
        self.assertError(lambda: self.init({"MLF_HOST": "w7"}, role=None), "no host named 'w7'")

    def test_single_worker_collectives_are_local(self):
        self.init({"MLF_WORKERS": "w1"}, role=None)
        np.testing.assert_array_equal(mlfabric.allreduce([1.5, 2.0]), np.array([1.5, 2.0], np.float32))
        self.assertEqual(mlfabric.broadcast_object({"a": 1}), {"a": 1})
        self.assertTrue(torch.equal(mt.allreduce(torch.tensor([3.0])), torch.tensor([3.0])))


class TestPartition(unittest.TestCase):
    def test_groups_cover_in_order(self):
        self.assertEqual(mt.partition([10, 10, 10, 10], 2), [(0, 2), (2, 4)])
        self.assertEqual(mt.partition([100, 1, 1, 1], 2), [(0, 1), (1, 4)])
        self.assertEqual(mt.partition([5], 3), [(0, 1)])
        self.assertEqual(mt.partition([1, 1, 1], 3), [(0, 1), (1, 2), (2, 3)])
        for sizes in ([3, 9, 1, 7, 7, 2], [1] * 10, [50, 1, 1, 1, 1, 50]):
            for n in range(1, 7):
                g = mt.partition(sizes, n)
                self.assertEqual(g[0][0], 0)
                self.assertEqual(g[-1][1], len(sizes))
                self.assertTrue(all(a[1] == b[0] for a, b in zip(g, g[1:])))
                self.assertEqual(len(g), min(n, len(sizes)))


class MultiServer:
    """A fake endpoint with one model per server host; records each push with the time order."""

    def __init__(self, models):
        self.mode, self.host, self.server = "async", "w0", None
        self.servers = list(models)
        self.workers = ["w0"]
        self.timeout_s = 1.0
        self.models = {s: np.array(m, np.float32) for s, m in models.items()}
        self.log = []          # ("push", server, u) / ("get", server)
        self._h = self

    def push(self, server, u, norm, version):
        u = np.frombuffer(u, np.float32).copy()
        self.log.append(("push", server, u, version))
        self.models[server] += u
        return len(self.log)

    def get(self, server, out, timeout_s):
        self.log.append(("get", server))
        np.frombuffer(out, np.float32)[:] = self.models[server]
        return 1

    def send_model(self, server, m, version, timeout_s):
        self.models[server][:] = np.frombuffer(m, np.float32)

    def stats(self):
        return dict(pushed=0, sent=0, dropped=0, aggregated=0, models=0)


def mlp():
    torch.manual_seed(3)
    return torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.Tanh(), torch.nn.Linear(5, 4), torch.nn.Tanh(),
                               torch.nn.Linear(4, 2))


class TestOverlap(unittest.TestCase):
    def setUp(self):
        self.net = mlp()
        self.w0 = torch.nn.utils.parameters_to_vector(self.net.parameters()).detach().numpy().copy()

    def make(self, n_servers, **kw):
        ps = [p.numel() for p in self.net.parameters()]
        groups = mt.partition(ps, n_servers)
        offs = np.cumsum([0] + ps)
        models = {"ps%d" % i: np.zeros(offs[b] - offs[a], np.float32) for i, (a, b) in enumerate(groups)}
        self.ep = MultiServer(models)
        opt = mt.DistributedOptimizer(torch.optim.SGD(self.net.parameters(), lr=0.1),
                                      named_parameters=self.net.named_parameters(), endpoint=self.ep, **kw)
        self.assertEqual([e[0] for e in self.ep.log], ["get"] * len(models))  # init_model: the servers' models
        self.ep.log = []
        return opt

    def test_groups_pushed_during_backward_last_layers_first(self):
        opt = self.make(3)
        self.assertEqual([g[0] for g in opt.groups], ["ps0", "ps1", "ps2"])
        # init_model: rank 0 gave each server its slice
        np.testing.assert_array_equal(np.concatenate(list(self.ep.models.values())), self.w0)
        seen = []
        # a hook on the first layer's input gradient runs after the last layers' gradients exist
        x = torch.randn(7, 6, requires_grad=True)
        x.register_hook(lambda g: seen.append([e[1] for e in self.ep.log if e[0] == "push"]))
        loss = self.net(x).pow(2).sum()
        loss.backward()
        grads = torch.cat([p.grad.reshape(-1) for p in self.net.parameters()]).clone()
        self.assertEqual(seen[0][:2], ["ps2", "ps1"])   # pushed while backward still ran
        self.assertEqual(sorted(e[1] for e in self.ep.log if e[0] == "push"), ["ps0", "ps1", "ps2"])
        n_push = len(self.ep.log)
        opt.step()
        self.assertEqual([e[0] for e in self.ep.log[n_push:]], ["get"] * 3)  # step only gets
        u = np.concatenate([e[2] for e in sorted((e for e in self.ep.log if e[0] == "push"), key=lambda e: e[1])])
        np.testing.assert_allclose(u, (-0.1 * grads).numpy(), rtol=1e-5, atol=1e-6)
        after = torch.nn.utils.parameters_to_vector(self.net.parameters()).detach().numpy()
        np.testing.assert_allclose(after, self.w0 + u, rtol=1e-6, atol=1e-6)

    def test_without_overlap_step_pushes(self):
        opt = self.make(2, overlap=False)
        self.net(torch.randn(4, 6)).sum().backward()
        self.assertEqual([e for e in self.ep.log if e[0] == "push"], [])
        opt.step()
        self.assertEqual([e[0] for e in self.ep.log[-4:]], ["push", "push", "get", "get"])

    def test_backward_passes_per_step(self):
        opt = self.make(2, backward_passes_per_step=2)
        x1, x2 = torch.randn(4, 6), torch.randn(4, 6)
        opt.zero_grad()
        self.net(x1).sum().backward()
        opt.step()                                         # first pass: nothing sent
        self.assertEqual(self.ep.log, [])
        opt.zero_grad()                                    # keeps the first pass's gradients
        self.net(x2).sum().backward()                      # second: pushed from the hooks
        pushes = [e for e in self.ep.log if e[0] == "push"]
        self.assertEqual(len(pushes), 2)
        ref = mlp()
        ref(x1).sum().backward()
        ref(x2).sum().backward()
        g = torch.cat([p.grad.reshape(-1) for p in ref.parameters()])
        u = np.concatenate([e[2] for e in sorted(pushes, key=lambda e: e[1])])
        np.testing.assert_allclose(u, (-0.1 * g).numpy(), rtol=1e-5, atol=1e-6)
        opt.step()
        self.assertEqual(opt.steps, 1)

    def test_errors_name_parameters_and_server(self):
        opt = self.make(2)

        def refuse(server, u, norm, version):
            raise mlfabric.Error(errno.ENOTCONN, "push: dataplane gone")
        self.ep.push = refuse
        with self.assertRaises(mlfabric.Error) as cm:
            self.net(torch.randn(4, 6)).sum().backward()
        self.assertIn("to server ps1", str(cm.exception))
        self.assertIn("2.weight ... 4.bias", str(cm.exception))

    def test_background_gets_start_after_each_push(self):
        # a handle with gets_start/gets_add/gets_wait: each group's get is given right after its
        # push, during backward (push order: the last layers first), so it runs beside the rest
        # of backward; step() gives none and waits for none; the next forward waits for each
        # group just before the first module that uses it
        given, waited = [], []
        ep = None

        def pushes():
            return [e[1] for e in ep.log if e[0] == "push"]

        class Gets:
            def gets_start(h, jobs, timeout_s, total=0):
                h.jobs, h.total = list(jobs), total
                given.append((jobs[0][0], pushes()))

            def gets_add(h, server, out):
                h.jobs.append((server, out))
                given.append((server, pushes()))
                return len(h.jobs) - 1

            def gets_wait(h, k):
                srv, out = h.jobs[k]
                np.frombuffer(out, np.float32)[:] = ep.models[srv]
                waited.append(srv)
                return 5 + k
        opt = self.make(2)
        ep = self.ep
        gets = Gets()
        ep._h = gets
        gets.push = MultiServer.push.__get__(ep)
        self.assertTrue(opt._background())
        self.net(torch.randn(4, 6)).sum().backward()
        # ps1's get was given after ps1's push and before ps0's: beside the rest of backward
        self.assertEqual(given, [("ps1", ["ps1"]), ("ps0", ["ps1", "ps0"])])
        self.assertEqual(gets.total, 2)
        opt.step()
        self.assertEqual(waited, [])                      # nothing waited in step()
        self.assertEqual(len(given), 2)                   # and no get given there
        self.assertEqual(ep.pending, opt._wait)
        seen = []
        for k in (0, 2):
            self.net[k].register_forward_pre_hook(lambda m, i: seen.append(list(waited)))
        self.net(torch.randn(4, 6))
        # the first layer is group 0, whose get was given last: it waits for both
        self.assertEqual(seen, [["ps1", "ps0"], ["ps1", "ps0"]])
        self.assertEqual((opt.versions, opt.version), ([6, 5], 5))
        self.assertIsNone(ep.pending)
        after = torch.nn.utils.parameters_to_vector(self.net.parameters()).detach().numpy()
        np.testing.assert_array_equal(after, np.concatenate([ep.models["ps0"], ep.models["ps1"]]))
        # the next step's pushes find the batch ended and start a new one
        self.net(torch.randn(4, 6)).sum().backward()
        self.assertEqual(given[2:], [("ps1", ["ps1", "ps0", "ps1"]), ("ps0", ["ps1", "ps0", "ps1", "ps0"])])

    def test_prefetch_takes_each_group_after_its_push_and_the_forward_waits_for_nothing(self):
        # prefetch=True (mode async, docs/python.md "Prefetch"): step() starts one batch of every
        # group's get, chained (one after another) in the order the step pushed them, into a
        # staging vector (not the parameters); in the next backward each hook pushes its group,
        # then copies that group's prefetched model into its parameters; the forward in between
        # waits for no get; wait() lets the batch end and forgets it
        ep = None
        starts, waited = [], []

        def pushes():
            return [e[1] for e in ep.log if e[0] == "push"]

        class Gets:
            last_get_times = (1.0, 2.0)

            def gets_start(h, jobs, timeout_s, total=0, chain=False):
                h.jobs, h.chain = list(jobs), chain
                # what the servers hold now (a prefetch gets them early), +100 to tell them apart
                h.snap = {srv: ep.models[srv] + (100 if chain else 0) for srv, _ in jobs}
                starts.append(([j[0] for j in jobs], total, chain))

            def gets_add(h, server, out):
                h.jobs.append((server, out))
                h.snap[server] = ep.models[server].copy()
                return len(h.jobs) - 1

            def gets_wait(h, k):
                srv, out = h.jobs[k]
                np.frombuffer(out, np.float32)[:] = h.snap[srv]
                waited.append((srv, h.chain, pushes()))
                return 5 + k
        with self.assertRaises(mlfabric.Error) as cm:
            self.make(2, prefetch=True, mode="mlfabric-a")
        self.assertIn("prefetch: mode async only", str(cm.exception))
        opt = self.make(2, prefetch=True)
        ep = self.ep
        gets = Gets()
        ep._h = gets
        gets.push = MultiServer.push.__get__(ep)
        flat = opt.params.flat.numpy()
        # first step: no batch yet, the gets follow the pushes; step() waits for them, then prefetches
        self.net(torch.randn(4, 6)).sum().backward()
        opt.step()
        self.assertEqual(starts, [(["ps1"], 2, False), (["ps1", "ps0"], 2, True)])
        self.assertFalse(any(np.shares_memory(out, flat) for _, out in gets.jobs))
        self.assertEqual(ep.pending, opt._pre_wait)
        snap = dict(gets.snap)
        n_waited = len(waited)
        self.net(torch.randn(4, 6))
        self.assertEqual(len(waited), n_waited)            # the forward waited for nothing
        x = torch.randn(4, 6)
        self.net(x).sum().backward()
        grads = torch.cat([p.grad.reshape(-1) for p in self.net.parameters()]).clone()
        # each prefetched get was waited for right after its own group's push
        self.assertEqual(waited[n_waited:], [("ps1", True, ["ps1", "ps0", "ps1"]),
                                             ("ps0", True, ["ps1", "ps0", "ps1", "ps0"])])
        after = torch.nn.utils.parameters_to_vector(self.net.parameters()).detach().numpy()
        np.testing.assert_array_equal(after, np.concatenate([snap["ps0"], snap["ps1"]]))
        self.assertEqual(opt.versions, [6, 5])
        u = np.concatenate([e[2] for e in sorted((e for e in ep.log if e[0] == "push"), key=lambda e: e[1])[1::2]])
        np.testing.assert_allclose(u, (-0.1 * grads).numpy(), rtol=1e-5, atol=1e-6)
        opt.step()                                          # the next batch
        self.assertEqual(starts[-1], (["ps1", "ps0"], 2, True))
        opt.wait()                                          # ends it, forgets its models
        self.assertIsNone(opt._pre)
        self.assertIsNone(ep.pending)
        np.testing.assert_array_equal(torch.nn.utils.parameters_to_vector(self.net.parameters()).detach().numpy(), after)

    def test_trace_records_the_timeline(self):
        # MLF_TRACE (docs/python.md "Tracing the overlap"): one event per gradient, push, get
        # (with its thread's times and version), forward wait and step, written at flush
        ep = None

        class Gets:
            last_get_times = (1.5, 2.5)

            def gets_start(h, jobs, timeout_s, total=0):
                h.jobs = list(jobs)

            def gets_add(h, server, out):
                h.jobs.append((server, out))
                return len(h.jobs) - 1

            def gets_wait(h, k):
                np.frombuffer(h.jobs[k][1], np.float32)[:] = ep.models[h.jobs[k][0]]
                return 5 + k
        opt = self.make(2)
        ep = self.ep
        ep._h = Gets()
        ep._h.push = MultiServer.push.__get__(ep)
        fd, path = tempfile.mkstemp(suffix=".jsonl")
        os.close(fd)
        with mock.patch.object(mt, "_TRACE_FILE", path), mock.patch.object(mt, "_trace_buf", []):
            self.net(torch.randn(4, 6)).sum().backward()
            opt.step()
            self.net(torch.randn(4, 6))
            mt._trace_flush()
        try:
            with open(path) as f:
                evs = [json.loads(line) for line in f]
        finally:
            os.unlink(path)
        self.assertEqual([(e["ev"], e.get("g")) for e in evs],
                         [("grad", 1), ("pushed", 1), ("grad", 0), ("pushed", 0), ("step", None),
                          ("get", 1), ("get", 0), ("wait", 0)])
        gets = [e for e in evs if e["ev"] == "get"]
        self.assertEqual([(e["t0"], e["t"], e["v"]) for e in gets], [(1.5, 2.5, 5), (1.5, 2.5, 6)])
        self.assertLessEqual(evs[-1]["t0"], evs[-1]["t"])

    def test_bad_passes(self):
        with self.assertRaises(ValueError):
            self.make(1, backward_passes_per_step=0)


if __name__ == "__main__":
    unittest.main()
