"""`mlf-fault soak`: long training under random faults (docs/experiments.md "Soak").

A seeded fault schedule over the base experiment conf/soak.json (MLfabric-A with an mlfabric
replica on conf/cluster-repl-flt.json): one fault every EVERY_MIN-EVERY_MAX s from FIRST_S on,
each drawn from kill-worker (restarted after RESTART_S), kill-aggregator (restarted), kill-
scheduler (restarted by the runner at once), cut-link (CUT_S) and loss-burst (LOSS for BURST_S),
plus one kill-server in the middle third that fails over to the replica, with a new replica
started on the old server's host NEW_REPLICA_S later. The run does not stop at the target (its
target_accuracy is above 1); at the end it must hold:
1. the final accuracy >= the soak target (--target, default 0.80);
2. every pushed update accounted for (checks.check_accounting, as for a fault scenario);
3. the divergence of the last snapshot pair before every fault up to the server kill <= div_max;
4. every restarted scheduler planned transfers;
5. every daemon (dataplanes, scheduler, server, replica, aggregators) that lived from the
   warm-up sample (WARMUP_S after the start) to the end kept its RSS within RSS_SLACK of it.
The pure parts (schedule(), rss_check()) are unit-tested (tests/python/test_mlffault.py).
"""
import json
import os
import random

from mlfcluster.records import read_json, read_jsonl
from mlfcluster.results import fixed

from .checks import check_accounting, check_divergence, check_scheduler_restart, fault_starts, json_object

FIRST_S = 20
EVERY_MIN, EVERY_MAX = 20, 40
RESTART_S = 3
CUT_S = 2
BURST_S, LOSS = 5, 0.2
NEW_REPLICA_S = 5
END_QUIET_S = 40      # no fault starts in the last 40 s: the model recovers and the replica catches up
WARMUP_S = 60
RSS_SLACK = 0.20
KINDS = ["kill-worker", "kill-aggregator", "kill-scheduler", "cut-link", "loss-burst"]


def schedule(duration, seed, workers, aggregators, links):
    """The faults (experiment "faults" objects) of a soak of DURATION s: deterministic per SEED."""
    rnd = random.Random(seed)
    faults, t = [], FIRST_S + rnd.uniform(0, EVERY_MAX - EVERY_MIN)
    t_server = rnd.uniform(duration / 3, 2 * duration / 3)
    server_done = False
    while t < duration - END_QUIET_S:
        if not server_done and t >= t_server:
            faults.append({"at_s": round(t, 1), "kind": "kill-server", "new_replica_s": NEW_REPLICA_S})
            server_done = True
        else:
            kind = rnd.choice(KINDS if aggregators else [k for k in KINDS if k != "kill-aggregator"])
            f = {"at_s": round(t, 1), "kind": kind}
            if kind == "kill-worker":
                f.update(host=rnd.choice(workers), restart_s=RESTART_S)
            elif kind == "kill-aggregator":
                f.update(host=rnd.choice(aggregators), restart_s=RESTART_S)
            elif kind == "cut-link":
                f.update(host=rnd.choice(links), duration_s=CUT_S)
            elif kind == "loss-burst":
                f.update(host=rnd.choice(links), duration_s=BURST_S, loss=LOSS)
            faults.append(f)
        t += rnd.uniform(EVERY_MIN, EVERY_MAX)
    return faults


def rss_check(samples, t0, warmup_s=WARMUP_S, slack=RSS_SLACK):
    """[(name, pid, warm KiB, end KiB, ok)] for every daemon in the first sample at least WARMUP_S
    after T0 and in the last sample with the same pid (workers are not daemons: their RSS is
    the model's and the data's). Empty when there is no sample after the warm-up."""
    warm = next((s for s in samples if s.get("t", 0) >= t0 + warmup_s), None)
    if warm is None or not samples:
        return []
    end = samples[-1]
    out = []
    for name, pid in sorted((warm.get("pids") or {}).items()):
        if name.startswith("worker@") or (end.get("pids") or {}).get(name) != pid:
            continue
        a, b = (warm.get("rss_kb") or {}).get(name), (end.get("rss_kb") or {}).get(name)
        if a is None or b is None:
            continue
        out.append((name, pid, a, b, b <= a * (1 + slack)))
    return out


def check_soak(rep, run, sysname, experiment, verify, target=0.80):
    """The five soak checks on RUN/SYSNAME (module doc); TARGET: the soak target accuracy."""
    d = os.path.join(run, sysname)
    results = read_json(os.path.join(run, "results.json"), missing_ok=False)
    s = results["systems"][sysname]
    acc = s.get("final_accuracy")
    if isinstance(acc, (int, float)) and acc >= target:
        rep.ok(f"accuracy: final {acc:.4f} >= soak target {target} after {fixed(s.get('wall_s'), 1)} s")
    else:
        rep.bad(f"accuracy: final {fixed(acc, 4)} below the soak target {target}")
    check_accounting(rep, run, sysname)
    starts = fault_starts(d)
    ks = next((i for i, f in enumerate(starts) if f.get("kind") == "kill-server"), len(starts))
    for k in range(ks + 1 if ks < len(starts) else len(starts)):
        check_divergence(rep, run, sysname, experiment, verify, k)
    check_scheduler_restart(rep, run, sysname)
    run_json = json_object(os.path.join(d, "run.json"))
    samples = list(read_jsonl(os.path.join(d, "cpu.jsonl"), need=("t",)))
    rows = rss_check(samples, run_json.get("t0") or 0)
    if not rows:
        rep.bad(f"memory: no CPU/RSS sample {WARMUP_S} s after the start ({d}/cpu.jsonl)")
    for name, pid, a, b, ok in rows:
        line = (f"memory: {name} (pid {pid}) RSS {a / 1024:.1f} MiB after the warm-up, {b / 1024:.1f} MiB "
                f"at the end ({(b / a - 1) * 100 if a else 0:+.0f}%, limit +{RSS_SLACK * 100:.0f}%)")
        (rep.ok if ok else rep.bad)(line)


def soak_experiment(root, duration, seed):
    """conf/soak.json with the seed, the duration as time limit and the fault schedule."""
    with open(os.path.join(root, "conf", "soak.json")) as f:
        x = json.load(f)
    with open(os.path.join(root, x["cluster"])) as f:
        cl = json.load(f)
    hosts = cl.get("hosts") or []
    role = lambda r: [h["name"] for h in hosts if r in (h.get("roles") or [h.get("role")])]
    workers, aggs = x.get("workers") or role("worker"), x.get("aggregators") or role("aggregator")
    x["seed"], x["time_limit_s"] = seed, duration
    x["faults"] = schedule(duration, seed, workers, aggs, workers)
    return x
