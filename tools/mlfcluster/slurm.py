"""A local Slurm for the emulated testbed (docs/deploy.md "Slurm"): Debian's slurm-wlm 22.05 with
one slurmctld on this machine (the management bridge's address) and one slurmd per testbed
namespace, each its own node (NodeName = the host's name, NodeAddr = its control_ip, spool and
pid files per node through %n), authentication auth/none (no munge daemon), no cgroup
enforcement (proctrack/pgid, task/none), every file under one folder of the run. Used by the
launcher's "via": "slurm" with "emulate": true; a real cluster brings its own Slurm."""
import os
import re
import socket
import subprocess
import time

from .procs import alive

SLURMD_PORT = 6818      # each slurmd listens in its own namespace: the same port on every node
READY_S = 30            # every slurmd registered (sinfo: idle) within this
ALLOC_S = 30            # salloc granted the allocation within this
STOP_S = 10             # a daemon stops within this of its TERM (then KILL)
SQUEUE_S = 10           # squeue answers within this

# The cgroup plugin is loaded even with proctrack/pgid and task/none, and finds no cgroup file
# system in `ip netns exec`'s fresh /sys: the namespaces' slurmd look at this machine's through
# /proc/1/root (the same pid namespace).
CGROUP_CONF = "CgroupPlugin=cgroup/v1\nCgroupMountpoint=/proc/1/root/sys/fs/cgroup\n"


def free_port(addr):
    """A TCP port free on ADDR now (slurmctld's, picked per run)."""
    s = socket.socket()
    try:
        s.bind((addr, 0))
        return s.getsockname()[1]
    finally:
        s.close()


def conf_text(folder, ctl_name, ctl_addr, ctl_port, nodes, cpus):
    """slurm.conf for a cluster of NODES ([(name, addr)]) whose slurmctld runs on CTL_NAME (this
    machine's host name) at CTL_ADDR:CTL_PORT; every state, spool, pid and log file under FOLDER.
    Each node claims CPUS cores (config_overrides: more than this machine has, so that a host's
    processes are not limited by the allocation; every step runs with --overlap)."""
    lines = ["ClusterName=mlf", "SlurmctldHost=%s(%s)" % (ctl_name, ctl_addr), "SlurmctldPort=%d" % ctl_port,
             "SlurmdPort=%d" % SLURMD_PORT, "AuthType=auth/none", "CredType=cred/none", "SlurmUser=root",
             "SlurmdUser=root", "StateSaveLocation=%s/state" % folder, "SlurmdSpoolDir=%s/spool-%%n" % folder,
             "SlurmctldPidFile=%s/slurmctld.pid" % folder, "SlurmdPidFile=%s/slurmd-%%n.pid" % folder,
             "SlurmctldLogFile=%s/slurmctld.log" % folder, "SlurmdLogFile=%s/slurmd-%%n.log" % folder,
             "ProctrackType=proctrack/pgid", "TaskPlugin=task/none", "JobAcctGatherType=jobacct_gather/none",
             "AccountingStorageType=accounting_storage/none", "JobCompType=jobcomp/none",
             "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core", "SlurmdParameters=config_overrides",
             "MpiDefault=none", "SwitchType=switch/none", "ReturnToService=2", "KillWait=2", "InactiveLimit=0"]
    for name, addr in nodes:
        lines.append("NodeName=%s NodeHostname=%s NodeAddr=%s CPUs=%d State=UNKNOWN" % (name, addr, addr, cpus))
    lines.append("PartitionName=mlf Nodes=ALL Default=YES MaxTime=INFINITE State=UP")
    return "\n".join(lines) + "\n"


