"""Unit tests of bench/t2_ceiling.py (the Table 2 ceiling model): the sizes and link times of the
setting, the fluid link reservation (two transfers share an uplink, a halved link takes twice as
long, an undo restores it), the queueing-free bound, and a short event-driven run whose delays
obey the closed-loop identity (mean delay <= workers - 1 with fresh pulls)."""
import argparse
import importlib.util
import os
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PATH = os.path.join(HERE, "..", "..", "bench", "t2_ceiling.py")
SPEC = importlib.util.spec_from_file_location("t2_ceiling", PATH)
TC = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(TC)


def args(**kw):
    a = dict(exp="conf/exp-t2-shards4.json", cell="c2-n1", seeds="1", duration=12.0, loads=False,
             headroom=0.95, lead_ms=10.0, replan_ms=2.0, late_ms=0.0, get_ms=0.0, agg_ms=1.0,
             tau_max=None, rotate=False, early_busy=False, early_all=False, agg_busy=False,
             latest=False, compute_extra_ms=0.0, no_agg=False, no_hold=False, batch_ms=100.0,
             no_n1=False, no_straggle=False, json=False, check=None)
    a.update(kw)
    return argparse.Namespace(**a)


class SettingTest(unittest.TestCase):
    def test_sizes(self):
        self.assertEqual(TC.model_floats("784,64,10"), 50890)
        st = TC.Setting("conf/exp-t2-shards4.json", "c2-n1", 1)
        self.assertEqual(st.S, 4)
        self.assertEqual(st.model_bytes, 203560)
        self.assertEqual(st.leg_bytes, 12723 * 4)
        self.assertEqual(len(st.workers), 8)
        self.assertAlmostEqual(st.full_gbps, 0.01)
        # N1: every link at 10 or 5 Mbit/s
        self.assertTrue(all(r in (0.01, 0.005) for v in st.cap.values() for r in v))

    def test_no_n1(self):
        st = TC.Setting("conf/exp-t2-shards4.json", "c2-n1", 1, no_n1=True)
        self.assertTrue(all(r == 0.01 for v in st.cap.values() for r in v))


class LinksTest(unittest.TestCase):
    def setUp(self):
        self.st = TC.Setting("conf/exp-t2-shards4.json", "c2-n1", 1, no_n1=True)
        self.L = TC.Links(self.st, 1.0, 1.0)

    def test_full_rate_and_sharing(self):
        bits = 1e5  # 10 ms at 10 Mbit/s
        s, e = self.L.reserve(4, 0, bits, 0.0)
        self.assertAlmostEqual(s, 0.0)
        self.assertAlmostEqual(e, 0.010, places=6)
        # a second transfer from the same uplink to another host waits for the first
        s2, e2 = self.L.reserve(4, 1, bits, 0.0)
        self.assertAlmostEqual(s2, 0.010, places=6)
        self.assertAlmostEqual(e2, 0.020, places=6)

    def test_halved_and_undo(self):
        for b in range(self.L.n):
            self.L.cap[1][b] /= 2
            self.L.res[1][b] /= 2   # host 0's downlink at half rate
        log = []
        s, e = self.L.reserve(4, 0, 1e5, 0.0, log)
        self.assertAlmostEqual(e, 0.020, places=6)
        self.L.undo(log)
        s, e = self.L.reserve(5, 0, 1e5, 0.0)
        self.assertAlmostEqual(s, 0.0)


class ModelTest(unittest.TestCase):
    def test_bound_below_loop(self):
        st = TC.Setting("conf/exp-t2-shards4.json", "c2-n1", 1)
        b, b_agg, b_full = TC.period_bound(st, 0.26, 0.0, 22)
        self.assertLessEqual(b, b_agg + 1e-9)
        self.assertLessEqual(b_agg, b_full + 1e-9)
        self.assertLess(b_full, 8 / 0.478)   # the per-worker loop bound of the full network

    def test_short_run_identity(self):
        st = TC.Setting("conf/exp-t2-shards4.json", "c2-n1", 1)
        r = TC.Sim(st, args()).run()
        self.assertGreater(r["applied_per_s"], 5)
        self.assertLess(r["pushed_per_s"], 8 / 0.478)
        # fresh pulls: each update's window ends at its commit and the next starts at or after
        # it, so the mean delay is at most workers - 1
        self.assertLess(r["mean_delay"], 7.0)
        self.assertGreater(r["mean_delay"], 3.0)
        # a lower delay bound drops more and lowers the mean delay
        r6 = TC.Sim(st, args(tau_max=6)).run()
        self.assertGreater(r6["dropped_frac"], r["dropped_frac"])
        self.assertLess(r6["mean_delay"], r["mean_delay"])


class IdentityTest(unittest.TestCase):
    def test_identity_on_records(self):
        """Two workers, B's first update dropped: mean delay 1/3 = (N-1) V/A - gaps/A."""
        import json
        import tempfile
        d = tempfile.mkdtemp()
        app = [{"id": 1, "version": 0, "at": 0, "delay": 0, "parts": 1},
               {"id": 3, "version": 1, "at": 1, "delay": 0, "parts": 1},
               {"id": 4, "version": 1, "at": 2, "delay": 1, "parts": 1}]
        with open(os.path.join(d, "applied.jsonl"), "w") as f:
            f.write("".join(json.dumps(x) + "\n" for x in app))
        for w, ids in (("wa", [1, 3]), ("wb", [2, 4])):
            os.makedirs(os.path.join(d, w))
            with open(os.path.join(d, w, "pushes.jsonl"), "w") as f:
                f.write("".join(json.dumps({"id": i}) + "\n" for i in ids))
        r = TC.delay_identity(d, ["wa", "wb"])
        self.assertAlmostEqual(r["identity_delay"], 1 / 3)
        self.assertAlmostEqual(r["gap_after_applied_per_update"], 0)
        self.assertAlmostEqual(r["gap_start_end_per_update"], 2 / 3)
        self.assertEqual(TC.delay_identity(tempfile.mkdtemp(), ["wa"]), {})


if __name__ == "__main__":
    unittest.main()
