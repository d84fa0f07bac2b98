"""Unit tests of tools/mlffault's pure checks (no network, no programs): the accounting of pushed
updates on tiny hand-made run folders (a fail-over with the promotion rule, checkpoint restarts,
final fates, in flight, unaccounted), the one-line errors for missing or malformed records (read
through mlfcluster.records), the target and recovery lines with their fixed decimals.
Run: python3 -m unittest discover -s tests/python"""
import io
import json
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from mlffault import checks  # noqa: E402
from mlfcluster.records import SCHED_FRESH, RecordError, read_jsonl_numbered  # noqa: E402

T_END = 1000.0


def write_jsonl(path, recs):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        for r in recs:
            f.write((r if isinstance(r, str) else json.dumps(r)) + "\n")


def applied(ids_at):
    return [{"t": 990.0, "id": i, "worker": "w0", "at": at} for i, at in ids_at]


class RunFolder(unittest.TestCase):
    """A system folder SYS: run.json, records/w0 and w1 pushes (ids 1-10, pushed at 990 s, the
    stop at 1000 s), and whatever a test adds."""

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.sys = os.path.join(self.dir, "mlfabric-a")
        self.rec = os.path.join(self.sys, "records")
        os.makedirs(self.rec)
        with open(os.path.join(self.sys, "run.json"), "w") as f:
            json.dump({"t0": 900.0, "t_end": T_END}, f)
        write_jsonl(os.path.join(self.rec, "w0", "pushes.jsonl"),
                    [{"t": 990.0, "id": i} for i in range(1, 6)] + [{"t": 990.5, "id": None}])
        write_jsonl(os.path.join(self.rec, "w1", "pushes.jsonl"), [{"t": 990.0, "id": i} for i in range(6, 11)])

    def tearDown(self):
        shutil.rmtree(self.dir)

    def put(self, rel, recs):
        write_jsonl(os.path.join(self.rec, rel), recs)

    def promoted_at(self, version):
        self.put("failover.jsonl", [{"t_gone": 995.0, "old_server": "ps", "new_server": "rp", "version": version}])


