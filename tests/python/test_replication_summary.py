"""Unit tests of bench/replication_summary.py: medians and min-max over seeds, the 3x replica-data
target decided on medians (and whether the spreads overlap), the chain comparison, and the
docs/results/replication.md section replaced in place."""
import importlib.util
import json
import os
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PATH = os.path.join(HERE, "..", "..", "bench", "replication_summary.py")
SPEC = importlib.util.spec_from_file_location("replication_summary", PATH)
RS = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(RS)


def row(variant, t, rep_mb, xfers=None, applied=100, mode="mlfabric", div=0.0):
    return {"variant": variant, "reached": t is not None, "time_to_target_s": t,
            "replica_host_rx_bytes": rep_mb * 1e6 if rep_mb is not None else None,
            "server_host_rx_bytes": 500e6, "replica_xfers": xfers, "applied": applied,
            "replication": {"mode": mode, "div_max": div}, "cpu": {"machine_cores": 0.5}}


class SummaryTest(unittest.TestCase):
    def make_runs(self, r16):
        d = tempfile.mkdtemp()
        for seed, (t0, t16, tc) in enumerate([(20, 21, 25), (22, 19, 24), (30, 18, 26)], 1):
            run = os.path.join(d, "run%d" % seed)
            os.makedirs(run)
            rows = [row("none", 18, None, mode="none"), row("mlfabric-0x", t0, 400, 50),
                    row("mlfabric-16x", t16, r16[seed - 1], 5, div=1.2),
                    row("chain", tc, 600, mode="chain")]
            with open(os.path.join(run, "rows.json"), "w") as f:
                json.dump(rows, f)
            with open(os.path.join(d, "seed%d.dir" % seed), "w") as f:
                f.write(run + "\n")
        return d

    def test_spread(self):
        self.assertEqual(RS.spread([3, 1, 2], "{:.1f}"), "2.0 (1.0-3.0)")
        self.assertEqual(RS.spread([None, 4], "{:.0f}"), "4")
        self.assertEqual(RS.spread([None], "{:.0f}"), "-")

    def test_targets_on_medians(self):
        runs, n = RS.load(self.make_runs([100, 120, 300]))
        self.assertEqual(n, 3)
        t = "\n".join(RS.targets(runs))
        # medians 400 MB vs 120 MB: 3.33x; one seed's 300 MB overlaps nothing at 0 (400)
        self.assertIn("yes (3.33x: 400 MB at 0, 120 MB at 16x; the spreads do not overlap)", t)
        # chain median 25 s; MLfabric medians 22 and 19 s
        self.assertIn("below chain replication's at every div_max (medians): yes (chain 25.0 s; "
                      "0x 22.0 s, 16x 19.0 s)", t)

    def test_target_missed(self):
        runs, _ = RS.load(self.make_runs([150, 200, 420]))
        t = "\n".join(RS.targets(runs))
        self.assertIn("NO (2.00x", t)
        self.assertIn("the spreads overlap", t)

    def test_table_rows(self):
        runs, _ = RS.load(self.make_runs([100, 120, 300]))
        lines = RS.table(runs)
        line = [x for x in lines if x.startswith("| mlfabric-16x ")][0]
        self.assertIn("| 3/3 | 19.0 (18.0-21.0) | 120 (100-300) |", line)
        self.assertIn("| 0.05 (0.05-0.05) |", line)  # 5 transfers / 100 applied


if __name__ == "__main__":
    unittest.main()
