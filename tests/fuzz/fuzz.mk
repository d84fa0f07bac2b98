# tests/fuzz/fuzz.mk - libFuzzer harnesses of every parser of input from the network or a file
# (docs/fuzzing.md): the frame parser and SACK state machines (wire), control messages (ctl),
# app-socket messages (appmsg), plan documents (plan), cluster configs (cluster), the scheduler
# daemon's message handlers and batch planning (sched), libmlfabric's command parser and payload
# headers (fabric), the dataplane's app-request handling over its real transport with a fake
# port (appif; seeds written by tests/fuzz/gen_corpus_appif.py), the dataplane's ARP parser and
# neighbour table (arp).
#   - each harness also builds with the normal compiler as build/tests/fuzz_<h> (replay_main.c:
#     runs it on files); build/tests/test_fuzz_replay, a unit test, replays the seed corpora
#     tests/fuzz/corpus/<h>/ and the inputs fuzzing found, tests/fuzz/regress/<h>/;
#   - `make fuzz` builds them with clang, -fsanitize=fuzzer,address,undefined into build-fuzz/
#     and runs each for FUZZ_S seconds (default 60) on a scratch copy of its corpus; a crash fails
#     the target and names the input saved under build-fuzz/.
INC_tests/fuzz := $(INC_TESTS) -Idataplane/core -Ischeduler/daemon -Ilib/mlfabric $(INC_PLAN) $(INC_PROTO) $(INC_MLFABRIC)
FUZZ_HARNESSES := wire ctl appmsg plan cluster sched fabric appif arp
FUZZ_LIBS_wire    := $(DP_CORE_OBJS) $(LIB_PROTO) $(LIB_BASE)
FUZZ_LIBS_ctl     := $(LIB_PROTO) $(LIB_BASE)
FUZZ_LIBS_arp     := $(DP_CORE_OBJS) $(LIB_PROTO) $(LIB_BASE)
FUZZ_LIBS_appmsg  := $(LIB_PROTO) $(LIB_BASE)
FUZZ_LIBS_plan    := $(LIBPLANIO) $(LIBPLAN) $(LIB_BASE)
FUZZ_LIBS_cluster := $(LIB_PROTO) $(LIB_BASE)
FUZZ_LIBS_sched   := $(SCHED_LIBS)
FUZZ_LIBS_fabric  := $(BUILD)/lib/mlfabric/fabric_cmd.o $(LIB_PROTO) $(LIB_BASE)
# appif: the dataplane's app interface over its real transport; portio (DPDK) is faked in the harness
FUZZ_LIBS_appif   := $(addprefix $(BUILD)/dataplane/,appif.o transport.o sender.o receiver.o egress.o neigh.o placement.o dp.o xferring.o) \
		     $(DP_CORE_OBJS) $(LIB_PROTO) $(LIB_BASE)
$(BUILD)/tests/fuzz/fuzz_appif.o: INC_tests/fuzz += -Idataplane
$(BUILD)/tests/fuzz_appif $(BUILD)/fuzz/fuzz_appif: LDLIBS += -lnuma
FUZZ_REPLAY := $(FUZZ_HARNESSES:%=$(BUILD)/tests/fuzz_%)

$(foreach h,$(FUZZ_HARNESSES),$(eval $(BUILD)/tests/fuzz_$(h): $(BUILD)/tests/fuzz/fuzz_$(h).o \
	$(BUILD)/tests/fuzz/replay_main.o $(FUZZ_LIBS_$(h))))
$(FUZZ_REPLAY):
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) $(LDLIBS)

$(BUILD)/tests/test_fuzz_replay: tests/fuzz/replay.sh $(FUZZ_REPLAY) $(wildcard tests/fuzz/corpus/*/*) \
		$(wildcard tests/fuzz/regress/*/*)
	@mkdir -p $(@D)
	install -m 755 $< $@
UNIT_TESTS += $(BUILD)/tests/test_fuzz_replay

# make fuzz: clang, every object instrumented for coverage (fuzzer-no-link), harnesses linked
# with libFuzzer's main
FUZZ_S ?= 60
FUZZ_CFLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined \
	       -fno-sanitize-recover=undefined -std=gnu11 -Wall -Wno-unused-parameter -MMD -MP
.PHONY: fuzz fuzz-build
fuzz:
	@command -v clang >/dev/null || { echo "make fuzz needs clang (Debian package clang)"; exit 1; }
	@$(MAKE) --no-print-directory BUILD=build-fuzz CC=clang CFLAGS="$(FUZZ_CFLAGS)" fuzz-build
	@tests/fuzz/run.sh build-fuzz $(FUZZ_S) $(FUZZ_HARNESSES)

fuzz-build: $(FUZZ_HARNESSES:%=$(BUILD)/fuzz/fuzz_%)
$(foreach h,$(FUZZ_HARNESSES),$(eval $(BUILD)/fuzz/fuzz_$(h): $(BUILD)/tests/fuzz/fuzz_$(h).o $(FUZZ_LIBS_$(h))))
$(FUZZ_HARNESSES:%=$(BUILD)/fuzz/fuzz_%):
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -fsanitize=fuzzer -o $@ $^ $(JANSSON_LIBS) $(LDLIBS)
