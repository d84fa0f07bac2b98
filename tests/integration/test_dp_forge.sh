#!/usr/bin/env bash
# test_dp_forge.sh - frames forged from a third namespace x (build/tests/dp_forge) cannot corrupt,
# finish, fail or crowd out a real transfer a -> b (docs/security.md "Frames").
# 1. without a cluster key: DATA spoofing a's IP from x's own MAC is dropped (source MAC check);
# 2. with frame_auth (a key): DATA, SACK done and ABORT spoofing a's or b's IP *and* MAC, untagged
#    or with a made-up tag, are all dropped; the 24 MiB transfer is byte-exact and ok at both ends;
#    1,100 forged transfer ids open nothing and a later transfer runs;
# 3. replay: a transfer captured at b and replayed verbatim from x after b's linger opens nothing
#    (counted rx_reject_replay, logged); later transfers, also from a's restarted dataplane, run.
# Before the change, case 2's forged DATA replaced every byte of the transfer with both ends "ok".
. "$(dirname "$0")/lib.sh"
FORGE="$ROOT/build/tests/dp_forge"
need_dataplane
[ -x "$FORGE" ] || { echo "SKIP $TEST_NAME: build/tests/dp_forge not built"; exit 0; }
WORK0=$(mktemp -d --tmpdir=/dev/shm)
hosts='"hosts": [
    {"name": "a", "ip": "10.79.0.1", "up_gbps": 10, "down_gbps": 10},
    {"name": "b", "ip": "10.79.0.2", "up_gbps": 10, "down_gbps": 10},
    {"name": "x", "ip": "10.79.0.3", "up_gbps": 10, "down_gbps": 10}
  ]'
