# dataplane/dataplane.mk - mlf-dataplane (DPDK), mlf-xfer, mlf-tel and their Check tests.
# The dataplane is a daemon above the protocols: it sees lib/proto and lib/base, never the
# application library (include/, lib/mlfabric). mlf-xfer is an application of the low-level
# client (lib/mlfabric/dpclient.h), built from its own object rule below.
INC_dataplane := -Idataplane $(INC_PROTO) $(DPDK_CFLAGS)

# DPDK-free engine parts, unit-tested without EAL.
DP_CORE_SRCS := dataplane/pacer.c dataplane/sack.c dataplane/tbucket.c dataplane/fault.c dataplane/delivery.c
DP_CORE_OBJS := $(DP_CORE_SRCS:%.c=$(BUILD)/%.o)
DP_SRCS := $(filter-out dataplane/mlf_xfer.c dataplane/mlf_tel.c,$(wildcard dataplane/*.c))
DP_OBJS := $(DP_SRCS:%.c=$(BUILD)/%.o)

PROGRAMS += $(BUILD)/mlf-dataplane $(BUILD)/mlf-xfer $(BUILD)/mlf-tel

$(BUILD)/mlf-dataplane: $(DP_OBJS) $(LIB_PROTO) $(LIB_BASE)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(DPDK_LIBS) $(JANSSON_LIBS) $(LDLIBS) -lpthread

$(BUILD)/dataplane/mlf_xfer.o: dataplane/mlf_xfer.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Ilib/mlfabric $(INC_PROTO) -c $< -o $@

$(BUILD)/mlf-xfer: $(BUILD)/dataplane/mlf_xfer.o $(MLFABRIC_LIBS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) $(LDLIBS)

$(BUILD)/mlf-tel: $(BUILD)/dataplane/mlf_tel.o
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^

DP_TESTS := test_dp_wire test_dp_pacer test_dp_sack test_dp_fault test_dp_delivery test_dp_appmsg
UNIT_TESTS += $(DP_TESTS:%=$(BUILD)/tests/%)

$(BUILD)/tests/test_dp_%: $(BUILD)/tests/unit/test_dp_%.o $(DP_CORE_OBJS) $(LIB_PROTO) $(LIB_BASE)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $(filter %.o,$^) $(filter $(LIBMLFABRIC),$^) $(LIB_PROTO) $(LIB_BASE) $(CHECK_LIBS) $(JANSSON_LIBS) $(LDLIBS)
.SECONDARY: $(DP_TESTS:%=$(BUILD)/tests/unit/%.o)
# the app-socket test talks to the dataplane through the client (buffers)
$(BUILD)/tests/test_dp_appmsg: $(LIBMLFABRIC)
