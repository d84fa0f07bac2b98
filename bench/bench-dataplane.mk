# bench/bench-dataplane.mk - mlf-txloop (bare DPDK tx loop) and `make bench-dataplane`.
ifeq ($(filter clean help,$(MAKECMDGOALS)),)
$(call need_pkg,libdpdk,libdpdk-dev)
endif
TXLOOP_DPDK_CFLAGS := $(shell pkg-config --cflags libdpdk 2>/dev/null)
TXLOOP_DPDK_LIBS   := $(shell pkg-config --libs libdpdk 2>/dev/null)

PROGRAMS += $(BUILD)/mlf-txloop
BENCHES  += bench-dataplane

$(BUILD)/bench/dataplane_txloop.o: CFLAGS += $(TXLOOP_DPDK_CFLAGS)

$(BUILD)/mlf-txloop: $(BUILD)/bench/dataplane_txloop.o $(LIBMLF)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(TXLOOP_DPDK_LIBS) $(JANSSON_LIBS) $(LDLIBS)

.PHONY: bench-dataplane
bench-dataplane: $(PROGRAMS)
	bench/dataplane_bench.sh
