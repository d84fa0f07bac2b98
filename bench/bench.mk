# bench/bench.mk - benchmarks: `make bench-plan` (planner time and commit times vs FIFO).
# Fragments are read in name order, so this one names scheduler/mlf-plan.mk's outputs literally.

BENCH_PLAN_DEPS := $(BUILD)/bench/bench_plan.o $(BUILD)/libplantest.a $(BUILD)/libplanio.a \
		   $(BUILD)/libplan.a $(LIBMLF)
EXTRA_CFLAGS_bench += -Itests

$(BUILD)/bench-plan: $(BENCH_PLAN_DEPS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) $(LDLIBS)

BENCHES += bench-plan
.PHONY: bench-plan
bench-plan: $(BUILD)/bench-plan
	$(BUILD)/bench-plan
PROGRAMS += $(BUILD)/bench-plan
