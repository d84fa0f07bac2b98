# lib/lib.mk - the three library layers under lib/ and their unit tests.
#   lib/base      libmlfbase.a   log, clock, growable arrays, vector kernels (no other layer)
#   lib/proto     libmlfproto.a  wire format, app messages, control messages, cluster config,
#                                payload header, protocol version (base; jansson)
#   lib/mlfabric  libmlfabric.a  the application library of include/mlfabric.h (proto, base)

INC_lib/base     := $(INC_BASE)
INC_lib/proto    := $(INC_PROTO)
INC_lib/mlfabric := -Ilib/mlfabric $(INC_MLFABRIC)

$(LIB_BASE): $(patsubst %.c,$(BUILD)/%.o,$(wildcard lib/base/*.c))
$(LIB_PROTO): $(patsubst %.c,$(BUILD)/%.o,$(wildcard lib/proto/*.c))
$(LIBMLFABRIC): $(patsubst %.c,$(BUILD)/%.o,$(wildcard lib/mlfabric/*.c))
PROGRAMS += $(LIB_BASE) $(LIB_PROTO) $(LIBMLFABRIC)

UNIT_TESTS += $(BUILD)/tests/test_cluster
$(BUILD)/tests/test_cluster: $(BUILD)/tests/unit/test_cluster.o $(LIB_PROTO) $(LIB_BASE)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) $(CHECK_LIBS) $(LDLIBS)