class Accounting(RunFolder):
    def test_promotion_rule(self):
        # the old server applied 1-6 at versions 0-5; the replica was promoted at version 4: the
        # old server's applies below 4 (ids 1-4, some of which the replica only got by a state
        # transfer, so not in its applied.jsonl) plus the replica's own (7-9) survive; id 5
        # (applied by the old server at 4, not replicated) was lost, 6 likewise (the scheduler's
        # final fate), 10 was dropped
        self.put("applied.jsonl", applied([(1, 0), (2, 1), (3, 2), (4, 3), (5, 4), (6, 5)]))
        self.promoted_at(4)
        self.put("replica/applied.jsonl", applied([(3, 2), (7, 4), (8, 5), (9, 6)]))
        self.put("updates.jsonl", [{"id": 5, "fate": "committed"}, {"id": 5, "fate": "lost"},
                                   {"id": 6, "fate": "lost"}, {"id": 10, "fate": "dropped"}])
        r = checks.accounting(self.sys)
        self.assertEqual(r, {"pushed": 10, "applied": 7, "lost": 2, "dropped": 1, "in_flight": 0,
                             "unaccounted": []})
        self.assertEqual(sorted(checks.surviving_ids(self.rec)), [1, 2, 3, 3, 4, 7, 8, 9])

    def test_not_promoted_after_the_promotion_version(self):
        # without the lost fate, id 5 (applied by the old server at the promotion version) is
        # not on the surviving model: unaccounted, named with its host and push time
        self.put("applied.jsonl", applied([(i, i - 1) for i in range(1, 6)]))
        self.promoted_at(4)
        self.put("replica/applied.jsonl", applied([(i, i - 1) for i in range(6, 11)]))
        r = checks.accounting(self.sys)
        self.assertEqual(r["applied"], 9)
        self.assertEqual(r["unaccounted"], ["5 (w0, pushed at -10.00 s before the stop)"])

    def test_empty_new_server_is_no_promotion(self):
        self.put("applied.jsonl", applied([(i, i - 1) for i in range(1, 11)]))
        self.put("failover.jsonl", [{"new_server": "", "version": 2}])
        self.assertEqual(checks.accounting(self.sys)["applied"], 10)

    def test_checkpoint_restarts(self):
        # the server applied 1-6 at 0-5; restart-1 restored version 3 (its first apply is at 3)
        # and applied 4, 6, 7; restart-2 restored version 4 and applied 8-10: surviving 1-3
        # (server below 3), 4 (restart-1 below 4), 8-10; lost: the server's 4-6 and restart-1's
        # 6 and 7 (applied at or above what the next one restored)
        self.put("applied.jsonl", applied([(i, i - 1) for i in range(1, 7)]))
        self.put("restart-1/applied.jsonl", applied([(4, 3), (6, 4), (7, 5)]))
        self.put("restart-2/applied.jsonl", applied([(8, 4), (9, 5), (10, 6)]))
        self.assertEqual(sorted(checks.surviving_ids(self.rec)), [1, 2, 3, 4, 8, 9, 10])
        self.assertEqual(sorted(checks.ckpt_lost_ids(self.rec)), [4, 5, 6, 6, 7])
        r = checks.accounting(self.sys)
        self.assertEqual((r["applied"], r["lost"], r["unaccounted"]), (7, 3, []))

    def test_in_flight_and_report(self):
        self.put("applied.jsonl", applied([(i, i - 1) for i in range(1, 10)]))
        write_jsonl(os.path.join(self.rec, "w1", "pushes.jsonl"),
                    [{"t": 990.0, "id": i} for i in range(6, 10)] + [{"t": 998.5, "id": 10}])
        out = io.StringIO()
        rep = checks.Report(out)
        checks.check_accounting(rep, self.dir, "mlfabric-a")
        self.assertEqual(rep.fails, 0)
        self.assertEqual(out.getvalue(), "ok   accounting: pushed 10: applied on the surviving model 9, lost with "
                         "the failure 0, dropped 0, in flight at the stop 1, unaccounted 0\n")

    def test_teardown_loss_is_in_flight_not_lost(self):
        # 9 and 10 were planned when the run stopped: the teardown took the server away and the
        # scheduler recorded them lost after t_end (10) or without a time (9, an old record,
        # which stays lost); 8 was lost by a fault before the stop
        self.put("applied.jsonl", applied([(i, i - 1) for i in range(1, 8)]))
        self.put("updates.jsonl", [{"id": 8, "fate": "lost", "t": T_END - 5},
                                   {"id": 9, "fate": "lost"},
                                   {"id": 10, "fate": "committed", "t": T_END - 0.5},
                                   {"id": 10, "fate": "lost", "t": T_END + 0.2}])
        r = checks.accounting(self.sys)
        self.assertEqual((r["applied"], r["lost"], r["in_flight"], r["unaccounted"]), (7, 2, 1, []))

    def test_unaccounted_report(self):
        self.put("applied.jsonl", applied([(i, i - 1) for i in range(1, 9)]))
        out = io.StringIO()
        rep = checks.Report(out)
        checks.check_accounting(rep, self.dir, "mlfabric-a")
        self.assertEqual(rep.fails, 1)
        self.assertTrue(out.getvalue().startswith("FAIL accounting: pushed 10: applied on the surviving model 8,"))
        self.assertIn("unaccounted 2; unaccounted: 9 (w1, pushed at -10.00 s before the stop), 10 (w1, ",
                      out.getvalue())

    def test_no_push(self):
        for w in ("w0", "w1"):
            os.remove(os.path.join(self.rec, w, "pushes.jsonl"))
        self.put("applied.jsonl", [])
        out = io.StringIO()
        checks.check_accounting(checks.Report(out), self.dir, "mlfabric-a")
        self.assertEqual(out.getvalue(), "FAIL accounting: no pushed update recorded\n")


