#!/usr/bin/env python3
"""bench/launch_ssh.py - the runner launching over ssh against the local launcher
(docs/results/deploy.md, docs/deploy.md "Trying it on one machine").

  bench/launch_ssh.py train [--seeds N] [--time-limit S] [--out DIR]
  bench/launch_ssh.py launch [--hosts 5,20] [--rounds N] [--out DIR]

train: the default experiment (conf/exp-default.json, cluster conf/cluster-fabric.json) for seeds
1..N (default 3), each seed once with the local launcher and once over emulated ssh (the same
cluster with a management address 10.96.0.x per host and "launch": {"via": "ssh", "emulate":
true}), alternating local and ssh. Per run: time to target (results.json), and the CPU of the
fabric's processes from /proc, the same way for both launchers: every process whose command
line names the run's cluster config and whose name is mlf-* (dataplanes, scheduler, server,
aggregators, workers, wherever they were started) is sampled every 0.25 s with the machine's
/proc/stat; a process's CPU over a window is its utime + stime at the last sample at or before
the window's end minus that at the last sample at or before its start (0 for a process that
started inside it), summed, in cores (CPU seconds per second). Two windows: the run's own
training (run.json t0 to t_end: it ends at the target, so its length differs between runs) and
the first W seconds after t0 in every run (W = the shortest training of all runs), which
compares the launchers over the same phase of training. Next to the cores: the updates the
server applied in the window (records/applied.jsonl "t") and the fabric's CPU seconds per
applied update; the machine's busy cores and its irq + softirq cores (/proc/stat) in the window.
Over ssh the launch's own processes (the ssh clients, the sshds' sessions and the wrapper shells
under them) are summed apart. run.json's own "cpu" counts the local launcher's process trees,
which over ssh are the ssh clients: it is printed for reference only.

launch: clusters of 5 and 20 hosts (ps: server and scheduler, H-1 workers, two of them
aggregators; 10.94.0.x, management 10.95.0.x) over emulated ssh, MLfabric-A on the default
experiment's settings with the model 784,64,10, trained for 5 s; ROUNDS rounds (default 3), each
round every size once in turn (5, 20, 5, 20, ...): launch time = from starting `mlf-cluster run`
to run.json t0 (testbed, bridge, sshds, ssh reachable, key, every dataplane, scheduler, server,
aggregator and worker ready, workers started); teardown time = from run.json t_end (the stop) to
mlf-cluster's exit (processes stopped in order, records gathered, every host swept through clush,
sshds, bridge and namespaces removed).

Every run takes the namespace lock (/tmp/mlf-netns.lock) for itself and releases it after, so
that other tests run between runs: do not wrap the bench in flock (it would wait for itself).
Prints one line per run and median (min-max) per variant; every run folder stays under OUT
(default runs/launch-ssh). Needs root.
"""
import fcntl
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HZ = os.sysconf("SC_CLK_TCK")
LOCK = "/tmp/mlf-netns.lock"
SSH_LAUNCH = {"via": "ssh", "user": "root", "emulate": True, "ssh_options": ["-o", "LogLevel=ERROR"]}


