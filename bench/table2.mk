# bench/table2.mk - the paper's Table 2 grid (tools/mlfcluster/table2.py,
# docs/experiments.md "Table 2"): `make bench-table2` runs C1-C3 x N1-N3 x 3 seeds for MLfabric-A,
# Async, RR-Sync and MLfabric-S (conf/table2.json, base conf/exp-t2.json), one tools/mlf-cluster
# run per cell, seed and system, each under flock -o /tmp/mlf-netns.lock (taken per run: do not
# wrap make in flock, or set TABLE2_NO_LOCK=1); writes runs/table2-<UTC>/table2.md, acc-*.png,
# links-*.png and the section "Table 2: the last bench-table2 run" of docs/results/table2.md.
# `make bench-table2-sweep` runs the lr / momentum sweep (conf/table2.json "sweep") and writes
# params.json for TABLE2_PARAMS. Knobs (all optional):
#   TABLE2_CELLS=c2-n1,c1-n1  TABLE2_SEEDS=1  TABLE2_SYSTEMS=mlfabric-a,rr-sync  TABLE2_TIME_LIMIT=60
#   TABLE2_PARAMS=runs/table2-sweep-.../params.json  TABLE2_BASE=conf/exp-t2-16.json (16 workers)
#   TABLE2_OUT=DIR (a rerun with the same DIR resumes)  TABLE2_NO_LOCK=1
#   TABLE2_GRID=conf/table2-shards4.json (C2-N1 with four shard servers: base, systems and a sweep
#   in that cell over lr 0.005-0.04 x momentum 0.5, 0.9; docs/results/shards.md "lr sweep at four shards")
TABLE2_ARGS = $(if $(TABLE2_GRID),--grid $(TABLE2_GRID)) $(if $(TABLE2_CELLS),--cells $(TABLE2_CELLS)) $(if $(TABLE2_SEEDS),--seeds $(TABLE2_SEEDS)) \
	$(if $(TABLE2_SYSTEMS),--systems $(TABLE2_SYSTEMS)) $(if $(TABLE2_TIME_LIMIT),--time-limit $(TABLE2_TIME_LIMIT)) \
	$(if $(TABLE2_PARAMS),--params $(TABLE2_PARAMS)) $(if $(TABLE2_BASE),--base $(TABLE2_BASE)) \
	$(if $(TABLE2_OUT),--out $(TABLE2_OUT)) $(if $(TABLE2_NO_LOCK),--no-lock)

BENCHES += bench-table2 bench-table2-sweep
.PHONY: bench-table2 bench-table2-sweep
# The pre-trained model the paper's Table 2 runs start from (§7: "we start with a pre-trained
# model"): 800 gradients of synchronous SGD (8 workers, lr 0.01, momentum 0.9, seed 1000) of the
# Table 2 MLP, test accuracy 0.805; experiment key init_weights (conf/exp-t2-shards4-pre.json,
# grid conf/table2-pretrained.json: TABLE2_GRID=conf/table2-pretrained.json). Deterministic; built
# by the Table 2 targets (not by `make`: it needs the Fashion-MNIST package).
PRETRAINED_T2 := $(BUILD)/pretrained-t2.f32
$(PRETRAINED_T2): $(BUILD)/bench-sgd-delay
	$(BUILD)/bench-sgd-delay --model 784,64,10 --pretrain 800 --pretrain-lr 0.01 --pretrain-only --save-model $@

bench-table2: programs $(PRETRAINED_T2)
	tools/mlf-cluster table2 $(TABLE2_ARGS) --bench-md docs/results/table2.md

bench-table2-sweep: programs $(PRETRAINED_T2)
	tools/mlf-cluster table2 --sweep $(TABLE2_ARGS)

# Sharded servers (§10.2) against one server, MLfabric-A, C2-N1 of conf/exp-t2-shards.json: 3 seeds x
# shards 1 and 2 on conf/cluster-t2-8s.json; each run takes the namespace lock itself (bench/shards.sh).
# Knobs: SEEDS=3 TARGET=0.75 LIMIT=150 (env).
BENCHES += bench-shards
.PHONY: bench-shards
bench-shards: programs
	bench/shards.sh

# Sharded model copies: when may a copy start (mlf-scheduler --copy-wait, docs/scheduler.md
# "Sharded servers")? C2-N1 with four shard servers (conf/exp-t2-shards4.json), MLfabric-A under
# --copy-wait updates and learned, and RR-Sync, interleaved seed by seed; each run takes the
# namespace lock itself (bench/copy_wait.py). Knobs: COPY_WAIT_ARGS="--seeds 3 --time-limit 150".
BENCHES += bench-copy-wait
.PHONY: bench-copy-wait
bench-copy-wait: programs
	bench/copy_wait.py $(COPY_WAIT_ARGS)
