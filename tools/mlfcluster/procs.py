"""The processes of one system: start in a namespace with a log, pid tracking (pids.tsv, read by
the fault driver and tools/mlf-fault), liveness, stop (TERM then KILL), readiness waits."""
import fnmatch
import os
import signal
import subprocess
import threading
import time


def alive(pid):
    """PID still runs (a zombie, an exited child not yet reaped, does not)."""
    try:
        os.kill(pid, 0)
        with open("/proc/%d/stat" % pid) as f:
            st = f.read()
    except (OSError, ValueError):
        return False
    return st.rsplit(")", 1)[-1].split()[0:1] != ["Z"]


def last_line(path):
    """The last non-empty line of a log ('' when none)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - 4096))
            lines = [l for l in f.read().decode("utf-8", "replace").splitlines() if l.strip()]
    except OSError:
        return ""
    return lines[-1] if lines else ""


class NotReady(Exception):
    """A process did not become ready (one line naming it and what was awaited)."""


class Proc:
    def __init__(self, name, pid, log, popen=None):
        self.name, self.pid, self.log, self.popen = name, pid, log, popen
        self.handled = False

    def alive(self):
        if self.popen is not None:
            return self.popen.poll() is None
        return alive(self.pid)

    def signal(self, sig):
        """Send SIG to the process (a process started through a launcher over ssh forwards it,
        tools/mlfcluster/launcher.py)."""
        os.kill(self.pid, sig)

    def status(self):
        """Exit status as a shell reports it (128 + signal for a signal), None if unknown."""
        if self.popen is None:
            return None
        rc = self.popen.poll()
        if rc is None:
            return None
        return 128 - rc if rc < 0 else rc


class Procs:
    """Every process the runner started for the current system."""

    def __init__(self, sysdir):
        self.sysdir = sysdir
        self.list = []
        self.lock = threading.Lock()

    def start(self, name, log, argv, env=None):
        """ARGV in the background, stdout and stderr to LOG, stdin /dev/null, its own process
        group (a terminal's Ctrl-C reaches the runner, which stops the processes in order);
        ENV (a dict) is added to the runner's environment."""
        with open(log, "w") as out:
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                 process_group=0, env=dict(os.environ, **env) if env else None)
        proc = Proc(name, p.pid, log, p)
        with self.lock:
            self.list.append(proc)
        return proc

    def adopt(self, name, pid, log):
        """A process started by someone else (a dataplane started by mlf-testbed)."""
        proc = Proc(name, pid, log)
        with self.lock:
            self.list.append(proc)
        return proc

    def write_pids(self):
        """pids.tsv: "name pid" lines, rewritten whenever a process starts."""
        path = os.path.join(self.sysdir, "pids.tsv")
        with self.lock:
            text = "".join("%s %d\n" % (p.name, p.pid) for p in self.list)
        with open(path + ".tmp", "w") as f:
            f.write(text)
        os.replace(path + ".tmp", path)

    def matching(self, *patterns):
        with self.lock:
            return [p for p in self.list if any(fnmatch.fnmatchcase(p.name, pat) for pat in patterns)]

    def live(self, name):
        """The live process NAME (server@H, worker@H, ...), or None."""
        for p in self.matching(name):
            if p.alive():
                return p
        return None

    def by_pid(self, pid):
        with self.lock:
            for p in self.list:
                if p.pid == pid:
                    return p
        return None


def _signal_alive(procs, sig):
    """Send SIG to each of PROCS still running (one that exits meanwhile is no error)."""
    for p in procs:
        if p.alive():
            try:
                p.signal(sig)
            except OSError:
                pass


def stop(procs, grace):
    """SIGTERM to all, SIGKILL to those still running after GRACE seconds; reaps our children."""
    _signal_alive(procs, signal.SIGTERM)
    end = time.monotonic() + grace
    while time.monotonic() < end and any(p.alive() for p in procs):
        time.sleep(0.1)
    _signal_alive(procs, signal.SIGKILL)
    for p in procs:
        if p.popen is not None:
            try:
                p.popen.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass


def wait_ready(what, check, timeout, procs=(), interval=0.05):
    """Poll CHECK() until true; NotReady naming WHAT after TIMEOUT seconds, or at once when one
    of PROCS exits (its last log line is in the message)."""
    end = time.monotonic() + timeout
    while True:
        if check():
            return
        for p in procs:
            if not p.alive():
                raise NotReady("%s exited before it was ready: %s" % (p.name, last_line(p.log)))
        if time.monotonic() >= end:
            raise NotReady("%s not ready within %g s" % (what, timeout))
        time.sleep(interval)


def log_has(path, text):
    """CHECK for wait_ready: TEXT occurs in the log PATH."""
    def check():
        try:
            with open(path, "rb") as f:
                return text.encode() in f.read()
        except OSError:
            return False
    return check
