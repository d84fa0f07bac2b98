# dataplane/dataplane.mk - mlf-dataplane (DPDK), mlf-xfer and their Check tests.
ifeq ($(filter clean help,$(MAKECMDGOALS)),)
$(call need_pkg,libdpdk,libdpdk-dev)
endif
DPDK_CFLAGS := $(shell pkg-config --cflags libdpdk 2>/dev/null)
DPDK_LIBS   := $(shell pkg-config --libs libdpdk 2>/dev/null)
# DPDK headers only for objects under dataplane/ (the Makefile's per-directory hook).
EXTRA_CFLAGS_dataplane := $(DPDK_CFLAGS)

# DPDK-free engine parts, unit-tested without EAL.
DP_CORE_SRCS := dataplane/pacer.c dataplane/sack.c dataplane/tbucket.c dataplane/fault.c dataplane/order.c
DP_CORE_OBJS := $(DP_CORE_SRCS:%.c=$(BUILD)/%.o)
DP_SRCS := $(filter-out dataplane/mlf_xfer.c dataplane/mlf_tel.c,$(wildcard dataplane/*.c))
DP_OBJS := $(DP_SRCS:%.c=$(BUILD)/%.o)

PROGRAMS += $(BUILD)/mlf-dataplane $(BUILD)/mlf-xfer $(BUILD)/mlf-tel

$(BUILD)/mlf-dataplane: $(DP_OBJS) $(LIBMLF)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(DPDK_LIBS) $(JANSSON_LIBS) $(LDLIBS) -lpthread

$(BUILD)/mlf-xfer: $(BUILD)/dataplane/mlf_xfer.o $(LIBMLF)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) $(LDLIBS)

$(BUILD)/mlf-tel: $(BUILD)/dataplane/mlf_tel.o
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^

DP_TESTS := test_dp_wire test_dp_pacer test_dp_sack test_dp_fault test_dp_order test_dp_appmsg
UNIT_TESTS += $(DP_TESTS:%=$(BUILD)/tests/%)

$(BUILD)/tests/test_dp_%: $(BUILD)/tests/unit/test_dp_%.o $(DP_CORE_OBJS) $(LIBMLF)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(CHECK_LIBS) $(JANSSON_LIBS) $(LDLIBS)
$(BUILD)/tests/unit/test_dp_%.o: CFLAGS += -Idataplane
.SECONDARY: $(DP_TESTS:%=$(BUILD)/tests/unit/%.o)
