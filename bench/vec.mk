# bench/vec.mk - `make bench-vec`: aggregation kernel throughput against memcpy.
BENCHES += bench-vec
PROGRAMS += $(BUILD)/bench-vec
$(BUILD)/bench-vec: $(BUILD)/bench/bench_vec.o $(LIB_BASE)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)
.PHONY: bench-vec
bench-vec: $(BUILD)/bench-vec
	$(BUILD)/bench-vec
