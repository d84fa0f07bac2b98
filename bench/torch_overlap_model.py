#!/usr/bin/python3
"""torch_overlap_model.py - the critical path of steady overlapped iterations of
bench/torch_overlap.py, from the worker's MLF_TRACE timeline (`bench/torch_bench.sh --only-overlap
--trace`; docs/python.md "Tracing the overlap"), checked against the bench's own times
(docs/results/torch.md "A ceiling model of the overlapped iteration").

    torch_overlap_model.py [--prefetch] RUN_DIR [SEED ...]   (RUN_DIR/trace-sSEED.jsonl, RUN_DIR/sSEED.json)

--prefetch: the iterations of kind prefetch (their forward starts at the previous step: G, busy
and tail then show whether the prefetched models came before the hooks needed them).

Per steady overlapped iteration (three overlapped step() calls in a row), from the start of its
forward (the end of its wait for group 0's model) to the start of the next one (T):
  G     forward start -> the first background get began (the forward, the backward of the
        last-pushed group, its hook: local step, u, norm, push): the downlink is idle before;
  busy  the first get began -> the last model was in: the downlink carries every group's model
        (D bytes, payload headers included) in this span;
  tail  the last model in -> the next forward starts (0 when the forward waited for it);
  C     forward start -> step() (compute and hooks; E = T - C is what stays exposed);
  hooks the hooks' time (per group: gradient ready -> push handed over), summed.
T = G + busy + tail by construction; the model is that busy is the downlink moving D bytes at the
rate r = D / busy, so T >= G + D / r_link: with the run's compute-only and communication-only
medians it prints what G or r the 1.15 x max(compute, comm) target would need. Prints markdown.
"""
import json
import statistics
import sys

HDR = 1024  # payload header bytes per transfer (lib/proto/mlf_payload.h)


def mm(v, f="%.0f"):
    return (f + " (" + f + "-" + f + ")") % (statistics.median(v), min(v), max(v))


def kind(e):
    """The kind of iteration a `step` event ends: overlap, prefetch or None (overlap off)."""
    return ("prefetch" if e.get("prefetch") else "overlap") if e.get("overlap") else None


def iterations(trace, want="overlap"):
    """Per steady iteration of kind `want`: dict of the spans above, seconds. With prefetch the
    forward waits for nothing (it starts at the previous step) and the iteration's gets are the
    prefetched ones its hooks took (begun in the previous step)."""
    ev = [json.loads(line) for line in open(trace)]
    steps = [i for i, e in enumerate(ev) if e["ev"] == "step"]
    rows = []
    for a, b, c in zip(steps, steps[1:], steps[2:]):
        if not all(kind(ev[x]) == want for x in (a, b, c)):
            continue
        seg = ev[a + 1:b + 1]
        waits = [e for e in seg if e["ev"] == "wait"]
        nxt = [e for e in ev[b + 1:c + 1] if e["ev"] == "wait"]
        if want == "overlap" and (not waits or not nxt):
            continue
        f0 = waits[0]["t"] if waits else ev[a]["t"]
        s = ev[b]["t"]
        f1 = nxt[0]["t"] if nxt else ev[b]["t"]
        grads = {e["g"]: e["t"] for e in seg if e["ev"] == "grad"}
        pushed = {e["g"]: e["t"] for e in seg if e["ev"] == "pushed"}
        # this iteration's gets: begun after its forward started, before the next forward
        if want == "prefetch":
            gets = [e for e in seg if e["ev"] == "get" and e.get("prefetch")]
        else:
            gets = [e for e in ev[a:c] if e["ev"] == "get" and f0 <= e["t0"] <= s + 0.01]
        if not gets or len(gets) != len(pushed) or set(grads) != set(pushed):
            continue
        g_first, last_in = min(e["t0"] for e in gets), max(e["t"] for e in gets)
        rows.append(dict(T=f1 - f0, G=g_first - f0, busy=last_in - g_first, tail=f1 - last_in,
                         C=s - f0, E=f1 - s, hooks=sum(pushed[g] - grads[g] for g in pushed)))
    return rows


def main():
    args = sys.argv[1:]
    want = "overlap"
    if args and args[0] in ("--prefetch", "--overlap"):
        want = args.pop(0)[2:]
    if not args:
        sys.exit(__doc__)
    d, seeds = args[0], args[1:] or ["1", "2", "3"]
    allrows, bench = [], []
    for seed in seeds:
        try:
            rows = iterations("%s/trace-s%s.jsonl" % (d, seed), want)
            run = json.load(open("%s/s%s.json" % (d, seed)))
        except OSError as e:
            print("seed %s: %s" % (seed, e), file=sys.stderr)
            continue
        dbytes = sum(HDR + 4 * n for _, n in run["groups"])
        for r in rows:
            r["rate"] = dbytes * 8 / r["busy"] / 1e9
        allrows += rows
        bench.append((seed, run, dbytes, rows))
    if not allrows:
        sys.exit("no steady overlapped iterations in %s" % d)
    print("| seed | iterations | T ms | G ms | busy ms | downlink Gbit/s (D / busy) | tail ms | C ms | E ms | "
          "hooks ms | bench %s ms | compute ms | comm ms |" % want)
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for seed, run, dbytes, rows in bench + [("all", None, None, allrows)]:
        if not rows:
            continue
        col = lambda k: mm([r[k] * 1e3 for r in rows])
        bk = lambda k: "%.0f" % (run[k]["median_s"] * 1e3) if run and k in run else "-"
        bench_col = want
        print("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            seed, len(rows), col("T"), col("G"), col("busy"), mm([r["rate"] for r in rows], "%.2f"),
            col("tail"), col("C"), col("E"), col("hooks"), bk(bench_col), bk("compute"), bk("comm")))
    dbytes = bench[0][2]
    g = statistics.median(r["G"] for r in allrows)
    rate = statistics.median(r["rate"] for r in allrows)
    runs = [run for _, run, _, _ in bench if "compute" in run and "comm" in run]
    print()
    print("D = %.2f MB of models per iteration; medians over all iterations: G %.0f ms, downlink %.2f Gbit/s."
          % (dbytes / 1e6, g * 1e3, rate))
    print("Lower bound T >= G + D / r: at the measured rate %.0f ms; at 1 Gbit/s (the link) %.0f ms."
          % ((g + dbytes * 8 / rate / 1e9) * 1e3, (g + dbytes * 8 / 1e9) * 1e3))
    if runs:
        tgt = statistics.median(1.15 * max(r["compute"]["median_s"], r["comm"]["median_s"]) for r in runs)
        need_r = dbytes * 8 / (tgt - g) / 1e9 if tgt > g else float("inf")
        print("Target 1.15 x max(compute, comm) = %.0f ms: needs r >= %.2f Gbit/s at this G, or G <= %.0f ms "
              "at this rate, or G <= %.0f ms at 1 Gbit/s." % (tgt * 1e3, need_r, (tgt - dbytes * 8 / rate / 1e9) * 1e3,
                                                          (tgt - dbytes * 8 / 1e9) * 1e3))


if __name__ == "__main__":
    main()
