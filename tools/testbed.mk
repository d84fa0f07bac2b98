# tools/testbed.mk - mlf-testbed (emulated cluster of network namespaces) and its tests.
TESTBED_OBJS := $(BUILD)/tools/tbcmd.o $(BUILD)/tools/tbrun.o

PROGRAMS    += $(BUILD)/mlf-testbed
UNIT_TESTS  += $(BUILD)/tests/test_tbcmd
INTEG_TESTS += tests/integration/test_testbed.sh tests/integration/test_dp_transfer.sh \
               tests/integration/test_dp_rates.sh tests/integration/test_dp_start.sh \
               tests/integration/test_dp_concurrent.sh tests/integration/test_dp_kill.sh

$(BUILD)/mlf-testbed: $(BUILD)/tools/mlf_testbed.o $(TESTBED_OBJS) $(LIBMLF)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) $(LDLIBS)

$(BUILD)/tests/test_tbcmd: $(BUILD)/tests/unit/test_tbcmd.o $(BUILD)/tests/unit/test_tbrun.o $(TESTBED_OBJS) $(LIBMLF)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) $(CHECK_LIBS) $(LDLIBS)

EXTRA_CFLAGS_tools += -Itools
EXTRA_CFLAGS_tests/unit += -Itools

PROGRAMS += $(BUILD)/mlf-rxrate
$(BUILD)/mlf-rxrate: $(BUILD)/tools/mlf_rxrate.o $(LIBMLF)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# tools/mlfabric.lua (Wireshark dissector) is checked against frames made by wire_encode().
PROGRAMS    += $(BUILD)/tests/wire_pcap
INTEG_TESTS += tests/integration/test_dissector.sh
$(BUILD)/tests/wire_pcap: $(BUILD)/tests/integration/wire_pcap.o $(LIBMLF)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)
