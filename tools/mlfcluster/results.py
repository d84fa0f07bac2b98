"""results.json from a run folder's records (docs/fabric.md, docs/replication.md) and the summary
table (docs/experiments.md "The run folder", "Reading the records; the summary table"); null for
what is missing."""
import glob
import json
import math
import os

from .experiment import is_num
from .links import run_links, system_links, write as write_links
from .records import RecordError, count_records, nonempty, read_json, read_jsonl, run_systems


def server_dirs(rec):
    """The records folders of every process that served the model, in the order they did: the
    server, its restarts from a checkpoint (restart-K), the replica (the server after a promotion)."""
    dirs = [rec] + [d for d in sorted(glob.glob(os.path.join(rec, "restart-*"))) if os.path.isdir(d)]
    if os.path.isdir(os.path.join(rec, "replica")):
        dirs.append(os.path.join(rec, "replica"))
    return dirs


def acc_files(rec):
    """The evaluations of a run: every server's accuracy.jsonl (server_dirs order), then those of
    the workers that evaluate (worker_program torch: the root worker's records/<host>/accuracy.jsonl)."""
    dirs = server_dirs(rec)
    dirs += [d for d in sorted(glob.glob(os.path.join(rec, "*"))) if d not in dirs and os.path.isdir(d)]
    return [os.path.join(d, "accuracy.jsonl") for d in dirs if nonempty(os.path.join(d, "accuracy.jsonl"))]


def final_server_dir(rec):
    """The server that ends the run: the promoted replica, else the last restart, else REC."""
    fo = os.path.join(rec, "failover.jsonl")
    if any(x.get("new_server") != "" for x in read_jsonl(fo)):
        return os.path.join(rec, "replica")
    last = rec
    for d in sorted(glob.glob(os.path.join(rec, "restart-*"))):
        if os.path.isdir(d):
            last = d
    return last


def final_applied(rec, t_promoted):
    """applied.jsonl records of the model's timeline: the server's, every restart's, and the
    promoted replica's from T_PROMOTED on."""
    out = []
    for d in [rec] + sorted(glob.glob(os.path.join(rec, "restart-*"))):
        out += read_jsonl(os.path.join(d, "applied.jsonl"))
    if t_promoted:
        out += [x for x in read_jsonl(os.path.join(rec, "replica", "applied.jsonl"))
                if isinstance(x.get("t"), (int, float)) and x["t"] >= t_promoted]
    return out


STEADY_SKIP = 5  # synchronous iterations left out at the start (start-up, first gets)


def steady_iteration_s(times, skip=STEADY_SKIP):
    """Seconds per synchronous iteration in the steady state: (last - first) / intervals over the
    iteration end times TIMES (CLOCK_REALTIME s, any order) after the first SKIP; None with fewer
    than SKIP + 2. The paper's §7.2 compares MLfabric-S and RR-Sync by the time to complete 5
    epochs, i.e. by this, not by the time to an accuracy."""
    ts = sorted(t for t in times if isinstance(t, (int, float)))[skip:]
    return (ts[-1] - ts[0]) / (len(ts) - 1) if len(ts) >= 2 else None


def step_ends(applied):
    """MLfabric-S: {start version `at`: the latest t} over applied.jsonl records APPLIED (every
    part of a step has the step's start version); records of several shard servers together give
    each iteration's last shard step."""
    steps = {}
    for x in applied or []:
        if isinstance(x.get("at"), int) and isinstance(x.get("t"), (int, float)):
            steps[x["at"]] = max(steps.get(x["at"], x["t"]), x["t"])
    return steps


def step_times(applied):
    """MLfabric-S: one time per step of applied.jsonl records APPLIED (step_ends' times)."""
    return list(step_ends(applied).values())


def none_first(v):
    """A sort key for numbers that may be None: None first."""
    return (0, 0) if v is None else (1, v)


def present(v):
    """A record's value counts as given: anything but null and false (0 and "" count)."""
    return v is not None and v is not False


def mean(xs):
    if not xs:
        return None
    return sum(x for x in xs if x is not None) / len(xs)


def pct(s, p):
    return s[int(math.floor(p * (len(s) - 1)))] if s else None


def last_acc(rec):
    """(accuracy, version) of the last evaluation of any server of REC, as strings ("-" if none or
    when a record is malformed: this is the live progress line, the results report it)."""
    tails = []
    try:
        for f in acc_files(rec):
            recs = list(read_jsonl(f))
            if recs:
                tails.append(recs[-1])
    except RecordError:
        return "-", "-"
    if not tails:
        return "-", "-"
    tails.sort(key=lambda x: none_first(x.get("t")))
    x = tails[-1]
    ver = x.get("version") if present(x.get("version")) else x.get("iteration")
    acc = x.get("accuracy")
    return "-" if acc is None else str(acc), str(ver) if present(ver) else "-"


STOPPED = "stopped"


