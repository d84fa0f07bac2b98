#!/usr/bin/env python3
"""bench/t2_ceiling.py - the throughput ceiling of MLfabric-A over shard servers in a Table 2 cell.

Two parts (docs/results/table2.md "The ceiling of C2-N1 at four shards"):

--loads   per-link offered load as a function of the gradient rate, from the experiment and
          cluster files alone: leg and copy time at each link rate after rate_scale, the N1
          rate schedule of each seed (tools/mlf-cluster rates: which shard link is halved
          when), the largest rate each shard link sustains with and without aggregation, and
          the per-worker loop bound of an iteration (compute + own legs + copies).
(default) an event-driven model of the scheduler's plan on every host link, in virtual time:
          each worker gets the model (one copy from every shard), computes (compute_s x the
          C1-C3 straggler draw), pushes (one leg per shard) and gets again; the scheduler plans
          on arrival (--replan-ms, --lead-ms), reserves each transfer on the residual bandwidth
          of the sender's uplink and the receiver's downlink (a fluid step function at 1 ms, as
          scheduler/planner/netstate.c; capacity x --headroom, the seed's N1 schedule), drops an
          update at the delay bound (eq. 9: version before its commit - v(g) >= tau_max),
          aggregates a batch of two or more updates through an aggregator when that ends the
          batch sooner (Alg. 3, simplified to one group), applies the legs at each shard in
          order, and plans the pull's copy from shard k after every leg ordered before it has
          been applied there (--copy-wait legs, fresh pulls: the copies carry the group version
          after the puller's own update).
          Prints gradients pushed and applied per second, the mean delay of applied updates, the
          dropped and aggregated fractions, the get (median), and each link's busy fraction.

Levers (each changes one rule of the model): --rotate (worker i sends its legs and asks its
copies starting at shard i mod S), --early-busy (the copy from a shard whose downlink is
halved starts at once, with the slice the shard holds then: a relaxed fresh pull for that
slice; the update's v(g) is the stalest slice's), --agg-busy (every leg to a shard whose
downlink is halved goes through an aggregator, which sends one aggregate of all the legs it
holds whenever that downlink frees), --tau-max N (the delay bound), --no-n1 (every link at full
rate), --no-straggle (no straggler draws), --no-agg, --no-hold.

Measured inputs: --get-ms (added to every get: the mean lateness of a get's last copy, 61 ms in
the checked run), --late-ms, --compute-extra-ms. --check SYSDIR prints a run's measured figures
(records, dataplane logs) next to the model's for that seed and the run's wall time.

usage: bench/t2_ceiling.py [--exp conf/exp-t2-shards4.json] [--cell c2-n1] [--seeds 1,2,3]
                           [--duration S] [--get-ms MS] [levers] [--json]
       bench/t2_ceiling.py --loads [--exp ...] [--cell ...] [--seeds ...]
       bench/t2_ceiling.py --check RUN/c2-n1-s1-mlfabric-a/mlfabric-a --seeds 1 [--get-ms MS]
"""
import argparse
import bisect
import glob
import heapq
import json
import math
import os
import random
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
from mlfcluster.network import rate_schedule  # noqa: E402
from mlfcluster.experiment import NET_PROBS, STRAGGLE  # noqa: E402

DT = 0.001          # s per bucket of the link model
EPS = 1e-6          # bits
HEADER_BYTES = 1024  # a shard copy's header (docs/results/staleness.md "The ceiling")


def model_floats(spec):
    """Floats of an MLP "784,64,10": weights and biases of every layer."""
    d = [int(x) for x in spec.split(",")]
    return sum(a * b + b for a, b in zip(d, d[1:]))


class Setting:
    """The experiment, its cluster and a cell: hosts, roles, sizes, the rate schedule."""

    def __init__(self, exp_path, cell, seed, no_n1=False):
        with open(os.path.join(ROOT, exp_path)) as f:
            self.exp = json.load(f)
        with open(os.path.join(ROOT, self.exp["cluster"])) as f:
            self.cluster = json.load(f)
        c, n = cell.upper().split("-")
        self.compute, self.network = c, n
        self.hosts = [h["name"] for h in self.cluster["hosts"]]
        self.idx = {h: i for i, h in enumerate(self.hosts)}
        self.servers = [h["name"] for h in self.cluster["hosts"] if "server" in h["roles"]]
        self.workers = [h["name"] for h in self.cluster["hosts"] if "worker" in h["roles"]]
        self.aggs = [h["name"] for h in self.cluster["hosts"] if "aggregator" in h["roles"]]
        self.S = int(self.exp.get("shards", 1))
        self.servers = self.servers[:self.S]
        n_fl = model_floats(self.exp.get("model", "784,1024,10"))
        self.model_bytes = n_fl * 4
        self.leg_bytes = math.ceil(n_fl / self.S) * 4
        self.copy_bytes = self.leg_bytes + HEADER_BYTES
        self.compute_s = float(self.exp.get("compute_s", 0.2))
        r, s = STRAGGLE[c].split(",")
        self.straggle_p, self.straggle_f = float(r), float(s)
        self.tau_max = float(self.exp.get("tau_max", 8))
        self.period = float(self.exp["period_s"])
        self.scale = float(self.exp["rate_scale"])
        self.seed = seed
        self.full_gbps = 10 * self.scale

        class E:
            pass
        E.probs, E.rate_scale, E.period_s, E.seed, E.hosts = NET_PROBS[n], self.scale, self.period, seed, self.hosts
        self.sched = rate_schedule(E, 200)
        self.cap = {}  # (host, "up"/"down") -> [Gbit/s per period]
        for k, _, h, up, down in self.sched:
            self.cap.setdefault((h, "up"), []).append(self.full_gbps if no_n1 else up)
            self.cap.setdefault((h, "down"), []).append(self.full_gbps if no_n1 else down)

    def gbps(self, host, d, t):
        lst = self.cap[(host, d)]
        return lst[min(int(t / self.period), len(lst) - 1)]


