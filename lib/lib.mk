# lib/lib.mk - the three library layers under lib/ and their unit tests.
#   lib/base      libmlfbase.a   log, clock, growable arrays, vector kernels (no other layer)
#   lib/proto     libmlfproto.a  wire format, app messages, control messages, cluster config,
#                                payload header, protocol version (base; jansson)
#   lib/mlfabric  libmlfabric.a  the application library of include/mlfabric/mlfabric.h and mlfabric_sync.h (proto, base)
#   all three     libmlfabric.so the shared library that make install installs (exports mlf_* only)

INC_lib/base     := $(INC_BASE)
INC_lib/proto    := $(INC_PROTO)
INC_lib/mlfabric := -Ilib/mlfabric $(INC_MLFABRIC)

$(LIB_BASE): $(patsubst %.c,$(BUILD)/%.o,$(wildcard lib/base/*.c))
$(LIB_PROTO): $(patsubst %.c,$(BUILD)/%.o,$(wildcard lib/proto/*.c))
$(LIBMLFABRIC): $(patsubst %.c,$(BUILD)/%.o,$(wildcard lib/mlfabric/*.c))
PROGRAMS += $(LIB_BASE) $(LIB_PROTO) $(LIBMLFABRIC)

# The shared library build/libmlfabric.so.$(MLFABRIC_VERSION) (soname libmlfabric.so.$(MLFABRIC_SOVERSION),
# symlinks libmlfabric.so.$(MLFABRIC_SOVERSION) and libmlfabric.so): the same sources as the three archives, compiled
# again with -fPIC into build/pic/ (the programs keep linking the archives, so their code is what
# it was), exporting only mlf_* (lib/mlfabric/libmlfabric.map, version node MLFABRIC_1).
SO_SRCS     := $(wildcard lib/base/*.c lib/proto/*.c lib/mlfabric/*.c)
SO_OBJS     := $(patsubst %.c,$(BUILD)/pic/%.o,$(SO_SRCS))
SO_MAP      := lib/mlfabric/libmlfabric.map
SO_SONAME   := libmlfabric.so.$(MLFABRIC_SOVERSION)
SO_REAL     := $(BUILD)/libmlfabric.so.$(MLFABRIC_VERSION)

$(BUILD)/pic/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -fPIC $(INC_$(<D)) -c $< -o $@

$(SO_REAL): $(SO_OBJS) $(SO_MAP)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -shared -fPIC -Wl,-soname,$(SO_SONAME) -Wl,--version-script=$(SO_MAP) \
	      -Wl,--no-undefined -o $@ $(SO_OBJS) $(JANSSON_LIBS) -lpthread $(LDLIBS)
$(BUILD)/$(SO_SONAME): $(SO_REAL)
	ln -sf $(notdir $<) $@
$(LIBMLFABRIC_SO): $(BUILD)/$(SO_SONAME)
	ln -sf $(notdir $<) $@
PROGRAMS += $(SO_REAL) $(BUILD)/$(SO_SONAME) $(LIBMLFABRIC_SO)

UNIT_TESTS += $(BUILD)/tests/test_cluster
$(BUILD)/tests/test_cluster: $(BUILD)/tests/unit/test_cluster.o $(LIB_PROTO) $(LIB_BASE)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) $(CHECK_LIBS) $(LDLIBS)

# the out-of-tree example examples/c against a live two-host fabric (installed library, pkg-config)
INTEG_TESTS += tests/integration/fabric_example_c.sh

# the bounds of docs/security.md: control framing (line limit, output cap) and the log rate limit
UNIT_TESTS += $(BUILD)/tests/test_ctl $(BUILD)/tests/test_log $(BUILD)/tests/test_auth $(BUILD)/tests/test_clocksync
$(BUILD)/tests/test_ctl $(BUILD)/tests/test_log $(BUILD)/tests/test_auth $(BUILD)/tests/test_clocksync: $(BUILD)/tests/%: $(BUILD)/tests/unit/%.o $(LIB_PROTO) $(LIB_BASE)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) $(CHECK_LIBS) $(LDLIBS)
