# scheduler/planner/io/io.mk - plan documents (docs/plan-format.md): the JSON reader/writer
# build/libplanio.a (jansson) and the offline planner build/mlf-plan, with their tests.
INC_scheduler/planner/io := $(INC_PLANIO)

$(LIBPLANIO): $(BUILD)/scheduler/planner/io/planio.o

$(BUILD)/mlf-plan: $(BUILD)/scheduler/planner/io/mlf_plan.o $(LIBPLANIO) $(LIBPLAN) $(LIB_BASE)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) $(LDLIBS)

# Tests that need no planner: reader/writer, checker on hand-made plans.
$(BUILD)/tests/test_planio: $(BUILD)/tests/unit/test_planio.o $(LIBPLANIO) $(LIBPLAN) $(LIB_BASE)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) $(CHECK_LIBS) $(LDLIBS)

$(BUILD)/tests/test_plan_check: $(BUILD)/tests/unit/test_plan_check.o $(LIBPLANTEST) \
		$(LIBPLANIO) $(LIBPLAN) $(LIB_BASE)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) $(CHECK_LIBS) $(LDLIBS)

# The command-line test is a script; installing it under build/tests makes it depend on mlf-plan.
$(BUILD)/tests/test_mlf_plan: tests/cli/test_mlf_plan.sh $(BUILD)/mlf-plan
	@mkdir -p $(@D)
	install -m 755 $< $@

PROGRAMS += $(LIBPLANIO) $(BUILD)/mlf-plan
UNIT_TESTS += $(BUILD)/tests/test_planio $(BUILD)/tests/test_plan_check $(BUILD)/tests/test_mlf_plan