class Links:
    """Residual bits per 1 ms bucket of every host's uplink (2h) and downlink (2h+1)."""

    def __init__(self, st, duration, headroom):
        self.n = int((duration + 30) / DT)
        self.cap, self.res = [], []
        for h in st.hosts:
            for d in ("up", "down"):
                c = [st.gbps(h, d, b * DT) * 1e9 * headroom * DT for b in range(self.n)]
                self.cap.append(c)
                self.res.append(list(c))

    def reserve(self, s, d, bits, t0, log=None):
        """Reserve BITS from host S to host D from T0 on, as early as the residual of S's uplink
        and D's downlink allows (fluid). Returns (start, end) in s; LOG gets undo records."""
        if s == d:
            return t0, t0
        up, dn = self.res[2 * s], self.res[2 * d + 1]
        b = int(math.ceil(t0 / DT - 1e-9))
        start = None
        while True:
            if b >= self.n:
                raise RuntimeError("link model too short: raise --duration")
            r = up[b] if up[b] < dn[b] else dn[b]
            if r > EPS:
                if start is None:
                    start = b * DT
                take = r if r < bits else bits
                up[b] -= take
                dn[b] -= take
                if log is not None:
                    log.append((2 * s, 2 * d + 1, b, take))
                bits -= take
                if bits <= EPS:
                    return start, (b + take / r) * DT
            b += 1

    def undo(self, log):
        for lu, ld, b, take in reversed(log):
            self.res[lu][b] += take
            self.res[ld][b] += take
        del log[:]

    def busy(self, link, t_end):
        n = int(t_end / DT)
        c, r = self.cap[link], self.res[link]
        return sum(1 for b in range(n) if c[b] - r[b] > EPS) / max(n, 1)


