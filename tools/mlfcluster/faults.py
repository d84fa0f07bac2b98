"""The fault driver (docs/experiments.md "What the runner does"): the experiment's "faults"
injected at T0 + at_s (and cut-link / loss-burst ended after duration_s), in time order; a
kill-worker waits from at_s for the worker's first push, so that the kill hits a worker that
trains however slow the machine is; every event is appended to <system>/faults.jsonl, every
kill's pid to killed.pids before the kill."""
import glob
import json
import os
import shutil
import signal
import threading
import time

from .experiment import num_str


def plan(faults):
    """(t, i, phase, fault) events sorted by time, then fault number (faults.plan's order)."""
    ev = []
    for f in faults:
        ev.append((f.at, f.index, "start", f))
        if f.kind in ("cut-link", "loss-burst"):
            ev.append((f.at + f.dur, f.index, "end", f))
    ev.sort(key=lambda e: (e[0], e[1]))
    return ev


def killed_pids(sysdir):
    try:
        with open(os.path.join(sysdir, "killed.pids")) as f:
            return {int(l) for l in f.read().split()}
    except (OSError, ValueError):
        return set()


class FaultDriver(threading.Thread):
    def __init__(self, faults, sysdir, procs, tb, t0, log_path, pending=None):
        super().__init__(name="fault-driver", daemon=True)
        self.faults, self.sysdir, self.procs, self.tb, self.t0 = faults, sysdir, procs, tb, t0
        # (time, "restart", process name, fault index): restarts the runner's watch loop makes
        self.pending = pending if pending is not None else []
        self.log_path = log_path
        self.stopped = threading.Event()
        self.events = plan(faults)
        with open(os.path.join(sysdir, "faults.plan"), "w") as f:
            for t, i, phase, x in self.events:
                f.write("%s %d %s %s %s %s %s %s\n" % (num_str(float(t)), i, phase, num_str(x.at), x.kind,
                                                        x.host, num_str(x.dur), num_str(x.loss)))
        open(os.path.join(sysdir, "faults.jsonl"), "w").close()

    def run(self):
        with open(self.log_path, "a") as out:
            for t, i, phase, f in self.events:
                if self.stopped.wait(max(self.t0 + t - time.time(), 0)):
                    return
                what = self.awaited(phase, f)
                if what:
                    out.write("t=%.2fs fault %d %s %s %s: waiting for %s\n"
                              % (time.time() - self.t0, i, phase, f.kind, f.host, what))
                    out.flush()
                    while self.awaited(phase, f):
                        if self.stopped.wait(0.1):
                            out.write(self.not_injected(i, phase, f, what) + "\n")
                            return
                out.write(self.event(i, phase, f) + "\n")
                out.flush()

    def awaited(self, phase, f):
        """What the start of fault @f still waits for ("" when nothing): a kill-worker waits
        until the live worker has written a push (records/<host>[-rK]/pushes.jsonl written
        since it started)."""
        if phase != "start" or f.kind != "kill-worker":
            return ""
        p = self.procs.live("worker@" + f.host)
        if not p:
            return ""  # nothing to wait for: the kill reports no live worker
        since = getattr(p, "t_start", 0)
        rec = os.path.join(self.sysdir, "records")
        for path in [os.path.join(rec, f.host, "pushes.jsonl")] + \
                glob.glob(os.path.join(rec, f.host + "-r*", "pushes.jsonl")):
            try:
                st = os.stat(path)
            except OSError:
                continue
            if st.st_size > 0 and st.st_mtime >= since:
                return ""
        return "the first push of worker %s (records/%s/pushes.jsonl)" % (f.host, f.host)

    def not_injected(self, i, phase, f, what):
        """The run ended while fault @i waited for @what: a failed event naming it."""
        now = time.time()
        rec = {"t": now, "t_done": now, "t_s": round(now - self.t0, 3), "fault": i,
               "event": phase, "kind": f.kind, "host": f.host, "duration_s": f.dur, "loss": f.loss,
               "pid": None, "ok": False, "action": "not injected: the run ended before " + what}
        with open(os.path.join(self.sysdir, "faults.jsonl"), "a") as out:
            out.write(json.dumps(rec, separators=(",", ":")) + "\n")
        return "t=%.2fs fault %d %s %s %s: %s (failed)" % (now - self.t0, i, phase, f.kind, f.host,
                                                          rec["action"])

    def stop(self):
        self.stopped.set()
        self.join(timeout=10)

    def snapshot_copy(self, i):
        """A copy of the verification snapshots just before the fault: the index first, then
        hard links of the snapshot files, so every line of the copied index names a file in it."""
        vdir = os.path.join(self.sysdir, "records", "verify")
        if not os.path.isdir(vdir):
            return
        vcopy = os.path.join(self.sysdir, "verify-fault-%d" % i)
        os.makedirs(vcopy, exist_ok=True)
        idx = os.path.join(vdir, "snapshots.jsonl")
        if os.path.isfile(idx):
            shutil.copyfile(idx, os.path.join(vcopy, "snapshots.jsonl"))
        for p in glob.glob(os.path.join(vdir, "*.f32")):
            try:
                os.link(p, os.path.join(vcopy, os.path.basename(p)))
            except OSError:
                pass

    def event(self, i, phase, f):
        """Inject (start) or end fault I; append it to faults.jsonl; the log line."""
        if phase == "start":
            self.snapshot_copy(i)
        now = time.time()  # taken before the injection: detection comes after it
        pid, ok, what = None, True, ""
        if phase == "start" and f.kind.startswith("kill-"):
            names = {"kill-server": ["server@" + f.host, "replica@" + f.host],
                     "kill-aggregator": ["aggregator@" + f.host], "kill-worker": ["worker@" + f.host],
                     "kill-scheduler": ["scheduler@" + f.host]}[f.kind]
            p = None
            for n in names:
                p = self.procs.live(n)
                if p:
                    break
            if p:
                pid = p.pid
                with open(os.path.join(self.sysdir, "killed.pids"), "a") as k:
                    k.write("%d\n" % pid)
                try:
                    p.signal(signal.SIGKILL)
                    what = "kill -9 %s (pid %d)" % (p.name, pid)
                    if f.restart_s:
                        self.pending.append((time.time() + f.restart_s, "restart", p.name, i))
                        what += ", restart in %s s" % num_str(f.restart_s)
                except OSError:
                    p = None
            if not p:
                ok, what = False, "no live %s process on %s" % (f.kind[len("kill-"):], f.host)
        else:
            if phase == "end":
                what = "/mlfabric/faults,none"
            elif f.kind == "cut-link":
                what = "/mlfabric/faults,drop=1"
            else:
                what = "/mlfabric/faults,drop=%s" % num_str(f.loss)
            ok = self.tb.tel(f.host, what)
            what = "mlf-tel %s-%s %s" % (self.tb.cname, f.host, what)
        done = time.time()  # the injection has returned: a killed process is gone by now
        rec = {"t": now, "t_done": done, "t_s": round(now - self.t0, 3), "fault": i,
               "event": phase, "kind": f.kind, "host": f.host, "duration_s": f.dur, "loss": f.loss,
               "pid": pid, "ok": ok, "action": what}
        with open(os.path.join(self.sysdir, "faults.jsonl"), "a") as out:
            out.write(json.dumps(rec, separators=(",", ":")) + "\n")
        return "t=%.2fs fault %d %s %s %s: %s%s" % (now - self.t0, i, phase, f.kind, f.host, what,
                                                    "" if ok else " (failed)")
