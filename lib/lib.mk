# lib/lib.mk - unit tests of libmlf (the library itself is built by the top-level Makefile).
UNIT_TESTS += $(BUILD)/tests/test_cluster

$(BUILD)/tests/test_cluster: $(BUILD)/tests/unit/test_cluster.o $(LIBMLF)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) $(CHECK_LIBS) $(LDLIBS)

UNIT_TESTS += $(BUILD)/tests/test_learn
$(BUILD)/tests/test_learn: $(BUILD)/tests/unit/test_learn.o $(LIBMLF)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(CHECK_LIBS) -lz $(LDLIBS)