def table():
    """{pid: (ppid, comm, cmdline, utime + stime ticks)} of every live process."""
    out = {}
    for n in os.listdir("/proc"):
        if not n.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % n) as f:
                st = f.read()
            with open("/proc/%s/cmdline" % n, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        head, rest = st.rsplit(")", 1)
        w = rest.split()
        out[int(n)] = (int(w[1]), head.split("(", 1)[1], cmd, int(w[11]) + int(w[12]))
    return out


def classify(tab, cluster, sshdir):
    """{pid: (kind, ticks)}: kind "fabric" (mlf-* naming CLUSTER) or "launch" (ssh clients of
    SSHDIR, and everything else under the run's listening sshds)."""
    sshd = {p for p, (_, comm, cmd, _) in tab.items() if comm == "sshd" and sshdir in cmd}
    out = {}
    for p, (pp, comm, cmd, t) in tab.items():
        if comm.startswith("mlf-") and cluster in cmd:
            out[p] = ("fabric", t)
            continue
        if comm == "ssh" and sshdir in cmd:
            out[p] = ("launch", t)
            continue
        q, seen = pp, 0
        while q > 1 and seen < 64:
            if q in sshd:
                out[p] = ("launch", t)
                break
            q, seen = tab[q][0] if q in tab else 0, seen + 1
    return out


def machine():
    """(busy, irq + softirq) ticks of the whole machine since boot (/proc/stat "cpu")."""
    with open("/proc/stat") as f:
        w = [int(x) for x in f.readline().split()[1:9]]
    return w[0] + w[1] + w[2] + w[5] + w[6] + w[7], w[5] + w[6]


def run(exp, rundir, cluster, sshdir):
    """mlf-cluster run EXP --out RUNDIR under the namespace lock (taken for this run only),
    sampling /proc: (t_start, t_exit, samples, status); a sample is (time, machine(),
    classify())."""
    with open(LOCK, "a") as lk:
        fcntl.flock(lk, fcntl.LOCK_EX)
        t_start = time.time()
        with open(rundir + ".log", "w") as log:
            p = subprocess.Popen(["nice", os.path.join(ROOT, "tools", "mlf-cluster"), "run", exp, "--out", rundir],
                                 stdout=log, stderr=subprocess.STDOUT)
            samples = []
            while p.poll() is None:
                samples.append((time.time(), machine(), classify(table(), cluster, sshdir)))
                time.sleep(0.25)
        return t_start, time.time(), samples, p.returncode


def cpu_between(samples, t0, t1, kind):
    """Cores of KIND's processes between T0 and T1: each process's ticks at the last sample at
    or before T1 minus those at the last sample at or before T0 (0 when it started later)."""
    return ticks_between(samples, t0, t1, kind) / HZ / (t1 - t0)


def ticks_between(samples, t0, t1, kind):
    at = lambda t: {pid: v[1] for ts, _, s in samples if ts <= t for pid, v in s.items() if v[0] == kind}
    a, b = at(t0), at(t1)
    return sum(b[p] - a.get(p, 0) for p in b)


def machine_between(samples, t0, t1):
    """(busy cores, irq + softirq cores) of the machine between T0 and T1 (last samples before)."""
    a = next((m for ts, m, _ in reversed(samples) if ts <= t0), samples[0][1])
    b = next((m for ts, m, _ in reversed(samples) if ts <= t1), samples[-1][1])
    return (b[0] - a[0]) / HZ / (t1 - t0), (b[1] - a[1]) / HZ / (t1 - t0)


def applied_between(rundir, t0, t1):
    """Updates the server applied between T0 and T1 (records/applied.jsonl "t")."""
    n = 0
    try:
        with open(os.path.join(rundir, "mlfabric-a", "records", "applied.jsonl")) as f:
            for line in f:
                try:
                    t = json.loads(line).get("t")
                except ValueError:
                    continue
                n += t is not None and t0 <= t <= t1
    except OSError:
        return None
    return n


def load(path):
    with open(path) as f:
        return json.load(f)


def med(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "-"
    return "%.2f (%.2f-%.2f)" % (statistics.median(xs), min(xs), max(xs))


def key(out, name):
    k = os.path.join(out, name + ".key")
    if not os.path.exists(k):
        subprocess.run([os.path.join(ROOT, "tools", "mlf-keygen"), k], check=True, stdout=subprocess.DEVNULL)
    os.chmod(k, 0o600)


def window(samples, rd, t0, t1):
    """The CPU figures of one window [T0, T1] of a run (RD: its folder)."""
    fab_ticks = ticks_between(samples, t0, t1, "fabric")
    busy, irq = machine_between(samples, t0, t1)
    n = applied_between(rd, t0, t1)
    return {"s": t1 - t0, "fabric": fab_ticks / HZ / (t1 - t0), "launch": cpu_between(samples, t0, t1, "launch"),
            "machine": busy, "irq": irq, "applied": n, "per_update": fab_ticks / HZ / n if n else None,
            "ups": n / (t1 - t0) if n is not None else None}


def show(w):
    return ("%.1f s: fabric %.2f cores, %s applied (%.1f/s), %.4f core-s per update; launch %.2f; machine %.2f "
            "(irq+softirq %.2f)" % (w["s"], w["fabric"], w["applied"], w["ups"] or 0, w["per_update"] or 0,
                                     w["launch"], w["machine"], w["irq"]))


def train(out, seeds, tlimit):
    base = load(os.path.join(ROOT, "conf", "cluster-fabric.json"))
    key(out, base["name"])
    base["key_file"] = base["name"] + ".key"
    cls = {"local": dict(base)}
    ssh = json.loads(json.dumps(base))
    ssh["launch"] = SSH_LAUNCH
    for h in ssh["hosts"]:
        h["control_ip"] = h["ip"].replace("10.84.", "10.96.", 1)
    cls["ssh"] = ssh
    rows = {"local": [], "ssh": []}
    for seed in range(1, seeds + 1):
        for via in ("local", "ssh"):
            cl = os.path.join(out, "cluster-%s.json" % via)
            with open(cl, "w") as f:
                json.dump(cls[via], f, indent=1)
            x = load(os.path.join(ROOT, "conf", "exp-default.json"))
            x.update(cluster=cl, seed=seed, time_limit_s=tlimit)
            exp = os.path.join(out, "exp-%s-%d.json" % (via, seed))
            with open(exp, "w") as f:
                json.dump(x, f, indent=1)
            rd = os.path.join(out, "%s-%d" % (via, seed))
            t_start, t_exit, samples, rc = run(exp, rd, cl, os.path.join(rd, "ssh"))
            try:
                r = load(os.path.join(rd, "results.json"))["systems"]["mlfabric-a"]
                rj = load(os.path.join(rd, "mlfabric-a", "run.json"))
            except (OSError, ValueError, KeyError):
                print("%s seed %d: no results (status %d, %s.log)" % (via, seed, rc, rd), flush=True)
                continue
            ttt = r.get("time_to_target_s") if r.get("reached") else None
            nfab = len({pid for _, _, smp in samples for pid, v in smp.items() if v[0] == "fabric"})
            rcpu = (rj.get("cpu") or {}).get("groups") or {}
            row = {"ttt": ttt, "run": window(samples, rd, rj["t0"], rj["t_end"]), "runjson": sum(rcpu.values()),
                   "launch_s": rj["t0"] - t_start, "teardown_s": t_exit - rj["t_end"], "n": nfab,
                   "samples": samples, "rd": rd, "t0": rj["t0"]}
            rows[via].append(row)
            print("%-5s seed %d: time to %s %s s, %d fabric processes; training %s; run.json cpu %.2f; "
                  "launch %.1f s, teardown %.1f s" %
                  (via, seed, x["target_accuracy"], "%.1f" % ttt if ttt is not None else "not reached", nfab,
                   show(row["run"]), row["runjson"], row["launch_s"], row["teardown_s"]), flush=True)
    every = [r for rs in rows.values() for r in rs]
    if not every:
        return
    w = min(r["run"]["s"] for r in every)   # the same phase of training in every run: its first W s
    for via, rs in rows.items():
        for r in rs:
            r["first"] = window(r["samples"], r["rd"], r["t0"], r["t0"] + w)
        print("%-5s %d runs: time to target %s s (%d reached); launch %s s; teardown %s s; run.json cpu %s" %
              (via, len(rs), med([r["ttt"] for r in rs]), sum(r["ttt"] is not None for r in rs),
               med([r["launch_s"] for r in rs]), med([r["teardown_s"] for r in rs]), med([r["runjson"] for r in rs])))
        for name, label in (("run", "training (t0 to t_end)"), ("first", "first %.1f s after t0" % w)):
            print("      %s: fabric CPU %s cores; applied/s %s; core-s per update %s; launch CPU %s; machine %s; "
                  "irq+softirq %s; window %s s" %
                  (label, med([r[name]["fabric"] for r in rs]), med([r[name]["ups"] for r in rs]),
                   med4([r[name]["per_update"] for r in rs]), med([r[name]["launch"] for r in rs]),
                   med([r[name]["machine"] for r in rs]), med([r[name]["irq"] for r in rs]),
                   med([r[name]["s"] for r in rs])))


def med4(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "-"
    return "%.4f (%.4f-%.4f)" % (statistics.median(xs), min(xs), max(xs))


def launch_cluster(out, n):
    """The cluster and experiment files of the N-host launch measure: the experiment's path."""
    name = "ls%d" % n
    key(out, name)
    hs = [{"name": "ps", "ip": "10.94.0.2", "control_ip": "10.95.0.2", "up_gbps": 1, "down_gbps": 1,
           "roles": ["server", "scheduler"]}]
    for i in range(n - 1):
        hs.append({"name": "w%d" % i, "ip": "10.94.0.%d" % (10 + i), "control_ip": "10.95.0.%d" % (10 + i),
                   "up_gbps": 1, "down_gbps": 1, "roles": ["worker", "aggregator"] if i < 2 else ["worker"]})
    cl = os.path.join(out, "cluster-%d.json" % n)
    with open(cl, "w") as f:
        json.dump({"name": name, "key_file": name + ".key", "mtu": 1500, "prefix_len": 24, "udp_port": 47000,
                   "control_port": 7070, "launch": SSH_LAUNCH, "hosts": hs}, f, indent=1)
    x = load(os.path.join(ROOT, "conf", "exp-default.json"))
    x.update(cluster=cl, time_limit_s=5, model="784,64,10", target_accuracy=0.99)
    exp = os.path.join(out, "exp-%d.json" % n)
    with open(exp, "w") as f:
        json.dump(x, f, indent=1)
    return exp, cl


def launch(out, hosts, rounds):
    res = {}
    files = {n: launch_cluster(out, n) for n in hosts}
    for k in range(1, rounds + 1):
        for n in hosts:   # alternating sizes within every round
            exp, cl = files[n]
            rd = os.path.join(out, "hosts%d-%d" % (n, k))
            t_start, t_exit, samples, rc = run(exp, rd, cl, os.path.join(rd, "ssh"))
            try:
                rj = load(os.path.join(rd, "mlfabric-a", "run.json"))
                up, down = rj["t0"] - t_start, t_exit - rj["t_end"]
            except (OSError, ValueError, KeyError):
                print("%d hosts round %d: no run.json (status %d, %s.log)" % (n, k, rc, rd), flush=True)
                continue
            busy = machine_between(samples, t_start, rj["t0"])[0]
            res.setdefault(n, []).append((up, down, busy))
            print("%d hosts round %d: launch %.1f s (machine %.2f cores busy), teardown %.1f s (status %d)"
                  % (n, k, up, busy, down, rc), flush=True)
    for n, rs in res.items():
        print("%d hosts, %d rounds: launch %s s, teardown %s s; machine busy during launch %s cores"
              % (n, len(rs), med([a for a, _, _ in rs]), med([b for _, b, _ in rs]), med([c for _, _, c in rs])))


def main(argv):
    if not argv or argv[0] not in ("train", "launch"):
        sys.stderr.write(__doc__)
        return 2
    opt = dict(zip(argv[1::2], argv[2::2]))
    out = os.path.abspath(opt.get("--out", os.path.join(ROOT, "runs", "launch-ssh")))
    os.makedirs(out, exist_ok=True)
    if argv[0] == "train":
        train(out, int(opt.get("--seeds", 3)), float(opt.get("--time-limit", 300)))
    else:
        launch(out, [int(h) for h in opt.get("--hosts", "5,20").split(",")], int(opt.get("--rounds", 3)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
