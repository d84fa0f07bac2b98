# aggregator/aggregator.mk - mlf-aggregator, the fabric's Check tests, test programs and bench-aggregator.
PROGRAMS += $(BUILD)/mlf-aggregator $(BUILD)/tests/fabric_app $(BUILD)/tests/fabric_fakesched

$(BUILD)/mlf-aggregator: $(BUILD)/aggregator/mlf_aggregator.o $(LIBMLF)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) $(LDLIBS) -lpthread

# test programs of tests/integration/fabric_*.sh
$(BUILD)/tests/fabric_%: $(BUILD)/tests/integration/fabric_%.o $(LIBMLF)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) $(LDLIBS) -lpthread

UNIT_TESTS += $(BUILD)/tests/test_fabric $(BUILD)/tests/test_fabric_lib
$(BUILD)/tests/test_fabric $(BUILD)/tests/test_fabric_lib: $(BUILD)/tests/%: $(BUILD)/tests/unit/%.o $(LIBMLF)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(CHECK_LIBS) $(JANSSON_LIBS) $(LDLIBS) -lpthread

INTEG_TESTS += tests/integration/fabric_direct.sh tests/integration/fabric_relay.sh tests/integration/fabric_aggregate.sh tests/integration/fabric_aggregate_skip.sh \
	tests/integration/fabric_e2e.sh tests/integration/fabric_sync.sh

BENCHES += bench-aggregator
PROGRAMS += $(BUILD)/bench-aggregator
$(BUILD)/bench-aggregator: $(BUILD)/bench/bench_aggregator.o $(LIBMLF)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)
.PHONY: bench-aggregator
bench-aggregator: $(BUILD)/bench-aggregator
	$(BUILD)/bench-aggregator