class Sim:
    def __init__(self, st, a):
        self.st, self.a = st, a
        self.L = Links(st, a.duration, a.headroom)
        self.bits_leg = st.leg_bytes * 8
        self.bits_copy = st.copy_bytes * 8
        self.S = st.S
        self.sv = [st.idx[h] for h in st.servers]
        self.wk = [st.idx[h] for h in st.workers]
        self.ag = [st.idx[h] for h in st.aggs]
        self.rng = [random.Random(st.seed * 1000003 + i) for i in range(len(self.wk))]
        self.ordered = 0                      # group version after everything ordered
        self.shard_t = [0.0] * self.S         # when shard k has applied everything ordered to it
        self.shard_hist = [([0.0], [0]) for _ in range(self.S)]  # (applied times, versions) per shard
        self.ev, self.seq = [], 0
        self.pending, self.plan_at, self.last_plan = [], None, -1.0
        self.tau = st.tau_max if a.tau_max is None else a.tau_max
        self.agg_open = {}                    # --agg-busy: shard -> [aggregate start, end, aggregator]
        self.rec = dict(pushed=0, applied=0, dropped=0, aggregated=0, delays=[], gets=[], copies=0,
                        agg_commits=0, batches=[], spreads=[])

    def push_ev(self, t, kind, data):
        self.seq += 1
        heapq.heappush(self.ev, (t, self.seq, kind, data))

    def order(self, w):
        return [(w + j) % self.S for j in range(self.S)] if self.a.rotate else list(range(self.S))

    def halved_down(self, k, t):
        return self.st.gbps(self.st.servers[k], "down", t) < self.st.full_gbps - 1e-12

    def apply_at(self, k, t_arrive, dv):
        """Shard k applies (in order) an item of dv versions arriving at t_arrive."""
        t = max(t_arrive, self.shard_t[k])
        self.shard_t[k] = t
        ts, vs = self.shard_hist[k]
        ts.append(t)
        vs.append(vs[-1] + dv)
        return t

    def shard_version_at(self, k, t):
        ts, vs = self.shard_hist[k]
        return vs[bisect.bisect_right(ts, t) - 1]

    # --- updates -------------------------------------------------------------------------
    def plan_direct(self, ups, now, log):
        end = now
        for (w, _v, _t) in ups:
            for k in self.order(w):
                s, e = self.L.reserve(self.wk[w], self.sv[k], self.bits_leg, now, log)
                end = max(end, e)
        return end

    def plan_agg(self, ups, now, agg, log):
        ends = [now] * self.S
        for (w, _v, _t) in ups:
            for k in self.order(w):
                s, e = self.L.reserve(self.wk[w], agg, self.bits_leg, now, log)
                ends[k] = max(ends[k], e)
        out = []
        for k in range(self.S):
            s, e = self.L.reserve(agg, self.sv[k], self.bits_leg, ends[k] + self.a.agg_ms / 1e3, log)
            out.append(e)
        return max(out), out

    def leg_via_busy_agg(self, w, k, now):
        """--agg-busy: the leg of worker w to shard k goes to an aggregator; joins the aggregate
        that has not started yet or opens one. Returns the arrival at shard k and whether a new
        aggregate was opened."""
        agg = self.ag[w % len(self.ag)]
        _s, e_in = self.L.reserve(self.wk[w], agg, self.bits_leg, now)
        op = self.agg_open.get(k)
        if op and op[0] >= e_in + self.a.agg_ms / 1e3:
            return op[1], False
        s, e = self.L.reserve(agg, self.sv[k], self.bits_leg, e_in + self.a.agg_ms / 1e3)
        self.agg_open[k] = [s, e, agg]
        return e, True

    def free_at(self, link, b0):
        """First bucket from B0 on where LINK has at least half its planning capacity left
        (sched_gather.c, SCHED_GATHER_FREE_FRAC)."""
        c, r = self.L.cap[link], self.L.res[link]
        b = b0
        while b < self.L.n and r[b] < 0.5 * c[b] - EPS:
            b += 1
        return b

    def hold(self, T, now, ups):
        """Gathering behind a busy link: the updates whose path (the worker's uplink and the
        first free shard downlink) is not free at NOW are held until it frees, at most
        --batch-ms after their arrival. Returns (planned, held, next release)."""
        a = self.a
        b0 = int(math.ceil(now / DT - 1e-9))
        go, held, nxt = [], [], None
        for u in ups:
            _, w, _vg, tp = u
            t_free = self.free_at(2 * self.wk[w], b0)
            t_srv = min(self.free_at(2 * self.sv[k] + 1, b0) for k in range(self.S))
            t_free = max(t_free, t_srv) * DT
            release = min(t_free - a.lead_ms / 1e3, tp + a.batch_ms / 1e3) - a.replan_ms / 1e3
            if a.no_hold or t_free <= now + 1e-9 or release <= T + 1e-9:
                go.append(u)
            else:
                held.append(u)
                nxt = release if nxt is None else min(nxt, release)
        return go, held, nxt

    def plan(self, T):
        a = self.a
        now = T + a.lead_ms / 1e3
        ups = [p for p in self.pending if p[0] == "u"]
        ups, held, nxt = self.hold(T, now, ups)
        # a fresh pull waits for its update's plan; with shards it is planned in the next plan
        # (sched_select_fresh): at the earliest a replan interval later
        wait_w = {u[1] for u in held} | {u[1] for u in ups}
        pulls = [p for p in self.pending if p[0] == "p" and p[1] not in wait_w]
        self.pending = held + [p for p in self.pending if p[0] == "p" and p[1] in wait_w]
        if any(p[0] == "p" and p[1] in {u[1] for u in ups} for p in self.pending):
            self.push_ev(T + a.replan_ms / 1e3, "plan", None)
        self.rec["batches"].append(len(ups))
        if nxt is not None:
            self.push_ev(max(nxt, T + a.replan_ms / 1e3), "plan", None)
        kept = []
        v = self.ordered
        for _, w, vg, tp in ups:
            if v - vg >= self.tau:
                self.rec["dropped"] += 1
                continue
            kept.append((w, vg, tp))
            v += 1
        if kept:
            use_agg = None
            if a.agg_busy:
                busy = [k for k in range(self.S) if self.halved_down(k, now)]
            else:
                busy = []
            if len(kept) >= 2 and self.ag and not a.no_agg:
                log = []
                e_dir = self.plan_direct(kept, now, log)
                self.L.undo(log)
                best = (e_dir, None)
                for agg in self.ag:
                    e_ag, _ = self.plan_agg(kept, now, agg, log)
                    self.L.undo(log)
                    if e_ag < best[0] - 1e-9:
                        best = (e_ag, agg)
                use_agg = best[1]
            if use_agg is not None:
                _, ends = self.plan_agg(kept, now, use_agg, None)
                base = self.ordered
                for (w, vg, tp) in kept:
                    self.rec["delays"].append(base - vg)
                for k in range(self.S):
                    self.apply_at(k, ends[k], len(kept))
                self.ordered += len(kept)
                self.rec["aggregated"] += len(kept)
                self.rec["agg_commits"] += 1
            else:
                for (w, vg, tp) in kept:
                    self.rec["delays"].append(self.ordered - vg)
                    for k in self.order(w):
                        if k in busy:
                            e, new = self.leg_via_busy_agg(w, k, now)
                            self.rec["busy_legs"] = self.rec.get("busy_legs", 0) + 1
                            self.rec["busy_aggs"] = self.rec.get("busy_aggs", 0) + new
                        else:
                            _s, e = self.L.reserve(self.wk[w], self.sv[k], self.bits_leg, now)
                        self.apply_at(k, e, 1)
                    self.ordered += 1
            self.rec["applied"] += len(kept)
        V = self.ordered
        for _, w, _t in pulls:
            end, starts, starts_s = now, [], []
            for k in self.order(w):
                early = a.early_all or (a.early_busy and self.halved_down(k, now))
                ready = now if early else max(now, self.shard_t[k] + a.late_ms / 1e3)
                s, e = self.L.reserve(self.sv[k], self.wk[w], self.bits_copy, ready)
                # the slice's version: the pull's, or (--latest, --early-busy) what the shard
                # holds at the copy's start, known once every leg applied by then is planned
                starts.append((k, s) if (a.latest or early) else (k, None))
                starts_s.append((k, s))
                end = max(end, e)
                self.rec["copies"] += 1
            self.rec["spreads"].append(end - min(x for _k, x in starts_s))
            self.push_ev(end + a.get_ms / 1e3, "got", (w, V, starts, _t))
        self.last_plan = T

    def arrive(self, t, item):
        self.pending.append(item)
        if self.plan_at is None:
            self.plan_at = max(t + self.a.replan_ms / 1e3, self.last_plan + self.a.replan_ms / 1e3)
            self.push_ev(self.plan_at, "plan", None)

    def run(self):
        a = self.a
        for w in range(len(self.wk)):
            self.arrive(0.0, ("p", w, 0.0))
        while self.ev:
            t, _, kind, data = heapq.heappop(self.ev)
            if t > a.duration:
                break
            if kind == "plan":
                if self.plan_at is not None and t >= self.plan_at - 1e-12:
                    self.plan_at = None
                if t < self.last_plan + self.a.replan_ms / 1e3 - 1e-12:
                    self.push_ev(self.last_plan + self.a.replan_ms / 1e3, "plan", None)
                    continue
                self.plan(t)
            elif kind == "got":
                w, V, starts, t_pull = data
                # v(g): the lowest slice's version (the delay bound counts from the stalest)
                vs = [V if s0 is None else self.shard_version_at(k, s0) for k, s0 in starts]
                if self.a.latest:
                    vs = [max(V, v) for v in vs]
                vg = min(vs)
                self.rec["gets"].append(t - t_pull)
                f = self.st.straggle_f if (not a.no_straggle and self.rng[w].random() < self.st.straggle_p) else 1.0
                self.push_ev(t + self.st.compute_s * f + a.compute_extra_ms / 1e3, "push", (w, vg))
            elif kind == "push":
                w, vg = data
                self.rec["pushed"] += 1
                self.rec.setdefault("push_t", []).append(t)
                self.arrive(t, ("u", w, vg, t))
                self.arrive(t, ("p", w, t))
        return self.result()

    def result(self):
        r, T = self.rec, self.a.duration
        d = r["delays"]
        busy = {}
        for h in self.st.servers + self.st.workers:
            i = self.st.idx[h]
            busy[h] = (round(self.L.busy(2 * i, T), 3), round(self.L.busy(2 * i + 1, T), 3))
        wb_up = statistics.median(busy[h][0] for h in self.st.workers)
        wb_dn = statistics.median(busy[h][1] for h in self.st.workers)
        # the pushed rate per network state of the shard links (period by period)
        st, per = self.st, {}
        for k in range(int(T / st.period)):
            t = (k + 0.5) * st.period
            dn = any(st.gbps(h, "down", t) < st.full_gbps - 1e-12 for h in st.servers)
            up = any(st.gbps(h, "up", t) < st.full_gbps - 1e-12 for h in st.servers)
            key = ("shard up+down halved" if up and dn else "shard uplink halved" if up else
                   "shard downlink halved" if dn else "shard links full")
            n = sum(1 for x in r.get("push_t", []) if k * st.period <= x < (k + 1) * st.period)
            e = per.setdefault(key, [0, 0])
            e[0] += 1
            e[1] += n
        per = {k: {"periods": v[0], "pushed_per_s": round(v[1] / (v[0] * st.period), 2)} for k, v in per.items()}
        return {
            "seed": self.st.seed, "duration_s": T, "per_state": per,
            "pushed_per_s": r["pushed"] / T, "applied_per_s": r["applied"] / T,
            "dropped_frac": r["dropped"] / max(r["pushed"], 1),
            "aggregated_frac": r["aggregated"] / max(r["applied"], 1),
            "mean_delay": statistics.mean(d) if d else 0.0,
            "busy_legs_per_aggregate": r.get("busy_legs", 0) / max(r.get("busy_aggs", 0), 1),
            "get_median_s": statistics.median(r["gets"]) if r["gets"] else 0.0,
            "get_mean_s": statistics.mean(r["gets"]) if r["gets"] else 0.0,
            "iteration_mean_s": len(self.wk) / max(r["pushed"] / T, 1e-9),
            "copy_spread_median_s": statistics.median(r["spreads"]) if r["spreads"] else 0.0,
            "multi_batches_frac": sum(1 for b in r["batches"] if b >= 2) / max(1, sum(1 for b in r["batches"] if b)),
            "server_up_busy": statistics.mean(busy[h][0] for h in self.st.servers),
            "server_down_busy": statistics.mean(busy[h][1] for h in self.st.servers),
            "worker_up_busy": wb_up, "worker_down_busy": wb_dn, "busy": busy,
        }


