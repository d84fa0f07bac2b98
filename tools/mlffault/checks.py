"""The checks of a fault scenario's run folder (docs/replication.md, docs/experiments.md "Fault
scenarios"): target accuracy, true divergence before the first fault (build/mlf-verify) within the
norms of the updates between the versions compared and the planner's bound within div_max, every
pushed update accounted for, recovery after a kill-server. Each check prints "ok   ..." or
"FAIL ..." through a Report; the accounting itself (accounting()) is pure and unit-tested."""
import glob
import json
import os
import shutil
import subprocess
import tempfile

from mlfcluster.records import RecordError, first_planned_after_kills, nonempty, read_json, read_jsonl_numbered
from mlfcluster.results import STOPPED, fixed, stop_fate

INFLIGHT_S = 2  # pushes this close to the stop (or later) may be in flight when the run stops


def number(rec, key, path, n):
    """REC[KEY] as a number (not a boolean), else RecordError naming PATH line N (N 0: no line)."""
    v = rec.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        where = f"{path}:{n}" if n else path
        raise RecordError(f'{where}: "{key}" is {json.dumps(v)}, expected a number')
    return v


def json_object(path):
    """The JSON object of PATH (run.json, experiment.json); RecordError when the file is missing,
    empty, malformed or not an object."""
    v = read_json(path, missing_ok=False)
    if not isinstance(v, dict):
        raise RecordError(f"{path}: not a JSON object")
    return v


def given(v):
    """A record's value counts as given unless it is null or false (0 and "" are given)."""
    return v is not None and v is not False


class Report:
    """Prints the check lines and counts the failed checks."""

    def __init__(self, out):
        self.out, self.fails = out, 0

    def line(self, s):
        print(s, file=self.out)

    def ok(self, s):
        self.line("ok   " + s)

    def bad(self, s):
        self.line("FAIL " + s)
        self.fails += 1

    def skip(self, s):
        """A check that does not apply to this scenario (named, not counted as held)."""
        self.line("skip " + s)


# ---- faults.jsonl ----------------------------------------------------------------------------

def fault_starts(sysdir):
    """The start records of faults.jsonl in file order ([] when there is no faults.jsonl)."""
    path = os.path.join(sysdir, "faults.jsonl")
    return [r for _, r in read_jsonl_numbered(path, need=("event",)) if r["event"] == "start"]


# ---- 1. target ---------------------------------------------------------------------------------

def check_target(rep, results, sysname):
    s = results["systems"][sysname]
    target = (results.get("experiment") or {}).get("target_accuracy")
    if s.get("reached") is True:
        rep.ok(f"target {target} reached at {fixed(s.get('time_to_target_s'), 1)} s")
    else:
        rep.bad(f"target {target} not reached: final accuracy {fixed(s.get('final_accuracy'), 4)}, "
                f"stopped: {s.get('stop_reason') or '-'}")


# ---- 2. divergence -----------------------------------------------------------------------------

def _tag_key(tag):
    return (0, tag) if isinstance(tag, (int, float)) else (1, tag)


def snapshot_pairs(snapfile, t_fault):
    """The server/replica snapshot pairs taken before T_FAULT, newest tag first: (tag, server
    record, replica record), each the last of its role with that tag."""
    groups = {}
    for n, r in read_jsonl_numbered(snapfile, need=("role", "tag", "t"), missing_ok=False):
        if isinstance(r["tag"], bool) or not isinstance(r["tag"], (int, float, str)):
            raise RecordError(f'{snapfile}:{n}: "tag" is not a number or a string')
        if number(r, "t", snapfile, n) < t_fault:
            groups.setdefault(r["tag"], {})[r["role"]] = (n, r)
    pairs = []
    for tag in sorted(groups, key=_tag_key, reverse=True):
        g = groups[tag]
        if "server" in g and "replica" in g:
            for n, r in g.values():
                if not isinstance(r.get("file"), str):
                    raise RecordError(f'{snapfile}:{n}: record without "file"')
            pairs.append((tag, g["server"][1], g["replica"][1]))
    return pairs


