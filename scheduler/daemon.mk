# scheduler/daemon.mk - the scheduler daemon build/mlf-scheduler (docs/scheduler.md) and its
# Check tests (fake dataplanes over TCP on 127.0.0.1). Uses $(LIBPLAN) from scheduler/module.mk.

SCHED_OBJS := $(BUILD)/scheduler/sched_state.o $(BUILD)/scheduler/sched_rec.o \
	      $(BUILD)/scheduler/sched_batch.o $(BUILD)/scheduler/sched_daemon.o \
	      $(BUILD)/scheduler/sched_repl.o

$(BUILD)/mlf-scheduler: $(BUILD)/scheduler/mlf_scheduler.o $(SCHED_OBJS) $(BUILD)/libplan.a $(LIBMLF)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) $(LDLIBS)

# program_runs_and_stops runs build/mlf-scheduler as a subprocess: built first (order-only).
$(BUILD)/tests/test_sched: $(BUILD)/tests/unit/test_sched.o $(SCHED_OBJS) $(BUILD)/libplan.a \
		$(LIBMLF) | $(BUILD)/mlf-scheduler
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) $(CHECK_LIBS) $(LDLIBS) -lpthread

PROGRAMS += $(BUILD)/mlf-scheduler
UNIT_TESTS += $(BUILD)/tests/test_sched

# bench-sched: batch cost and update-to-command latency of the daemon (fake dataplanes).
$(BUILD)/bench-sched: $(BUILD)/scheduler/sched_bench.o $(SCHED_OBJS) $(BUILD)/libplan.a $(LIBMLF)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) $(LDLIBS) -lpthread

.PHONY: bench-sched
bench-sched: $(BUILD)/bench-sched
	$(BUILD)/bench-sched

PROGRAMS += $(BUILD)/bench-sched
BENCHES += bench-sched
