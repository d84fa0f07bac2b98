#!/usr/bin/env bash
# test_dp_port.sh - the port set-up and its counters (docs/dataplane.md "Port set-up"): after a
# transfer, /mlfabric/stats of the receiver carries the port's name, link state and speed, its
# drop counters (imissed, ierrors, rx_nombuf, oerrors; af_packet on a quiet veth drops nothing,
# so none may exceed the frames received), the ring sizes (the rx ring at least two senders'
# windows, 4096) and promiscuous mode off (the config gives no MAC: peers address the port's own);
# then a dataplane whose cluster config asks for MTU 9000 over the 1500-byte veth refuses to start
# with a message naming the port and its interface.
. "$(dirname "$0")/lib.sh"
dp_pair_begin
name=$(cluster_name "$CLUSTER")

random_file "$WORK/src" 4
timeout 60 "$XFER" recv --sock "$(sock b)" --count 1 --out "$WORK/dst" --timeout 30 >"$WORK/recv" 2>&1 &
rpid=$!
timeout 60 "$XFER" send --sock "$(sock a)" --to b --file "$WORK/src" --timeout 20 >"$WORK/send" 2>&1 ||
	fail "transfer failed: $(cat "$WORK/send")"
wait $rpid || fail "receiver failed: $(cat "$WORK/recv")"
cmp -s "$WORK/src" "$WORK/dst" || fail "received bytes differ from the sent ones"

num() { sed -n "s/.*\"$1\": *\([0-9]*\).*/\1/p" <<<"$tel" | head -1; }
tel=""
for _ in $(seq 100); do # the counters are read every 0.1 s
	tel=$("$ROOT/build/mlf-tel" "$name-b" /mlfabric/stats 2>&1) || fail "mlf-tel: $tel"
	[ "$(num port_polls)" -ge 2 ] 2>/dev/null && break
	sleep 0.1
done
grep -q '"port": *"port 0 (net_af_packet0, interface eth0)"' <<<"$tel" ||
	fail "stats do not name the port and its interface: $tel"
for k in port_imissed port_ierrors port_rx_nombuf port_oerrors port_link_up port_speed_mbps port_rx_desc \
	port_tx_desc port_promisc port_polls rx_frames rx_oversize rx_cksum_bad; do
	[ -n "$(num $k)" ] || fail "stats lack $k: $tel"
done
[ "$(num port_link_up)" = 1 ] || fail "port link not up: port_link_up=$(num port_link_up)"
[ "$(num port_speed_mbps)" -gt 0 ] || fail "port speed not reported: port_speed_mbps=$(num port_speed_mbps)"
[ "$(num port_rx_desc)" -ge 4096 ] || fail "rx ring of $(num port_rx_desc) descriptors, below two windows (4096)"
[ "$(num port_promisc)" = 0 ] || fail "promiscuous mode on though the config gives b no other MAC"
rx=$(num rx_frames)
[ "$rx" -ge $((4 * 1024 * 1024 / 1432)) ] || fail "b counted $rx frames for a 4 MiB transfer"
for k in port_imissed port_ierrors port_rx_nombuf port_oerrors; do
	[ "$(num $k)" -le "$rx" ] || fail "$k=$(num $k) exceeds the $rx frames received"
done
grep -q "port 0 (net_af_packet0, interface eth0): driver net_af_packet.*rings [0-9]* rx" "$WORK/dp-b.log" ||
	fail "b logged no port set-up line: $(grep -m3 'port 0' "$WORK/dp-b.log")"
ok "stats carry the port: link up $(num port_speed_mbps) Mbit/s, rings $(num port_rx_desc)/$(num port_tx_desc), imissed $(num port_imissed) ierrors $(num port_ierrors) rx_nombuf $(num port_rx_nombuf) oerrors $(num port_oerrors) of $rx frames"

# MTU 9000 asked of a 1500-byte interface: refused, naming the port (not only a warning)
dp_stop a
sed 's/"mtu": *1500/"mtu": 9000/' "$CLUSTER" >"$WORK/jumbo.json"
[ "$("$TB" exec "$CLUSTER" a cat /sys/class/net/eth0/mtu)" = 1500 ] || fail "a's eth0 is not at MTU 1500"
if "$TB" dataplane "$WORK/jumbo.json" a --log "$WORK/dp-jumbo.log" >"$WORK/jumbo.pid" 2>"$WORK/jumbo.start"; then
	kill -TERM "$(cat "$WORK/jumbo.pid")" 2>/dev/null || true
	fail "a dataplane asked for MTU 9000 over a 1500-byte interface started"
fi
grep -q "port 0 (net_af_packet0, interface eth0): interface MTU 1500 is below the cluster config's mtu 9000" \
	"$WORK/dp-jumbo.log" || fail "no error naming the port and the MTUs: $(tail -3 "$WORK/dp-jumbo.log")"
ok "MTU 9000 over a 1500-byte interface refused: $(grep -o 'port 0 (net_af_packet0.*' "$WORK/dp-jumbo.log" | head -1 | cut -c1-120)"
