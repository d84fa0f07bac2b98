"""Unit tests of tools/mlf-top (no network namespaces): the text frame rendered from a canned
`status` answer, the waiting section (applications' waits and the scheduler's view, longest
first), the scheduler address from a cluster config, and the one-line errors (unreachable
scheduler naming host:port, a fake scheduler over TCP on 127.0.0.1 answering status).
Run: python3 -m unittest discover -s tests/python"""
import contextlib
import importlib.machinery
import importlib.util
import io
import json
import os
import socket
import tempfile
import threading
import unittest

TOP_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "mlf-top")
_loader = importlib.machinery.SourceFileLoader("mlf_top", TOP_PATH)
_spec = importlib.util.spec_from_loader("mlf_top", _loader)
top = importlib.util.module_from_spec(_spec)
_loader.exec_module(top)

T = 1000.0
STATUS = {
    "type": "status", "cluster": "c1", "t": T, "uptime_s": 42.0, "batches": 17, "peer_timeout_s": 2.0,
    "server": {"host": "ps", "mode": "mlfabric-a", "version": 120, "n_workers": 2},
    "hosts": [
        {"name": "ps", "roles": ["server", "scheduler"], "apps": ["server"], "connected": False,
         "alive": False, "up_gbps": 10.0, "down_gbps": 10.0, "silent_s": 4.5, "tx_gbps": 0.1,
         "rx_gbps": 3.25, "link_age_s": 4.5},
        {"name": "w0", "roles": ["worker"], "apps": ["worker"], "connected": True, "alive": True,
         "up_gbps": 1.0, "down_gbps": 2.0, "silent_s": 0.1, "tx_gbps": 0.75, "rx_gbps": 0.5, "link_age_s": 0.1,
         "clock_offset_ms": -50.125, "clock_err_ms": 0.08,
         "port": {"name": "port 0 (net_af_packet0, interface eth0)", "link_up": True, "speed_mbps": 10000,
                  "imissed": 5, "ierrors": 1, "rx_nombuf": 0, "oerrors": 2, "link_changes": 0}},
        {"name": "w1", "roles": ["worker"], "apps": [], "connected": False, "alive": False,
         "up_gbps": 10.0, "down_gbps": 10.0, "silent_s": None, "tx_gbps": None, "rx_gbps": None,
         "link_age_s": None},
    ],
    "n_transfers": 1,
    "transfers": [{"xfer": 2 << 40 | 5, "what": "update", "id": 2 << 40 | 5, "src": "w0", "dst": "ps",
                   "chan": 1, "bytes": 400000, "t_start": T - 1.0, "t_end": T - 0.5, "late_s": 0.5,
                   "replica": False}],
    "workers": [{"worker": "w0", "held": 3, "held_bytes": 1200000, "held_oldest_s": 0.4, "planned": 1,
                 "pulls": 1, "pull_oldest_s": 2.5}],
    "waits": [{"app": "worker@w0", "host": "w0", "what": "model (get)", "peer": "ps", "since": T - 2.5,
               "wait_s": 2.5}],
    "late": [{"who": "scheduler", "what": "update transfer 2199023255557 to ps (planned end passed)",
              "peer": "w0", "wait_s": 0.5},
             {"who": "scheduler", "what": "dataplane (declared dead)", "peer": "ps", "wait_s": 4.5}],
}


