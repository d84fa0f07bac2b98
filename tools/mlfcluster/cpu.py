"""CPU time from /proc: the machine's busy time (/proc/stat) and each process tree's (/proc/PID/stat).

Busy time = user + nice + system + irq + softirq (iowait, idle and steal are not busy), in clock
ticks (USER_HZ, os.sysconf("SC_CLK_TCK")). A process's CPU is its utime + stime plus those of its
live descendants (mpirun's ranks, a shell's child): what a tracked process costs the machine.

The runner samples every system's processes every progress period into <system>/cpu.jsonl and
puts the usage over the run (t0 to the stop) into run.json "cpu" (docs/experiments.md).
As a script, `python3 tools/mlfcluster/cpu.py ticks` prints "BUSY_TICKS HZ" (bench/torch_bench.sh).
"""
import os
import sys
import time

HZ = os.sysconf("SC_CLK_TCK")
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024


def machine_ticks(stat="/proc/stat"):
    """The machine's busy clock ticks since boot, all cores (None when /proc/stat is unreadable)."""
    try:
        with open(stat) as f:
            for line in f:
                w = line.split()
                if w and w[0] == "cpu":
                    v = [int(x) for x in w[1:8]]
                    return v[0] + v[1] + v[2] + v[5] + v[6]
    except (OSError, ValueError, IndexError):
        pass
    return None


def parse_stat(text):
    """(pid, ppid, utime + stime ticks) of a /proc/PID/stat line; None when malformed. The
    command name may hold spaces and parentheses: fields are counted after the last ')'."""
    try:
        head, rest = text.rsplit(")", 1)
        pid = int(head.split("(", 1)[0])
        w = rest.split()
        # rest starts at field 3 (state): ppid is field 4, utime 14, stime 15
        return pid, int(w[1]), int(w[11]) + int(w[12])
    except (ValueError, IndexError):
        return None


def rss_kb(text):
    """Resident set size in KiB of a /proc/PID/stat line (field 24, pages); None when malformed."""
    try:
        return int(text.rsplit(")", 1)[1].split()[21]) * PAGE_KB
    except (ValueError, IndexError):
        return None


def all_procs(proc="/proc", rss=False):
    """{pid: (ppid, ticks)} of every live process; with RSS {pid: (ppid, resident KiB)}."""
    out = {}
    try:
        names = os.listdir(proc)
    except OSError:
        return out
    for n in names:
        if not n.isdigit():
            continue
        try:
            with open(os.path.join(proc, n, "stat")) as f:
                text = f.read()
                p = parse_stat(text)
        except OSError:
            continue
        if p:
            out[p[0]] = (p[1], rss_kb(text) or 0) if rss else (p[1], p[2])
    return out


def tree_ticks(roots, table):
    """{root pid: ticks of the root and its live descendants} from TABLE (all_procs()); a pid
    below two roots counts for the nearest."""
    kids = {}
    for pid, (ppid, _) in table.items():
        kids.setdefault(ppid, []).append(pid)
    rootset = set(roots)
    out = {}
    for r in roots:
        if r not in table:
            continue
        total, todo = 0, [r]
        while todo:
            p = todo.pop()
            total += table[p][1]
            todo += [k for k in kids.get(p, []) if k not in rootset]
        out[r] = total
    return out


def snapshot(named, proc="/proc", stat="/proc/stat"):
    """A sample: {"t": wall time s, "machine": busy ticks, "procs": {name: ticks}, "rss_kb":
    {name: resident KiB of the process tree}, "pids": {name: pid}} of NAMED, a list of (name,
    pid); processes that are gone are left out (make soak compares each daemon's RSS)."""
    t = time.time()
    m = machine_ticks(stat)
    tt = tree_ticks([p for _, p in named], all_procs(proc))
    rs = tree_ticks([p for _, p in named], all_procs(proc, rss=True))
    return {"t": t, "machine": m, "hz": HZ, "procs": {n: tt[p] for n, p in named if p in tt},
            "rss_kb": {n: rs[p] for n, p in named if p in rs}, "pids": {n: p for n, p in named if p in tt}}


def last_known(samples):
    """The last of SAMPLES with, for every process seen in any of them, its last known ticks (a
    process that exited between samples keeps its CPU up to the last sample that saw it)."""
    if not samples:
        return None
    procs = {}
    for s in samples:
        procs.update(s["procs"])
    return dict(samples[-1], procs=procs)


GROUPS = [("dataplane@", "dataplanes"), ("worker@", "workers"), ("mpirun", "workers"),
          ("scheduler@", "scheduler"), ("server@", "server"), ("replica@", "server"),
          ("aggregator@", "aggregators")]


def group_of(name):
    for pre, g in GROUPS:
        if name.startswith(pre):
            return g
    return "other"


def usage(a, b):
    """CPU between samples A and B in cores (CPU seconds per second of wall time):
    {"wall_s", "machine_cores", "groups": {dataplanes, workers, scheduler, server, aggregators,
    other}, "procs": {name: cores}}; a process in B only counts from 0 (started in between);
    None when the samples are unusable."""
    if not a or not b:
        return None
    dt = b["t"] - a["t"]
    hz = float(b.get("hz") or HZ)
    if dt <= 0:
        return None
    procs = {n: (v - a["procs"].get(n, 0)) / hz / dt for n, v in b["procs"].items()}
    groups = {}
    for n, c in procs.items():
        g = group_of(n)
        groups[g] = groups.get(g, 0.0) + c
    mc = None
    if a.get("machine") is not None and b.get("machine") is not None:
        mc = (b["machine"] - a["machine"]) / hz / dt
    rnd = lambda x: round(x, 3)
    return {"wall_s": rnd(dt), "machine_cores": None if mc is None else rnd(mc),
            "groups": {g: rnd(c) for g, c in sorted(groups.items())},
            "procs": {n: rnd(c) for n, c in sorted(procs.items())}}


if __name__ == "__main__":
    if sys.argv[1:] != ["ticks"]:
        sys.stderr.write("usage: cpu.py ticks   (prints the machine's busy ticks and USER_HZ)\n")
        sys.exit(2)
    m = machine_ticks()
    if m is None:
        sys.stderr.write("cpu.py: cannot read /proc/stat\n")
        sys.exit(1)
    print(m, HZ)
