#!/usr/bin/env bash
# bench/tbf_depth.sh - what a tbf's depth (burst) does to kernel TCP on a veth pair (docs/testbed.md
# "tbf parameters"): for each RATE:BURST (tc units, e.g. 10mbit:6056), the sustained iperf3 goodput
# (6 s, first second omitted) and the time one 356 KB message (a 8-worker ring all-reduce's bytes per
# worker of a 203,560-byte update) takes after 0.25 s idle, 5 repeats, next to its time at the rate.
# Needs root, iperf3, python3; two namespaces tbd-a, tbd-b, removed at exit.
# Usage: bench/tbf_depth.sh [RATE:BURST ...]   (default: 10mbit at the old and new depth, 100mbit, 1gbit)
set -euo pipefail
case "${1:-}" in -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
[ "$(id -u)" = 0 ] || { echo "tbf_depth: needs root (namespaces)" >&2; exit 2; }
command -v iperf3 >/dev/null || { echo "tbf_depth: needs iperf3 (apt-get install iperf3)" >&2; exit 2; }
SPECS=("$@")
[ ${#SPECS[@]} -gt 0 ] || SPECS=(10mbit:262144 10mbit:6056 100mbit:262144 100mbit:25000 1gbit:262144 1gbit:250000 1gbit:6056)
cleanup() { ip netns del tbd-a 2>/dev/null || true; ip netns del tbd-b 2>/dev/null || true; }
trap cleanup EXIT
cleanup
ip netns add tbd-a; ip netns add tbd-b
ip link add tbda type veth peer name tbdb
ip link set tbda netns tbd-a; ip link set tbdb netns tbd-b
ip -n tbd-a addr add 10.199.0.1/24 dev tbda; ip -n tbd-b addr add 10.199.0.2/24 dev tbdb
ip -n tbd-a link set tbda up; ip -n tbd-b link set tbdb up
MSG='
import socket, sys, time
N = 356000
if sys.argv[1] == "srv":
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("10.199.0.2", 5999)); s.listen(1); s.settimeout(10); c, _ = s.accept()
    while True:
        got = 0
        while got < N:
            b = c.recv(65536)
            if not b: sys.exit(0)
            got += len(b)
        c.sendall(b"k")
c = socket.create_connection(("10.199.0.2", 5999)); ts = []
for i in range(6):
    time.sleep(0.25)
    t = time.time(); c.sendall(b"x" * N); c.recv(1); ts.append(time.time() - t)
print(" ".join("%.3f" % x for x in ts[1:]))
'
printf "%-8s %8s %14s %34s %10s\n" rate burst "goodput Mbit/s" "356 KB after 0.25 s idle (s)" "at rate s"
for spec in "${SPECS[@]}"; do
	rate=${spec%%:*} burst=${spec##*:}
	tc -n tbd-a qdisc replace dev tbda root tbf rate "$rate" burst "$burst" latency 50ms
	ip netns exec tbd-b iperf3 -s -D -1 >/dev/null 2>&1; sleep 0.3
	bps=$(ip netns exec tbd-a iperf3 -c 10.199.0.2 -t 6 -O 1 -J 2>/dev/null | jq '.end.sum_received.bits_per_second')
	ip netns exec tbd-b python3 -c "$MSG" srv & srv=$!; sleep 0.5
	times=$(ip netns exec tbd-a python3 -c "$MSG" cli)
	wait $srv || true
	bits=$(tc -n tbd-a -j qdisc show dev tbda | jq '.[0].options.rate')
	printf "%-8s %8s %14.2f %34s %10.3f\n" "$rate" "$burst" "$(awk -v b="$bps" 'BEGIN{print b/1e6}')" "$times" \
		"$(awk -v r="$bits" 'BEGIN{print 356000 / 1448 * 1514 / r}')"
done
