# scheduler/module.mk - the planning library build/libplan.a (pure C, no I/O) and its paper
# tests. Read after scheduler/mlf-plan.mk, which defines $(LIBPLANIO) and $(LIBPLANTEST).

LIBPLAN_SRCS := scheduler/netstate.c scheduler/planwork.c scheduler/order.c \
		scheduler/aggregate.c scheduler/replicate.c scheduler/plan.c scheduler/arr.c
LIBPLAN := $(BUILD)/libplan.a

$(LIBPLAN): $(LIBPLAN_SRCS:%.c=$(BUILD)/%.o)
	@mkdir -p $(@D)
	$(AR) rcs $@ $^

EXTRA_CFLAGS_tests/unit += $(CHECK_CFLAGS)

$(BUILD)/tests/test_plan_paper: $(BUILD)/tests/unit/test_plan_paper.o $(LIBPLANTEST) \
		$(LIBPLANIO) $(LIBPLAN) $(LIBMLF)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) $(CHECK_LIBS) $(LDLIBS)

PROGRAMS += $(LIBPLAN)
UNIT_TESTS += $(BUILD)/tests/test_plan_paper