class RecordErrors(RunFolder):
    def assertRecordError(self, *parts):
        with self.assertRaises(RecordError) as cm:
            checks.accounting(self.sys)
        msg = str(cm.exception)
        self.assertNotIn("\n", msg)
        for p in parts:
            self.assertIn(p, msg)

    def test_missing_replica_applied(self):
        self.put("applied.jsonl", applied([(1, 0)]))
        self.promoted_at(1)
        self.assertRecordError(os.path.join(self.rec, "replica", "applied.jsonl") + ": missing")

    def test_missing_old_server_applied(self):
        self.promoted_at(1)
        self.put("replica/applied.jsonl", applied([(1, 0)]))
        self.assertRecordError(os.path.join(self.rec, "applied.jsonl") + ": missing")

    def test_promotion_without_version(self):
        self.put("applied.jsonl", applied([(1, 0)]))
        self.put("replica/applied.jsonl", applied([(2, 1)]))
        self.put("failover.jsonl", [{"new_server": "rp"}])
        self.assertRecordError(os.path.join(self.rec, "failover.jsonl") + ":1:", '"version"')

    def test_malformed_line(self):
        self.put("applied.jsonl", applied([(1, 0), (2, 1)]) + ['{"id": 3, "at"'])
        self.assertRecordError(os.path.join(self.rec, "applied.jsonl") + ":3: malformed JSON record")

    def test_applied_without_id(self):
        self.put("applied.jsonl", applied([(1, 0)]) + [{"t": 1.0, "at": 1}])
        self.assertRecordError(os.path.join(self.rec, "applied.jsonl") + ':2: record without "id"')

    def test_applied_without_version_at_a_cut(self):
        self.put("applied.jsonl", [{"id": 1}])
        self.promoted_at(1)
        self.put("replica/applied.jsonl", applied([(2, 1)]))
        self.assertRecordError(os.path.join(self.rec, "applied.jsonl") + ':1: "at"')

    def test_push_without_time(self):
        self.put("applied.jsonl", applied([(1, 0)]))
        write_jsonl(os.path.join(self.rec, "w1", "pushes.jsonl"), [{"id": 6}])
        self.assertRecordError(os.path.join(self.rec, "w1", "pushes.jsonl") + ':1: "t"')

    def test_missing_run_json(self):
        os.remove(os.path.join(self.sys, "run.json"))
        self.assertRecordError(os.path.join(self.sys, "run.json") + ": missing")

    def test_missing_updates_is_no_fate(self):
        self.put("applied.jsonl", applied([(i, i - 1) for i in range(1, 11)]))
        self.assertEqual(checks.accounting(self.sys)["applied"], 10)

    def test_unterminated_malformed_last_line_is_skipped(self):
        # a writer killed mid-line (mlfcluster.records' policy): the partial last line is no record
        self.put("applied.jsonl", applied([(i, i - 1) for i in range(1, 11)]))
        with open(os.path.join(self.rec, "applied.jsonl"), "a") as f:
            f.write('{"t": 990.0, "id": 11, "a')
        self.assertEqual(checks.accounting(self.sys)["applied"], 10)

    def test_read_jsonl_numbered_skips_blank_lines(self):
        self.put("x.jsonl", [{"id": 1}, "", {"id": 2}])
        self.assertEqual(list(read_jsonl_numbered(os.path.join(self.rec, "x.jsonl"), need=("id",))),
                         [(1, {"id": 1}), (3, {"id": 2})])


