"""The checks of a fault scenario's run folder (docs/replication.md, docs/experiments.md "Fault
scenarios"): target accuracy, true divergence before the first fault (build/mlf-verify), every
pushed update accounted for, recovery after a kill-server. Each check prints "ok   ..." or
"FAIL ..." through a Report; the accounting itself (accounting()) is pure and unit-tested."""
import glob
import json
import os
import shutil
import subprocess
import tempfile

from mlfcluster.records import RecordError, nonempty, read_json, read_jsonl_numbered
from mlfcluster.results import fixed

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


def one_state(pair):
    """Whether the system can have been in the state of PAIR (tag, server record, replica record)
    at one instant: the replica applies a prefix of the server's commit order, so its version is
    never above the server's. The server and the replica write their snapshot when each handles
    the scheduler's `snapshot`, at their own time; a replica ahead means the server wrote its
    snapshot before commits the replica's already holds, and the pair measures the server's own
    progress between the two, not a divergence (docs/replication.md "Decisions and limits"). A pair
    without versions counts as one state."""
    vs, vr = pair[1].get("version"), pair[2].get("version")
    if any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in (vs, vr)):
        return True
    return vr <= vs


def check_divergence(rep, run, sysname, experiment, verify, k=0):
    """The last server/replica snapshot pair taken before fault start K (0: the first) that is one
    state of the system (one_state) is within div_max (build/mlf-verify on that pair); the newer
    pairs skipped for a replica ahead of the server are named."""
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
    # the newest pair before the fault whose two snapshot files are in the copy and that is one
    # state of the system
    pair, ahead = None, []
    for p in snapshot_pairs(snapfile, t_fault):
        if not all(os.path.isfile(os.path.join(vdir, os.path.basename(r["file"]))) for r in p[1:]):
            continue
        if one_state(p):
            pair = p
            break
        ahead.append(f"tag {p[0]} (versions {p[1].get('version')}/{p[2].get('version')})")
    if ahead:
        rep.line("     divergence: skipped, the replica ahead of the server (not one state): " + ", ".join(ahead))
    if pair is None:
        return rep.bad("divergence: no server/replica snapshot pair with both files and the replica "
                       f"not ahead before the fault at {fixed(starts[0].get('t_s'), 3)} s ({vdir})")
    tag, srv, rpl = pair
    out, rc = run_verify(verify, vdir, srv, rpl, divmax, os.path.join(d, "records", "batches.jsonl"))
    for line in out.rstrip("\n").split("\n"):
        rep.line("     mlf-verify: " + line)
    if rc == 0:
        rep.ok(f"divergence: snapshot pair tag {tag} (versions {srv.get('version')}/"
               f"{rpl.get('version')}), the last before the fault at {fixed(starts[0].get('t_s'), 3)} s: "
               f"within div_max {divmax if divmax is not None else '?'}")
    elif rc == 1:
        rep.bad(f"divergence: snapshot pair tag {tag} before the fault exceeds div_max "
                f"{divmax if divmax is not None else ''}")
    else:
        rep.bad(f"divergence: mlf-verify failed on tag {tag} (status {rc})")


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
        args = [verify, tmp]
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


def last_fates(path):
    """id -> the final fate (last line per id) of the scheduler's updates.jsonl."""
    return {r["id"]: r.get("fate") for _, r in read_jsonl_numbered(path, need=("id",))}


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
    in_flight (pushed within INFLIGHT_S of the stop), else unaccounted. Returns the counts and
    the unaccounted pushes as "ID (HOST, pushed at X s before the stop)"."""
    rec = os.path.join(sysdir, "records")
    run_json = os.path.join(sysdir, "run.json")
    t_end = number(json_object(run_json), "t_end", run_json, 0)
    applied = set(surviving_ids(rec))
    fates = last_fates(os.path.join(rec, "updates.jsonl"))
    lost = set(ckpt_lost_ids(rec)) | {i for i, f in fates.items() if f == "lost"}
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
        elif p["t"] >= t_end - INFLIGHT_S:
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

SCHED_FRESH = 1 << 62  # scheduler-chosen transfer ids: 1 << 62 | (start ms << 20) + counter


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
    first = [None] * len(kills)
    for _, r in read_jsonl_numbered(path, need=("xfer", "start")):
        x = r["xfer"]
        if not (isinstance(x, int) and x & SCHED_FRESH):
            continue
        ms = (x & (SCHED_FRESH - 1)) >> 20
        # the scheduler restarted after kill i and before kill i + 1 chose this id
        for i, t_kill in enumerate(kills):
            if ms >= int(t_kill * 1000) and (i + 1 == len(kills) or ms < int(kills[i + 1] * 1000)):
                first[i] = r["start"] if first[i] is None else min(first[i], r["start"])
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
    return name
