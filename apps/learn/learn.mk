# apps/learn/learn.mk - the ML workload the apps train (MLP, IDX/gzip data, training helpers):
# libmlflearn.a, used by mlf-ps, mlf-worker, mlf-rrsync and their tests, never by the fabric.
INC_apps/learn := $(INC_LEARN)

$(LIB_LEARN): $(patsubst %.c,$(BUILD)/%.o,$(wildcard apps/learn/*.c))
PROGRAMS += $(LIB_LEARN)

UNIT_TESTS += $(BUILD)/tests/test_learn $(BUILD)/tests/test_hop
# Hop's queue-based synchronization alone (issue 12): pure
$(BUILD)/tests/test_hop: $(BUILD)/tests/unit/test_hop.o $(LIB_LEARN)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(CHECK_LIBS) $(LDLIBS)
$(BUILD)/tests/test_learn: $(BUILD)/tests/unit/test_learn.o $(LIB_LEARN) $(LIB_BASE)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(CHECK_LIBS) $(JANSSON_LIBS) -lz $(LDLIBS)