def stop_fate(u, t_end):
    """The fate of updates.jsonl line U, except that a loss recorded at or after T_END (Unix
    seconds, the run's stop; None: unknown) is STOPPED: the teardown took its server or
    worker away while it was planned, no fault lost it."""
    if u.get("fate") == "lost" and t_end is not None and is_num(u.get("t")) and u["t"] >= t_end:
        return STOPPED
    return u.get("fate")


def system_results(d, target):
    rec = os.path.join(d, "records")
    run = read_json(os.path.join(d, "run.json")) or {}
    t0 = run.get("t0") if present(run.get("t0")) else 0
    failover = next(read_jsonl(os.path.join(rec, "failover.jsonl")), None)
    fin = final_server_dir(rec)
    acc = [a for f in acc_files(rec) for a in read_jsonl(f)]
    acc.sort(key=lambda x: none_first(x.get("t")))
    t_promoted = (failover or {}).get("t_promoted") or 0
    applied = final_applied(rec, t_promoted)
    delays = [x.get("delay") for x in applied]
    workers = [read_json(f) for f in sorted(glob.glob(os.path.join(rec, "*", "worker.json")))]
    workers = [w for w in workers if isinstance(w, dict)]
    server = read_json(os.path.join(fin, "server.json"))
    iters = list(read_jsonl(os.path.join(rec, "iterations.jsonl")))
    groups = {}
    t_end = run.get("t_end") if is_num(run.get("t_end")) else None
    for u in read_jsonl(os.path.join(rec, "updates.jsonl")):
        groups[json.dumps(u.get("id"))] = stop_fate(u, t_end)  # the last line of each id
    fates = list(groups.values())
    faults = list(read_jsonl(os.path.join(d, "faults.jsonl")))
    kills = [f for f in faults if f.get("event") == "start" and f.get("kind") == "kill-server" and present(f.get("ok"))]
    recovery = None
    if kills and kills[0].get("t") is not None:
        t_kill = kills[0]["t"]
        if failover is not None and failover.get("t_first_commit") is not None:
            recovery = failover["t_first_commit"] - t_kill
        else:
            restart = next(read_jsonl(os.path.join(rec, "restart-1", "applied.jsonl")), None)
            recovery = restart["t"] - t_kill if restart is not None else None
    pushed = sum(count_records(f) for f in glob.glob(os.path.join(rec, "*", "pushes.jsonl")))

    hit = next((a for a in acc if a.get("accuracy") is not None and a["accuracy"] >= target), None)
    ds = sorted(delays, key=none_first)
    rr = run.get("system") == "rr-sync"
    gloo = run.get("system") == "gloo"
    n_drop = sum(1 for f in fates if f in ("dropped", "lost"))
    w_drop = sum(w.get("dropped") or 0 for w in workers)
    repl = run.get("replication")
    eth0 = run.get("eth0_rx_bytes") if present(run.get("eth0_rx_bytes")) else None

    def host_bytes(h):
        if not present(h) or not isinstance(eth0, dict):
            return None
        return eth0.get(h)

    if rr:
        applied_n = len(iters) * (run.get("n_workers") if present(run.get("n_workers")) else 1)
    elif gloo:  # each all-reduce step applies every rank's gradient once
        applied_n = sum(w.get("iterations") or 0 for w in workers)
    elif present(server):
        applied_n = server.get("applied")
    else:
        applied_n = len(delays)
    if fates:
        dropped, dropped_fraction = n_drop, n_drop / len(fates)
    else:
        dropped, dropped_fraction = w_drop, (w_drop / pushed if pushed > 0 else 0)
    sync_it = (steady_iteration_s([x.get("t") for x in iters]) if rr else
               steady_iteration_s(step_times(applied)) if run.get("system") == "mlfabric-s" else None)
    if rr:
        mean_it = mean([(x.get("compute_s") or 0) + (x.get("allreduce_s") or 0) for x in iters])
        iterations = len(iters)
    else:
        mean_it = mean([w.get("mean_iteration_s") for w in workers])
        iterations = sum(w.get("iterations") or 0 for w in workers) if workers else None
    return {
        "system": run.get("system"),
        "worker_program": run.get("worker_program") or "c",
        "reached": hit is not None,
        "time_to_target_s": hit["t"] - t0 if hit is not None else None,
        "final_accuracy": acc[-1].get("accuracy") if acc else None,
        # the first evaluation (the model before or just after the first updates) and the best
        "first_accuracy": acc[0].get("accuracy") if acc else None,
        "best_accuracy": max((a["accuracy"] for a in acc if is_num(a.get("accuracy"))), default=None),
        # when the last evaluation was made, from t0: far before wall_s when the evaluating
        # worker stopped early (table2 then says the final accuracy is stale)
        "final_accuracy_t_s": acc[-1]["t"] - t0 if acc and present(acc[-1].get("t")) and t0 else None,
        "evaluations": len(acc),
        "applied": applied_n,
        "pushed": pushed,
        "dropped": dropped,
        "dropped_fraction": dropped_fraction,
        "aggregated": sum(1 for f in fates if f == "aggregated"),
        "delay": {"mean": mean(ds), "p50": pct(ds, 0.5), "p99": pct(ds, 0.99), "max": ds[-1] if ds else None},
        "server_rx_bytes": server.get("rx_bytes") if present(server) else None,
        "server_version": server.get("version") if present(server) else None,
        "mean_iteration_s": mean_it,
        # rr-sync and mlfabric-s: seconds per iteration after the first 5 (steady_iteration_s)
        "steady_iteration_s": sync_it,
        "iterations": iterations,
        # ESync (mlf-worker --system esync): the workers' local iterations; iterations counts rounds
        "local_steps": (sum(w.get("local_steps") or 0 for w in workers) or None) if workers else None,
        "wall_s": run["t_end"] - run["t0"] if present(run.get("t_end")) and present(run.get("t0")) else None,
        "stop_reason": run.get("stop_reason"),
        "dead_workers": run.get("dead_workers") if present(run.get("dead_workers")) else [],
        "eth0_rx_bytes": eth0,
        "replication": repl if present(repl) else None,
        "server_host_rx_bytes": host_bytes(run.get("server")),
        "replica_host_rx_bytes": host_bytes(repl.get("replica") if isinstance(repl, dict) else None),
        "lost": sum(1 for f in fates if f == "lost"),
        # planned updates the teardown cut off (recorded lost after t_end): in flight at the stop
        "lost_at_stop": sum(1 for f in fates if f == STOPPED),
        "dropped_only": sum(1 for f in fates if f == "dropped"),
        "faults": [{k: f.get(k) for k in ("t_s", "kind", "host", "ok")} for f in faults if f.get("event") == "start"],
        "recovery_s": recovery,
        "failover": failover,
        "restarts": run.get("restarts") if present(run.get("restarts")) else 0,
        "cpu": run.get("cpu") if isinstance(run.get("cpu"), dict) else None,
    }