class Snapshots(RunFolder):
    def test_pairs_before_the_fault_newest_first(self):
        snap = os.path.join(self.rec, "verify", "snapshots.jsonl")
        s = lambda role, tag, v, t: {"role": role, "tag": tag, "version": v, "t": t, "file": f"/x/{role}-{tag}.f32"}
        write_jsonl(snap, [s("replica", 5, 3, 1.0), s("server", 5, 3, 1.1), s("server", 10, 9, 2.0),
                           s("replica", 10, 8, 2.1), s("replica", 10, 9, 2.2), s("server", 15, 14, 3.0),
                           s("replica", 15, 14, 3.1), s("server", 20, 19, 4.0)])
        pairs = checks.snapshot_pairs(snap, 3.05)  # tag 15's replica is after the fault, 20 has no replica
        self.assertEqual([(t, a["version"], b["version"]) for t, a, b in pairs], [(10, 9, 9), (5, 3, 3)])
        write_jsonl(snap, [s("server", 5, 3, 1.0), {"role": "replica", "tag": 5, "t": 1.1}])
        with self.assertRaises(RecordError) as cm:
            checks.snapshot_pairs(snap, 3.0)
        self.assertIn(snap + ':2: record without "file"', str(cm.exception))

    def divergence(self, div, pairs, extra_batches=()):
        """check_divergence with a fake mlf-verify that prints divergence DIV for any pair;
        PAIRS: (tag, server version, replica version) written at 1.0 s + tag / 100, the fault at
        3 s. The server applied ids 1-10 one by one at versions 39-48 (norm 0.02 each), an
        aggregate of ids 11-12 at 249 (to 251, 0.02 each), then ids 1251-1255 at 251-255 (0.03
        each). Returns (report text, fails)."""
        vdir = os.path.join(self.rec, "verify")
        s = lambda role, tag, v, t: {"role": role, "tag": tag, "version": v, "t": t, "file": f"/x/{role}-{tag}.f32"}
        recs = []
        os.makedirs(vdir, exist_ok=True)
        for tag, vs, vr in pairs:
            recs += [s("server", tag, vs, 1.0 + tag / 100), s("replica", tag, vr, 1.0 + tag / 100)]
            for role in ("server", "replica"):
                open(os.path.join(vdir, f"{role}-{tag}.f32"), "w").close()
        write_jsonl(os.path.join(vdir, "snapshots.jsonl"), recs)
        norms = [{"t": 990.0, "id": i, "norm": 0.02} for i in range(1, 13)]
        write_jsonl(os.path.join(self.rec, "w0", "pushes.jsonl"), norms)
        write_jsonl(os.path.join(self.rec, "w1", "pushes.jsonl"), [])
        self.put("applied.jsonl", [{"t": 1.0, "xfer": 100 + i, "id": i, "at": 38 + i, "parts": 1} for i in range(1, 11)]
                 + [{"t": 1.0, "xfer": 200, "id": i, "at": 249, "parts": 2} for i in (11, 12)]
                 + [{"t": 1.0, "xfer": 300 + v, "id": 1000 + v, "at": v, "parts": 1} for v in range(251, 256)])
        for v in range(251, 256):
            norms.append({"t": 990.0, "id": 1000 + v, "norm": 0.03})
        write_jsonl(os.path.join(self.rec, "w0", "pushes.jsonl"), norms)
        self.put("batches.jsonl", [{"t": 1.0, "batch": 5, "divergence_bound": 0.04},
                                   {"t": 2.0, "batch": 10, "divergence_bound": 0.049}] + list(extra_batches))
        write_jsonl(os.path.join(self.sys, "faults.jsonl"), [{"event": "start", "fault": 0, "t": 3.0, "t_s": 3.0}])
        verify = os.path.join(self.dir, "verify.sh")
        with open(verify, "w") as f:
            f.write('#!/bin/sh\necho "{\\"tag\\": 0, \\"divergence\\": %s}"\n' % div)
        os.chmod(verify, 0o755)
        out = io.StringIO()
        rep = checks.Report(out)
        checks.check_divergence(rep, self.dir, "mlfabric-a", {"replication": {"mode": "mlfabric", "div_max": 0.05,
                                                                               "verify_every": 5}}, verify)
        return out.getvalue(), rep.fails

    def test_pair_bound_counts_the_updates_between_its_versions(self):
        self.divergence(0, [(5, 40, 39)])
        steps, norms = checks.server_steps(self.rec), checks.update_norms(self.rec)
        self.assertEqual(checks.pair_bound(steps, norms, 40, 40), (0.0, 0))
        self.assertEqual(checks.pair_bound(steps, norms, 40, 39), (0.02, 1))  # id 1 (at 39 -> 40)
        self.assertEqual(checks.pair_bound(steps, norms, 39, 42), (0.06, 3))  # either order
        # the aggregate 249 -> 251 straddles 250: counted in full (the replica groups differently)
        b, n = checks.pair_bound(steps, norms, 250, 252)
        self.assertEqual(n, 3)
        self.assertAlmostEqual(b, 0.07)
        self.assertEqual(checks.pair_bound(steps, {}, 40, 39), (None, 1))

    def test_replica_ahead_of_a_killed_server_counts_the_replicas_records(self):
        # fault_kill_server_ssh, 2026-11-28: the server's snapshot at 326 and the replica's at 329;
        # the server was killed before applying 326-328, which only the replica's applied.jsonl
        # names: the bound counted 0 updates and the check failed. Here: the server applied up to
        # 48 (ids 1-10 at 39-48), the replica also 49-50 (ids 2001-2002, norm 0.02).
        self.divergence(0, [(5, 40, 39)])
        write_jsonl(os.path.join(self.rec, "w0", "pushes.jsonl"),
                    [{"t": 990.0, "id": i, "norm": 0.02} for i in list(range(1, 13)) + [2001, 2002]])
        self.put(os.path.join("replica", "applied.jsonl"),
                 [{"t": 1.0, "xfer": 900 + i, "id": i, "at": 38 + i, "parts": 1} for i in range(1, 11)]
                 + [{"t": 1.0, "xfer": 3000 + v, "id": 2000 + v - 48, "at": v, "parts": 1} for v in (49, 50)])
        steps, norms = checks.server_steps(self.rec), checks.update_norms(self.rec)
        b, n = checks.pair_bound(steps, norms, 48, 51)
        self.assertEqual(n, 3)                       # ids 10, 2001, 2002 (at 48, 49, 50)
        b, n = checks.pair_bound(steps, norms, 47, 49)
        self.assertEqual(n, 2)                       # ids 9 and 10, once each though both applied them
        self.assertAlmostEqual(b, 0.04)

    def test_server_ahead_between_writes_is_within_its_bound(self):
        # issue 37: the server wrote at 297, the replica at 293, divergence 0.0697 > div_max 0.05,
        # while four updates of ~0.018 lay between them. Here: server 254, replica 251 (three
        # updates of 0.03 between: bound 0.09), divergence 0.07: ok (the old check compared it
        # with div_max 0.05 and failed)
        out, fails = self.divergence(0.07, [(5, 40, 40), (10, 254, 251)])
        self.assertEqual(fails, 0, out)
        self.assertIn("ok   divergence before the fault at 3.000 s: snapshot pair tag 10 (versions 254/251): "
                      "divergence 0.07 <= 0.09, the norms of the 3 update(s)", out)
        self.assertIn("ok   divergence bound: the planner's before the fault at most 0.049 (batch 10), div_max 0.05", out)

    def test_replica_ahead_is_checked_too(self):
        out, fails = self.divergence(0.05, [(5, 40, 39), (10, 252, 254)])
        self.assertEqual(fails, 0, out)
        self.assertIn("snapshot pair tag 10 (versions 252/254): divergence 0.05 <= 0.06", out)

    def test_divergence_beyond_the_updates_between_fails(self):
        out, fails = self.divergence(0.001, [(10, 252, 252)])  # equal versions: rounding only
        self.assertEqual(fails, 1, out)
        self.assertIn("FAIL divergence before the fault at 3.000 s: snapshot pair tag 10 (versions 252/252): "
                      "divergence 0.001 > 0, the norms of the 0 update(s) between the versions compared "
                      "(+0.0001 rounding): the replica does not hold the server's updates", out)

    def test_planned_bound_over_div_max_fails(self):
        out, fails = self.divergence(0, [(10, 252, 252)], [{"t": 2.5, "batch": 12, "divergence_bound": 0.06},
                                                            {"t": 3.5, "batch": 14, "divergence_bound": 0.5}])
        self.assertEqual(fails, 1, out)
        self.assertIn("FAIL divergence bound: the planner's bound of batch 12 before the fault is 0.06, "
                      "over div_max 0.05", out)