"$ROOT/tools/mlf-keygen" "$WORK0/forge.key" >/dev/null || fail "mlf-keygen"
printf '{\n  "name": "forge",\n  "mtu": 1500,\n  %s\n}\n' "$hosts" >"$WORK0/plain.json"
printf '{\n  "name": "forge",\n  "mtu": 1500,\n  "key_file": "forge.key",\n  %s\n}\n' "$hosts" >"$WORK0/auth.json"
CLUSTER="$WORK0/plain.json"
tb_begin
# lib.sh's EXIT trap tears the testbed down with $CLUSTER, then removes $WORK: keep the files there
mv "$WORK0"/* "$WORK/" && rmdir "$WORK0"
CLUSTER="$WORK/plain.json"
random_file "$WORK/src" 24
# the forger's switch port learns no addresses (port security, as a managed switch would have):
# spoofed source MACs must not steer a's or b's frames to x, which would test the bridge's MAC
# learning (an L2 hijack that no frame tag can stop) instead of the dataplanes' frame checks
ip netns exec forge-sw bridge link set dev x learning off ||
	fail "cannot turn off MAC learning on x's switch port"

# transfer_under NAME ID FORGE-COMMANDS...: a 24 MiB transfer a -> b ($WORK/src, or the file $XSRC)
# paced at 0.3 Gbit/s (~0.7 s) with id ID while each forge command "AS TO KIND [ARGS]" runs from x;
# asserts byte-exact, ok at both ends.
transfer_under() {
	local name=$1 id=$2 src=${XSRC:-$WORK/src}; shift 2
	timeout 60 "$XFER" recv --sock "$(sock b)" --count 1 --out "$WORK/dst-$name" --timeout 40 >"$WORK/recv-$name" 2>&1 &
	local rpid=$! spid
	sleep 0.2
	timeout 60 "$XFER" send --sock "$(sock a)" --to b --file "$src" --rate 0.3 --id "$id" --timeout 20 \
		>"$WORK/send-$name" 2>&1 &
	spid=$!
	sleep 0.15
	for cmd in "$@"; do
		# shellcheck disable=SC2086
		"$TB" exec "$CLUSTER" x "$FORGE" --cluster "$CLUSTER" --id "$id" --total $((24 * 1024 * 1024)) $cmd \
			>>"$WORK/forge-$name" 2>&1 || fail "$name: dp_forge $cmd: $(tail -2 "$WORK/forge-$name")"
	done
	wait $spid || fail "$name: sender failed: $(cat "$WORK/send-$name")"
	wait $rpid || fail "$name: receiver failed: $(cat "$WORK/recv-$name")"
	grep -q '^xfer .*status=ok' "$WORK/send-$name" || fail "$name: sender: $(cat "$WORK/send-$name")"
	grep -q '^recv .*from=a .*status=ok' "$WORK/recv-$name" || fail "$name: receiver: $(cat "$WORK/recv-$name")"
	grep -q "^recv id=$id " "$WORK/recv-$name" || fail "$name: the app was handed $(cat "$WORK/recv-$name")"
	cmp -s "$src" "$WORK/dst-$name" ||
		fail "$name: received bytes differ from the sent ones ($(cmp "$src" "$WORK/dst-$name" 2>&1 | head -1))"
	[ $# -gt 0 ] || return 0
	FORGED=$(awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^frames=/) { sub("frames=", "", $i); n += $i } } END { print n + 0 }' "$WORK/forge-$name")
	[ "$FORGED" -gt 0 ] || fail "$name: no frame was forged"
}

# --- 1. no key: a's IP from x's own MAC
dp_start a
dp_start b
transfer_under plain 7a00000000000001 "--as a --to b --kind data --own-mac --count 2"
grep -q "WARN.*frame claiming to be from a came from MAC" "$WORK/dp-b.log" ||
	fail "plain: b logged no WARN about frames claiming a's IP from another MAC"
ok "no key: $FORGED DATA frames with a's IP from x's MAC dropped, 24 MiB byte-exact"
kill -TERM "$DP_PID_a" "$DP_PID_b"
wait_gone() { for _ in $(seq 100); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done; fail "dataplane $1 did not stop"; }
wait_gone "$DP_PID_a"
wait_gone "$DP_PID_b"

# --- 2. frame_auth: spoofed IP and MAC, untagged and with a made-up tag
CLUSTER="$WORK/auth.json"
mv "$WORK/dp-b.log" "$WORK/dp-b-plain.log"
dp_start a
dp_start b
grep -q 'frames tagged (frame_auth, frame_mac aes256-gcm)' "$WORK/dp-b.log" || fail "b's dataplane does not say its frames are tagged"
transfer_under auth 7a00000000000002 "--as a --to b --kind data" "--as a --to b --kind data --tag" \
	"--as a --to b --kind data --tag --chacha --count 2" \
	"--as b --to a --kind sack --tag --count 50" "--as b --to a --kind abort --count 20" \
	"--as a --to b --kind abort --tag --count 20"
grep -q "WARN.*frame from a (DATA, transfer 7a00000000000002) has no tag" "$WORK/dp-b.log" ||
	fail "auth: b logged no WARN about untagged DATA claiming to be from a"
grep -q "WARN.*frame from b (SACK, transfer 7a00000000000002) has a wrong tag\|WARN.*frame from b (ABORT" "$WORK/dp-a.log" ||
	fail "auth: a logged no WARN about the forged SACK or ABORT claiming to be from b"
ok "frame_auth: $FORGED forged DATA/SACK-done/ABORT frames with a's and b's IP and MAC dropped, 24 MiB byte-exact, ok at both ends"

# 1,100 new transfer ids claiming to be from a (the table holds 1024): none opens, a later transfer runs
"$TB" exec "$CLUSTER" x "$FORGE" --cluster "$CLUSTER" --as a --to b --kind flood --tag --count 1100 \
	--id 7b00000000000000 >"$WORK/flood" 2>&1 || fail "flood: $(cat "$WORK/flood")"
grep -q 'xfer 7b0' "$WORK/dp-b.log" && fail "flood: b opened a forged transfer: $(grep -m1 'xfer 7b0' "$WORK/dp-b.log")"
transfer_under after 7a00000000000003
ok "frame_auth: 1,100 forged transfer ids opened nothing; the next transfer byte-exact"

# --- 3. replay (docs/security.md "Replays"): a 2 MiB transfer a -> b captured at b and replayed
# verbatim from x after b's linger for it (2 x --timeout) ended opens nothing (before: delivered a
# second time, status ok, the same bytes, to the next app that listened); the next transfer is
# delivered, and so is one from a's restarted dataplane (a new epoch of stamps)
dp_stop a b
dp_start a --timeout 1
dp_start b --timeout 1
random_file "$WORK/src2" 2
"$TB" exec "$CLUSTER" b "$FORGE" --cluster "$CLUSTER" --as a --to b --kind capture --id 7c00000000000001 \
	--file "$WORK/captured" --wait 30 >"$WORK/capture" 2>&1 &
cpid=$!
for _ in $(seq 100); do grep -q capturing "$WORK/capture" && break; sleep 0.1; done
grep -q capturing "$WORK/capture" || fail "replay: the capture in b's namespace did not start: $(cat "$WORK/capture")"
XSRC=$WORK/src2 transfer_under orig 7c00000000000001
wait $cpid || fail "replay: capture failed: $(cat "$WORK/capture")"
CAPTURED=$(sed -n 's/^captured frames=//p' "$WORK/capture")
[ "${CAPTURED:-0}" -ge $((2 * 1024 * 1024 / 1396)) ] || # 1396 payload bytes per tagged frame at MTU 1500
	fail "replay: captured ${CAPTURED:-0} frames, fewer than the transfer's segments"
# b keeps a finished transfer for 2 x --timeout (docs/dataplane.md): wait that out (a protocol
# constant, not a guess of speed), with 0.5 s to spare
sleep 2.5
"$TB" exec "$CLUSTER" x "$FORGE" --cluster "$CLUSTER" --as a --to b --kind replay --file "$WORK/captured" \
	>"$WORK/replay" 2>&1 || fail "replay: dp_forge replay: $(cat "$WORK/replay")"
tel=""
for _ in $(seq 100); do
	tel=$("$ROOT/build/mlf-tel" forge-b /mlfabric/stats 2>&1) || fail "mlf-tel: $tel"
	echo "$tel" | grep -q '"rx_reject_replay": *[1-9]' && break
	sleep 0.1
done
echo "$tel" | grep -q '"rx_reject_replay": *[1-9]' ||
	fail "replay: b did not count the replayed frames as replays within 10 s: $tel"
# a replayed transfer that opened would wait for a listener and reach this one first
transfer_under next 7c00000000000002
[ "$(grep -c 'xfer 7c00000000000001: from a' "$WORK/dp-b.log")" = 1 ] ||
	fail "replay: b opened the replayed transfer again: $(grep 'xfer 7c00000000000001' "$WORK/dp-b.log")"
grep -q "WARN.*transfer 7c00000000000001 from a: correctly tagged DATA .* refused as a replay" "$WORK/dp-b.log" ||
	fail "replay: b logged no WARN naming the replayed transfer"
REPLAYED=$(sed -n 's/.*frames=\([0-9]*\) .*/\1/p' "$WORK/replay")
dp_stop a
dp_start a --timeout 1
XSRC=$WORK/src2 transfer_under restart 7c00000000000003
ok "replay: $REPLAYED frames of a captured 2 MiB transfer replayed after b's linger opened nothing (rx_reject_replay), the next transfer and one from a's restarted dataplane byte-exact"
