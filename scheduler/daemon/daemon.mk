# scheduler/daemon/daemon.mk - the scheduler daemon build/mlf-scheduler (docs/scheduler.md) and
# its Check tests (fake dataplanes over TCP on 127.0.0.1). Above the planner and the protocols.
INC_scheduler/daemon := -Ischeduler/daemon $(INC_PLAN) $(INC_PROTO)

SCHED_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(filter-out scheduler/daemon/mlf_scheduler.c,$(wildcard scheduler/daemon/*.c)))
SCHED_LIBS := $(SCHED_OBJS) $(LIBPLAN) $(LIB_PROTO) $(LIB_BASE)

$(BUILD)/mlf-scheduler: $(BUILD)/scheduler/daemon/mlf_scheduler.o $(SCHED_LIBS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) $(LDLIBS)

# These link the shared harness tests/unit/sched_fake.c. program_runs_and_stops (test_sched) runs
# build/mlf-scheduler as a subprocess: built first (order-only).
$(BUILD)/tests/test_sched $(BUILD)/tests/test_sched_bounds: | $(BUILD)/mlf-scheduler
$(BUILD)/tests/test_sched $(BUILD)/tests/test_sched_repl $(BUILD)/tests/test_sched_status $(BUILD)/tests/test_sched_dist $(BUILD)/tests/test_sched_shard $(BUILD)/tests/test_sched_bounds $(BUILD)/tests/test_sched_ssp $(BUILD)/tests/test_sched_fresh $(BUILD)/tests/test_sched_arrival: $(BUILD)/tests/%: $(BUILD)/tests/unit/%.o \
		$(BUILD)/tests/unit/sched_fake.o $(SCHED_LIBS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) $(CHECK_LIBS) $(LDLIBS) -lpthread

# ESync's State Server rule alone (docs/scheduler.md "ESync's State Server"): pure
$(BUILD)/tests/test_sched_esync: $(BUILD)/tests/unit/test_sched_esync.o $(BUILD)/scheduler/daemon/sched_esync.o
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(CHECK_LIBS) $(LDLIBS)
UNIT_TESTS += $(BUILD)/tests/test_sched_esync

# ADSP's commit-rate control alone (docs/scheduler.md "ADSP's commit rates"): pure
$(BUILD)/tests/test_sched_adsp: $(BUILD)/tests/unit/test_sched_adsp.o $(BUILD)/scheduler/daemon/sched_adsp.o
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(CHECK_LIBS) $(LDLIBS)
UNIT_TESTS += $(BUILD)/tests/test_sched_adsp

# the policy layer on a hand-made daemon state (docs/architecture.md "Scheduler policies")
$(BUILD)/tests/test_sched_policy: $(BUILD)/tests/unit/test_sched_policy.o $(SCHED_LIBS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) $(CHECK_LIBS) $(LDLIBS)
UNIT_TESTS += $(BUILD)/tests/test_sched_policy

PROGRAMS += $(BUILD)/mlf-scheduler
UNIT_TESTS += $(BUILD)/tests/test_sched $(BUILD)/tests/test_sched_repl $(BUILD)/tests/test_sched_status $(BUILD)/tests/test_sched_dist $(BUILD)/tests/test_sched_shard $(BUILD)/tests/test_sched_bounds $(BUILD)/tests/test_sched_ssp $(BUILD)/tests/test_sched_fresh \
	$(BUILD)/tests/test_sched_arrival
INTEG_TESTS += tests/integration/mlf_top.sh

# distribution trees end to end (§10.3): its test program is built by the tests/integration/fabric_%
# rule of tests/tests.mk
PROGRAMS += $(BUILD)/tests/fabric_distapp
INTEG_TESTS += tests/integration/fabric_distribute.sh
