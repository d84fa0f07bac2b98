#!/usr/bin/env bash
# test_dp_appsock.sh - the dataplane's app socket trusts only whom it should (docs/dataplane.md
# "App socket trust"): mode 0660 with its --app-group, peers checked with SO_PEERCRED; a memfd
# truncated under a transfer cannot kill it (unsealed buffers are refused, sealed ones work); a
# second app cannot take over a channel's listener; an app that never reads its replies is
# disconnected with the dataplane's memory bounded; the 65th app connection is refused with a WARN.
. "$(dirname "$0")/lib.sh"
CLUSTER="$ROOT/conf/cluster-pair.json"
HOSTILE="$ROOT/build/tests/dp_hostile"
need_dataplane
[ -x "$HOSTILE" ] || { echo "SKIP $TEST_NAME: build/tests/dp_hostile not built"; exit 0; }
tb_begin
dp_start a --app-group users
dp_start b
SA=$(sock a) SB=$(sock b)
users_gid=$(getent group users | cut -d: -f3)

alive() { kill -0 "$DP_PID_a" 2>/dev/null || fail "$1: dataplane of a died: $(tail -3 "$WORK/dp-a.log")"; }

# --- who may connect: mode 0660, group users for a, the dataplane's own (root) for b
[ "$(stat -c '%a %G' "$SA")" = "660 users" ] || fail "socket of a is $(stat -c '%a %G' "$SA"), expected 660 users (--app-group users)"
[ "$(stat -c '%a %g' "$SB")" = "660 $(id -g)" ] || fail "socket of b is $(stat -c '%a %g' "$SB"), expected 660 and the dataplane's group $(id -g)"
out=$("$HOSTILE" connect --sock "$SA" --uid 65534 --gid 65534 --group "$users_gid")
[ "$out" = "connect served" ] || fail "a member of group users was not served: $out"
out=$("$HOSTILE" connect --sock "$SA" --uid 65534 --gid 65534)
[ "$out" = "connect error=EACCES" ] || fail "uid 65534 outside group users: $out, expected EACCES from the 0660 socket"
# a socket made world-writable by mistake: the dataplane still checks the peer's credentials
chmod 0666 "$SA"
out=$("$HOSTILE" connect --sock "$SA" --uid 65534 --gid 65534)
chmod 0660 "$SA"
[ "$out" = "connect closed" ] || fail "uid 65534 on a 0666 socket: $out, expected the dataplane to close the connection"
grep -q 'WARN.*refusing app connection of pid [0-9]* (uid 65534' "$WORK/dp-a.log" ||
	fail "no WARN naming the refused pid and uid 65534 in a's log"
ok "socket 0660 group users; member served, outsider EACCES, outsider on a 0666 socket closed with a WARN"

# --- buffers: an unsealed memfd truncated under the transfer (SIGBUS before), a short one, a sealed one
timeout 40 "$XFER" recv --sock "$SB" --count 1 --out "$WORK/sealed-dst" --timeout 30 >"$WORK/recv1" 2>&1 &
rpid=$!
sleep 0.2
out=$("$HOSTILE" memfd --sock "$SA" --to b --bytes 16777216 --rate 0.4 --truncate --wait 5)
sleep 0.3
alive "unsealed memfd truncated"
grep -q '^send status=refused reason=".*not sealed' <<<"$out" || fail "unsealed memfd not refused: $out"
grep -q 'WARN.*SEND buffer refused: memfd not sealed' "$WORK/dp-a.log" || fail "no WARN about the unsealed memfd in a's log"
out=$("$HOSTILE" memfd --sock "$SA" --to b --bytes 16777216 --seal --short)
grep -q '^send status=refused reason=".*memfd of 8388608 bytes, the request needs 16777216' <<<"$out" ||
	fail "memfd smaller than the request not refused naming both sizes: $out"
