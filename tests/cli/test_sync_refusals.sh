#!/usr/bin/env bash
# test_sync_refusals.sh - bad settings of the synchronization models on the command line
# (docs/apps.md "mlf-worker", docs/scheduler.md): mlf-scheduler's (SSP/ASP thresholds that make
# no sense, ADSP's periods) and mlf-worker's (an unknown --system, the old selector flags, an
# option of another system than --system, a system's missing or bad settings, a deterministic
# straggler faster than 1, Hop's graph missing from the cluster config or without this host). Each is refused with exit 2 and one line on stderr that
# names the program and the option, and nothing is started: the --records directory is not
# created. Installed as $(BUILD)/tests/test_sync_refusals, it runs the programs of its own build
# (build/ or build-san/). Needs no root and no network.
set -u
here=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$here/../.." && pwd)
SCHED=$here/../mlf-scheduler WK=$here/../mlf-worker
CL=$ROOT/conf/cluster-fabric.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0 n=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
for p in "$SCHED" "$WK"; do [ -x "$p" ] || { echo "FAIL: $p not built"; exit 1; }; done

# refused PROG-NAME WANT ARGS...: exit 2, one stderr line starting "PROG-NAME: " containing WANT,
# and no records directory
refused() {
	local name=$1 want=$2; shift 2
	n=$((n + 1))
	rm -rf "$tmp/rec"
	"$@" --records "$tmp/rec" >"$tmp/out" 2>"$tmp/err" </dev/null
	local rc=$?
	[ "$rc" = 2 ] || fail "$name ${*:2}: exit $rc, want 2 ($(head -c 300 "$tmp/err"))"
	[ "$(wc -l <"$tmp/err")" = 1 ] || fail "$name ${*:2}: $(wc -l <"$tmp/err") lines on stderr, want 1: $(head -c 300 "$tmp/err")"
	# a usage error starts "PROG: "; one found after the options parsed is logged by the
	# worker's component, "<time> ERROR worker[HOST]: "
	grep -Eq "^$name: |^[0-9.]+ ERROR worker\[w0\]: " "$tmp/err" && grep -qF -- "$want" "$tmp/err" ||
		fail "$name ${*:2}: stderr does not name '$want': $(cat "$tmp/err")"
	[ ! -e "$tmp/rec" ] || fail "$name ${*:2}: refused, but the records directory was created"
}

S=("$SCHED" --cluster "$CL")
refused mlf-scheduler "--asp needs --ssp S" "${S[@]}" --asp
refused mlf-scheduler "--asp-weak 3 is above --ssp 2" "${S[@]}" --ssp 2 --asp --asp-weak 3
refused mlf-scheduler "--ssp" "${S[@]}" --ssp -1
refused mlf-scheduler "--ssp" "${S[@]}" --ssp two
refused mlf-scheduler "--adsp-eval 0.5 is shorter than the check period --adsp 1" "${S[@]}" --adsp 1 --adsp-eval 0.5
refused mlf-scheduler "--adsp-rate and --adsp-epoch need --adsp" "${S[@]}" --adsp-rate 2
refused mlf-scheduler "--adsp" "${S[@]}" --adsp -1

W=("$WK" --cluster "$CL" --host w0 --server ps --shard 0/4)
# --system picks the training algorithm; the old selector flags are refused with the new spelling
refused mlf-worker "unknown --system 'sgd'" "${W[@]}" --system sgd
refused mlf-worker "--system" "${W[@]}"
refused mlf-worker "--mode mlfabric-s is now --system mlfabric-s" "${W[@]}" --mode mlfabric-s
refused mlf-worker "--esync 4 is now --system esync --esync-workers 4" "${W[@]}" --system mlfabric-s --esync 4
refused mlf-worker "--adsp is now --system adsp" "${W[@]}" --system mlfabric-a --adsp
refused mlf-worker "--hop w1 is now --system hop --hop-neighbours w1" "${W[@]}" --system async --hop w1
# an option of one system is refused with another, naming the system it belongs to
refused mlf-worker "--local-steps belongs to --system local-sgd, not mlfabric-s" "${W[@]}" --system mlfabric-s --local-steps 4
refused mlf-worker "--esync-nonblocking belongs to --system esync, not local-sgd" \
	"${W[@]}" --system local-sgd --local-workers 4 --local-steps 2 --esync-nonblocking
refused mlf-worker "--esync-workers belongs to --system esync, not mlfabric-a" "${W[@]}" --system mlfabric-a --esync-workers 4
refused mlf-worker "--hop-neighbours belongs to --system hop, not mlfabric-a" "${W[@]}" --system mlfabric-a --hop-neighbours w1
refused mlf-worker "--overlap belongs to --system mlfabric-a, async, ssp, asp, not mlfabric-s" "${W[@]}" --system mlfabric-s --overlap
refused mlf-worker "--momentum belongs to --system mlfabric-a, mlfabric-s, async, ssp, asp, not esync" \
	"${W[@]}" --system esync --esync-workers 4 --momentum 0.9
refused mlf-worker "--momentum belongs to --system mlfabric-a, mlfabric-s, async, ssp, asp, not hop" \
	"${W[@]}" --system hop --hop-neighbours w1 --momentum 0.9
refused mlf-worker "--global-lr belongs to --system esync, local-sgd, adsp, not mlfabric-s" "${W[@]}" --system mlfabric-s --global-lr 1
# a system's settings that make no sense
refused mlf-worker "--system esync needs --esync-workers P" "${W[@]}" --system esync
refused mlf-worker "--system local-sgd needs --local-workers P and --local-steps T" "${W[@]}" --system local-sgd --local-workers 4
refused mlf-worker "--local-steps" "${W[@]}" --system local-sgd --local-workers 4 --local-steps 0
refused mlf-worker "--momentum" "${W[@]}" --system mlfabric-a --momentum 1
refused mlf-worker "--speed" "${W[@]}" --system mlfabric-a --speed 0.5
refused mlf-worker "--hop-jump needs token queues" "${W[@]}" --system hop --hop-neighbours w1 --hop-max-ig 0 --hop-jump 2
# Hop's graph from the cluster config (docs/cluster-config.md): a cluster without one, a host
# outside the graph; refused before any data is loaded or the fabric opened
refused mlf-worker "--hop-neighbours graph: $CL has no \"graph\"" "${W[@]}" --system hop --hop-neighbours graph
jq '.graph = {"w1": ["w2"], "w2": ["w1"]}' "$CL" >"$tmp/graph.json"
refused mlf-worker "--hop-neighbours graph: $tmp/graph.json gives this host no neighbour" \
	"$WK" --cluster "$tmp/graph.json" --host w0 --server ps --shard 0/4 --system hop --hop-neighbours graph

if [ "$fails" -ne 0 ]; then echo "FAIL test_sync_refusals: $fails of $n cases"; exit 1; fi
echo "ok   test_sync_refusals: $n bad settings of mlf-scheduler and mlf-worker refused with one line each, nothing started"