class Lines(unittest.TestCase):
    def lines(self, fn, results):
        out = io.StringIO()
        rep = checks.Report(out)
        fn(rep, results, "s")
        return out.getvalue(), rep.fails

    def test_target(self):
        res = {"experiment": {"target_accuracy": 0.75}, "systems": {"s": {"reached": True, "time_to_target_s": 18.16}}}
        self.assertEqual(self.lines(checks.check_target, res), ("ok   target 0.75 reached at 18.2 s\n", 0))
        res["systems"]["s"] = {"reached": False, "final_accuracy": 0.7, "stop_reason": "time limit"}
        self.assertEqual(self.lines(checks.check_target, res),
                         ("FAIL target 0.75 not reached: final accuracy 0.7000, stopped: time limit\n", 1))

    def test_recovery(self):
        fo = {"old_server": "ps", "new_server": "rp", "version": 189, "lost_committed": 0, "lost_planned": 2}
        s = {"faults": [{"kind": "kill-server", "ok": True}], "recovery_s": 0.0825, "failover": fo, "restarts": 0}
        self.assertEqual(self.lines(checks.check_recovery, {"systems": {"s": s}}),
                         ("ok   recovery: 0.083 s from the kill to the first commit at the new server (ps -> rp, "
                          "version 189, 0 committed and 2 planned updates lost)\n", 0))
        s.update(failover=None, restarts=1, recovery_s=1.0)
        self.assertEqual(self.lines(checks.check_recovery, {"systems": {"s": s}})[0],
                         "ok   recovery: 1.000 s from the kill to the first commit at the new server "
                         "(restarted from the checkpoint)\n")
        s["recovery_s"] = None
        self.assertEqual(self.lines(checks.check_recovery, {"systems": {"s": s}})[1], 1)
        s["faults"] = [{"kind": "kill-server", "ok": False}, {"kind": "kill-worker", "ok": True}]
        self.assertEqual(self.lines(checks.check_recovery, {"systems": {"s": s}}),
                         ("     recovery: no server was killed\n", 0))




