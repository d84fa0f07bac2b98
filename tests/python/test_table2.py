"""Unit tests of the Table 2 tooling: link utilisation arithmetic (tools/mlfcluster/links.py),
the grid's table with misses (table2.py), the sweep rule, CPU from /proc (cpu.py) and the switch
counter parser (netdev.py). No root, no build needed."""
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from exp_case import ROOT, ExpCase  # noqa: E402,F401
from mlfcluster import cpu, links, netdev, results, table2  # noqa: E402

INF = float("inf")


class Intervals(unittest.TestCase):
    def test_union(self):
        u = links.union_length
        self.assertAlmostEqual(u([(0, 1), (2, 3)], 0, 10), 2)
        self.assertAlmostEqual(u([(0, 2), (1, 3)], 0, 10), 3)          # overlap counted once
        self.assertAlmostEqual(u([(0, 5), (1, 2), (3, 4)], 0, 10), 5)  # nested
        self.assertAlmostEqual(u([(0, 1), (1, 2)], 0, 10), 2)          # touching
        self.assertAlmostEqual(u([(-5, 1), (9, 20)], 0, 10), 2)        # clipped to the window
        self.assertAlmostEqual(u([(3, 2), (11, 12)], 0, 10), 0)        # reversed, outside
        self.assertAlmostEqual(u([], 0, 10), 0)
        self.assertAlmostEqual(u([(4, 6), (0, 1), (5, 8)], 0, 10), 5)  # unsorted input

    def cap(self):
        # period 5 s from t0 = 100: ps up 1 then 0.5 Gbit/s; down 10 throughout; w0 2 / 4
        rows = [("0", "0", "ps", "1", "10"), ("0", "0", "w0", "2", "4"),
                ("1", "5", "ps", "0.5", "10"), ("1", "5", "w0", "2", "4")]
        return links.Capacity(rows, 100, 5)

    def test_capacity(self):
        c = self.cap()
        self.assertEqual(c.at("ps", "up", 99), 1)       # before t0: period 0
        self.assertEqual(c.at("ps", "up", 104.9), 1)
        self.assertEqual(c.at("ps", "up", 105), 0.5)
        self.assertEqual(c.at("ps", "up", 200), 0.5)    # after the schedule: its last period
        self.assertAlmostEqual(c.integral("ps", "up", 100, 110), 5 * 1 + 5 * 0.5)
        self.assertAlmostEqual(c.integral("ps", "up", 103, 107), 2 * 1 + 2 * 0.5)
        self.assertAlmostEqual(c.integral("w0", "down", 100, 110), 40)
        self.assertIsNone(c.at("nohost", "up", 100))

    def test_from_transfers(self):
        c = self.cap()
        # two overlapping transfers ps -> w0 (the model) and one w0 -> ps; window [100, 110]
        xs = [{"src": "ps", "dst": "w0", "bytes": 125000000, "start": 100, "end": 102},
              {"src": "ps", "dst": "w0", "bytes": 125000000, "start": 101, "end": 103},
              {"src": "w0", "dst": "ps", "bytes": 250000000, "start": 108, "end": 112},
              {"src": "w0", "dst": "w0", "bytes": 999, "start": 105, "end": 105.5}]   # local: no link
        r = links.from_transfers(xs, c, 100, 110)
        self.assertAlmostEqual(r["ps"]["up"]["busy"], 0.3)   # union [100, 103]
        self.assertAlmostEqual(r["ps"]["up"]["load"], 0.4)   # 2 + 2 s of transfers
        self.assertAlmostEqual(r["ps"]["up"]["util"], 2.0 / 7.5)  # 2 Gbit over 7.5 Gbit of capacity
        self.assertEqual(r["ps"]["up"]["transfers"], 2)
        # the last transfer is half in the window: half its bytes, 2 s busy
        self.assertAlmostEqual(r["ps"]["down"]["busy"], 0.2)
        self.assertAlmostEqual(r["ps"]["down"]["util"], 1.0 / 100)
        self.assertAlmostEqual(r["w0"]["down"]["busy"], 0.3)
        self.assertAlmostEqual(r["w0"]["up"]["busy"], 0.2)

    def test_from_counters(self):
        c = self.cap()
        # samples every 1 s; ps sends 125 MB (1 Gbit, a full second at 1 Gbit/s) in [100, 101],
        # 250 MB in [101, 102] (more than the link: busy capped at the interval), nothing after
        s = []
        up = [0, 125000000, 375000000] + [375000000] * 8
        for i, b in enumerate(up):
            s.append({"t": 100 + i, "rx": {"ps": b, "w0": 0}, "tx": {"ps": 0, "w0": b}})
        r = links.from_counters(s, c, 100, 110)
        self.assertAlmostEqual(r["ps"]["up"]["busy"], 0.2)
        self.assertAlmostEqual(r["ps"]["up"]["util"], 3.0 / 7.5)
        self.assertEqual(r["ps"]["up"]["bytes"], 375000000)
        self.assertAlmostEqual(r["w0"]["down"]["busy"], (0.25 + 0.5) / 10)  # 4 Gbit/s downlink
        self.assertAlmostEqual(r["w0"]["up"]["busy"], 0)
        # a counter reset (a host's veth recreated) counts no negative bytes
        s[5]["rx"]["ps"] = 0
        self.assertGreaterEqual(links.from_counters(s, c, 100, 110)["ps"]["up"]["busy"], 0.2)

    def test_verdict(self):
        mk = lambda su, sd, w: dict({"ps": {"up": {"busy": su}, "down": {"busy": sd}}},
                                    **{"w%d" % i: {"up": {"busy": b}, "down": {"busy": b}} for i, b in enumerate(w)})
        v = links.verdict(mk(0.95, 0.6, [0.05, 0.1, 0.2]), "ps", ["w0", "w1", "w2"])
        self.assertFalse(v["target_ok"])              # server uplink > 80% while the workers idle
        self.assertEqual(v["busiest"], "ps.up")
        self.assertAlmostEqual(v["workers_busy_median"], 0.1)
        self.assertTrue(links.verdict(mk(0.7, 0.8, [0.05]), "ps", ["w0"])["target_ok"])
        self.assertTrue(links.verdict(mk(0.9, 0.9, [0.6, 0.7]), "ps", ["w0", "w1"])["target_ok"])  # all busy
        self.assertIsNone(links.verdict({}, "ps", []))