class LocalSlurm:
    """slurmctld and one slurmd per namespace, all started and stopped by this object (by pid)."""

    def __init__(self, folder, cname):
        self.folder, self.cname = folder, cname
        self.conf = os.path.join(folder, "slurm.conf")
        self.env = dict(os.environ, SLURM_CONF=self.conf)
        self.procs = {}     # "slurmctld" or "slurmd@HOST": Popen
        self.job = None

    def run(self, argv, timeout=30):
        """A Slurm command against this cluster: the CompletedProcess (text)."""
        return subprocess.run(argv, env=self.env, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                              timeout=timeout)

    def up(self, hosts, ctl_addr, log):
        """Start slurmctld on CTL_ADDR and a slurmd per host of HOSTS ([(name, namespace, addr)]),
        wait until every node is idle: True, or False with what failed in LOG."""
        os.makedirs(os.path.join(self.folder, "state"), exist_ok=True)
        for name, _, _ in hosts:
            os.makedirs(os.path.join(self.folder, "spool-" + name), exist_ok=True)
        with open(self.conf, "w") as f:
            f.write(conf_text(self.folder, socket.gethostname().split(".")[0], ctl_addr, free_port(ctl_addr),
                              [(n, a) for n, _, a in hosts], max(64, os.cpu_count() or 1)))
        with open(os.path.join(self.folder, "cgroup.conf"), "w") as f:
            f.write(CGROUP_CONF)
        self.start("slurmctld", ["slurmctld", "-D", "-f", self.conf])
        for name, ns, _ in hosts:
            self.start("slurmd@" + name, ["ip", "netns", "exec", ns, "slurmd", "-D", "-f", self.conf, "-N", name])
        end = time.monotonic() + READY_S
        state = {}
        while time.monotonic() < end:
            dead = [k for k, p in self.procs.items() if p.poll() is not None]
            if dead:
                log.write("%s exited (status %d): see %s\n" % (dead[0], self.procs[dead[0]].returncode,
                                                                self.out(dead[0])))
                return False
            try:
                r = self.run(["sinfo", "-h", "-N", "-o", "%N %t"], timeout=10)
            except subprocess.TimeoutExpired:
                continue
            state = dict(line.split() for line in r.stdout.splitlines() if len(line.split()) == 2)
            if len(state) == len(hosts) and all(s == "idle" for s in state.values()):
                log.write("slurm: slurmctld on %s, %d slurmd idle (%s)\n" % (ctl_addr, len(hosts), self.conf))
                return True
            time.sleep(0.3)
        log.write("slurm: nodes not idle within %d s: %s (logs in %s)\n"
                  % (READY_S, " ".join("%s=%s" % kv for kv in sorted(state.items())) or "sinfo answered nothing",
                     self.folder))
        return False

    def out(self, key):
        return os.path.join(self.folder, key.replace("@", "-") + ".out")

    def start(self, key, argv):
        with open(self.out(key), "w") as out:
            self.procs[key] = subprocess.Popen(argv, env=self.env, stdin=subprocess.DEVNULL, stdout=out,
                                               stderr=subprocess.STDOUT, process_group=0)

    def allocate(self, nodes, name, log):
        """An allocation of NODES (salloc --no-shell): {SLURM_JOB_ID, SLURM_JOB_NODELIST}, or None
        with what failed in LOG: salloc's answer, or salloc or squeue not answering within its
        timeout (named with the command)."""
        try:
            r = self.run(["salloc", "--no-shell", "-N", str(len(nodes)), "-w", ",".join(nodes), "-J", name,
                          "--immediate=%d" % ALLOC_S], timeout=ALLOC_S + 10)
        except subprocess.TimeoutExpired:
            log.write("slurm: salloc did not answer within %d s\n" % (ALLOC_S + 10))
            return None
        m = re.search(r"Granted job allocation (\d+)", r.stderr + r.stdout)
        if not m:
            log.write("slurm: salloc: %s\n" % (r.stderr.strip() or "no allocation (status %d)" % r.returncode))
            return None
        self.job = m.group(1)   # down() cancels it, also when what follows fails
        squeue = ["squeue", "-h", "-j", self.job, "-o", "%N"]
        try:
            nl = self.run(squeue, timeout=SQUEUE_S).stdout.strip()
        except subprocess.TimeoutExpired:
            log.write("slurm: allocation %s granted, but '%s' did not answer within %g s: its node list "
                      "is unknown (slurmctld busy or gone? see %s)\n"
                      % (self.job, " ".join(squeue), SQUEUE_S, os.path.join(self.folder, "slurmctld.log")))
            return None
        log.write("slurm: allocation %s on %s\n" % (self.job, nl))
        return {"SLURM_JOB_ID": self.job, "SLURM_JOB_NODELIST": nl}

    def down(self):
        """The allocation cancelled (every step ends), every daemon stopped (TERM, then KILL):
        the names of those that needed a KILL or left a pid file's process running."""
        bad = []
        if self.job:
            try:
                self.run(["scancel", self.job], timeout=15)
                end = time.monotonic() + STOP_S
                while time.monotonic() < end and self.run(["squeue", "-h", "-j", self.job],
                                                         timeout=SQUEUE_S).stdout.strip():
                    time.sleep(0.3)
            except subprocess.TimeoutExpired:
                pass
            self.job = None
        for key in sorted(self.procs, key=lambda k: k == "slurmctld"):   # slurmctld last
            p = self.procs[key]
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=STOP_S)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(timeout=5)
                    bad.append(key)
        self.procs = {}
        for f in sorted(os.listdir(self.folder)) if os.path.isdir(self.folder) else []:
            if not (f.startswith("slurm") and f.endswith(".pid")):
                continue
            try:
                with open(os.path.join(self.folder, f)) as fh:
                    pid = int(fh.read().split()[0])
            except (OSError, ValueError, IndexError):
                continue
            if alive(pid) and pid_cmd(pid).startswith("slurm"):
                os.kill(pid, 9)
                bad.append(f[:-4])
        return bad


def pid_cmd(pid):
    """PID's command line ('' when gone)."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""
