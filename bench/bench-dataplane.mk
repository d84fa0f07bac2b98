# bench/bench-dataplane.mk - mlf-txloop (bare DPDK tx loop), `make bench-dataplane` (goodput,
# pacing, then CPU per load appended to BENCHMARKS-dataplane.md) and `make bench-dataplane-cpu`
# (only the CPU per load, frugal sleeps against the earlier back-off loop; issue 11).

PROGRAMS += $(BUILD)/mlf-txloop
BENCHES  += bench-dataplane bench-dataplane-cpu

$(BUILD)/bench/dataplane_txloop.o: INC_bench += $(DPDK_CFLAGS)

$(BUILD)/mlf-txloop: $(BUILD)/bench/dataplane_txloop.o $(LIB_PROTO) $(LIB_BASE)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(DPDK_LIBS) $(JANSSON_LIBS) $(LDLIBS)

DPCPU_SECTION = { echo; echo '\#\# CPU per load (a frugal dataplane, issue 11)'; echo; }

.PHONY: bench-dataplane bench-dataplane-cpu
bench-dataplane: $(PROGRAMS)
	bench/dataplane_bench.sh
	bench/dataplane_cpu.sh --out $(BUILD)/dataplane-cpu.md
	$(DPCPU_SECTION) >>BENCHMARKS-dataplane.md && cat $(BUILD)/dataplane-cpu.md >>BENCHMARKS-dataplane.md

bench-dataplane-cpu: $(PROGRAMS)
	bench/dataplane_cpu.sh
