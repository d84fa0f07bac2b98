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
aggregators, workers, wherever they were started) is sampled every 0.25 s; its CPU over the
training (run.json t0 to t_end) is its utime + stime at the last sample before t_end minus that at
the last sample before t0, summed, in cores (CPU seconds per second). Over ssh the launch's own
processes (the ssh clients, the sshds' sessions and the wrapper shells under them) are summed
apart. run.json's own "cpu" counts the local launcher's process trees, which over ssh are the
ssh clients: it is printed for reference only.

launch: a cluster of H hosts (ps: server and scheduler, H-1 workers, two of them aggregators;
10.94.0.x, management 10.95.0.x) over emulated ssh, MLfabric-A on the default experiment's
settings with the model 784,64,10, trained for 5 s, ROUNDS times (default 3): launch time = from
starting `mlf-cluster run` to run.json t0 (testbed, bridge, sshds, ssh reachable, key, every
dataplane, scheduler, server, aggregator and worker ready, workers started); teardown time = from
run.json t_end (the stop) to mlf-cluster's exit (processes stopped in order, records gathered,
every host swept through clush, sshds, bridge and namespaces removed).

Prints one line per run and median (min-max) per variant; every run folder stays under OUT
(default runs/launch-ssh). Needs root and, when others share the machine, the namespace lock:
flock /tmp/mlf-netns.lock bench/launch_ssh.py train.
"""
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HZ = os.sysconf("SC_CLK_TCK")
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


def run(exp, rundir, cluster, sshdir):
    """mlf-cluster run EXP --out RUNDIR, sampling /proc: (t_start, t_exit, samples, status)."""
    t_start = time.time()
    with open(rundir + ".log", "w") as log:
        p = subprocess.Popen(["nice", os.path.join(ROOT, "tools", "mlf-cluster"), "run", exp, "--out", rundir],
                             stdout=log, stderr=subprocess.STDOUT)
        samples = []
        while p.poll() is None:
            samples.append((time.time(), classify(table(), cluster, sshdir)))
            time.sleep(0.25)
    return t_start, time.time(), samples, p.returncode


def cpu_between(samples, t0, t1, kind):
    """Cores of KIND's processes between T0 and T1 (their ticks at the last sample before each)."""
    at = lambda t: {pid: v[1] for ts, s in samples if ts <= t for pid, v in s.items() if v[0] == kind}
    a, b = at(t0), at(t1)
    return sum(b[p] - a.get(p, 0) for p in b) / HZ / (t1 - t0)


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
            fab = cpu_between(samples, rj["t0"], rj["t_end"], "fabric")
            lau = cpu_between(samples, rj["t0"], rj["t_end"], "launch")
            ttt = r.get("time_to_target_s") if r.get("reached") else None
            nfab = len({pid for _, smp in samples for pid, v in smp.items() if v[0] == "fabric"})
            rcpu = (rj.get("cpu") or {}).get("groups") or {}
            row = {"ttt": ttt, "fabric": fab, "launch": lau, "runjson": sum(rcpu.values()),
                   "machine": (rj.get("cpu") or {}).get("machine_cores"), "launch_s": rj["t0"] - t_start,
                   "teardown_s": t_exit - rj["t_end"], "n": nfab}
            rows[via].append(row)
            print("%-5s seed %d: time to %s %s s, %d fabric processes %.2f cores, launch processes %.2f, "
                  "run.json cpu (tracked trees) %.2f, machine %s; launch %.1f s, teardown %.1f s" %
                  (via, seed, x["target_accuracy"], "%.1f" % ttt if ttt is not None else "not reached", nfab, fab, lau,
                   row["runjson"], row["machine"], row["launch_s"], row["teardown_s"]), flush=True)
    for via, rs in rows.items():
        print("%-5s %d runs: time to target %s s (%d reached); fabric CPU %s cores; launch CPU %s; "
              "run.json cpu %s; launch %s s; teardown %s s" %
              (via, len(rs), med([r["ttt"] for r in rs]), sum(r["ttt"] is not None for r in rs),
               med([r["fabric"] for r in rs]), med([r["launch"] for r in rs]), med([r["runjson"] for r in rs]),
               med([r["launch_s"] for r in rs]), med([r["teardown_s"] for r in rs])))


def launch(out, hosts, rounds):
    res = {}
    for n in hosts:
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
        for k in range(1, rounds + 1):
            rd = os.path.join(out, "hosts%d-%d" % (n, k))
            t_start, t_exit, _, rc = run(exp, rd, cl, os.path.join(rd, "ssh"))
            try:
                rj = load(os.path.join(rd, "mlfabric-a", "run.json"))
                up, down = rj["t0"] - t_start, t_exit - rj["t_end"]
            except (OSError, ValueError, KeyError):
                print("%d hosts round %d: no run.json (status %d, %s.log)" % (n, k, rc, rd), flush=True)
                continue
            res.setdefault(n, []).append((up, down))
            print("%d hosts round %d: launch %.1f s, teardown %.1f s (status %d)" % (n, k, up, down, rc), flush=True)
    for n, rs in res.items():
        print("%d hosts, %d rounds: launch %s s, teardown %s s" % (n, len(rs), med([a for a, _ in rs]),
                                                                  med([b for _, b in rs])))


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
