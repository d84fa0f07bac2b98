# tools/cluster.mk - the experiment runner tools/mlf-cluster: `make run` (the main job, conf/exp-default.json),
# `make bench-fabric` (C1-N1, C2-N1, C1-N2 with MLfabric-A, Async and RR-Sync) and their tests.

INTEG_TESTS += tests/integration/cluster_results.sh tests/integration/cluster_run.sh tests/integration/fabric_train.sh
BENCHES     += bench-fabric

.PHONY: bench-fabric
# The main job: train on the emulated cluster with MLfabric-A (root: network namespaces).
run: programs
	tools/mlf-cluster run conf/exp-default.json

bench-fabric: programs
	bench/fabric_bench.sh
