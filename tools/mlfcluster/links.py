"""Per-link utilisation of a run (`tools/mlf-cluster links RUN_DIR`, results.json "links").

Every host has an uplink (host -> switch) and a downlink (switch -> host) whose capacity follows
the run's rate schedule (network.tsv: period k holds from t0 + k x period_s; period 0 also before
t0). Over the run's window [t0, t_end] (run.json), per link:
- busy: the fraction of the window the link carried traffic. From the scheduler's planned
  transfers (transfers.jsonl, MLfabric): the length of the union of the transfers' [start, end]
  intervals (the sender's uplink and the receiver's downlink), over the window. From the switch's
  byte counters (netdev.jsonl, every system): per sample interval, the time the bytes take at the
  link's capacity, at most the interval (bytes / capacity, capped), summed, over the window.
- load (transfers only): the sum of the transfers' durations over the window; above 1 when
  transfers overlap on the link.
- util: bytes x 8 / the capacity integrated over the window (Gbit / (Gbit/s x s)).
The verdict checks the balance target (docs/experiments.md "Per-link utilisation"): no server
link busy more than 80% of the run while the worker links idle (their median busy fraction below
50%).
"""
import json
import os
import statistics

from .network import read_schedule
from .records import read_json, read_jsonl, run_systems

SERVER_BUSY_MAX = 0.8     # the target: a server link busy at most this fraction of the run ...
WORKER_IDLE_BELOW = 0.5   # ... unless the worker links are busy too (median at least this)


def union_length(intervals, a, b):
    """Length of the union of INTERVALS [(start, end)] clipped to [A, B]; empty or reversed
    intervals count 0."""
    iv = sorted((max(s, a), min(e, b)) for s, e in intervals if min(e, b) > max(s, a))
    total, cur_s, cur_e = 0.0, None, None
    for s, e in iv:
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total


def overlap(s, e, a, b):
    return max(0.0, min(e, b) - max(s, a))