def loads(st):
    """The offered-load arithmetic of the setting, as text."""
    full = st.full_gbps * 1e9
    leg_full = st.leg_bytes * 8 / (full * 0.95)
    leg_half = 2 * leg_full
    copy_full = st.copy_bytes * 8 / (full * 0.95)
    c_mean = st.compute_s * (1 - st.straggle_p + st.straggle_p * st.straggle_f)
    W = len(st.workers)
    out = []
    p = out.append
    p("setting: %s-%s, %d workers, %d shards, model %d B, leg %d B, copy %d B, rate_scale %g"
      % (st.compute, st.network, W, st.S, st.model_bytes, st.leg_bytes, st.copy_bytes, st.scale))
    p("link rates: full %.0f Mbit/s, halved %.0f Mbit/s; planned at headroom 0.95"
      % (st.full_gbps * 1e3, st.full_gbps * 500))
    p("leg: %.1f ms at full rate, %.1f ms halved; copy %.1f ms / %.1f ms"
      % (leg_full * 1e3, leg_half * 1e3, copy_full * 1e3, 2 * copy_full * 1e3))
    p("compute: %.3f s mean (%g s x (1 - %g + %g x %g))" % (c_mean, st.compute_s, st.straggle_p,
                                                              st.straggle_p, st.straggle_f))
    p("")
    p("per gradient pushed at rate R (per s), applied A = (1 - d) R, a fraction g of the applied")
    p("through aggregates of m updates:")
    p("  shard k downlink busy = A (1 - g + g/m) x leg time; shard k uplink = R x copy time")
    p("  worker uplink = A/W x S x leg time; worker downlink = R/W x S x copy time")
    for name, lt, ct in (("full", leg_full, copy_full), ("halved", leg_half, 2 * copy_full)):
        p("  max at a %s shard link: applied %.1f/s (no aggregation), %.1f/s (g 0.27, m 2), "
          "%.1f/s (every update aggregated in pairs); gets %.1f/s (uplink)"
          % (name, 1 / lt, 1 / (lt * (1 - 0.27 + 0.27 / 2)), 2 / lt, 1 / ct))
    own = st.S * leg_full
    get_min = leg_full + st.S * copy_full  # first leg, then the copies back to back
    get_min = max(get_min, own + copy_full)
    p("")
    p("per-worker loop (no queueing): compute %.3f + get >= max(first leg + S copies, S legs + "
      "last copy) = %.3f s" % (c_mean, get_min))
    p("  bound: %d / %.3f = %.1f gradients pushed/s (%.1f applied at 11%% dropped)"
      % (W, c_mean + get_min, W / (c_mean + get_min), 0.89 * W / (c_mean + get_min)))
    p("  the 18.8 of staleness.md: %d / (%.3f + model at full rate %.3f) = %.1f (no legs before the "
      "get, no shard links)" % (W, c_mean, (st.model_bytes + st.S * HEADER_BYTES) * 8 / full,
                                 W / (c_mean + (st.model_bytes + st.S * HEADER_BYTES) * 8 / full)))
    # the seed's schedule: fraction of time some shard link is halved
    n_per = 22
    any_half = sum(1 for k in range(n_per) if any(
        st.cap[(h, d)][k] < st.full_gbps - 1e-12 for h in st.servers for d in ("up", "down")))
    down_half = sum(1 for k in range(n_per) if any(
        st.cap[(h, "down")][k] < st.full_gbps - 1e-12 for h in st.servers))
    up_half = sum(1 for k in range(n_per) if any(
        st.cap[(h, "up")][k] < st.full_gbps - 1e-12 for h in st.servers))
    p("")
    p("seed %d, first %d periods of %g s: some shard link halved in %d, a shard downlink in %d, a "
      "shard uplink in %d (expected share 1 - 0.9^%d = %.2f, 1 - 0.9^%d = %.2f each)"
      % (st.seed, n_per, st.period, any_half, down_half, up_half, 2 * st.S, 1 - 0.9 ** (2 * st.S),
         st.S, 1 - 0.9 ** st.S))
    p("")
    for d in (0.0, 0.10):
        b0, b1, b2 = period_bound(st, c_mean, d, 22)
        p("bound over the first 22 periods (110 s), no queueing, %.0f%% dropped: applied <= %.1f/s "
          "(shard downlink caps as they are), <= %.1f/s (every leg to a halved downlink aggregated), "
          "<= %.1f/s (every shard link at full rate)" % (100 * d, b0, b1, b2))
    return "\n".join(out)


