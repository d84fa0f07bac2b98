# tools/testbed.mk - mlf-testbed (emulated cluster of network namespaces) and its tests.
INC_tools := -Itools $(INC_PROTO)
TESTBED_OBJS := $(BUILD)/tools/tbcmd.o $(BUILD)/tools/tbrun.o

PROGRAMS    += $(BUILD)/mlf-testbed
UNIT_TESTS  += $(BUILD)/tests/test_tbcmd
INTEG_TESTS += tests/integration/test_testbed.sh tests/integration/test_dp_transfer.sh \
               tests/integration/test_dp_rates.sh tests/integration/test_dp_start.sh \
               tests/integration/test_dp_concurrent.sh tests/integration/test_dp_kill.sh \
               tests/integration/test_dp_appsock.sh tests/integration/test_dp_forge.sh \
               tests/integration/test_dp_port.sh

$(BUILD)/mlf-testbed: $(BUILD)/tools/mlf_testbed.o $(TESTBED_OBJS) $(LIB_PROTO) $(LIB_BASE)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) $(LDLIBS)

$(BUILD)/tests/test_tbcmd: $(BUILD)/tests/unit/test_tbcmd.o $(BUILD)/tests/unit/test_tbrun.o $(TESTBED_OBJS) $(LIB_PROTO) $(LIB_BASE)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) $(CHECK_LIBS) $(LDLIBS)


PROGRAMS += $(BUILD)/mlf-rxrate
$(BUILD)/mlf-rxrate: $(BUILD)/tools/mlf_rxrate.o $(LIB_PROTO) $(LIB_BASE)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# tools/mlfabric.lua (Wireshark dissector) is checked against frames made by wire_encode().
PROGRAMS    += $(BUILD)/tests/wire_pcap
INTEG_TESTS += tests/integration/test_dissector.sh
$(BUILD)/tests/wire_pcap: $(BUILD)/tests/integration/wire_pcap.o $(LIB_PROTO) $(LIB_BASE)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)