class Capacity:
    """The links' capacities over time from network.tsv rows (k, offset, host, up, down) of a run
    with start T0 and period P (s)."""

    def __init__(self, rows, t0, period):
        self.t0, self.period = float(t0), float(period)
        self.rates = {}   # (host, "up"/"down") -> {k: Gbit/s}
        for k, _, host, up, down in rows:
            self.rates.setdefault((host, "up"), {})[int(k)] = float(up)
            self.rates.setdefault((host, "down"), {})[int(k)] = float(down)

    def hosts(self):
        return sorted({h for h, _ in self.rates})

    def at(self, host, d, t):
        """Gbit/s of HOST's link D ("up"/"down") at wall time T (the last period at the end)."""
        r = self.rates.get((host, d))
        if not r:
            return None
        k = max(0, int((t - self.t0) // self.period))
        return r.get(k, r[max(r)])

    def integral(self, host, d, a, b):
        """Gbit the link could carry in [A, B] (wall times)."""
        r = self.rates.get((host, d))
        if not r or b <= a:
            return 0.0
        total, t = 0.0, a
        while t < b:
            k = max(0, int((t - self.t0) // self.period))
            end = b if k >= max(r) else min(b, self.t0 + (k + 1) * self.period)
            if end <= t:   # floating point at a period boundary
                end = min(b, t + 1e-9)
            total += self.at(host, d, t) * (end - t)
            t = end
        return total


def from_transfers(xfers, cap, a, b):
    """{host: {"up"/"down": {"busy", "load", "util", "bytes", "transfers"}}} from planned
    transfers (dicts with src, dst, bytes, start, end) over the window [A, B]; a transfer from a
    host to itself crosses no link and is left out."""
    per = {}
    for x in xfers:
        try:
            s, e, n = float(x["start"]), float(x["end"]), int(x.get("bytes") or 0)
            ends = ((x["src"], "up"), (x["dst"], "down"))
        except (KeyError, TypeError, ValueError):
            continue
        if x["src"] == x["dst"]:
            continue   # a host to itself (a worker's update to its own aggregator): no link
        for link in ends:
            per.setdefault(link, []).append((s, e, n))
    out = {}
    T = b - a
    for host in sorted(set(cap.hosts()) | {h for h, _ in per}):
        out[host] = {}
        for d in ("up", "down"):
            iv = per.get((host, d), [])
            # bytes of a transfer count in proportion to its share of the window
            byts = sum(n * (overlap(s, e, a, b) / (e - s) if e > s else (1 if a <= s < b else 0)) for s, e, n in iv)
            gb = cap.integral(host, d, a, b)
            out[host][d] = {"busy": union_length([(s, e) for s, e, _ in iv], a, b) / T if T > 0 else None,
                            "load": sum(overlap(s, e, a, b) for s, e, _ in iv) / T if T > 0 else None,
                            "util": byts * 8 / 1e9 / gb if gb > 0 else None,
                            "bytes": int(byts), "transfers": sum(1 for s, e, _ in iv if overlap(s, e, a, b) > 0)}
    return out


def from_counters(samples, cap, a, b):
    """{host: {"up"/"down": {"busy", "util", "bytes"}}} from switch counter samples ({"t", "rx":
    {host: bytes}, "tx": {...}}; rx = the host's uplink, tx = its downlink) over [A, B]; the bytes
    of a sample interval count in proportion to its overlap with the window."""
    samples = sorted((s for s in samples if isinstance(s, dict) and "t" in s), key=lambda s: s["t"])
    out = {}
    T = b - a
    for host in cap.hosts():
        out[host] = {}
        for d, key in (("up", "rx"), ("down", "tx")):
            busy, byts = 0.0, 0.0
            for p, q in zip(samples, samples[1:]):
                if host not in p.get(key, {}) or host not in q.get(key, {}):
                    continue
                dt = q["t"] - p["t"]
                ov = overlap(p["t"], q["t"], a, b)
                if dt <= 0 or ov <= 0:
                    continue
                n = max(0, q[key][host] - p[key][host]) * ov / dt
                c = cap.at(host, d, p["t"] + dt / 2)
                byts += n
                if c:
                    busy += min(ov, n * 8 / (c * 1e9))
            gb = cap.integral(host, d, a, b)
            out[host][d] = {"busy": busy / T if T > 0 else None, "util": byts * 8 / 1e9 / gb if gb > 0 else None,
                            "bytes": int(byts)}
    return out


def verdict(links, server, workers):
    """Where the bottleneck sits and the balance target (module doc): {"server_up", "server_down" (busy),
    "workers_busy_median" (of every worker link, up and down), "busiest" (link name),
    "target_ok": no server link busy > 80% while the worker links' median is below 50%}."""
    if not links or server not in links:
        return None
    sb = {d: links[server][d]["busy"] for d in ("up", "down")}
    wb = [links[w][d]["busy"] for w in workers if w in links for d in ("up", "down")
          if links[w][d]["busy"] is not None]
    med = statistics.median(wb) if wb else None
    allb = [(v[d]["busy"] or 0, "%s.%s" % (h, d)) for h, v in links.items() for d in ("up", "down")]
    busiest = max(allb)[1] if allb else None
    over = any(v is not None and v > SERVER_BUSY_MAX for v in sb.values())
    return {"server_up": sb["up"], "server_down": sb["down"], "workers_busy_median": med,
            "workers_busy_min": min(wb) if wb else None, "workers_busy_max": max(wb) if wb else None,
            "busiest": busiest,
            "target_ok": not (over and (med is None or med < WORKER_IDLE_BELOW))}


def rounded(d):
    if isinstance(d, dict):
        return {k: rounded(v) for k, v in d.items()}
    if isinstance(d, float):
        return round(d, 4)
    return d


def system_links(run, sysdir):
    """The link analysis of one system folder of RUN: {"window_s", "transfers" (MLfabric: from
    the plan), "counters" (switch byte counters), "verdict" (from the counters when present, else
    from the transfers), "verdict_source"}; None without run.json t0/t_end or network.tsv."""
    rj = read_json(os.path.join(sysdir, "run.json")) or {}
    t0, t1 = rj.get("t0"), rj.get("t_end")
    tsv = os.path.join(run, "network.tsv")
    exp = read_json(os.path.join(run, "experiment.json")) or {}
    if not isinstance(t0, (int, float)) or not isinstance(t1, (int, float)) or t1 <= t0 or not os.path.isfile(tsv):
        return None
    cap = Capacity(read_schedule(tsv), t0, exp.get("period_s") or 5)
    out = {"window_s": round(t1 - t0, 3)}
    tr = os.path.join(sysdir, "records", "transfers.jsonl")
    if os.path.isfile(tr):
        out["transfers"] = rounded(from_transfers(list(read_jsonl(tr)), cap, t0, t1))
    nd = os.path.join(sysdir, "netdev.jsonl")
    if os.path.isfile(nd):
        out["counters"] = rounded(from_counters(list(read_jsonl(nd)), cap, t0, t1))
    server = rj.get("server") or ""
    workers = rj.get("workers") or [h for h in cap.hosts() if h != server]
    src = "counters" if "counters" in out else "transfers" if "transfers" in out else None
    out["verdict_source"] = src
    out["verdict"] = rounded(verdict(out[src], server, workers)) if src else None
    return out


def pct(v):
    return "-" if v is None else "%.0f%%" % (100 * v)


def table(name, lk, server):
    """A text table of one system's links: per host, busy / load / util of each direction from
    the transfers, and busy / util from the counters; then the verdict line."""
    tr, co = lk.get("transfers") or {}, lk.get("counters") or {}
    hosts = sorted(set(tr) | set(co), key=lambda h: (h != server, len(h), h))
    rows = [["host", "up busy (plan)", "up load (plan)", "up busy (ctr)", "up util (ctr)",
             "down busy (plan)", "down load (plan)", "down busy (ctr)", "down util (ctr)"]]
    for h in hosts:
        r = [h]
        for d in ("up", "down"):
            t, c = tr.get(h, {}).get(d, {}), co.get(h, {}).get(d, {})
            r += [pct(t.get("busy")), pct(t.get("load")), pct(c.get("busy")), pct(c.get("util"))]
        rows.append(r)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    text = "%s (window %.1f s):\n" % (name, lk["window_s"])
    text += "".join("  " + "  ".join(c.rjust(widths[i]) if i else c.ljust(widths[i]) for i, c in enumerate(r)) + "\n"
                    for r in rows)
    v = lk.get("verdict")
    if v:
        text += ("  %s: server up %s, down %s busy; worker links busy median %s (%s-%s); busiest %s; "
                 "target (no server link > 80%% busy while worker links idle): %s\n"
                 % (lk["verdict_source"], pct(v["server_up"]), pct(v["server_down"]), pct(v["workers_busy_median"]),
                    pct(v["workers_busy_min"]), pct(v["workers_busy_max"]), v["busiest"],
                    "met" if v["target_ok"] else "MISSED"))
    return text


def run_links(run):
    """{system: system_links} of a run folder (systems with a window)."""
    out = {}
    for s in run_systems(run):
        lk = system_links(run, os.path.join(run, s))
        if lk:
            out[s] = lk
    return out


def write(run, lks):
    with open(os.path.join(run, "links.json"), "w") as f:
        json.dump(lks, f, indent=1)
        f.write("\n")
