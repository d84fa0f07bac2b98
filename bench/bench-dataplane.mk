# bench/bench-dataplane.mk - mlf-txloop (bare DPDK tx loop) and `make bench-dataplane`.

PROGRAMS += $(BUILD)/mlf-txloop
BENCHES  += bench-dataplane

$(BUILD)/bench/dataplane_txloop.o: INC_bench += $(DPDK_CFLAGS)

$(BUILD)/mlf-txloop: $(BUILD)/bench/dataplane_txloop.o $(LIB_PROTO) $(LIB_BASE)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(DPDK_LIBS) $(JANSSON_LIBS) $(LDLIBS)

.PHONY: bench-dataplane
bench-dataplane: $(PROGRAMS)
	bench/dataplane_bench.sh