class Table(unittest.TestCase):
    def test_median_with_misses(self):
        self.assertEqual(table2.med([3, 1, 2]), 2)
        self.assertEqual(table2.med([1, INF, 2]), 2)      # one miss of three: the median is a time
        self.assertEqual(table2.med([1, INF, INF]), INF)  # two misses: over the limit
        self.assertEqual(table2.med([1, 3]), 2)
        self.assertEqual(table2.med([1, INF]), INF)
        self.assertIsNone(table2.med([]))

    def test_speedup(self):
        text, m = table2.speedup({1: 60, 2: 90, 3: 120}, {1: 30, 2: 30, 3: 60}, 200)
        self.assertEqual(text, "3.00x (2.00x-3.00x)")  # medians 90 / 30; per seed 2, 3, 2
        self.assertEqual(m, 3)
        # the system missed every seed: an upper bound from the limit, never dropped
        text, m = table2.speedup({1: 50, 2: 100}, {1: INF, 2: INF}, 200)
        self.assertTrue(text.startswith("< 0.38x"), text)
        # the baseline missed: a lower bound
        text, _ = table2.speedup({1: INF}, {1: 50}, 200)
        self.assertEqual(text, "> 4.00x")
        self.assertEqual(table2.speedup({1: INF}, {1: INF}, 200)[0], "?")
        self.assertEqual(table2.speedup({}, {1: 5}, 200)[0], "-")

    def rec(self, t, reached=True, failed=False):
        return {"t": t, "reached": reached, "failed": failed, "limit": 100, "final": 0.8 if reached else 0.7,
                "cpu": {"machine_cores": 1.5, "groups": {"dataplanes": 1.0}},
                "links": {"server_up": 0.9, "server_down": 0.5, "workers_busy_median": 0.1, "busiest": "ps.up"},
                "stop": "target" if reached else "time_limit"}

    def test_table_with_misses(self):
        data = {("c2-n1", "mlfabric-a"): {1: self.rec(20), 2: self.rec(INF, False), 3: self.rec(30)},
                ("c2-n1", "rr-sync"): {1: self.rec(60), 2: self.rec(80), 3: self.rec(90)},
                ("c2-n1", "async"): {1: self.rec(INF, False), 2: self.rec(INF, False, True), 3: self.rec(40)}}
        t = table2.build_table(data, ["c2-n1"], 3, ["mlfabric-a", "async", "rr-sync"], 100)
        # MLfabric-A: median of 20, 30, >100 = 30; RR-Sync median 80: 2.67x; per seed 3, <0.8, 3
        self.assertIn("| C2 | 2.67x (< 0.80x-3.00x) |", t)
        row = [l for l in t.splitlines() if l.startswith("| C2-N1 | mlfabric-a |")][0]
        self.assertIn("| 2/3 | 30.0 | 20.0 - > 100 | 20.0, > 100, 30.0 |", row)
        arow = [l for l in t.splitlines() if l.startswith("| C2-N1 | async |")][0]
        self.assertIn("1/3 | > 100 |", arow)            # two misses of three: the median is a miss
        self.assertIn("run failed", arow)               # the failed run is shown, not dropped
        self.assertIn("ps.up", arow)
        self.assertIn("90% / 50%", arow)
        self.assertNotIn("MLfabric-S over RR-Sync", t)  # not run: no grid

    def test_efficiency_decomposition(self):
        def r(t, applied, wall, pushed=None, drop=0.0, reached=True):
            x = self.rec(t, reached)
            x.update({"applied": applied, "wall": wall, "pushed": pushed, "dropped_fraction": drop})
            return x
        data = {("c2-n1", "mlfabric-a"): {1: r(98, 930, 100, 1186, 0.22), 2: r(110, 1000, 112, 1250, 0.2),
                                         3: r(INF, 1400, 150, 1800, 0.2, False)},
                ("c2-n1", "rr-sync"): {1: r(72, 408, 74), 2: r(80, 440, 81), 3: r(60, 336, 62)}}
        t = table2.build_table(data, ["c2-n1"], 3, ["mlfabric-a", "rr-sync"], 150)
        rows = [l for l in t.splitlines() if l.startswith("| C2-N1 |") and "gradients" not in l]
        eff = [l for l in rows if l.count("|") == 11]
        # RR-Sync first (the base): medians of 408/74, 440/81, 336/62 applied per s and of 408, 440, 336
        self.assertTrue(eff[0].startswith("| C2-N1 | rr-sync | 3 | 5.4 | 5.4 | 0% | 408 | 1.00x | 1.00x | 1.00x |"), eff[0])
        # MLfabric-A: only the two seeds that reached count; applied/s median of 9.30 and 8.93 = 9.11,
        # computed (11.86 + 11.16) / 2 = 11.5, gradients (930 + 1000) / 2 = 965
        a = eff[1]
        self.assertTrue(a.startswith("| C2-N1 | mlfabric-a | 2 | 11.5 | 9.1 | 21% | 965 |"), a)
        ratio_app, ratio_g = (930 / 100 + 1000 / 112) / 2 / (440 / 81), 965 / 408  # RR-Sync: median 440/81
        self.assertIn("%.2fx | %.2fx | %.2fx |" % (ratio_app, ratio_g, ratio_app / ratio_g), a)
        # without the records (older runs) no such table
        self.assertNotIn("gradients to target", table2.build_table(
            {("c2-n1", "rr-sync"): {1: self.rec(60)}}, ["c2-n1"], 1, ["rr-sync"], 100))

    def test_sync_iteration_table(self):
        # the steady state: the first 5 iteration ends are left out; 10 ends 1.2 s apart after them
        ends = [100 + 3 * k for k in range(5)] + [200 + 1.2 * k for k in range(10)]
        self.assertAlmostEqual(results.steady_iteration_s(list(reversed(ends))), 1.2)
        self.assertIsNone(results.steady_iteration_s(ends[:6]))  # one interval after the skip: none
        # MLfabric-S: one time per step (every part of a step has its start version `at`), the latest
        applied = [{"at": 0, "t": 5.0}, {"at": 0, "t": 5.1}, {"at": 8, "t": 6.0}, {"at": 8, "t": 6.2}]
        self.assertEqual(sorted(results.step_times(applied)), [5.1, 6.2])

        def r(t, it, reached=True):
            x = self.rec(t, reached)
            x["sync_it"] = it
            return x
        data = {("c2-n1", "mlfabric-s"): {1: r(60, 1.2), 2: r(INF, 1.0, False), 3: r(70, 1.1)},
                ("c2-n1", "rr-sync"): {1: r(65, 1.5), 2: r(62, 1.3), 3: r(80, 1.32)}}
        t = table2.build_table(data, ["c2-n1"], 3, ["mlfabric-s", "rr-sync"], 100)
        # every seed counts (a miss too): medians 1.1 and 1.32, ratio 1.20; per seed 1.25, 1.30, 1.20
        self.assertIn("| C2-N1 | 1.100 (1.000-1.200) | 1.320 (1.300-1.500) | 1.20x (1.20x-1.30x) |", t)
        # only with both systems
        self.assertNotIn("s / iteration", table2.build_table(
            {("c2-n1", "rr-sync"): data[("c2-n1", "rr-sync")]}, ["c2-n1"], 3, ["rr-sync"], 100))

    def test_bad_knobs(self):
        for fn, arg, word in [(table2.parse_cells, "c4-n1", "unknown cell"), (table2.parse_cells, "", "at least one"),
                              (table2.parse_seeds, "0", "seeds"), (table2.parse_seeds, "1.5", "seeds"),
                              (table2.parse_systems, "gloo", "unknown system"),
                              (table2.parse_limit, "0", "time limit")]:
            with self.assertRaises(table2.GridError) as cm:
                fn(arg)
            self.assertIn(word, str(cm.exception))
            self.assertNotIn("\n", str(cm.exception))
        self.assertEqual(table2.parse_cells("C2-N1, c1-n3"), ["c2-n1", "c1-n3"])
        with self.assertRaises(table2.GridError):
            table2.check_params({"async": {"lr": 0.01}}, ["async"], "g.json")   # no momentum
        with self.assertRaises(table2.GridError):
            table2.check_params({"async": {"lr": 0.01, "momentum": 0.9}}, ["rr-sync"], "g.json")

    def test_command_refuses_bad_knobs(self):
        import contextlib
        import io
        for argv, word in [(["--cells", "c1-n4"], 'unknown cell "c1-n4"'), (["--seeds", "0"], "seeds"),
                           (["--systems", "mlfabric-a,x"], 'unknown system "x"'), (["--time-limit", "0"], "time limit"),
                           (["--grid", "/nonexistent.json"], "cannot read grid file")]:
            err = io.StringIO()
            with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as cm:
                table2.main(argv, (ROOT, os.path.join(ROOT, "build"), "mpirun"))
            self.assertEqual(cm.exception.code, 2)
            self.assertIn(word, err.getvalue())
            self.assertEqual(err.getvalue().count("\n"), 1, err.getvalue())

    def test_experiment_per_run(self):
        with open(os.path.join(ROOT, "conf", "exp-t2.json")) as f:
            base = json.load(f)
        x = table2.experiment(base, "c3-n2", 2, "rr-sync", {"rr-sync": {"lr": 0.01, "momentum": 0.5}}, 8, 60)
        self.assertEqual((x["compute"], x["network"], x["seed"], x["systems"]), ("C3", "N2", 2, ["rr-sync"]))
        self.assertEqual((x["lr"], x["lr_sync"], x["momentum"], x["time_limit_s"]), (0.01, 0.08, 0.5, 60))
        self.assertEqual(base["compute"], "C1")   # the base is not changed

    def test_sweep_rule(self):
        rows = [(0.005, 0.9, [50, INF], [0.8, 0.7]), (0.01, 0.9, [40, 45], [0.8, 0.8]),
                (0.01, 0.5, [INF, INF], [0.75, 0.76])]
        self.assertEqual(table2.choose(rows), (0.01, 0.9))
        # all miss: the higher final accuracy wins
        rows = [(0.005, 0.9, [INF], [0.7]), (0.01, 0.5, [INF], [0.78])]
        self.assertEqual(table2.choose(rows), (0.01, 0.5))
        # equal: the smaller lr
        rows = [(0.01, 0.9, [40], [0.8]), (0.005, 0.9, [40], [0.8])]
        self.assertEqual(table2.choose(rows), (0.005, 0.9))

    def test_stale_final_accuracy(self):
        # the evaluating worker exited 25 s into a 150 s run: its last evaluation is not the run's
        self.assertEqual(table2.stale_note({"final_accuracy_t_s": 24.6, "wall_s": 150.1}),
                         " (stale: last evaluated at 25 s of 150 s)")
        self.assertEqual(table2.stale_note({"final_accuracy_t_s": 148.2, "wall_s": 150.1}), "")
        self.assertEqual(table2.stale_note({"final_accuracy_t_s": None, "wall_s": 150.1}), "")
        self.assertEqual(table2.stale_note({}), "")

    def test_grid_file(self):
        g = table2.load_grid(os.path.join(ROOT, "conf", "table2.json"))
        self.assertEqual(len(g["cells"]), 9)
        table2.check_params(g["params"], g["systems"], "conf/table2.json")

    def test_every_grid_file(self):
        # every conf/table2*.json loads, names a base that exists, has params for its systems
        # and a sweep in one of the grid's cells
        import glob
        files = sorted(glob.glob(os.path.join(ROOT, "conf", "table2*.json")))
        self.assertGreaterEqual(len(files), 2)
        for path in files:
            g = table2.load_grid(path)
            self.assertTrue(os.path.exists(os.path.join(ROOT, g["base"])), path)
            table2.check_params(g["params"], g["systems"], path)
            self.assertIn(g["sweep"]["cell"], table2.CELLS, path)