class RenderTest(unittest.TestCase):
    def test_hosts_rows(self):
        out = top.render(STATUS)
        rows = {line.split()[0]: line.split() for line in out.splitlines() if line[:3] in ("ps ", "w0 ", "w1 ")}
        self.assertEqual(sorted(rows), ["ps", "w0", "w1"])
        self.assertEqual(rows["ps"][1], "dead")
        self.assertEqual(rows["w0"][1:8], ["ok", "worker", "1.00", "2.00", "0.75", "0.50", "1"])
        self.assertEqual(rows["w0"][8:13], ["0", "3", "1", "1", "-50.12~0.08"])  # IN, HELD, PLAN, PULLS, CLOCK
        self.assertEqual(rows["w0"][13:], ["up10G", "8"])  # LINK, DROPS (5 + 1 + 0 + 2)
        self.assertEqual(rows["ps"][-3:], ["-", "-", "-"])  # no clock estimate, no port report yet
        self.assertEqual(rows["w1"][1:3], ["-", "(worker)"])  # never heard of, no app
        self.assertIn("-", rows["w1"][5:7])
        self.assertEqual(rows["ps"][8], "1")  # one transfer in flight towards ps
        self.assertIn("cluster c1", out)
        self.assertIn("server ps (mlfabric-a, version 120)", out)

    def test_port_columns(self):
        self.assertEqual(top.port_cols({"port": {"link_up": False, "imissed": 3}}), ("DOWN", "3"))
        self.assertEqual(top.port_cols({"port": {"link_up": True, "speed_mbps": 100}}), ("up100M", "0"))
        self.assertEqual(top.port_cols({"port": None}), ("-", "-"))

    def test_transfer_table(self):
        lines = top.render(STATUS).splitlines()
        row = [ln for ln in lines if ln.startswith(str(2 << 40 | 5))]
        self.assertEqual(len(row), 1)
        self.assertEqual(row[0].split()[1:6], ["update", "w0", "ps", "400000", "0.00s"])
        self.assertEqual(row[0].split()[6], "0.50s")

    def test_waiting_section_longest_first(self):
        self.assertEqual(top.waiting_lines(STATUS), [
            "scheduler waits 4.5 s for dataplane (declared dead) from ps",
            "worker@w0 waits 2.5 s for model (get) from ps",
            "scheduler waits 0.5 s for update transfer 2199023255557 to ps (planned end passed) from w0"])
        out = top.render(STATUS)
        self.assertIn("\nwaiting:\n  scheduler waits 4.5 s", out)

    def test_nothing_waits(self):
        st = dict(STATUS, waits=[], late=[], transfers=[], n_transfers=0)
        out = top.render(st)
        self.assertIn("waiting: nothing", out)
        self.assertNotIn("TRANSFER", out)


def write_cluster(d, hosts, port=None):
    path = os.path.join(d, "c.json")
    doc = {"name": "c1", "hosts": hosts}
    if port is not None:
        doc["control_port"] = port
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


class ConnectTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def run_top(self, argv):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = top.main(argv)
        return rc, out.getvalue(), err.getvalue()

    def test_scheduler_addr(self):
        p = write_cluster(self.tmp.name, [{"name": "a", "ip": "10.1.0.2", "roles": ["worker"]},
                                          {"name": "s", "ip": "10.1.0.3", "roles": ["scheduler"]}], 7171)
        self.assertEqual(top.scheduler_addr(p), ("s", "10.1.0.3", 7171))
        p = write_cluster(self.tmp.name, [{"name": "a", "ip": "10.1.0.2", "roles": ["worker"]}])
        with self.assertRaisesRegex(top.TopError, "no host with role scheduler"):
            top.scheduler_addr(p)

    def test_unreachable_names_host_port(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()  # nobody listens there now
        p = write_cluster(self.tmp.name, [{"name": "s", "ip": "127.0.0.1", "roles": ["scheduler"]}], port)
        rc, out, err = self.run_top(["--cluster", p, "--once"])
        self.assertEqual(rc, 1)
        self.assertIn("mlf-top: cannot reach the scheduler at 127.0.0.1:%d" % port, err)
        self.assertEqual(err.count("\n"), 1)

    def test_fake_scheduler_answers(self):
        srv = socket.socket()
        srv.bind(("127.0.0.1", 0))
        srv.listen(1)
        port = srv.getsockname()[1]
        got = []

        def serve():
            c, _ = srv.accept()
            got.append(c.recv(100))
            c.sendall((json.dumps(STATUS) + "\n").encode())
            c.close()
        th = threading.Thread(target=serve)
        th.start()
        p = write_cluster(self.tmp.name, [{"name": "s", "ip": "127.0.0.1", "roles": ["scheduler"]}], port)
        rc, out, err = self.run_top(["--cluster", p, "--once", "--json"])
        th.join()
        srv.close()
        self.assertEqual((rc, err), (0, ""))
        self.assertEqual(json.loads(got[0].decode()), {"type": "status"})
        self.assertEqual(json.loads(out)["hosts"][1]["name"], "w0")

    def test_refusal_is_one_line(self):
        srv = socket.socket()
        srv.bind(("127.0.0.1", 0))
        srv.listen(1)
        port = srv.getsockname()[1]

        def serve():
            c, _ = srv.accept()
            c.recv(100)
            c.sendall(b'{"type":"error","reason":"status: nope"}\n')
            c.close()
        th = threading.Thread(target=serve)
        th.start()
        p = write_cluster(self.tmp.name, [{"name": "s", "ip": "127.0.0.1", "roles": ["scheduler"]}], port)
        rc, out, err = self.run_top(["--cluster", p, "--once"])
        th.join()
        srv.close()
        self.assertEqual(rc, 1)
        self.assertIn("refused: status: nope", err)


if __name__ == "__main__":
    unittest.main()