def compute(run, target=None):
    """The results of a run folder as a dict (raises ValueError when no target is known)."""
    ep = os.path.join(run, "experiment.json")
    exp = read_json(ep) or {}
    if target is None:
        try:
            target = read_json(os.path.join(run, "results.json"))["experiment"]["target_accuracy"]
        except (RecordError, KeyError, TypeError):
            target = None
    if target is None and os.path.isfile(ep):
        target = exp.get("target_accuracy")
    if target is None:
        raise ValueError("%s: no experiment.json: give --target" % run)
    target = float(target) if isinstance(target, str) else target
    systems = {}
    for s in run_systems(run):
        systems[s] = system_results(os.path.join(run, s), target)
        lk = system_links(run, os.path.join(run, s))
        systems[s]["links"] = {"source": lk["verdict_source"], "verdict": lk["verdict"]} if lk else None
    return {"experiment": dict(exp, target_accuracy=target), "systems": systems}


def write(run, res):
    """results.json and links.json (the per-link analysis, links.py) of RUN."""
    with open(os.path.join(run, "results.json"), "w") as f:
        json.dump(res, f, indent=2)
        f.write("\n")
    write_links(run, run_links(run))


def fixed(x, n):
    """X with N decimals, "-" for None."""
    return "-" if x is None else "%.*f" % (n, x)


def count(v):
    """A count of the table: "-" when not given."""
    return str(v) if present(v) else "-"


def summary(res):
    """The table printed at the end of a run (with replication or faults: the mode, the replica
    host's MB received, lost updates, faults injected, recovery time)."""
    e = res.get("experiment", {})
    repl = ((e.get("replication") or {}).get("mode") or "none") != "none" or len(e.get("faults") or []) > 0
    rows = [["system", "reached", "t_target_s", "final_acc", "applied", "dropped%", "delay_mean", "delay_max",
             "server_MB", "iter_s"] + (["repl", "replica_host_MB", "lost", "faults", "recovery_s"] if repl else [])]
    for name, v in res.get("systems", {}).items():
        d = v.get("delay") or {}
        reached = v.get("reached")
        row = [name, "-" if reached is None else "yes" if reached else "no", fixed(v.get("time_to_target_s"), 1),
               fixed(v.get("final_accuracy"), 3), count(v.get("applied")),
               fixed((v.get("dropped_fraction") or 0) * 100, 1), fixed(d.get("mean"), 2), count(d.get("max")),
               fixed(v["server_rx_bytes"] / 1e6 if present(v.get("server_rx_bytes")) else None, 1),
               fixed(v.get("mean_iteration_s"), 3)]
        if repl:
            row += [(v.get("replication") or {}).get("mode") or "none",
                    fixed(v["replica_host_rx_bytes"] / 1e6 if present(v.get("replica_host_rx_bytes")) else None, 1),
                    str(v.get("lost") or 0), str(len(v.get("faults") or [])), fixed(v.get("recovery_s"), 2)]
        rows.append(row)
    # every column but the last padded to its width, two spaces between
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "".join("  ".join(c.ljust(widths[i]) if i < len(r) - 1 else c for i, c in enumerate(r)) + "\n"
                   for r in rows)
