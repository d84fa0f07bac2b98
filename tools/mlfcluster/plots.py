"""accuracy.png, delays.png, timeline.png of a run folder with gnuplot (data under RUN/plot/)."""
import os
import subprocess

from .records import nonempty, read_json, read_jsonl, run_systems
from .results import acc_files


def gnuplot(script, log):
    with open(log, "a") as err:
        try:
            subprocess.run(["gnuplot"], input=script, text=True, stdout=subprocess.DEVNULL, stderr=err)
        except OSError as e:
            err.write("gnuplot: %s\n" % e)


def num(v):
    """A number of a gnuplot data file (NaN, gnuplot's missing value, for None)."""
    return "NaN" if v is None else repr(v)


def plots(run):
    pd = os.path.join(run, "plot")
    os.makedirs(pd, exist_ok=True)
    glog = os.path.join(pd, "gnuplot.log")
    exp = read_json(os.path.join(run, "experiment.json"))
    # delays from 3 x tau_max + 1 on share the last bin (Async has a long tail)
    cap = 25
    if isinstance(exp, dict):
        cap = 3 * (exp.get("tau_max") or 8) + 1
    acc_cmd, del_cmd, first_tl, ndel = [], [], "", 0
    for sys_ in run_systems(run):
        rec = os.path.join(run, sys_, "records")
        t0 = (read_json(os.path.join(run, sys_, "run.json")) or {}).get("t0") or 0
        accs = acc_files(rec)
        if accs:
            dat = os.path.join(pd, "acc-%s.dat" % sys_)
            with open(dat, "w") as f:
                for a in read_jsonl(accs[0]):
                    f.write("%s %s\n" % (num(a["t"] - t0), num(a.get("accuracy"))))
            acc_cmd.append("'%s' using 1:2 with linespoints title '%s'" % (dat, sys_))
        if nonempty(os.path.join(rec, "applied.jsonl")):
            counts = {}
            for a in read_jsonl(os.path.join(rec, "applied.jsonl")):
                d = min(a.get("delay"), cap)
                counts[d] = counts.get(d, 0) + 1
            dat = os.path.join(pd, "delay-%s.dat" % sys_)
            with open(dat, "w") as f:
                for d in sorted(counts):
                    f.write("%s %d\n" % (num(d), counts[d]))
            del_cmd.append("'%s' using ($1 + %d * 0.4 - 0.2):2 with boxes title '%s'" % (dat, ndel, sys_))
            ndel += 1
        if not first_tl and nonempty(os.path.join(rec, "transfers.jsonl")):
            # one segment per transfer on the sender's uplink and the receiver's downlink; times
            # relative to the run start (records are CLOCK_REALTIME)
            xs = list(read_jsonl(os.path.join(rec, "transfers.jsonl")))
            links = sorted({l for x in xs for l in (x["src"] + ".up", x["dst"] + ".down")})
            ix = {l: i for i, l in enumerate(links)}
            with open(os.path.join(pd, "timeline.dat"), "w") as f:
                for x in xs:
                    o = t0 if x["start"] >= t0 - 3600 else 0
                    for l in (x["src"] + ".up", x["dst"] + ".down"):
                        f.write("%s %d %s %s\n" % (num(x["start"] - o), ix[l], num(x["end"] - x["start"]),
                                                   x.get("what")))
                f.write("#links " + ", ".join('"%s" %d' % (l, i) for i, l in enumerate(links)) + "\n")
            first_tl = sys_
    if acc_cmd:
        gnuplot("set terminal pngcairo size 900,540\n"
                "set output '%s/accuracy.png'\n"
                "set title 'Test accuracy vs time'\n"
                "set xlabel 'time since start (s)'; set ylabel 'test accuracy'; set key bottom right; set grid\n"
                "plot %s\n" % (run, ", ".join(acc_cmd)), glog)
    if del_cmd:
        gnuplot("set terminal pngcairo size 900,540\n"
                "set output '%s/delays.png'\n"
                "set title 'Delay of applied updates (server version at apply - version computed from)'\n"
                "set xlabel 'delay (versions; the last bin holds every delay >= %g)'; set ylabel 'applied updates'; set grid\n"
                "set xrange [-0.5:%g + 0.5]; set style fill solid 0.4; set boxwidth 0.4\n"
                "plot %s\n" % (run, cap, cap, ", ".join(del_cmd)), glog)
    if first_tl:
        with open(os.path.join(pd, "timeline.dat")) as f:
            ytics = [l[len("#links "):].rstrip("\n") for l in f if l.startswith("#links ")][0]
        gnuplot("set terminal pngcairo size 1100,540\n"
                "set output '%s/timeline.png'\n"
                "set title 'Planned transfers per link (%s, first 20 s)'\n"
                "set xlabel 'time since start (s)'; set xrange [0:20]; set grid x\n"
                "set ytics (%s); set offsets 0, 0, 0.5, 0.5\n"
                "plot '%s/timeline.dat' using 1:2:3:(0) with vectors nohead lw 6 notitle\n"
                % (run, first_tl, ytics, pd), glog)