def period_bound(st, c_mean, d, n_per):
    """A queueing-free bound on the applied rate, averaged over N_PER periods of the seed's
    schedule: per period, the pushed rate is at most the workers' loop rate sum_i 1 / (c_mean +
    get_i) (get_i: worker i's legs and copies at the rates of its and the shards' links, the
    first leg then the copies back to back, or every leg then the last copy) and at most 1 /
    copy time of the slowest shard uplink (every get takes a copy from every shard); the
    applied rate at most (1 - D) x that and 1 / leg time of the slowest shard downlink (every
    applied update sends a leg to every shard). Returns (bound, bound with that downlink cap
    lifted by aggregation, bound with every shard link at full rate)."""
    def rate(h, dr, k):
        return st.cap[(h, dr)][k] * 1e9 * 0.95

    tot = [0.0, 0.0, 0.0]
    for k in range(n_per):
        for j, full in enumerate((False, False, True)):
            sv_up = [st.full_gbps * 1e9 * 0.95 if full else rate(h, "up", k) for h in st.servers]
            sv_dn = [st.full_gbps * 1e9 * 0.95 if full else rate(h, "down", k) for h in st.servers]
            loop = 0.0
            for w in st.workers:
                legs = [st.leg_bytes * 8 / min(rate(w, "up", k), sv_dn[i]) for i in range(st.S)]
                cps = [st.copy_bytes * 8 / min(sv_up[i], rate(w, "down", k)) for i in range(st.S)]
                g = max(legs[0] + sum(cps), sum(legs) + cps[-1])
                loop += 1 / (c_mean + g)
            pushed = min(loop, min(sv_up) / (st.copy_bytes * 8))
            applied = (1 - d) * pushed
            if j == 0 or j == 2:
                applied = min(applied, min(sv_dn) / (st.leg_bytes * 8))
            tot[j] += applied
    return tuple(x / n_per for x in tot)


