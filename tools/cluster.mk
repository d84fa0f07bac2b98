# tools/cluster.mk - the experiment runner tools/mlf-cluster (Python package tools/mlfcluster/) and the fault scenarios tools/mlf-fault:
# `make run` (the main job, conf/exp-default.json), `make bench-fabric` (C1-N1, C2-N1, C1-N2 with
# MLfabric-A, Async and RR-Sync), `make bench-replication` (replication modes, div_max, server kills),
# `make bench-sync-models` (the experiments of the ASP, ADSP, Hop and ESync papers, and
# every mode side by side in one run; docs/results/sync-models.md)
# and their tests.

INTEG_TESTS += tests/integration/cluster_results.sh tests/integration/cluster_run.sh tests/integration/fabric_train.sh
# kill-server runs in make test only over ssh (tests/tests.mk: fault_kill_server_ssh.sh, the same
# scenario and checks plus the ssh ones); the local launch and kill path is the other five's, and
# make fault-tests still runs fault_kill_server.sh locally
INTEG_TESTS += tests/integration/fault_kill_aggregator.sh \
               tests/integration/fault_kill_worker.sh tests/integration/fault_cut_link.sh \
               tests/integration/fault_loss_burst.sh tests/integration/fault_kill_scheduler.sh
BENCHES     += bench-fabric bench-replication bench-sync-models

# the Python unit tests of the runner and the fault driver (pure parts: rate schedule, results,
# validation, fault accounting); the script installed under build/tests runs
# python3 -m unittest discover -s tests/python
$(BUILD)/tests/test_python: tests/python/run_tests.sh $(wildcard tests/python/*.py) \
		$(wildcard tools/mlfcluster/*.py) $(wildcard tools/mlffault/*.py)
	@mkdir -p $(@D)
	install -m 755 $< $@

UNIT_TESTS  += $(BUILD)/tests/test_python

.PHONY: bench-fabric bench-replication bench-sync-models fault-tests soak
bench-fabric: programs
	bench/fabric_bench.sh

# the replication targets over SEEDS seeds (median, min-max; bench/replication_seeds.sh), then
# the same where the network is the bottleneck (conf/exp-repl-net.json: MLfabric at 16x against
# chain, about 12 minutes a seed), then the one-seed table with the server kills
# (bench/replication_bench.sh)
SEEDS ?= 3
bench-replication: programs
	bench/replication_seeds.sh --seeds $(SEEDS)
	bench/replication_seeds.sh --seeds $(SEEDS) --base conf/exp-repl-net.json --only mlfabric-16x,chain
	bench/replication_bench.sh

# Each paper's experiment (ASP against SSP s = 1, 2, 3, asp-ieee-access2018 §IV.B; ADSP's
# heterogeneity sweep; Hop's backup workers and skipping; ESync's Fig. 3, i.i.d. and not) and
# every mode side by side in ESync's setting (PARTS=side); 38 runs of at most LIMIT (90) s per seed,
# about an hour per seed.
# SEEDS, TARGET, LIMIT, PARTS, EXTRA override (bench/sync_models.sh --help)
bench-sync-models: programs
	bench/sync_models.sh

# the six fault scenarios (tools/mlf-fault run NAME --quick), about 5 minutes
fault-tests: programs
	@rc=0; for t in kill_server kill_aggregator kill_worker cut_link loss_burst kill_scheduler; do \
		tests/integration/fault_$$t.sh || rc=1; done; exit $$rc

# twenty minutes of training under a seeded random fault every 20-40 s, then its checks
# (tools/mlf-fault soak, docs/experiments.md "Soak"); SOAK_S and SOAK_SEED override
SOAK_S ?= 1200
SOAK_SEED ?= 1
soak: programs
	tools/mlf-fault soak --duration $(SOAK_S) --seed $(SOAK_SEED)
