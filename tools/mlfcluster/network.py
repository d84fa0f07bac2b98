"""The network setting (paper §7): a seeded rate schedule and the driver that applies it.

Every period_s each host's uplink and downlink take a rate from {1, 2.5, 3.3, 5, 10} x rate_scale
Gbit/s with the probabilities of the setting N1-N3. One Park-Miller stream seeded with the
experiment's seed draws, period by period, host by host (config order), the uplink then the
downlink: the same seed gives the same sequence whatever the system (docs/experiments.md
"What a run does, per system").
"""
import threading
import time

from .experiment import RATES


def fmt_g(v):
    """A rate or offset of network.tsv and `rates`: %g (0.33, 1, 10)."""
    return "%g" % v


def rate_schedule(exp, kmax):
    """Periods 0..KMAX: a list of (k, offset_s, host, up_gbps, down_gbps), numbers as floats."""
    rates = [float(r) for r in RATES]
    probs = [float(p) for p in exp.probs.split()]
    scale, period = float(exp.rate_scale), float(exp.period_s)
    x = (exp.seed * 7919 + 12345) % 2147483647
    if x <= 0:
        x += 2147483646
    out = []

    def draw():
        nonlocal x
        x = (x * 16807) % 2147483647
        u = x / 2147483647
        c = 0.0
        for r, p in zip(rates, probs):
            c += p
            if u < c:
                return r * scale
        for r, p in reversed(list(zip(rates, probs))):
            if p > 0:
                return r * scale
        return None

    for k in range(kmax + 1):
        for h in exp.hosts:
            up = draw()
            down = draw()
            out.append((k, k * period, h, up, down))
    return out


def schedule_lines(sched):
    """The schedule as network.tsv / `rates` prints it: "k offset host up down"."""
    return "".join("%d %s %s %s %s\n" % (k, fmt_g(o), h, fmt_g(u), fmt_g(d)) for k, o, h, u, d in sched)


def read_schedule(path):
    """network.tsv back as (k, offset, host, up, down) strings."""
    rows = []
    with open(path) as f:
        for line in f:
            w = line.split()
            if len(w) == 5:
                rows.append(w)
    return rows


def apply_period(tb, rows, k, declare, out, stopped=None, capacity=True):
    """Shape every host as period K says; DECLARE also tells each host's dataplane its
    capacities (/mlfabric/capacity,UP,DOWN) and its egress shaper (= uplink: the dataplane never
    sends faster than its uplink carries, so unscheduled transfers queue at the sender).
    CAPACITY False (experiment key capacity "measured"): the shaper only, no capacities: the
    scheduler measures them. STOPPED (an Event) set: return at once (the system is stopping)."""
    for kk, off, host, up, down in rows:
        if kk != str(k) or (stopped is not None and stopped.is_set()):
            continue
        if not tb.shape(host, "up", up):
            out.write("shape %s up %s failed\n" % (host, up))
        if not tb.shape(host, "down", down):
            out.write("shape %s down %s failed\n" % (host, down))
        if declare:
            if capacity and not tb.tel(host, "/mlfabric/capacity,%s,%s" % (up, down)):
                out.write("declare %s capacity %s,%s failed\n" % (host, up, down))
            if not tb.tel(host, "/mlfabric/shaper,%s" % up):
                out.write("set %s shaper %s failed\n" % (host, up))
        out.write("t=%s %s up=%s down=%s\n" % (off, host, up, down))
        out.flush()


class NetDriver(threading.Thread):
    """Applies period k at T0 + k * period_s, k = 1, 2, ... until the schedule ends or stop()."""

    def __init__(self, tb, rows, period, t0, declare, log_path, capacity=True):
        super().__init__(name="net-driver", daemon=True)
        self.tb, self.rows, self.period, self.t0, self.declare = tb, rows, float(period), t0, declare
        self.capacity = capacity
        self.log_path = log_path
        self.stopped = threading.Event()

    def run(self):
        ks = {r[0] for r in self.rows}
        k = 1
        with open(self.log_path, "a") as out:
            while True:
                wait = self.t0 + k * self.period - time.time()
                if self.stopped.wait(max(wait, 0)):
                    return
                if str(k) not in ks:
                    return
                apply_period(self.tb, self.rows, k, self.declare, out, self.stopped, self.capacity)
                k += 1

    def stop(self):
        self.stopped.set()
        self.join(timeout=10)
