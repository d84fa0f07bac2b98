# dataplane/dataplane.mk - mlf-dataplane (DPDK), mlf-xfer, mlf-tel and their Check tests.
# The dataplane is a daemon above the protocols: it sees lib/proto and lib/base, never the
# application library (include/, lib/mlfabric). Its layers (docs/dataplane.md, Architecture):
#   dataplane/core    DPDK-free engine parts (pacer, sack, tbucket, fault, delivery, announce): compiled
#                     without the DPDK flags, so the build proves they need none; unit-tested
#                     without EAL
#   dataplane         the daemon: main -> ctlrelay -> appif -> transport -> portio (monitor
#                     beside), calling up only through ops tables set by main
#   dataplane/tools   mlf-xfer (an application of the low-level client lib/mlfabric/dpclient.h,
#                     built from its own object rule below) and mlf-tel (libc only)
INC_dataplane/core  := -Idataplane/core $(INC_PROTO)
INC_dataplane       := -Idataplane $(INC_dataplane/core) $(DPDK_CFLAGS)
INC_dataplane/tools := $(INC_BASE)

DP_CORE_SRCS := $(wildcard dataplane/core/*.c)
DP_CORE_OBJS := $(DP_CORE_SRCS:%.c=$(BUILD)/%.o)
DP_SRCS := $(wildcard dataplane/*.c)
DP_OBJS := $(DP_SRCS:%.c=$(BUILD)/%.o) $(DP_CORE_OBJS)

PROGRAMS += $(BUILD)/mlf-dataplane $(BUILD)/mlf-xfer $(BUILD)/mlf-tel

$(BUILD)/mlf-dataplane: $(DP_OBJS) $(LIB_PROTO) $(LIB_BASE)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(DPDK_LIBS) $(JANSSON_LIBS) $(LDLIBS) -lnuma -lpthread

$(BUILD)/dataplane/tools/mlf_xfer.o: dataplane/tools/mlf_xfer.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Ilib/mlfabric $(INC_PROTO) -c $< -o $@

$(BUILD)/mlf-xfer: $(BUILD)/dataplane/tools/mlf_xfer.o $(MLFABRIC_LIBS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) $(LDLIBS)

$(BUILD)/mlf-tel: $(BUILD)/dataplane/tools/mlf_tel.o
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^

DP_TESTS := test_dp_wire test_dp_pacer test_dp_sack test_dp_fault test_dp_delivery test_dp_appmsg test_dp_announce \
            test_dp_replay test_dp_lossresp test_dp_coreshare \
	    test_dp_arp test_dp_numa
UNIT_TESTS += $(DP_TESTS:%=$(BUILD)/tests/%)

# the tests of the core see its headers (and, like the core, no DPDK)
$(DP_TESTS:%=$(BUILD)/tests/unit/%.o): INC_tests/unit += -Idataplane/core

$(BUILD)/tests/test_dp_%: $(BUILD)/tests/unit/test_dp_%.o $(DP_CORE_OBJS) $(LIB_PROTO) $(LIB_BASE)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $(filter %.o,$^) $(filter $(LIBMLFABRIC),$^) $(LIB_PROTO) $(LIB_BASE) $(CHECK_LIBS) $(JANSSON_LIBS) $(LDLIBS)
.SECONDARY: $(DP_TESTS:%=$(BUILD)/tests/unit/%.o)

# the transfer tables live on rte_hash: their test sees the dataplane's headers and links DPDK
# (it starts an EAL without hugepages, PCI or shared config files)
UNIT_TESTS += $(BUILD)/tests/test_dp_xfertab
$(BUILD)/tests/unit/test_dp_xfertab.o: INC_tests/unit += -Idataplane -Idataplane/core $(DPDK_CFLAGS)
$(BUILD)/tests/test_dp_xfertab: $(BUILD)/tests/unit/test_dp_xfertab.o $(BUILD)/dataplane/xfertab.o \
		$(BUILD)/dataplane/xferring.o $(LIB_BASE)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(DPDK_LIBS) $(CHECK_LIBS) $(LDLIBS)

# the port layer over DPDK's ring PMD (a loopback port): set-up, chained rx, counters
UNIT_TESTS += $(BUILD)/tests/test_dp_portio
$(BUILD)/tests/unit/test_dp_portio.o: INC_tests/unit += -Idataplane -Idataplane/core $(DPDK_CFLAGS)
$(BUILD)/tests/test_dp_portio: $(BUILD)/tests/unit/test_dp_portio.o $(BUILD)/dataplane/portio.o \
		$(BUILD)/dataplane/dp.o $(DP_CORE_OBJS) $(LIB_PROTO) $(LIB_BASE)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(DPDK_LIBS) $(CHECK_LIBS) $(JANSSON_LIBS) $(LDLIBS) -lnuma
# the app-socket test talks to the dataplane through the client (buffers)
$(BUILD)/tests/test_dp_appmsg: $(LIBMLFABRIC)
