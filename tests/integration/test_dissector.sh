#!/usr/bin/env bash
# test_dissector.sh - tools/mlfabric.lua decodes DATA, SACK and ABORT frames made by wire_encode()
# and flags a corrupted header checksum, and finds the body of a tagged (frame_auth) frame after
# its tag (needs tshark; skipped without it).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
command -v tshark >/dev/null || { echo "SKIP test_dissector: tshark not installed"; exit 0; }
. "$(dirname "${BASH_SOURCE[0]}")/workdir.sh"   # work_done
TEST_NAME=test_dissector
WORK="$(mktemp -d)"
trap 'rc=$?; work_done $rc; exit $rc' EXIT
fail() { echo "FAIL test_dissector: $*" >&2; exit 1; }

"$ROOT/build/tests/wire_pcap" "$WORK/w.pcap"
tshark -X lua_script:"$ROOT/tools/mlfabric.lua" -r "$WORK/w.pcap" -T fields -E separator='|' \
	-e mlfabric.type -e mlfabric.id -e mlfabric.offset -e mlfabric.cum_ack -e mlfabric.sack.acked \
	-e mlfabric.reason -e mlfabric.flags.retx -e mlfabric.len -e _ws.expert.message \
	>"$WORK/out" 2>"$WORK/err" || fail "tshark failed: $(cat "$WORK/err")"
mapfile -t L <"$WORK/out"
[ "${#L[@]}" = 5 ] || fail "expected 5 decoded frames, got ${#L[@]}: $(cat "$WORK/out")"
[[ "${L[0]}" == "1|0x0001000000000007|2920||||0|1460|" ]] || fail "DATA frame decoded as '${L[0]}'"
[[ "${L[1]}" == "2|0x0001000000000007||12|5||0|2|" ]] || fail "SACK frame decoded as '${L[1]}'"
[[ "${L[2]}" == 3\|0x0001000000000007\|*\|peer\ b\ silent\|*\|13\| ]] || fail "ABORT frame decoded as '${L[2]}'"
[[ "${L[3]}" == *"|1|100|Bad MLfabric header checksum" ]] || fail "corrupted frame not flagged: '${L[3]}'"
[[ "${L[0]}" != *Bad* && "${L[1]}" != *Bad* ]] || fail "valid frames flagged with a bad checksum"
[[ "${L[4]}" == 3\|0x0001000000000008\|*\|tagged\ stop\|*\|11\| ]] || fail "tagged ABORT (AUTH flag, tag before the body) decoded as '${L[4]}'"
echo "ok   test_dissector: DATA, SACK (5 segments in the bitmap), ABORT reason, bad checksum flagged, tagged frame's body after its tag"