def delay_identity(rec, workers):
    """The closed-loop identity of a run's delays (docs/results/table2.md "The ceiling of C2-N1 at
    four shards"): with fresh pulls, mean delay = (N - 1) V / A - (versions outside every window
    of a worker and not its own commits) / A, over V versions and A applied updates. From shard
    0's applied.jsonl (at, version, parts per update id) and each worker's pushes.jsonl (its
    update ids in order); the gap versions split into those after an applied update (the next
    model read past the worker's own commit), those spanning its dropped updates, and the run's
    start and end. Returns {} without records."""
    from mlfcluster.records import read_jsonl
    app = {x["id"]: x for x in read_jsonl(os.path.join(rec, "applied.jsonl")) if "id" in x}
    if not app:
        return {}
    V = max(x["at"] + x.get("parts", 1) for x in app.values())
    A = len(app)
    after, drop, edge = 0, 0, 0
    for w in workers:
        prev, dropped, first = 0, False, True
        for p in read_jsonl(os.path.join(rec, w, "pushes.jsonl")):
            u = app.get(p.get("id"))
            if u is None:
                dropped = True
                continue
            g = u["version"] - prev
            if first:
                edge += g
            elif dropped:
                drop += g
            else:
                after += g
            first, dropped, prev = False, False, u["at"] + u.get("parts", 1)
        edge += V - prev
    n = len(workers)
    return {"identity_delay": (n - 1) * V / A - (after + drop + edge) / A,
            "gap_after_applied_per_update": after / A, "gap_over_drops_per_update": drop / A,
            "gap_start_end_per_update": edge / A}


