# scheduler/module.mk - the planning library build/libplan.a (pure C, no I/O), its Check tests
# and the plan-perf timing driver.

LIBPLAN_SRCS := scheduler/netstate.c scheduler/planwork.c scheduler/order.c \
		scheduler/aggregate.c scheduler/replicate.c scheduler/plan.c scheduler/plangen.c scheduler/arr.c
LIBPLAN := $(BUILD)/libplan.a

$(LIBPLAN): $(LIBPLAN_SRCS:%.c=$(BUILD)/%.o)
	@mkdir -p $(@D)
	$(AR) rcs $@ $^

EXTRA_CFLAGS_tests/unit += $(CHECK_CFLAGS)

$(BUILD)/tests/test_plan_paper: $(BUILD)/tests/unit/test_plan_paper.o $(LIBPLAN) $(LIBMLF)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(CHECK_LIBS) $(LDLIBS)

# Timing driver (not a test): plan_compute on the §7.4 workload, FAST and SIMPLE.
$(BUILD)/plan-perf: $(BUILD)/scheduler/plan_perf.o $(LIBPLAN) $(LIBMLF)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

PROGRAMS += $(LIBPLAN) $(BUILD)/plan-perf
UNIT_TESTS += $(BUILD)/tests/test_plan_paper
BENCHES += bench-plan-perf

.PHONY: bench-plan-perf
bench-plan-perf: $(BUILD)/plan-perf
	$(BUILD)/plan-perf
