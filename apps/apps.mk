# apps/apps.mk - the training applications (mlf-ps, mlf-worker, mlf-rrsync) and lib/train's tests.
MPI_CFLAGS := $(shell pkg-config --cflags ompi-c 2>/dev/null)
MPI_LIBS   := $(shell pkg-config --libs ompi-c 2>/dev/null)

UNIT_TESTS += $(BUILD)/tests/test_train
$(BUILD)/tests/test_train: $(BUILD)/tests/unit/test_train.o $(LIBMLF)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) $(CHECK_LIBS) -lz $(LDLIBS)

ifneq ($(MPI_LIBS),)
PROGRAMS += $(BUILD)/mlf-rrsync
$(BUILD)/apps/mlf_rrsync.o: EXTRA_CFLAGS_apps = $(MPI_CFLAGS)
$(BUILD)/mlf-rrsync: $(BUILD)/apps/mlf_rrsync.o $(LIBMLF)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(MPI_LIBS) $(JANSSON_LIBS) -lz $(LDLIBS)
endif

INTEG_TESTS += tests/integration/apps_rrsync.sh

# mlf-ps and mlf-worker need the fabric library (include/mlfabric.h implemented in lib/)
ifneq ($(shell grep -ls '^mlf_t \*mlf_open' lib/*.c),)
PROGRAMS += $(BUILD)/mlf-ps $(BUILD)/mlf-worker
$(BUILD)/mlf-ps: $(BUILD)/apps/mlf_ps.o $(LIBMLF)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -pthread -o $@ $^ $(JANSSON_LIBS) -lz $(LDLIBS)
$(BUILD)/mlf-worker: $(BUILD)/apps/mlf_worker.o $(LIBMLF)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -pthread -o $@ $^ $(JANSSON_LIBS) -lz $(LDLIBS)
endif
INTEG_TESTS += tests/integration/apps_async.sh
INTEG_TESTS += tests/integration/apps_mlfabric.sh
INTEG_TESTS += tests/integration/apps_sync.sh

# verification mode's checker (docs/replication.md) and its tests
PROGRAMS += $(BUILD)/mlf-verify
$(BUILD)/mlf-verify: $(BUILD)/apps/mlf_verify.o $(LIBMLF)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) $(LDLIBS)
UNIT_TESTS += $(BUILD)/tests/test_fabric_verify
$(BUILD)/tests/test_fabric_verify: $(BUILD)/tests/unit/test_fabric_verify.o $(LIBMLF) | $(BUILD)/mlf-verify
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $(filter-out $(BUILD)/mlf-verify,$^) $(CHECK_LIBS) $(JANSSON_LIBS) $(LDLIBS)
INTEG_TESTS += tests/integration/fabric_replica.sh tests/integration/fabric_chain.sh tests/integration/fabric_checkpoint.sh tests/integration/fabric_failover.sh
