# scheduler/mlf-plan.mk - planner I/O (libplanio.a), the mlf-plan program, the planner test
# support (libplantest.a: checker and batch generator), the FIFO baseline, tests, `make run`.
#
# libplanio.a holds the JSON reader/writer (jansson) and the FIFO fair-share baseline, so the
# planning library build/libplan.a (scheduler/module.mk, read after this file: hence the
# literal path below) stays I/O-free.

LIBPLANIO := $(BUILD)/libplanio.a
PLANIO_OBJS := $(BUILD)/scheduler/planio.o $(BUILD)/scheduler/fifo.o
# Test support shared by the unit tests and the benchmark (never in libplan.a): independent
# checker, seeded batch generator. Its users also link libplanio.a (batches are freed there).
LIBPLANTEST := $(BUILD)/libplantest.a

$(LIBPLANIO): $(PLANIO_OBJS)
	@mkdir -p $(@D)
	$(AR) rcs $@ $^

$(LIBPLANTEST): $(BUILD)/tests/plan_check.o $(BUILD)/tests/gen_batch.o
	@mkdir -p $(@D)
	$(AR) rcs $@ $^

EXTRA_CFLAGS_tests/unit += $(CHECK_CFLAGS) -Itests
EXTRA_CFLAGS_tests += -Itests

# Tests that need no planner: reader/writer, checker on hand-made plans, generator, FIFO.
$(BUILD)/tests/test_planio: $(BUILD)/tests/unit/test_planio.o $(LIBPLANIO) $(LIBMLF)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) $(CHECK_LIBS) $(LDLIBS)

$(BUILD)/tests/test_plan_check: $(BUILD)/tests/unit/test_plan_check.o $(LIBPLANTEST) \
		$(LIBPLANIO) $(LIBMLF)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) $(CHECK_LIBS) $(LDLIBS)

UNIT_TESTS += $(BUILD)/tests/test_planio $(BUILD)/tests/test_plan_check

$(BUILD)/mlf-plan: $(BUILD)/scheduler/mlf_plan.o $(LIBPLANIO) $(BUILD)/libplan.a $(LIBMLF)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) $(LDLIBS)

# Property tests over seeded random batches, and every conf/plan-*.json through the checker.
$(BUILD)/tests/test_plan_props: $(BUILD)/tests/unit/test_plan_props.o $(LIBPLANTEST) \
		$(LIBPLANIO) $(BUILD)/libplan.a $(LIBMLF)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) $(CHECK_LIBS) $(LDLIBS)

# The command-line test is a script; installing it under build/tests makes it depend on mlf-plan.
$(BUILD)/tests/test_mlf_plan: tests/cli/test_mlf_plan.sh $(BUILD)/mlf-plan
	@mkdir -p $(@D)
	install -m 755 $< $@

PROGRAMS += $(BUILD)/mlf-plan
UNIT_TESTS += $(BUILD)/tests/test_plan_props $(BUILD)/tests/test_mlf_plan
