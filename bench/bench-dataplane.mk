# bench/bench-dataplane.mk - mlf-txloop (bare DPDK tx loop), `make bench-dataplane` (goodput,
# pacing, then CPU per load and the cost of frame tags appended to docs/results/dataplane.md),
# `make bench-dataplane-auth` (frame tags against untagged frames, docs/security.md "Frames") and
# `make bench-dataplane-cpu`, `make bench-xfertab` (transfer lookups: scans against rte_hash)
# (only the CPU per load, frugal sleeps against the earlier back-off loop), and
# `make bench-loss-pacing` (what random frame loss does to a paced transfer under the loss
# response; LOSS_PACING_ARGS for --runs, --rates, --drops), and `make bench-tail-repair` (a
# Table 2 N3 leg over a slow link with the way back quiet or congested; TAIL_REPAIR_ARGS, e.g.
# --baseline OLD/build/mlf-dataplane to run an older dataplane in the same rounds), and
# `make bench-dataplane-memif` (two dataplanes over a net_memif pair against dpdk-testpmd over the
# same kind of pair, issue 35; MEMIF_ARGS, e.g. --baseline OLD/build/mlf-dataplane --busy).

PROGRAMS += $(BUILD)/mlf-txloop $(BUILD)/mlf-bench-xfertab
BENCHES  += bench-dataplane bench-dataplane-memif bench-dataplane-cpu bench-dataplane-auth bench-loss-pacing \
	    bench-tail-repair bench-xfertab

$(BUILD)/bench/dataplane_txloop.o: INC_bench += $(DPDK_CFLAGS)

# transfer lookups: linear scans against the rte_hash tables (docs/results/dataplane.md)
$(BUILD)/bench/xfertab_bench.o: INC_bench += -Idataplane $(DPDK_CFLAGS)
$(BUILD)/mlf-bench-xfertab: $(BUILD)/bench/xfertab_bench.o $(BUILD)/dataplane/xfertab.o $(BUILD)/dataplane/xferring.o \
		$(LIB_BASE)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(DPDK_LIBS) $(LDLIBS)

$(BUILD)/mlf-txloop: $(BUILD)/bench/dataplane_txloop.o $(LIB_PROTO) $(LIB_BASE)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(DPDK_LIBS) $(JANSSON_LIBS) $(LDLIBS)

DP_RESULTS = docs/results/dataplane.md
DPCPU_SECTION = { echo; echo '\#\# CPU per load (a frugal dataplane)'; echo; }
DPMEMIF_SECTION = { echo; echo '\#\# Over net_memif against dpdk-testpmd (no kernel in the path)'; echo; }
DPAUTH_SECTION = { echo; echo '\#\# Frame tags (frame_auth): CPU and goodput against untagged frames'; echo; }

.PHONY: bench-dataplane bench-dataplane-memif bench-dataplane-cpu bench-dataplane-auth bench-loss-pacing bench-tail-repair \
	bench-xfertab
bench-xfertab: $(BUILD)/mlf-bench-xfertab
	$(BUILD)/mlf-bench-xfertab 3
bench-dataplane: $(PROGRAMS)
	bench/dataplane_bench.sh
	bench/dataplane_cpu.sh --out $(BUILD)/dataplane-cpu.md
	$(DPCPU_SECTION) >>$(DP_RESULTS) && cat $(BUILD)/dataplane-cpu.md >>$(DP_RESULTS)
	bench/dataplane_cpu.sh --frame-auth --out $(BUILD)/dataplane-auth.md
	$(DPAUTH_SECTION) >>$(DP_RESULTS) && cat $(BUILD)/dataplane-auth.md >>$(DP_RESULTS)
	bench/dataplane_memif.sh --busy --out $(BUILD)/dataplane-memif.md
	$(DPMEMIF_SECTION) >>$(DP_RESULTS) && cat $(BUILD)/dataplane-memif.md >>$(DP_RESULTS)

bench-dataplane-memif: $(PROGRAMS)
	bench/dataplane_memif.sh $(MEMIF_ARGS)

bench-dataplane-cpu: $(PROGRAMS)
	bench/dataplane_cpu.sh

# frame tags on against off (docs/security.md "Frames"), MTU 1500; FRAME_AUTH_ARGS for more
bench-dataplane-auth: $(PROGRAMS)
	bench/dataplane_cpu.sh --frame-auth $(FRAME_AUTH_ARGS)

bench-loss-pacing: $(PROGRAMS)
	bench/loss_pacing.sh $(LOSS_PACING_ARGS)

bench-tail-repair: $(PROGRAMS)
	bench/tail_repair.sh $(TAIL_REPAIR_ARGS)