out=$("$HOSTILE" memfd --sock "$SA" --to b --bytes 16777216 --rate 0.4 --seal --truncate --save "$WORK/sealed-src" --wait 20)
alive "sealed memfd"
grep -q '^send status=accepted' <<<"$out" || fail "sealed memfd refused: $out"
grep -q '^truncate rc=EPERM' <<<"$out" || fail "truncating a sealed memfd did not fail with EPERM: $out"
grep -q '^done status=ok' <<<"$out" || fail "sealed transfer did not complete: $out"
wait $rpid || fail "receiver of the sealed transfer failed: $(cat "$WORK/recv1")"
cmp -s "$WORK/sealed-src" "$WORK/sealed-dst" || fail "sealed transfer not byte-exact"
ok "unsealed memfd refused (dataplane alive), short memfd refused, sealed 16 MiB byte-exact"

# --- listener ownership: the first LISTEN on channel 0 keeps it; a second app is refused
random_file "$WORK/src" 4
timeout 30 "$XFER" recv --sock "$SB" --count 1 --out "$WORK/dst" --timeout 20 >"$WORK/recv2" 2>&1 &
rpid=$!
sleep 0.3
"$HOSTILE" listen --sock "$SB" --chan 0 --wait 4 >"$WORK/thief" &
tpid=$!
sleep 0.3
timeout 30 "$XFER" send --sock "$SA" --to b --file "$WORK/src" --timeout 10 >"$WORK/send2" 2>&1 ||
	fail "transfer with a second listener around failed: $(cat "$WORK/send2")"
wait $rpid || fail "the first listener did not get the transfer: $(cat "$WORK/recv2")"
wait $tpid
cmp -s "$WORK/src" "$WORK/dst" || fail "first listener's copy differs"
grep -q '^error chan=0 reason="LISTEN: channel 0 already has a listener' "$WORK/thief" ||
	fail "second LISTEN on channel 0 was not refused naming the channel: $(cat "$WORK/thief")"
! grep -q '^stole' "$WORK/thief" || fail "second listener received the transfer: $(cat "$WORK/thief")"
ok "second LISTEN on channel 0 refused; the first listener got the 4 MiB byte-exact"

# --- an app that never reads: 20,000 bad requests
rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$DP_PID_a/status"; }
before=$(rss)
out=$("$HOSTILE" flood --sock "$SA" --count 20000)
sleep 0.3
alive "flood"
after=$(rss)
grep -q 'closed=1' <<<"$out" || fail "flooding app not disconnected: $out"
n=$(grep -c 'does not read its replies.*disconnecting it' "$WORK/dp-a.log" || true)
[ "$n" = 1 ] || fail "expected one WARN about the app not reading, found $n"
lines=$(grep -c 'unknown request type' "$WORK/dp-a.log" || true)
[ "$lines" -le 40 ] || fail "$lines WARN lines for the flood of bad requests: not rate-limited"
# the cap is 4 MiB of replies; before it, 20,000 queued replies grew the dataplane by ~330 MB
[ $((after - before)) -lt 24576 ] || fail "dataplane RSS grew from $before to $after KiB under the flood (limit +24 MiB)"
timeout 30 "$XFER" recv --sock "$SB" --count 1 --out /dev/null --timeout 20 >"$WORK/recv3" 2>&1 &
rpid=$!
sleep 0.2
timeout 30 "$XFER" send --sock "$SA" --to b --bytes 1000000 --timeout 10 >"$WORK/send3" 2>&1 ||
	fail "transfer after the flood failed: $(cat "$WORK/send3")"
wait $rpid || fail "receiver after the flood failed: $(cat "$WORK/recv3")"
ok "flood: $out; RSS $before -> $after KiB, one WARN, $lines request WARN lines; still serving"

# --- the 65th app connection is refused with a WARN naming the cap (docs/dataplane.md "Log")
python3 - "$SA" <<'PY' || fail "could not open 65 app connections"
import socket, sys, time
held = []
for i in range(65):
    c = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    c.connect(sys.argv[1])
    held.append(c)
time.sleep(1.0)
PY
alive "65 app connections"
grep -q 'WARN.*refusing app connection of pid [0-9]*: 64 apps already connected' "$WORK/dp-a.log" ||
	fail "no WARN naming the cap of 64 app connections"
ok "the 65th app connection refused with a WARN naming the cap of 64"
