# scheduler/planner/planner.mk - the planning library build/libplan.a (paper §5, §6, §10.2,
# §10.3 and the FIFO fair-share baseline): pure C, no I/O, no clock, no jansson, no protocol.
# It compiles with its own headers and lib/base only.
INC_scheduler/planner := $(INC_PLAN)

$(LIBPLAN): $(patsubst %.c,$(BUILD)/%.o,$(wildcard scheduler/planner/*.c))
PROGRAMS += $(LIBPLAN)

$(BUILD)/tests/test_plan_paper: $(BUILD)/tests/unit/test_plan_paper.o $(LIBPLANTEST) \
		$(LIBPLANIO) $(LIBPLAN) $(LIB_BASE)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) $(CHECK_LIBS) $(LDLIBS)

# Property tests over seeded random batches, and every conf/plan-*.json through the checker.
$(BUILD)/tests/test_plan_props: $(BUILD)/tests/unit/test_plan_props.o $(LIBPLANTEST) \
		$(LIBPLANIO) $(LIBPLAN) $(LIB_BASE)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) $(CHECK_LIBS) $(LDLIBS)

UNIT_TESTS += $(BUILD)/tests/test_plan_paper $(BUILD)/tests/test_plan_props
