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

PROGRAMS += $(BUILD)/bench-plan $(BUILD)/bench-sched $(BUILD)/bench-aggregator
BENCHES += bench-plan bench-sched bench-aggregator
.PHONY: bench-plan bench-sched bench-aggregator
bench-plan: $(BUILD)/bench-plan
	$(BUILD)/bench-plan
bench-sched: $(BUILD)/bench-sched
	$(BUILD)/bench-sched
bench-aggregator: $(BUILD)/bench-aggregator
	$(BUILD)/bench-aggregator

# the Table 2 grid (`make bench-table2`, `make bench-table2-sweep`)
include bench/table2.mk
