# apps/apps.mk - the training applications (mlf-ps, mlf-worker, mlf-rrsync, mlf-verify) and
# their tests. Apps see the public API (include/mlfabric/mlfabric.h), the ML workload (apps/learn) and
# the base layer.
INC_apps := $(INC_MLFABRIC) $(INC_LEARN)
APP_LIBS := $(LIB_LEARN) $(MLFABRIC_LIBS)

MPI_CFLAGS := $(shell pkg-config --cflags ompi-c 2>/dev/null)
MPI_LIBS   := $(shell pkg-config --libs ompi-c 2>/dev/null)

UNIT_TESTS += $(BUILD)/tests/test_train
$(BUILD)/tests/test_train: $(BUILD)/tests/unit/test_train.o $(APP_LIBS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) $(CHECK_LIBS) -lz $(LDLIBS)

# bad command-line settings of mlf-scheduler's and mlf-worker's synchronization models
# (docs/apps.md "mlf-worker"): refused, nothing started
UNIT_TESTS += $(BUILD)/tests/test_sync_refusals
$(BUILD)/tests/test_sync_refusals: tests/cli/test_sync_refusals.sh $(BUILD)/mlf-scheduler $(BUILD)/mlf-worker
	@mkdir -p $(@D)
	install -m 755 $< $@

ifneq ($(MPI_LIBS),)
PROGRAMS += $(BUILD)/mlf-rrsync
$(BUILD)/apps/mlf_rrsync.o: INC_apps += $(MPI_CFLAGS)
$(BUILD)/mlf-rrsync: $(BUILD)/apps/mlf_rrsync.o $(APP_LIBS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(MPI_LIBS) $(JANSSON_LIBS) -lz $(LDLIBS)
endif

PROGRAMS += $(BUILD)/mlf-ps $(BUILD)/mlf-worker
$(BUILD)/mlf-ps: $(BUILD)/apps/mlf_ps.o $(APP_LIBS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -pthread -o $@ $^ $(JANSSON_LIBS) -lz $(LDLIBS)
# mlf-worker: its core and one file per training algorithm (apps/wk.h, docs/apps.md "mlf-worker")
$(BUILD)/mlf-worker: $(BUILD)/apps/mlf_worker.o $(patsubst %.c,$(BUILD)/%.o,$(wildcard apps/wk*.c)) $(APP_LIBS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -pthread -o $@ $^ $(JANSSON_LIBS) -lz $(LDLIBS)

# verification mode's checker (docs/replication.md); it reads snapshots with libmlfabric's
# public include/mlfabric/mlfabric_verify.h.
PROGRAMS += $(BUILD)/mlf-verify
$(BUILD)/mlf-verify: $(BUILD)/apps/mlf_verify.o $(APP_LIBS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) $(LDLIBS)

INTEG_TESTS += tests/integration/apps_rrsync.sh tests/integration/apps_async.sh \
	       tests/integration/apps_mlfabric.sh tests/integration/apps_sync.sh tests/integration/apps_shards.sh \
	       tests/integration/apps_shards_sync.sh tests/integration/apps_shards_lost.sh tests/integration/apps_get_latency.sh \
	       tests/integration/apps_ssp.sh tests/integration/apps_esync.sh tests/integration/apps_adsp.sh tests/integration/apps_hop.sh \
	       tests/integration/fabric_replica.sh tests/integration/fabric_chain.sh \
	       tests/integration/fabric_checkpoint.sh tests/integration/fabric_failover.sh

# the initial model (mlf_send_model / mlf_recv_model, mlf-ps --init-from / --init-file); its
# test program is built by the tests/integration/fabric_% rule of tests/tests.mk
PROGRAMS += $(BUILD)/tests/fabric_initmodel
INTEG_TESTS += tests/integration/fabric_init_model.sh