class Cpu(unittest.TestCase):
    def test_parse_stat(self):
        line = "123 (a (b) c) S 45 1 1 0 -1 0 0 0 0 0 17 4 0 0 20 0 1 0 100 0 0"
        self.assertEqual(cpu.parse_stat(line), (123, 45, 21))
        self.assertIsNone(cpu.parse_stat("garbage"))

    def test_tree_and_usage(self):
        table = {1: (0, 5), 10: (1, 100), 11: (10, 50), 12: (11, 7), 20: (1, 30), 21: (20, 1)}
        t = cpu.tree_ticks([10, 20, 99], table)
        self.assertEqual(t, {10: 157, 20: 31})           # descendants counted, a gone pid left out
        self.assertEqual(cpu.tree_ticks([10, 11], table), {10: 100, 11: 57})  # nearest root
        a = {"t": 0, "machine": 0, "hz": 100, "procs": {"dataplane@ps": 100, "worker@w0": 0}}
        b = {"t": 2, "machine": 300, "hz": 100, "procs": {"dataplane@ps": 300, "worker@w0": 50, "server@ps": 20}}
        u = cpu.usage(a, b)
        self.assertEqual(u["machine_cores"], 1.5)
        self.assertEqual(u["procs"]["dataplane@ps"], 1.0)
        self.assertEqual(u["groups"], {"dataplanes": 1.0, "workers": 0.25, "server": 0.1})
        self.assertIsNone(cpu.usage(None, b))
        # a process gone by the last sample keeps the CPU of the last sample that saw it
        c = {"t": 4, "machine": 500, "hz": 100, "procs": {"dataplane@ps": 500}}
        u = cpu.usage(a, cpu.last_known([a, b, c]))
        self.assertEqual(u["procs"]["worker@w0"], 0.125)
        self.assertEqual(u["procs"]["dataplane@ps"], 1.0)
        self.assertIsNone(cpu.usage(b, b))

    def test_machine_ticks(self):
        p = os.path.join(ROOT, "build", ".t2-stat")
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write("cpu  10 1 20 500 7 3 4 9 0 0\ncpu0 1 1 1 1 1 1 1 1 0 0\n")
        try:
            self.assertEqual(cpu.machine_ticks(p), 10 + 1 + 20 + 3 + 4)
        finally:
            os.unlink(p)


class Netdev(unittest.TestCase):
    def test_parse(self):
        text = ("Inter-|   Receive                            |  Transmit\n"
                " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets\n"
                "    lo:  100 1 0 0 0 0 0 0  100 1 0 0 0 0 0 0\n"
                "   br0:  555 1 0 0 0 0 0 0  666 1 0 0 0 0 0 0\n"
                "    ps: 1234 9 0 0 0 0 0 0 5678 7 0 0 0 0 0 0\n"
                "   w10: 1 1 0 0 0 0 0 0 2 1 0 0 0 0 0 0\n")
        self.assertEqual(netdev.parse(text), {"ps": (1234, 5678), "w10": (1, 2)})


if __name__ == "__main__":
    unittest.main()
