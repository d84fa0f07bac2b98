"""Interface byte counters of the emulated switch, sampled during a run.

Run by the runner inside the switch namespace <cluster>-sw (`ip netns exec`), where each host has
one veth named after the host: its rx bytes are what the host sent (the host's uplink), its tx
bytes what the host received (the downlink, after the downlink's tbf). Every INTERVAL seconds one
JSON line {"t": wall time s, "rx": {host: bytes}, "tx": {host: bytes}} is appended to OUT, from
/proc/net/dev of the process's own network namespace (no process per sample). Ends on SIGTERM.

Usage: python3 tools/mlfcluster/netdev.py OUT.jsonl INTERVAL_S
"""
import json
import signal
import sys
import time

SKIP = ("lo", "br0")


def parse(text):
    """{iface: (rx_bytes, tx_bytes)} of a /proc/net/dev text (the bridge and lo left out)."""
    out = {}
    for line in text.splitlines()[2:]:
        if ":" not in line:
            continue
        name, rest = line.split(":", 1)
        name = name.strip()
        w = rest.split()
        if name in SKIP or len(w) < 9:
            continue
        try:
            out[name] = (int(w[0]), int(w[8]))
        except ValueError:
            continue
    return out


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: netdev.py OUT.jsonl INTERVAL_S\n")
        return 2
    try:
        interval = float(argv[1])
    except ValueError:
        interval = 0
    if not interval > 0:
        sys.stderr.write("netdev.py: INTERVAL_S: a positive number expected, not '%s'\n" % argv[1])
        return 2
    stop = []
    signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
    signal.signal(signal.SIGINT, lambda *a: stop.append(1))
    with open(argv[0], "a") as out:
        nxt = time.time()
        while not stop:
            with open("/proc/net/dev") as f:
                c = parse(f.read())
            out.write(json.dumps({"t": round(time.time(), 4), "rx": {k: v[0] for k, v in c.items()},
                                  "tx": {k: v[1] for k, v in c.items()}}, separators=(",", ":")) + "\n")
            out.flush()
            nxt += interval
            time.sleep(max(0.0, nxt - time.time()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
