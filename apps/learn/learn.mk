# apps/learn/learn.mk - the ML workload the apps train (MLP, IDX/gzip data, training helpers):
# libmlflearn.a, used by mlf-ps, mlf-worker, mlf-rrsync and their tests, never by the fabric.
# The training helpers are one file per job (train.h includes them all): train_model (the
# server's model, eq. 2, checkpoints), train_straggle (stragglers, emulated compute, generator),
# train_local (the gradient and local SGD steps), train_data (shards, mini-batches), train_eval,
# train_rec (records); every apps/learn/*.c is in the library.
INC_apps/learn := $(INC_LEARN)

$(LIB_LEARN): $(patsubst %.c,$(BUILD)/%.o,$(wildcard apps/learn/*.c))
PROGRAMS += $(LIB_LEARN)

UNIT_TESTS += $(BUILD)/tests/test_learn $(BUILD)/tests/test_hop
# Hop's queue-based synchronization alone (docs/api.md "Peers"): pure
$(BUILD)/tests/test_hop: $(BUILD)/tests/unit/test_hop.o $(LIB_LEARN)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(CHECK_LIBS) $(LDLIBS)
$(BUILD)/tests/test_learn: $(BUILD)/tests/unit/test_learn.o $(LIB_LEARN) $(LIB_BASE)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(CHECK_LIBS) $(JANSSON_LIBS) -lz $(LDLIBS)
