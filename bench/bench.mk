# bench/bench.mk - benchmarks of the planner (`make bench-plan`: planner time and commit times
# vs FIFO), the scheduler daemon (`make bench-sched`) and the aggregator (`make bench-aggregator`).
INC_bench := -Itests -Ischeduler/daemon -Ilib/mlfabric $(INC_PLANIO) $(INC_PROTO)

$(BUILD)/bench-plan: $(BUILD)/bench/bench_plan.o $(LIBPLANTEST) $(LIBPLANIO) $(LIBPLAN) $(LIB_BASE)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) $(LDLIBS)

# bench-sched: batch cost and update-to-command latency of the daemon (fake dataplanes).
$(BUILD)/bench-sched: $(BUILD)/bench/sched_bench.o $(SCHED_LIBS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) $(LDLIBS) -lpthread

$(BUILD)/bench-aggregator: $(BUILD)/bench/bench_aggregator.o $(MLFABRIC_LIBS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# bench-frametag: CPU ns per frame tag, HMAC-SHA256 (before issue 37) against the libsodium MACs
# (docs/security.md "Cost"); FRAMETAG_ARGS="--rounds 5" passes options
$(BUILD)/bench-frametag: $(BUILD)/bench/bench_frametag.o $(LIB_PROTO) $(LIB_BASE)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

PROGRAMS += $(BUILD)/bench-plan $(BUILD)/bench-sched $(BUILD)/bench-aggregator $(BUILD)/bench-frametag
BENCHES += bench-plan bench-sched bench-aggregator bench-frametag
.PHONY: bench-plan bench-sched bench-aggregator bench-frametag
bench-frametag: $(BUILD)/bench-frametag
	$(BUILD)/bench-frametag $(FRAMETAG_ARGS)
bench-plan: $(BUILD)/bench-plan
	$(BUILD)/bench-plan
bench-sched: $(BUILD)/bench-sched
	$(BUILD)/bench-sched
bench-aggregator: $(BUILD)/bench-aggregator
	$(BUILD)/bench-aggregator

# the Table 2 grid (`make bench-table2`, `make bench-table2-sweep`)
include bench/table2.mk

# bench-sgd-delay: worker gradients to a target accuracy for sync SGD and async SGD with a fixed
# delay, on the Table 2 workload without a network (statistical efficiency apart from throughput;
# docs/results/staleness.md "Throughput against statistical efficiency"). SGD_DELAY_ARGS="--workers
# 16 --systems sync,async:15" passes options (build/bench-sgd-delay --help); the default grid takes
# ~7 min.
# The event-driven mode (bench/sgd_event.c) predicts a fabric setting's time to target
# (docs/results/staleness.md "An event-driven model of the fabric").
$(BUILD)/bench/sgd_delay.o $(BUILD)/bench/sgd_event.o: INC_bench += $(INC_LEARN)
$(BUILD)/bench-sgd-delay: $(BUILD)/bench/sgd_delay.o $(BUILD)/bench/sgd_event.o $(LIB_LEARN) $(LIB_BASE)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) -lz $(LDLIBS)
PROGRAMS += $(BUILD)/bench-sgd-delay
BENCHES += bench-sgd-delay
.PHONY: bench-sgd-delay
bench-sgd-delay: $(BUILD)/bench-sgd-delay
	$(BUILD)/bench-sgd-delay $(SGD_DELAY_ARGS)
UNIT_TESTS += $(BUILD)/tests/test_sgd_delay
$(BUILD)/tests/test_sgd_delay: tests/cli/test_sgd_delay.sh $(BUILD)/bench-sgd-delay
	@mkdir -p $(@D)
	install -m 755 $< $@
