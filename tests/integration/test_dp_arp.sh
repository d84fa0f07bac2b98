#!/usr/bin/env bash
# test_dp_arp.sh - neighbours by ARP (docs/dataplane.md "Neighbours"): a cluster config without
# any mac runs a transfer byte-exact, the dataplanes having resolved each other by ARP; a static
# mac in the config wins over a conflicting gratuitous ARP, which is reported once.
# The veths get MACs other than the config's default (02:00:<ip>) and the kernels' own ARP is
# turned off on them (ip link set eth0 arp off): only the dataplanes can find the right addresses.
. "$(dirname "$0")/lib.sh"
need_dataplane
WORK0=$(mktemp -d --tmpdir=/dev/shm)
MAC_A=02:aa:00:00:00:0a
MAC_B=02:aa:00:00:00:0b
BOGUS=02:ee:ee:ee:ee:ee
printf '{\n  "name": "arp",\n  "mtu": 1500,\n  "hosts": [
    {"name": "a", "ip": "10.88.0.1", "up_gbps": 10, "down_gbps": 10},
    {"name": "b", "ip": "10.88.0.2", "up_gbps": 10, "down_gbps": 10}\n  ]\n}\n' >"$WORK0/nomac.json"
printf '{\n  "name": "arp",\n  "mtu": 1500,\n  "hosts": [
    {"name": "a", "ip": "10.88.0.1", "up_gbps": 10, "down_gbps": 10},
    {"name": "b", "ip": "10.88.0.2", "mac": "%s", "up_gbps": 10, "down_gbps": 10}\n  ]\n}\n' "$MAC_B" >"$WORK0/static.json"
CLUSTER="$WORK0/nomac.json"
tb_begin
mv "$WORK0"/* "$WORK/" && rmdir "$WORK0"
CLUSTER="$WORK/nomac.json"
for h in a b; do
	v=MAC_${h^^}
	"$TB" exec "$CLUSTER" $h ip link set dev eth0 down &&
		"$TB" exec "$CLUSTER" $h ip link set dev eth0 address "${!v}" arp off &&
		"$TB" exec "$CLUSTER" $h ip link set dev eth0 up || fail "cannot set $h's veth MAC to ${!v}"
done
random_file "$WORK/src" 8

# wait_log FILE PATTERN WHAT: wait up to 10 s for a line matching PATTERN in FILE.
wait_log() {
	for _ in $(seq 100); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
	fail "no $3 within 10 s in $1: $(grep ARP "$1" | tail -3)"
}

# transfer NAME: 8 MiB a -> b, byte-exact and ok at both ends.
transfer() {
	local name=$1 rpid
	timeout 60 "$XFER" recv --sock "$(sock b)" --count 1 --out "$WORK/dst-$name" --timeout 20 >"$WORK/recv-$name" 2>&1 &
	rpid=$!
	sleep 0.2
	timeout 60 "$XFER" send --sock "$(sock a)" --to b --file "$WORK/src" --timeout 10 >"$WORK/send-$name" 2>&1 ||
		fail "$name: sender failed: $(cat "$WORK/send-$name")"
	wait $rpid || fail "$name: receiver failed: $(cat "$WORK/recv-$name")"
	grep -q '^xfer .*status=ok' "$WORK/send-$name" || fail "$name: sender: $(cat "$WORK/send-$name")"
	cmp -s "$WORK/src" "$WORK/dst-$name" || fail "$name: received bytes differ from the sent ones"
}

# 1. no mac anywhere: each dataplane resolves the other by ARP, at the veths' real MACs
dp_start a
dp_start b
wait_log "$WORK/dp-a.log" "ARP: peer b (10.88.0.2) resolved at $MAC_B" "resolution of b by a"
wait_log "$WORK/dp-b.log" "ARP: peer a (10.88.0.1) resolved at $MAC_A" "resolution of a by b"
transfer nomac
grep -q "1 peers to resolve by ARP, 0 static" "$WORK/dp-a.log" || fail "a did not start with b to resolve"
! grep -q "frame claiming to be from" "$WORK/dp-a.log" "$WORK/dp-b.log" ||
	fail "frames dropped for a wrong source MAC: $(grep -h 'frame claiming' "$WORK"/dp-*.log | head -2)"
ok "no MACs in the config: a and b resolved by ARP ($MAC_A, $MAC_B), 8 MiB byte-exact"
dp_stop a b

# 2. b's mac given: a never asks for it, and a gratuitous ARP claiming b's address from another
# MAC (sent three times from b's namespace) is reported once and changes nothing
CLUSTER="$WORK/static.json"
mv "$WORK/dp-a.log" "$WORK/dp-a-nomac.log"
mv "$WORK/dp-b.log" "$WORK/dp-b-nomac.log"
dp_start a
dp_start b
wait_log "$WORK/dp-a.log" "0 peers to resolve by ARP, 1 static" "static entry of b"
wait_log "$WORK/dp-b.log" "ARP: peer a (10.88.0.1) resolved at $MAC_A" "resolution of a by b"
"$TB" exec "$CLUSTER" b python3 -c '
import socket, struct, sys, time
mac = bytes.fromhex(sys.argv[1].replace(":", "")); ip = socket.inet_aton(sys.argv[2])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW); s.bind(("eth0", 0))
f = b"\xff" * 6 + mac + b"\x08\x06" + struct.pack(">HHBBH", 1, 0x0800, 6, 4, 1) + mac + ip + bytes(6) + ip + bytes(18)
for _ in range(3):
    s.send(f); time.sleep(0.05)
' "$BOGUS" 10.88.0.2 || fail "cannot send the conflicting gratuitous ARP from b's namespace"
wait_log "$WORK/dp-a.log" "ARP: $BOGUS claims b's address 10.88.0.2, but the config gives b the static mac $MAC_B" \
	"conflict report"
transfer static
n=$(grep -c "claims b's address" "$WORK/dp-a.log")
[ "$n" = 1 ] || fail "the conflict was reported $n times, not once"
! grep -q "ARP: peer b" "$WORK/dp-a.log" || fail "a learned b by ARP despite its static mac: $(grep 'ARP: peer b' "$WORK/dp-a.log")"
ok "static mac of b kept against a conflicting gratuitous ARP (reported once), 8 MiB byte-exact"
dp_stop a b
