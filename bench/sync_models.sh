#!/usr/bin/env bash
# bench/sync_models.sh - `make bench-sync-models` (docs/results/sync-models.md): the ESync paper's Fig. 3 setting
# (4 workers at speeds 1:1:1:4, ESync against MLfabric-S = synchronous SGD and Async,
# conf/exp-esync.json) and the ASP paper's experiment
# (asp-ieee-access2018 §IV.B): one server and 3 workers (conf/exp-asp.json on the main job's
# cluster), an interfering load switched on mid-run on one worker (speeds [1, 1, 4] from 15 s),
# ASP (threshold adapted from the workers' iteration rates, weak threshold 1, at most 3) against
# SSP with s = 1, 2, 3, next to MLfabric-A and Async; seeds 1..SEEDS. Prints per run and system
# the time to the target accuracy, samples/s, the largest iteration lead over the slowest worker
# and the machine's CPU, then median and min-max per system (bench/sync_models_summary.py).
# PARTS=adsp: ADSP's heterogeneity sweep (adsp-aaai2020 Fig. 5: H = mean speed / slowest speed about
# 1, 2 and 3.2, here speeds [1,1,1,1], [1,1,3,3] and [1,1,1,4]; conf/exp-adsp.json) with ADSP
# against fixed-rate local SGD (Fixed ADACOMM) and MLfabric-S, in folders refh1, refh2, refh3.2.
# PARTS=hop: Hop's experiments (hop-asplos2019 §7, conf/exp-hop.json: a ring-based graph of 8
# workers): random 6x slowdowns at probability 1/8 without and with one backup worker (folders
# hop-rand-b0, hop-rand-b1), and w7 deterministically 4x slower without and with skipping
# iterations (hop-det, hop-det-skip: up to 10 at a time), and both again with one backup worker
# (hop-det-b1, hop-det-b1-skip: the paper's Fig. 19 skips on top of backups). PARTS=hop-det-b1: those two only.
# PARTS=hop-ref: Hop side by side with the server systems on the same cluster and settings (random
# 6x slowdowns: folders *-rand6x; w7 4x slower: *-det4x): RR-Sync, MLfabric-A and MLfabric-S, each
# with its conf/table2.json learning rate and momentum (the documented sweep), and Hop with its
# best variant of PARTS=hop (one backup worker; with skipping when w7 is slow), and Async; HOPREF
# lists the ones to run (default "hop rrsync mlfabric-a mlfabric-s async").
# PARTS=side: every mode side by side in one experiment per seed, in the setting ESync's Fig. 3 and
# ADSP's H = 3.2 share (conf/exp-esync.json: 4 workers at speeds 1:1:1:4, C3-N1): esync, adsp,
# local-sgd, asp, ssp (s = 3), hop (Hop's best variant of PARTS=hop: one backup worker, skipping up
# to 10 iterations; the ring-based graph of 4 workers is the complete graph), mlfabric-a,
# mlfabric-s, async and rr-sync (lr_sync = 4 x lr, the Table 2 rule) and adsp with the paper's
# global lr 1/M = 0.25 (as PARTS=adsp), folder side.
# PARTS=esync-nb: ESync's blocking and non-blocking State Server queries (esync.txt §4.2) in the
# Fig. 3 setting (conf/exp-esync.json), folders esync-block, esync-nb.
# Usage: bench/sync_models.sh [OUT_DIR]   (env SEEDS=3 TARGET=0.8 LIMIT=90 PARTS=all|asp|esync|esync-noniid|esync-nb|adsp|hop|hop-det-b1|hop-ref|side;
# EXTRA='jq filter' is applied last to every run's experiment, e.g. EXTRA='.batch_ms = 10')
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$ROOT/runs/sync-models-$(date -u +%Y%m%dT%H%M%S)}
SEEDS=${SEEDS:-3}; TARGET=${TARGET:-0.8}; LIMIT=${LIMIT:-90}; PARTS=${PARTS:-all}
case "$PARTS" in all|asp|esync|esync-noniid|esync-nb|adsp|hop|hop-det-b1|hop-ref|side) ;; *) echo "bench-sync-models: PARTS is all, asp, esync, esync-noniid, esync-nb, adsp, hop, hop-det-b1, hop-ref or side, got $PARTS" >&2; exit 2 ;; esac
case "${1:-}" in -h|--help) sed -n '2,31p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
mkdir -p "$OUT"
cd "$ROOT"
# run NAME SEED JQ-FILTER [BASE]: one tools/mlf-cluster run of BASE (conf/exp-asp.json) changed
# by JQ-FILTER
run() {
	local name=$1 seed=$2 filter=$3 base=${4:-conf/exp-asp.json} exp="$OUT/exp-$1-seed$2.json"
	jq --argjson s "$seed" --argjson t "$TARGET" --argjson l "$LIMIT" \
		".seed = \$s | .target_accuracy = \$t | .time_limit_s = \$l | $filter${EXTRA:+ | $EXTRA}" "$base" >"$exp"
	echo "== $name seed $seed"
	flock -o /tmp/mlf-netns.lock tools/mlf-cluster run "$exp" --out "$OUT/$name-seed$seed" \
		>"$OUT/$name-seed$seed.log" 2>&1 || { echo "run failed: see $OUT/$name-seed$seed.log"; return 0; }
	tail -3 "$OUT/$name-seed$seed.log"
}
for seed in $(seq 1 "$SEEDS"); do
	if [ "$PARTS" = all ] || [ "$PARTS" = asp ]; then
		for s in 1 2 3; do run "ssp$s" "$seed" ".systems = [\"ssp\"] | .ssp_s = $s"; done
		run ref "$seed" '.systems = ["asp", "mlfabric-a", "async"]'
	fi
	if [ "$PARTS" = all ] || [ "$PARTS" = adsp ]; then
		# ADSP's heterogeneity sweep: H = 1, 2, 3.25
		run refh1 "$seed" '.speeds = [1, 1, 1, 1]' conf/exp-adsp.json
		run refh2 "$seed" '.speeds = [1, 1, 3, 3]' conf/exp-adsp.json
		run refh3.2 "$seed" '.speeds = [1, 1, 1, 4]' conf/exp-adsp.json
	fi
	if [ "$PARTS" = hop-ref ]; then
		# the server systems with conf/table2.json's params (RR-Sync: lr_sync = 8 workers x 0.01)
		ps_rr='.systems = ["rr-sync"] | .lr = 0.01 | .lr_sync = 0.08 | .momentum = 0.9'
		ps_a='.systems = ["mlfabric-a"] | .lr = 0.01 | .momentum = 0.5'
		ps_s='.systems = ["mlfabric-s"] | .lr = 0.005 | .momentum = 0.5'
		ps_async='.systems = ["async"] | .lr = 0.005 | .momentum = 0.5'
		want() { case " ${HOPREF:-hop rrsync mlfabric-a mlfabric-s async} " in *" $1 "*) return 0 ;; esac; return 1; }
		rand='.compute = "0.125,6"'
		det='.compute = "0,1" | .speeds = [1, 1, 1, 1, 1, 1, 1, 4]'
		for set in rand6x det4x; do
			if [ $set = rand6x ]; then c=$rand; hop='.hop_backups = 1'
			else c=$det; hop='.hop_backups = 1 | .hop_jump = 10'; fi
			want hop && run "hop-$set" "$seed" "$c | $hop" conf/exp-hop.json
			want rrsync && run "rrsync-$set" "$seed" "$c | $ps_rr" conf/exp-hop.json
			want mlfabric-a && run "mlfabric-a-$set" "$seed" "$c | $ps_a" conf/exp-hop.json
			want mlfabric-s && run "mlfabric-s-$set" "$seed" "$c | $ps_s" conf/exp-hop.json
			want async && run "async-$set" "$seed" "$c | $ps_async" conf/exp-hop.json
		done
		continue
	fi
	if [ "$PARTS" = side ] || [ "$PARTS" = all ]; then
		run side "$seed" '.systems = ["esync", "adsp", "local-sgd", "asp", "ssp", "hop", "mlfabric-a", "mlfabric-s", "async", "rr-sync"] | .ssp_s = 3 | .lr_sync = 4 * .lr | .adsp_global_lr = 0.25 | .hop_graph = "ring-based" | .hop_max_ig = 4 | .hop_backups = 1 | .hop_jump = 10' conf/exp-esync.json
		[ "$PARTS" = all ] || continue
	fi
	if [ "$PARTS" = esync-nb ]; then
		run esync-block "$seed" '.systems = ["esync"]' conf/exp-esync.json
		run esync-nb "$seed" '.systems = ["esync"] | .esync_nonblocking = true' conf/exp-esync.json
		continue
	fi
	if [ "$PARTS" = hop-det-b1 ]; then
		run hop-det-b1 "$seed" '.compute = "0,1" | .speeds = [1, 1, 1, 1, 1, 1, 1, 4] | .hop_backups = 1' conf/exp-hop.json
		run hop-det-b1-skip "$seed" '.compute = "0,1" | .speeds = [1, 1, 1, 1, 1, 1, 1, 4] | .hop_backups = 1 | .hop_jump = 10' conf/exp-hop.json
		continue
	fi
	if [ "$PARTS" = all ] || [ "$PARTS" = hop ]; then
		run hop-rand-b0 "$seed" '.compute = "0.125,6" | .hop_backups = 0' conf/exp-hop.json
		run hop-rand-b1 "$seed" '.compute = "0.125,6" | .hop_backups = 1' conf/exp-hop.json
		run hop-det "$seed" '.compute = "0,1" | .speeds = [1, 1, 1, 1, 1, 1, 1, 4]' conf/exp-hop.json
		run hop-det-skip "$seed" '.compute = "0,1" | .speeds = [1, 1, 1, 1, 1, 1, 1, 4] | .hop_jump = 10' conf/exp-hop.json
		# the paper's Fig. 19: skipping on top of one backup worker, against the backup alone
		run hop-det-b1 "$seed" '.compute = "0,1" | .speeds = [1, 1, 1, 1, 1, 1, 1, 4] | .hop_backups = 1' conf/exp-hop.json
		run hop-det-b1-skip "$seed" '.compute = "0,1" | .speeds = [1, 1, 1, 1, 1, 1, 1, 4] | .hop_backups = 1 | .hop_jump = 10' conf/exp-hop.json
	fi
	[ "$PARTS" != asp ] && [ "$PARTS" != adsp ] && [ "$PARTS" != hop ] || continue
	if [ "$PARTS" != esync-noniid ]; then
		# ESync (esync.txt Fig. 3): 4 workers at fixed speeds 1:1:1:4 against synchronous SGD
		# (MLfabric-S) and Async, conf/exp-esync.json
		run refesync "$seed" '.' conf/exp-esync.json
		# ... and ESync with the paper's global learning rate 1 (the mean of the deltas)
		run esync-eps1 "$seed" '.systems = ["esync"] | .esync_global_lr = 1' conf/exp-esync.json
	fi
	# the non-i.i.d. half of Fig. 3: each worker holds its classes only (data_split by-label)
	run refnoniid "$seed" '.data_split = "by-label"' conf/exp-esync.json
done
python3 "$ROOT/bench/sync_models_summary.py" "$OUT" "$TARGET" | tee "$OUT/summary.txt"