def copy_lateness(sysdir, t0, period):
    """Model copies by the state of their sender's uplink (from the run's network.tsv): median
    lateness at the receiver against the planned end (s) and the rate the sender's dataplane
    reports as achieved (Mbit/s), for copies on full-rate links and from a halved uplink (a
    copy crossing a period boundary or with a halved receiver downlink left out). Returns {}."""
    import re
    from mlfcluster.network import read_schedule
    from mlfcluster.records import read_jsonl
    tsv = os.path.join(os.path.dirname(sysdir), "network.tsv")
    if not os.path.isfile(tsv):
        return {}
    cap = {(int(k), h): (float(u), float(d)) for k, _o, h, u, d in read_schedule(tsv)}
    full = max(v[0] for v in cap.values())
    tx_re = re.compile(r"\S+ INFO dataplane\[\w+\]: xfer (\w+) to \S+ complete: \d+ bytes, ([\d.]+) Gbit/s")
    rx_re = re.compile(r"(\S+) INFO dataplane\[\w+\]: xfer (\w+) from \S+ complete")
    rate, rx = {}, {}
    for f in glob.glob(os.path.join(sysdir, "logs", "dp-*.log")):
        for line in open(f, errors="replace"):
            m = tx_re.match(line)
            if m:
                rate[int(m.group(1), 16)] = float(m.group(2))
                continue
            m = rx_re.match(line)
            if m:
                rx[int(m.group(2), 16)] = float(m.group(1))
    out = {}
    for t in read_jsonl(os.path.join(sysdir, "records", "transfers.jsonl")):
        x = t.get("xfer")
        if t.get("what") != "model" or x not in rx or x not in rate:
            continue
        k = int((t["start"] - t0) // period)
        if k != int((t["end"] - t0) // period):
            continue
        up = cap.get((k, t["src"]), (full, full))[0] < full
        down = cap.get((k, t["dst"]), (full, full))[1] < full
        if down:
            continue
        out.setdefault("halved" if up else "full", []).append((rx[x] - t["end"], rate[x] * 1e3))
    res = {}
    for key, v in out.items():
        res["copy_late_median_s_%s_uplink" % key] = statistics.median(a for a, _ in v)
        res["copy_achieved_mbps_%s_uplink" % key] = statistics.median(b for _, b in v)
    return res


def measured(sysdir, st):
    """The figures the model predicts, from a run's records (SYSDIR = <out>/<cell>-s<seed>-<system>/
    <system>): wall time (run.json), gradients pushed (pushes.jsonl), updates applied, dropped and
    aggregated (updates.jsonl, the last line of an id), mean delay (the shard servers'
    applied.jsonl, one line per applied update and shard), the workers' get (pushes.jsonl get_s),
    batches with two or more updates (batches.jsonl), and each link's busy fraction from the
    planned transfers (transfers.jsonl, tools/mlfcluster/links.py)."""
    from mlfcluster.links import Capacity, from_transfers
    from mlfcluster.network import read_schedule
    from mlfcluster.records import read_json, read_jsonl
    rec = os.path.join(sysdir, "records")
    rj = read_json(os.path.join(sysdir, "run.json")) or {}
    t0, t1 = float(rj["t0"]), float(rj["t_end"])
    T = t1 - t0
    pushes = {}
    for w in st.workers:
        pushes[w] = list(read_jsonl(os.path.join(rec, w, "pushes.jsonl")))
    n_push = sum(len(v) for v in pushes.values())
    gets = [x["get_s"] for v in pushes.values() for x in v if isinstance(x.get("get_s"), (int, float))]
    comp = [x["compute_s"] * x.get("factor", 1) for v in pushes.values() for x in v
            if isinstance(x.get("compute_s"), (int, float))]
    cyc = [b["t"] - a_["t"] for v in pushes.values() for a_, b in zip(v, v[1:])]
    fate = {}
    for u in read_jsonl(os.path.join(rec, "updates.jsonl")):
        fate[u.get("id")] = u.get("fate")
    n_app = sum(1 for f in fate.values() if f in ("direct", "aggregated"))
    n_agg = sum(1 for f in fate.values() if f == "aggregated")
    n_drop = sum(1 for f in fate.values() if f == "dropped")
    delays = []  # shard 0 at records/, shard k at records/shard-k/
    for f in [os.path.join(rec, "applied.jsonl")] + sorted(glob.glob(os.path.join(rec, "shard-*", "applied.jsonl"))):
        delays += [x["delay"] for x in read_jsonl(f) if isinstance(x.get("delay"), (int, float))]
    out_gap = delay_identity(rec, st.workers)
    bat = [b.get("n_updates", 0) for b in read_jsonl(os.path.join(rec, "batches.jsonl"))]
    out = {"duration_s": T, "pushed_per_s": n_push / T, "applied_per_s": n_app / T,
           "dropped_frac": n_drop / max(n_push, 1), "aggregated_frac": n_agg / max(n_app, 1),
           "multi_batches_frac": sum(1 for b in bat if b >= 2) / max(1, sum(1 for b in bat if b)),
           "mean_delay": statistics.mean(delays) if delays else None,
           "get_median_s": statistics.median(gets) if gets else None,
           "compute_mean_s": statistics.mean(comp) if comp else None,
           "get_mean_s": statistics.mean(gets) if gets else None,
           "iteration_mean_s": statistics.mean(cyc) if cyc else None}
    out.update(out_gap)
    run = os.path.dirname(sysdir)
    tsv = os.path.join(run, "network.tsv")
    xf = list(read_jsonl(os.path.join(rec, "transfers.jsonl")))
    if os.path.isfile(tsv):
        cap = Capacity(read_schedule(tsv), t0, st.period)
        lk = from_transfers(xf, cap, t0, t1)
        out["server_up_busy"] = statistics.mean(lk[h]["up"]["busy"] for h in st.servers)
        out["server_down_busy"] = statistics.mean(lk[h]["down"]["busy"] for h in st.servers)
        out["worker_up_busy"] = statistics.median(lk[h]["up"]["busy"] for h in st.workers)
        out["worker_down_busy"] = statistics.median(lk[h]["down"]["busy"] for h in st.workers)
    by_pull = {}
    for x in xf:
        if x.get("what") == "model" and x.get("pull"):
            b = by_pull.setdefault(x["pull"], [x["start"], x["end"]])
            b[0], b[1] = min(b[0], x["start"]), max(b[1], x["end"])
    if by_pull:
        out["copy_spread_median_s"] = statistics.median(e - s0 for s0, e in by_pull.values())
    try:  # the dataplanes' logs: copies started late, a pull's last copy after its planned end
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from copy_wait import copies
        late_frac, last_late, retx = copies(sysdir)
        out["copies_started_late_frac"] = late_frac
        out["last_copy_late_mean_s"] = last_late
        out["retransmits_per_transfer"] = retx
    except (ImportError, OSError):
        pass
    out.update(copy_lateness(sysdir, t0, st.period))
    legs = sorted(x["end"] - x["start"] for x in xf if x.get("what") == "update" and x.get("dst") in st.servers)
    if legs:
        out["leg_planned_median_s"] = legs[len(legs) // 2]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--exp", default="conf/exp-t2-shards4.json", help="experiment file (default %(default)s)")
    ap.add_argument("--cell", default="c2-n1", help="Table 2 cell (default %(default)s)")
    ap.add_argument("--seeds", default="1,2,3", help="network and straggler seeds (default %(default)s)")
    ap.add_argument("--duration", type=float, default=110.0, help="virtual seconds (default %(default)s)")
    ap.add_argument("--loads", action="store_true", help="print the offered-load arithmetic only")
    ap.add_argument("--headroom", type=float, default=0.95, help="plan capacity fraction (default 0.95)")
    ap.add_argument("--lead-ms", type=float, default=10.0, help="plan lead (default 10)")
    ap.add_argument("--replan-ms", type=float, default=2.0, help="replan interval (default 2)")
    ap.add_argument("--late-ms", type=float, default=0.0, help="a shard's lateness added to copy readiness")
    ap.add_argument("--get-ms", type=float, default=0.0, help="from the last copy's end to the get's return")
    ap.add_argument("--agg-ms", type=float, default=1.0, help="an aggregator's sum time (default 1)")
    ap.add_argument("--tau-max", type=float, default=None, help="delay bound (default the experiment's)")
    ap.add_argument("--rotate", action="store_true", help="lever (a): per-worker rotation of the leg/copy order")
    ap.add_argument("--early-busy", action="store_true", help="lever (b): the halved shard's copy at once")
    ap.add_argument("--agg-busy", action="store_true", help="lever (c): legs to a halved shard downlink aggregated")
    ap.add_argument("--early-all", action="store_true", help="every copy at once with the slice its shard holds "
                    "(no fresh pulls: the rule before issue 33)")
    ap.add_argument("--latest", action="store_true", help="lever (e): each copy carries its shard's version at "
                    "the copy's start (at least the pull's); the update's v(g) is the lowest slice's")
    ap.add_argument("--compute-extra-ms", type=float, default=0.0, help="added to every iteration's compute")
    ap.add_argument("--no-agg", action="store_true", help="no aggregation at all")
    ap.add_argument("--no-hold", action="store_true", help="no gathering behind a busy link")
    ap.add_argument("--batch-ms", type=float, default=100.0, help="longest hold of an update (default 100)")
    ap.add_argument("--no-n1", action="store_true", help="every link at full rate")
    ap.add_argument("--no-straggle", dest="no_straggle", action="store_true", help="no straggler draws")
    ap.add_argument("--json", action="store_true", help="one JSON line per seed")
    ap.add_argument("--check", metavar="SYSDIR", help="a run's system folder (<out>/c2-n1-s1-mlfabric-a/mlfabric-a): "
                    "its measured figures next to the model's for that seed and wall time")
    a = ap.parse_args()
    seeds = [int(s) for s in a.seeds.split(",")]
    if a.loads:
        for s in seeds:
            print(loads(Setting(a.exp, a.cell, s)))
            print()
        return 0
    if a.check:
        st = Setting(a.exp, a.cell, seeds[0], a.no_n1)
        m = measured(a.check, st)
        a.duration = m["duration_s"]
        r = Sim(st, a).run()
        print("%-20s %10s %10s" % ("seed %d" % seeds[0], "measured", "model"))
        for k, v in m.items():
            print("%-20s %10.3f %10s" % (k, v if v is not None else float("nan"),
                                         "%.3f" % r[k] if isinstance(r.get(k), float) else "-"))
        return 0
    res = []
    for s in seeds:
        r = Sim(Setting(a.exp, a.cell, s, a.no_n1), a).run()
        res.append(r)
        if a.json:
            print(json.dumps(r))
    keys = ["pushed_per_s", "applied_per_s", "mean_delay", "dropped_frac", "aggregated_frac", "multi_batches_frac",
            "get_median_s", "copy_spread_median_s", "server_up_busy", "server_down_busy", "worker_up_busy", "worker_down_busy"]
    for r in res:
        print("seed %d, pushed per s by the state of the shard links: %s" % (r["seed"], "; ".join(
            "%s %s (%d periods)" % (k, v["pushed_per_s"], v["periods"]) for k, v in sorted(r["per_state"].items()))))
    for k in keys:
        v = [r[k] for r in res]
        print("%-18s %.3f (%.3f-%.3f)  per seed %s" % (k, statistics.median(v), min(v), max(v),
                                                      " ".join("%.3f" % x for x in v)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