# two models that hold the same updates differ by float32 rounding only (measured at most 8.2e-6
# over 60 pairs at equal versions, docs/replication.md); the pair bound allows this much above
PAIR_EPS = 1e-4


def update_norms(rec):
    """{update id: norm} from every worker's pushes.jsonl under REC (records/<worker>/)."""
    norms = {}
    for path in sorted(glob.glob(os.path.join(rec, "*", "pushes.jsonl"))):
        for n, r in read_jsonl_numbered(path, need=("id",)):
            if given(r.get("norm")):
                norms[r["id"]] = number(r, "norm", path, n)
    return norms


def server_steps(rec):
    """The transfers applied in the server's commit order, in version order: the server's
    (REC/applied.jsonl, one line per part) and the replica's (REC/replica/applied.jsonl, when
    there is one): [(at, parts, [ids])], at = the version before the transfer, at + parts the one
    after. The replica follows the same commit order and may apply an update before the server
    does: a server killed at version 326 had not applied the updates the replica's snapshot at
    329 holds, only the replica's records name them (pair_bound counts each update once)."""
    steps = {}
    for k, path in enumerate((os.path.join(rec, "applied.jsonl"), os.path.join(rec, "replica", "applied.jsonl"))):
        if k and not os.path.isfile(path):
            continue
        for n, r in read_jsonl_numbered(path, need=("id", "at")):
            at = number(r, "at", path, n)
            parts = number(r, "parts", path, n) if given(r.get("parts")) else 1
            steps.setdefault((k, at, r.get("xfer", n)), (at, parts, []))[2].append(r["id"])
    return sorted(steps.values(), key=lambda x: x[0])


def pair_bound(steps, norms, v1, v2):
    """An upper bound of ||w_server - w_replica|| for a server snapshot at version V1 and a replica
    snapshot at V2, whatever the instants they were written at: the replica applies a prefix of
    the server's commit order and both add updates as they are (momentum at the workers,
    docs/replication.md), so the two models differ by the updates the server applied between the
    two versions; a transfer that straddles either version counts in full (the replica may group
    the same updates differently). Returns (bound, updates counted), or (None, the id whose norm
    no pushes.jsonl recorded)."""
    lo, hi = min(v1, v2), max(v1, v2)
    total, count, seen = 0.0, 0, set()
    for at, parts, ids in steps:
        if at < hi and at + parts > lo:
            for i in ids:
                if i in seen:
                    continue       # applied by both server and replica: counted once
                if i not in norms:
                    return None, i
                seen.add(i)
                total += norms[i]
                count += 1
    return total, count


def verify_pair(rep, d, vdir, pair, verify, steps, norms, what):
    """The true divergence of snapshot PAIR (tag, server record, replica record) of VDIR
    (build/mlf-verify) against pair_bound for its two versions: one ok or FAIL line starting with
    WHAT. Returns the divergence (None when it could not be measured)."""
    tag, srv, rpl = pair
    vs, vr = srv.get("version"), rpl.get("version")
    out, rc = run_verify(verify, vdir, srv, rpl, None, os.path.join(d, "records", "batches.jsonl"))
    div = None
    for line in out.splitlines():
        try:
            j = json.loads(line)
        except ValueError:
            continue
        if isinstance(j, dict) and isinstance(j.get("divergence"), (int, float)):
            div = j["divergence"]
    if rc != 0 or div is None:
        for line in out.rstrip("\n").split("\n"):
            rep.line("     mlf-verify: " + line)
        rep.bad(f"{what}: mlf-verify failed on tag {tag} (status {rc})")
        return None
    if any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in (vs, vr)):
        rep.bad(f"{what}: snapshot pair tag {tag} without versions")
        return div
    bound, n = pair_bound(steps, norms, vs, vr)
    if bound is None:
        rep.bad(f"{what}: snapshot pair tag {tag} (versions {vs}/{vr}): no pushes.jsonl records the norm "
                f"of update {n}, applied between them")
        return div
    text = (f"snapshot pair tag {tag} (versions {vs}/{vr}): divergence {div:.6g} "
            f"{'<=' if div <= bound + PAIR_EPS else '>'} {bound:.6g}, the norms of the {n} update(s) "
            f"between the versions compared (+{PAIR_EPS:g} rounding)")
    if div <= bound + PAIR_EPS:
        rep.ok(f"{what}: {text}")
    else:
        rep.bad(f"{what}: {text}: the replica does not hold the server's updates")
    return div