class SchedulerRestart(RunFolder):
    """check_scheduler_restart: a transfer whose fresh id was chosen after the kill (its counter
    starts at the restart's ms << 20) must be recorded, else the check fails."""

    def check(self):
        out = io.StringIO()
        rep = checks.Report(out)
        checks.check_scheduler_restart(rep, self.dir, "mlfabric-a")
        return out.getvalue(), rep.fails

    def test_restart(self):
        kill = 995.25
        write_jsonl(os.path.join(self.sys, "faults.jsonl"),
                    [{"t": kill, "event": "start", "kind": "kill-scheduler", "ok": True}])
        old = SCHED_FRESH | (int(900 * 1000) << 20) | 7
        new = SCHED_FRESH | (int(995.8 * 1000) << 20) | 1
        self.put("transfers.jsonl", [{"xfer": old, "start": 995.9}, {"xfer": 42, "start": 995.7}])
        self.assertEqual(self.check()[1], 1)  # only the dead scheduler's transfers (and an update id)
        self.put("transfers.jsonl", [{"xfer": old, "start": 995.9}, {"xfer": new, "start": 995.85}])
        self.assertEqual(self.check(), ("ok   scheduler restart: first transfer planned by the restarted "
                                        "scheduler 0.600 s after the kill\n", 0))
        write_jsonl(os.path.join(self.sys, "faults.jsonl"),
                    [{"t": kill, "event": "start", "kind": "kill-worker", "ok": True}])
        self.assertEqual(self.check(), ("", 0))  # no scheduler killed: nothing to check



class Soak(unittest.TestCase):
    """mlf-fault soak's pure parts: the seeded fault schedule and the RSS rule."""

    def test_schedule(self):
        from mlffault import soak
        a = soak.schedule(1200, 7, ["w0", "w1"], ["w0"], ["w0", "w1"])
        self.assertEqual(a, soak.schedule(1200, 7, ["w0", "w1"], ["w0"], ["w0", "w1"]))
        self.assertNotEqual(a, soak.schedule(1200, 8, ["w0", "w1"], ["w0"], ["w0", "w1"]))
        ts = [f["at_s"] for f in a]
        self.assertTrue(soak.FIRST_S <= ts[0] <= soak.FIRST_S + soak.EVERY_MAX)
        gaps = [b - x for x, b in zip(ts, ts[1:])]
        self.assertTrue(all(soak.EVERY_MIN - 0.1 <= g <= soak.EVERY_MAX + 0.1 for g in gaps), gaps)
        self.assertLess(ts[-1], 1200 - soak.END_QUIET_S)
        ks = [f for f in a if f["kind"] == "kill-server"]
        self.assertEqual(len(ks), 1)
        self.assertTrue(400 <= ks[0]["at_s"] <= 800 + soak.EVERY_MAX)
        for f in a:
            if f["kind"] in ("kill-worker", "kill-aggregator"):
                self.assertEqual(f["restart_s"], soak.RESTART_S)
            if f["kind"] == "kill-aggregator":
                self.assertEqual(f["host"], "w0")
        self.assertFalse(any(f["kind"] == "kill-aggregator" for f in soak.schedule(1200, 7, ["w0"], [], ["w0"])))

    def test_rss_check(self):
        from mlffault import soak
        smp = lambda t, rss, pids: {"t": t, "rss_kb": rss, "pids": pids}
        samples = [smp(100, {"scheduler@ps": 1000, "dataplane@w0": 5000, "worker@w0": 9000},
                       {"scheduler@ps": 11, "dataplane@w0": 12, "worker@w0": 13}),
                   smp(170, {"scheduler@ps": 2000, "dataplane@w0": 5500, "worker@w0": 90000},
                       {"scheduler@ps": 11, "dataplane@w0": 12, "worker@w0": 13}),
                   smp(900, {"scheduler@ps": 2300, "dataplane@w0": 6700, "worker@w0": 90000},
                       {"scheduler@ps": 11, "dataplane@w0": 12, "worker@w0": 13})]
        rows = soak.rss_check(samples, t0=100)
        self.assertEqual(rows, [("dataplane@w0", 12, 5500, 6700, False), ("scheduler@ps", 11, 2000, 2300, True)])
        samples[-1]["pids"]["scheduler@ps"] = 99  # restarted: not the same daemon
        self.assertEqual([r[0] for r in soak.rss_check(samples, t0=100)], ["dataplane@w0"])
        self.assertEqual(soak.rss_check(samples[:1], t0=100), [])  # no sample after the warm-up


if __name__ == "__main__":
    unittest.main()
