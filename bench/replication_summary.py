#!/usr/bin/env python3
"""replication_summary.py - the replication targets over seeds (bench/replication_seeds.sh).

Reads DIR/seed*.dir (each naming a bench/replication_bench.sh run folder with rows.json), and
prints per variant the median and min-max over the seeds of: time to target, bytes received by
the replica host and by the server host, transfers to the replica, applied updates, and the
machine's CPU (cores, from /proc, cpu.jsonl); then the two targets on medians. With
--write-benchmarks FILE the section "Replication over seeds (base ...)" of FILE is replaced.
"""
import argparse
import glob
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools"))
from mlfcluster.records import RecordError, read_json  # noqa: E402

ORDER = ["none", "mlfabric-0x", "mlfabric-1x", "mlfabric-4x", "mlfabric-16x", "chain"]


def spread(xs, fmt):
    """'median (min-max)' of the numbers in xs, '-' when there are none."""
    xs = [x for x in xs if x is not None]
    if not xs:
        return "-"
    med = statistics.median(xs)
    if len(xs) == 1:
        return fmt.format(med)
    return "{} ({}-{})".format(fmt.format(med), fmt.format(min(xs)), fmt.format(max(xs)))


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def load(summary_dir):
    """{variant: [row per seed]} from the seed run folders."""
    runs = {}
    dirs = sorted(glob.glob(os.path.join(summary_dir, "seed*.dir")))
    if not dirs:
        sys.exit("replication_summary: no seed*.dir in %s" % summary_dir)
    for d in dirs:
        with open(d) as f:
            run = f.read().strip()
        path = os.path.join(run, "rows.json")
        try:
            rows = read_json(path)
        except RecordError as e:
            sys.exit("replication_summary: %s" % e)
        if rows is None:
            sys.exit("replication_summary: %s: missing" % path)
        for r in rows:
            runs.setdefault(r.get("variant"), []).append(r)
    return runs, len(dirs)


def table(runs):
    lines = [
        "| variant | div_max | reached | time to target s | replica host MB | server host MB "
        "| transfers to the replica | applied updates | transfers to the replica per applied "
        "update | machine CPU cores |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for v in ORDER:
        rs = runs.get(v)
        if not rs:
            continue
        rep = (rs[0].get("replication") or {})
        div = "-" if rep.get("mode") != "mlfabric" else spread(
            [(r.get("replication") or {}).get("div_max") for r in rs], "{:.3g}")
        mlf = rep.get("mode") == "mlfabric"
        lines.append("| %s | %s | %d/%d | %s | %s | %s | %s | %s | %s | %s |" % (
            v, div, sum(1 for r in rs if r.get("reached")), len(rs),
            spread([r.get("time_to_target_s") for r in rs], "{:.1f}"),
            spread([(r.get("replica_host_rx_bytes") or 0) / 1e6 if r.get("replica_host_rx_bytes")
                    is not None else None for r in rs], "{:.0f}"),
            spread([r.get("server_host_rx_bytes") / 1e6 if r.get("server_host_rx_bytes") is not None
                    else None for r in rs], "{:.0f}"),
            spread([r.get("replica_xfers") for r in rs], "{:.0f}") if mlf else "-",
            spread([r.get("applied") for r in rs], "{:.0f}"),
            spread([r["replica_xfers"] / r["applied"] if r.get("applied") and
                    r.get("replica_xfers") is not None else None for r in rs], "{:.2f}")
            if mlf else "-",
            spread([(r.get("cpu") or {}).get("machine_cores") for r in rs], "{:.2f}")))
    return lines


def targets(runs):
    def med(v, key):
        return median([r.get(key) for r in runs.get(v, [])])

    out = []
    r0, r16 = med("mlfabric-0x", "replica_host_rx_bytes"), med("mlfabric-16x", "replica_host_rx_bytes")
    if r0 and r16:
        lo = [r.get("replica_host_rx_bytes") for r in runs["mlfabric-0x"]]
        hi = [r.get("replica_host_rx_bytes") for r in runs["mlfabric-16x"]]
        apart = min(x for x in lo if x) > max(x for x in hi if x)
        out.append("- >= 3x less data to the replica at the largest div_max than at div_max 0 "
                   "(medians): %s (%.2fx: %.0f MB at 0, %.0f MB at 16x; the spreads %s)" % (
                       "yes" if r0 / r16 >= 3 else "NO", r0 / r16, r0 / 1e6, r16 / 1e6,
                       "do not overlap" if apart else "overlap"))
    else:
        out.append("- >= 3x less data to the replica: not measured")
    chain = med("chain", "time_to_target_s")
    mts = [(v, med(v, "time_to_target_s")) for v in ORDER if v.startswith("mlfabric-") and v in runs]
    if chain is not None and all(t is not None for _, t in mts):
        out.append("- MLfabric's time to target below chain replication's at every div_max "
                   "(medians): %s (chain %.1f s; %s)" % (
                       "yes" if all(t < chain for _, t in mts) else "NO", chain,
                       ", ".join("%s %.1f s" % (v[9:], t) for v, t in mts)))
    else:
        out.append("- MLfabric's time below chain's: not measured (a variant missed the target)")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", help="the bench-replication-seeds run folder")
    ap.add_argument("--base", default="conf/exp-repl.json")
    ap.add_argument("--write-benchmarks", metavar="FILE")
    a = ap.parse_args()
    runs, n = load(a.dir)
    body = table(runs) + [""] + ["Targets:"] + targets(runs)
    print("\n".join(body))
    if not a.write_benchmarks:
        return
    title = "## Replication over seeds (base %s)" % a.base
    head = [title, "",
            "Command: `make bench-replication` (bench/replication_seeds.sh: each seed's base experiment "
            "through bench/replication_bench.sh --only, then bench/replication_summary.py; run folder "
            "%s). %d seeds (1..%d) of %s: MLfabric-A, median and min-max over the seeds. div_max is "
            "a multiple of the mean update norm measured in each seed's no-replica run. Replica and "
            "server host MB: bytes received by the host's eth0. Machine CPU: cores of this 2-core "
            "machine used by every emulated process (cpu.jsonl, from /proc)." % (
                os.path.relpath(a.dir), n, n, a.base), ""]
    section = "\n".join(head + body) + "\n"
    try:
        with open(a.write_benchmarks) as f:
            text = f.read()
    except OSError:
        text = ""
    start = text.find(title)
    if start >= 0:
        end = text.find("\n## ", start + len(title))
        text = text[:start] + section + ("\n" + text[end + 1:] if end >= 0 else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    with open(a.write_benchmarks, "w") as f:
        f.write(text)
    print("bench-replication: section \"%s\" written into %s" % (title[3:], a.write_benchmarks),
          file=sys.stderr)


if __name__ == "__main__":
    main()
