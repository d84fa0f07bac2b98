# lib/lib.mk - unit tests of libmlf (the library itself is built by the top-level Makefile).
UNIT_TESTS += $(BUILD)/tests/test_cluster

$(BUILD)/tests/test_cluster: $(BUILD)/tests/unit/test_cluster.o $(LIBMLF)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) $(CHECK_LIBS) $(LDLIBS)