def check_planned_bound(rep, d, divmax, t_fault):
    """The planner's divergence bound (batches.jsonl divergence_bound, §5.3) of every batch before
    T_FAULT is within DIVMAX: the replica's lag the scheduler allowed at one instant."""
    path = os.path.join(d, "records", "batches.jsonl")
    worst = None
    for n, r in read_jsonl_numbered(path):
        if not given(r.get("divergence_bound")) or (given(r.get("t")) and number(r, "t", path, n) >= t_fault):
            continue
        b = number(r, "divergence_bound", path, n)
        if worst is None or b > worst[0]:
            worst = (b, r.get("batch"))
    if worst is None:
        return rep.skip(f"divergence bound: no batch before the fault recorded one ({path})")
    if divmax is None or worst[0] <= divmax:
        rep.ok(f"divergence bound: the planner's before the fault at most {worst[0]:.6g} (batch {worst[1]}), "
               f"div_max {divmax if divmax is not None else '?'}")
    else:
        rep.bad(f"divergence bound: the planner's bound of batch {worst[1]} before the fault is {worst[0]:.6g}, "
                f"over div_max {divmax}")


def check_divergence(rep, run, sysname, experiment, verify, k=0):
    """The last server/replica snapshot pair taken before fault start K (0: the first) holds what
    the replica should hold: its true divergence (build/mlf-verify) is within pair_bound of the two
    versions written, whatever the instants (the server may apply updates between the two
    writes); and the planner's divergence bound of every batch before the fault is within
    div_max (check_planned_bound)."""
    d = os.path.join(run, sysname)
    repl = experiment.get("replication") or {}
    if not isinstance(repl, dict):
        raise RecordError(f'{run}/experiment.json: "replication" is not an object')
    divmax = repl.get("div_max") if given(repl.get("div_max")) else None
    ve = repl.get("verify_every")
    if repl.get("mode") in (None, "none"):
        return rep.skip("divergence: the scenario has no replica")
    if isinstance(ve, bool) or not isinstance(ve, (int, float)) or ve <= 0:
        return rep.bad("divergence: the scenario has no verify_every (no snapshots)")
    if experiment.get("momentum_at") == "server" and given(experiment.get("momentum")) and experiment["momentum"]:
        return rep.skip("divergence: momentum at the server: the model is no sum of the updates, "
                        "their norms bound nothing")
    starts = fault_starts(d)[k:]
    if not starts or starts[0].get("t") is None:
        return rep.bad(f"divergence: no fault was injected ({d}/faults.jsonl)")
    t_fault = number(starts[0], "t", os.path.join(d, "faults.jsonl"), 0)
    # the copy made just before the fault (kills), else the snapshots as left at the end
    vdir = os.path.join(d, f"verify-fault-{starts[0].get('fault')}")
    if not os.path.isdir(vdir):
        vdir = os.path.join(d, "records", "verify")
    snapfile = os.path.join(vdir, "snapshots.jsonl")
    if not nonempty(snapfile):
        return rep.bad(f"divergence: no snapshots in {vdir}")
    # the newest pair before the fault whose two snapshot files are in the copy
    pair = next((p for p in snapshot_pairs(snapfile, t_fault)
                 if all(os.path.isfile(os.path.join(vdir, os.path.basename(r["file"]))) for r in p[1:])), None)
    if pair is None:
        return rep.bad("divergence: no server/replica snapshot pair with both files before the fault at "
                       f"{fixed(starts[0].get('t_s'), 3)} s ({vdir})")
    rec = os.path.join(d, "records")
    verify_pair(rep, d, vdir, pair, verify, server_steps(rec), update_norms(rec),
                f"divergence before the fault at {fixed(starts[0].get('t_s'), 3)} s")
    check_planned_bound(rep, d, divmax, t_fault)


class _Failures(Report):
    """A Report that prints only the failed checks (and their mlf-verify lines)."""

    def ok(self, s):
        pass


def check_every_pair(rep, run, sysname, verify):
    """Every server/replica snapshot pair whose two files are kept (records/verify), before and
    after the faults, against pair_bound of its versions (a kill-scheduler run: the replica
    caught up by the restarted scheduler holds the server's updates too)."""
    d = os.path.join(run, sysname)
    vdir = os.path.join(d, "records", "verify")
    snapfile = os.path.join(vdir, "snapshots.jsonl")
    if not nonempty(snapfile):
        return rep.skip(f"every snapshot pair: no snapshots in {vdir}")
    rec = os.path.join(d, "records")
    steps, norms = server_steps(rec), update_norms(rec)
    pairs = [p for p in snapshot_pairs(snapfile, float("inf"))
             if all(os.path.isfile(os.path.join(vdir, os.path.basename(r["file"]))) for r in p[1:])]
    if not pairs:
        return rep.bad(f"every snapshot pair: no pair with both files in {vdir}")
    sub = _Failures(rep.out)
    divs = [verify_pair(sub, d, vdir, p, verify, steps, norms, "every pair") for p in reversed(pairs)]
    if sub.fails:
        rep.fails += 1
        rep.line(f"FAIL every snapshot pair: {sub.fails} of {len(pairs)} outside the bound of their versions")
    else:
        rep.ok(f"every snapshot pair: {len(pairs)} within the bound of their versions, largest divergence "
               f"{max(x for x in divs if x is not None):.6g}")


def run_verify(verify, vdir, srv, rpl, divmax, batches):
    """mlf-verify on a folder holding just the pair (SRV, RPL) of VDIR: (its output, status)."""
    tmp = tempfile.mkdtemp()
    try:
        with open(os.path.join(tmp, "snapshots.jsonl"), "w", encoding="utf-8") as f:
            for r in (srv, rpl):
                f.write(json.dumps(r, separators=(",", ":"), ensure_ascii=False) + "\n")
        for r in (srv, rpl):
            src = os.path.join(vdir, os.path.basename(r["file"]))
            dst = os.path.join(tmp, os.path.basename(src))
            try:
                os.link(src, dst)
            except OSError:
                shutil.copyfile(src, dst)
        args = [verify, tmp, "--json"]
        if divmax is not None:
            args += ["--div-max", str(divmax)]
        if nonempty(batches):
            args += ["--batches", batches]
        try:
            p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        except OSError as e:
            return f"{verify}: {e.strerror}", 126
        return p.stdout.decode("utf-8", "replace"), (128 - p.returncode if p.returncode < 0 else p.returncode)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ---- 3. accounting -----------------------------------------------------------------------------

def _ids(path, below=None, from_=None):
    """The update ids of applied.jsonl PATH (a missing file: RecordError): all, those applied at a
    version below BELOW, or at FROM_ or above."""
    out = []
    for n, r in read_jsonl_numbered(path, need=("id",), missing_ok=False):
        if below is not None and not number(r, "at", path, n) < below:
            continue
        if from_ is not None and not number(r, "at", path, n) >= from_:
            continue
        out.append(r["id"])
    return out


def _first_at(path):
    """The version (at) of the first applied update of PATH; 0 when it is missing or empty."""
    n, first = next(read_jsonl_numbered(path), (0, None))
    return number(first, "at", path, n) if first is not None else 0


def _generations(rec):
    return [rec] + sorted(g for g in glob.glob(os.path.join(rec, "restart-*")) if os.path.isdir(g))


def promoted_version(rec):
    """The version the replica was promoted at (the first failover.jsonl record naming a new
    server), or None when there was no promotion."""
    path = os.path.join(rec, "failover.jsonl")
    if nonempty(path):
        for n, r in read_jsonl_numbered(path, need=("new_server",)):
            if r["new_server"] != "":
                return number(r, "version", path, n)
    return None


def surviving_ids(rec):
    """The ids of the updates in the surviving model."""
    version = promoted_version(rec)
    if version is not None:
        # the promoted replica held the server's commit order up to the version it was
        # promoted at (applied copies, or a state transfer after a catch-up, whose updates are
        # not in its applied.jsonl), then applied the rest itself
        return (_ids(os.path.join(rec, "applied.jsonl"), below=version)
                + _ids(os.path.join(rec, "replica", "applied.jsonl")))
    # each restarted server resumed from a checkpoint: the earlier server's applies below the
    # version it restored are in the surviving model, the later ones were lost with it
    gens, ids = _generations(rec), []
    for i, g in enumerate(gens):
        path = os.path.join(g, "applied.jsonl")
        if i > 0 and not os.path.isfile(path):
            continue  # a restarted server that never started applied nothing
        if i + 1 < len(gens):
            ids += _ids(path, below=_first_at(os.path.join(gens[i + 1], "applied.jsonl")))
        else:
            ids += _ids(path)
    return ids


def ckpt_lost_ids(rec):
    """The ids applied by a killed server after the checkpoint its successor restored."""
    gens, ids = _generations(rec), []
    for prev, g in zip(gens, gens[1:]):
        path = os.path.join(prev, "applied.jsonl")
        if os.path.isfile(path):
            ids += _ids(path, from_=_first_at(os.path.join(g, "applied.jsonl")))
    return ids


def last_fates(path, t_end=None):
    """id -> the final fate (last line per id) of the scheduler's updates.jsonl; a loss
    recorded at or after T_END (the run's stop, Unix seconds) is "stopped" (the teardown's)."""
    return {r["id"]: stop_fate(r, t_end) for _, r in read_jsonl_numbered(path, need=("id",))}


def pushes(rec):
    """Every pushed update with an id: dicts id, t, host, in host order."""
    out = []
    for path in sorted(glob.glob(os.path.join(rec, "*", "pushes.jsonl"))):
        host = os.path.basename(os.path.dirname(path))
        for n, r in read_jsonl_numbered(path):
            if r.get("id") is not None:
                out.append({"id": r["id"], "t": number(r, "t", path, n), "host": host})
    return out


def accounting(sysdir):
    """Every push of SYSDIR's records classified: applied (on the surviving model), lost, dropped,
    in_flight (pushed within INFLIGHT_S of the stop, or planned when the teardown took its
    server or worker: recorded lost after the stop), else unaccounted. Returns the counts and
    the unaccounted pushes as "ID (HOST, pushed at X s before the stop)"."""
    rec = os.path.join(sysdir, "records")
    run_json = os.path.join(sysdir, "run.json")
    t_end = number(json_object(run_json), "t_end", run_json, 0)
    applied = set(surviving_ids(rec))
    fates = last_fates(os.path.join(rec, "updates.jsonl"), t_end)
    lost = set(ckpt_lost_ids(rec)) | {i for i, f in fates.items() if f == "lost"}
    stopped = {i for i, f in fates.items() if f == STOPPED}
    dropped = {i for i, f in fates.items() if f == "dropped"}
    res = {"pushed": 0, "applied": 0, "lost": 0, "dropped": 0, "in_flight": 0, "unaccounted": []}
    for p in pushes(rec):
        res["pushed"] += 1
        if p["id"] in applied:
            res["applied"] += 1
        elif p["id"] in lost:
            res["lost"] += 1
        elif p["id"] in dropped:
            res["dropped"] += 1
        elif p["id"] in stopped or p["t"] >= t_end - INFLIGHT_S:
            res["in_flight"] += 1
        else:
            res["unaccounted"].append(f"{p['id']} ({p['host']}, pushed at "
                                      f"{p['t'] - t_end:.2f} s before the stop)")
    return res


def check_accounting(rep, run, sysname):
    r = accounting(os.path.join(run, sysname))
    un = r["unaccounted"]
    summary = (f"pushed {r['pushed']}: applied on the surviving model {r['applied']}, lost with the "
               f"failure {r['lost']}, dropped {r['dropped']}, in flight at the stop {r['in_flight']}, "
               f"unaccounted {len(un)}")
    if r["pushed"] == 0:
        rep.bad("accounting: no pushed update recorded")
    elif not un:
        rep.ok("accounting: " + summary)
    else:
        rep.bad(f"accounting: {summary}; unaccounted: {', '.join(un[:20])}{' ...' if len(un) > 20 else ''}")


# ---- 4. recovery -------------------------------------------------------------------------------

def check_recovery(rep, results, sysname):
    """After a kill-server: the time from the kill to the first commit at the new server."""
    s = results["systems"][sysname]
    if not any(f.get("kind") == "kill-server" and given(f.get("ok"))
               for f in s.get("faults") or []):
        return rep.line("     recovery: no server was killed")
    if s.get("recovery_s") is None:
        return rep.bad("recovery: the server was killed and no new server committed an update")
    fo, how = s.get("failover"), ""
    if given(fo):
        how = (f" ({fo.get('old_server')} -> {fo.get('new_server')}, version "
               f"{fo.get('version')}, {fo.get('lost_committed')} committed and "
               f"{fo.get('lost_planned')} planned updates lost)")
    elif isinstance(s.get("restarts"), (int, float)) and s["restarts"] > 0:
        how = " (restarted from the checkpoint)"
    rep.ok(f"recovery: {fixed(s['recovery_s'], 3)} s from the kill to the first commit "
           f"at the new server{how}")


# ---- a run folder ------------------------------------------------------------------------------


def check_scheduler_restart(rep, run, sysname):
    """After a kill-scheduler: the restarted scheduler planned transfers (its fresh transfer ids
    start at its start time in ms << 20, docs/control.md); prints the time from the kill to the
    first one's planned start."""
    d = os.path.join(run, sysname)
    kills = [number(f, "t", os.path.join(d, "faults.jsonl"), 1) for f in fault_starts(d)
             if f.get("kind") == "kill-scheduler" and given(f.get("ok"))]
    if not kills:
        return
    path = os.path.join(d, "records", "transfers.jsonl")
    first = first_planned_after_kills(path, kills)
    for t_kill, f in zip(kills, first):
        if f is None:
            rep.bad("scheduler restart: no transfer planned by a restarted scheduler after the kill at "
                    f"{t_kill:.3f} ({path})")
        else:
            rep.ok(f"scheduler restart: first transfer planned by the restarted scheduler {f - t_kill:.3f} s "
                   "after the kill")


def check_run(rep, run, verify):
    """Every check on every system of the run folder RUN; returns the experiment's name."""
    results = read_json(os.path.join(run, "results.json"), missing_ok=False)
    experiment = json_object(os.path.join(run, "experiment.json"))
    if not isinstance(results, dict) or not isinstance(results.get("systems"), dict):
        raise RecordError(f"{run}/results.json: no systems object")
    name = experiment.get("name") or "-"
    for sysname in sorted(results["systems"]):
        if not isinstance(results["systems"][sysname], dict):
            raise RecordError(f'{run}/results.json: systems["{sysname}"] is not an object')
        rep.line(f"== {name} {sysname} ({run}/{sysname})")
        faults = os.path.join(run, sysname, "faults.jsonl")
        for _, f in read_jsonl_numbered(faults):
            rep.line(f"     fault {f.get('fault')} {f.get('event')} at {fixed(f.get('t_s'), 3)} s: "
                     f"{f.get('kind')} {f.get('host') or '-'}: {f.get('action')}"
                     f"{'' if given(f.get('ok')) else ' (failed)'}")
        check_target(rep, results, sysname)
        check_divergence(rep, run, sysname, experiment, verify)
        check_accounting(rep, run, sysname)
        check_recovery(rep, results, sysname)
        check_scheduler_restart(rep, run, sysname)
        if any(f.get("kind") == "kill-scheduler" for f in fault_starts(os.path.join(run, sysname))):
            check_every_pair(rep, run, sysname, verify)
    return name
