# MLfabric-C top-level Makefile: builds every program and library under build/.
#
# Layers (docs/architecture.md), lowest first; a source file sees only the headers of its own
# layer and the layers below it, because every directory declares its include paths
# (INC_<dir>, set in its fragment) and there is no global -I. A directory that declares none
# does not compile. `make check-layers` also checks, from the objects, that no file-level
# circle of calls exists in dataplane/ or scheduler/.
#
#   lib/base        log, clock, growable arrays, vector kernels      build/libmlfbase.a
#   lib/proto       wire, app messages, control, cluster, payload     build/libmlfproto.a
#   scheduler/planner        pure planning library (no I/O, clock)    build/libplan.a
#   scheduler/planner/io     plan documents (jansson), mlf-plan        build/libplanio.a
#   lib/mlfabric    libmlfabric: include/mlfabric/mlfabric.h (paper Table 1)   build/libmlfabric.a
#                   the three above as one shared library           build/libmlfabric.so (make install)
#   apps/learn      the ML workload (MLP, IDX, training helpers)      build/libmlflearn.a
#   daemons and apps: dataplane/, scheduler/daemon/, aggregator/, apps/, tools/
#
# Each component owns a `*.mk` fragment (listed below, read in this order; the archive paths
# they share are defined here, so the order does not matter for correctness). Conventions:
#   PROGRAMS      += build/<name>            programs built by `make`
#   UNIT_TESTS    += build/tests/<name>      Check test binaries run by `make test`
#   INTEG_TESTS   += tests/integration/x.sh  scripts run by `make test` (need root)
#   BENCHES       += bench-<name>            phony targets listed by `make help`
#   INSTALL_HOOKS += install-<x>             more steps of `make install` (UNINSTALL_HOOKS: uninstall)
# Packages come from pkg-config; a missing one is a clear error that names `make deps`.
# `make` never installs anything; `make deps` does, and the README's two commands
# (`make run`, `make test`) run it first.

BUILD   := build
CC      ?= gcc
OPT     ?= -O2
CFLAGS  ?= $(OPT) -g
CFLAGS  += -std=gnu11 -Wall -Wextra -Wno-unused-parameter -MMD -MP
LDLIBS  += -lm -lcrypto $(SODIUM_LIBS)

# Goals that need no packages (the README's two commands install them, then re-enter make).
NOPKG_GOALS := clean help deps run test uninstall
define need_pkg
$(if $(shell pkg-config --exists $(1) && echo ok),,$(error pkg-config cannot find '$(1)': run 'make deps' (Debian package $(2))))
endef
ifneq ($(filter-out $(NOPKG_GOALS),$(or $(MAKECMDGOALS),all)),)
$(call need_pkg,jansson,libjansson-dev)
$(call need_pkg,check,check)
$(call need_pkg,zlib,zlib1g-dev)
$(call need_pkg,libcrypto,libssl-dev)
$(call need_pkg,libsodium,libsodium-dev)
$(call need_pkg,libdpdk,libdpdk-dev)
endif

JANSSON_CFLAGS := $(shell pkg-config --cflags jansson 2>/dev/null)
JANSSON_LIBS   := $(shell pkg-config --libs jansson 2>/dev/null)
CHECK_CFLAGS   := $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS     := $(shell pkg-config --libs check 2>/dev/null)
DPDK_CFLAGS    := $(shell pkg-config --cflags libdpdk 2>/dev/null)
DPDK_LIBS      := $(shell pkg-config --libs libdpdk 2>/dev/null)
SODIUM_LIBS    := $(shell pkg-config --libs libsodium 2>/dev/null) # frame tags (lib/proto/auth.c)

# Include paths of each layer (a directory's INC_ is its own layer's plus these).
INC_BASE     := -Ilib/base
INC_PROTO    := -Ilib/proto $(INC_BASE) $(JANSSON_CFLAGS)
INC_PLAN     := -Ischeduler/planner $(INC_BASE)
INC_PLANIO   := -Ischeduler/planner/io $(INC_PLAN) $(JANSSON_CFLAGS)
INC_MLFABRIC := -Iinclude/mlfabric -Iinclude $(INC_PROTO)
INC_LEARN    := -Iapps/learn $(INC_BASE) $(JANSSON_CFLAGS)

# Archives, defined before any fragment so fragments can be read in any order. Link order:
# the higher layer first.
LIB_BASE    := $(BUILD)/libmlfbase.a
LIB_PROTO   := $(BUILD)/libmlfproto.a
LIBMLFABRIC := $(BUILD)/libmlfabric.a
LIB_LEARN   := $(BUILD)/libmlflearn.a
LIBPLAN     := $(BUILD)/libplan.a
LIBPLANIO   := $(BUILD)/libplanio.a
LIBPLANTEST := $(BUILD)/libplantest.a
# The shared library (lib/lib.mk): build/libmlfabric.so -> .so.$(MLFABRIC_SOVERSION) -> .so.$(MLFABRIC_VERSION).
# MLFABRIC_VERSION is the single place of the library's version (soname, mlfabric.pc).
MLFABRIC_VERSION   := 2.0.0
MLFABRIC_SOVERSION := $(firstword $(subst ., ,$(MLFABRIC_VERSION)))
LIBMLFABRIC_SO     := $(BUILD)/libmlfabric.so
# what a program of the fabric links: libmlfabric and the layers below it
MLFABRIC_LIBS := $(LIBMLFABRIC) $(LIB_PROTO) $(LIB_BASE)

PROGRAMS    :=
INSTALL_HOOKS   :=
UNINSTALL_HOOKS :=
UNIT_TESTS  :=
INTEG_TESTS :=
BENCHES     :=

.PHONY: all test test-under-load unit-test integration-test clean help run deps check-layers programs install uninstall
all: programs

# Every object compiles with its directory's include paths only (the layer rule).
$(BUILD)/%.o: %.c
	@mkdir -p $(@D)
	$(if $(filter undefined,$(origin INC_$(<D))),$(error $<: directory $(<D) declares no include paths (INC_$(<D)); see the Makefile header))
	$(CC) $(CFLAGS) $(INC_$(<D)) -c $< -o $@

# ar rule shared by every archive: $(BUILD)/libX.a: objects
$(BUILD)/lib%.a:
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^

FRAGMENTS := lib/lib.mk apps/learn/learn.mk scheduler/planner/planner.mk \
	     scheduler/planner/io/io.mk scheduler/daemon/daemon.mk dataplane/dataplane.mk \
	     aggregator/aggregator.mk apps/apps.mk tools/testbed.mk tools/cluster.mk \
	     tests/tests.mk bench/bench.mk bench/bench-dataplane.mk bench/vec.mk \
	     python/python.mk bench/torch.mk tests/fuzz/fuzz.mk
include $(FRAGMENTS)

programs: $(PROGRAMS)

# `make install [PREFIX=/usr/local] [DESTDIR=]`: installs what `make` built (builds nothing
# else, installs no packages): the headers (include/mlfabric/), libmlfabric.so and its symlinks,
# mlfabric.pc (from mlfabric.pc.in), the user programs (every build/mlf-* of PROGRAMS but
# NOINSTALL_PROGRAMS) and the user tools (INSTALL_TOOLS: the scripts and their Python packages
# under $(MLF_DATADIR)/tools, with a wrapper of each in $(BINDIR) that points them at the
# installed programs; the conf/ files and the PyTorch example beside them). The run-time library
# is found through ldconfig for a LIBDIR among the loader's own directories (SYSTEM_LIBDIRS;
# ldconfig runs for such a real install, no DESTDIR, as root) and through the rpath that mlfabric.pc's
# Libs carry for any other LIBDIR (docs/api.md "Linking"). `make uninstall` removes every file
# and then every directory install made that is left empty.
PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
DATADIR    ?= $(PREFIX)/share
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
MLF_DATADIR = $(DATADIR)/mlfabric
INSTALL    ?= install
NOINSTALL_PROGRAMS := $(BUILD)/mlf-txloop
INSTALL_PROGRAMS = $(filter-out $(NOINSTALL_PROGRAMS),$(filter $(BUILD)/mlf-%,$(PROGRAMS)))
INSTALL_HEADERS  := $(wildcard include/mlfabric/*.h)
SO_LINKS = $(notdir $(LIBMLFABRIC_SO)) $(SO_SONAME)
# the user tools: a wrapper in $(BINDIR) each; mlf-mpirun is mlf-cluster's helper (no wrapper)
INSTALL_TOOLS    := mlf-cluster mlf-fault mlf-top mlf-keygen
INSTALL_TOOL_PKGS := mlfcluster mlffault
INSTALL_CONF     := $(wildcard conf/*.json)
INSTALL_EXAMPLES := $(wildcard examples/*.py)
# directories the dynamic loader searches without an rpath (after ldconfig)
MULTIARCH      := $(shell $(CC) -print-multiarch 2>/dev/null)
SYSTEM_LIBDIRS := /lib /usr/lib /lib64 /usr/lib64 /usr/local/lib $(addprefix /lib/,$(MULTIARCH)) \
		  $(addprefix /usr/lib/,$(MULTIARCH))
LIBDIR_RPATH    = $(if $(filter $(SYSTEM_LIBDIRS),$(patsubst %/,%,$(LIBDIR))),,$(LIBDIR))
comma := ,

install: $(INSTALL_PROGRAMS) $(SO_REAL) $(LIBMLFABRIC_SO) mlfabric.pc.in $(INSTALL_HOOKS)
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(PKGCONFIGDIR) $(DESTDIR)$(INCLUDEDIR)/mlfabric
	$(INSTALL) -m 644 $(INSTALL_HEADERS) $(DESTDIR)$(INCLUDEDIR)/mlfabric/
	$(INSTALL) -m 755 $(SO_REAL) $(DESTDIR)$(LIBDIR)/
	ln -sf $(notdir $(SO_REAL)) $(DESTDIR)$(LIBDIR)/$(SO_SONAME)
	ln -sf $(SO_SONAME) $(DESTDIR)$(LIBDIR)/$(notdir $(LIBMLFABRIC_SO))
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' \
	    -e 's|@VERSION@|$(MLFABRIC_VERSION)|g' -e 's| *@RPATH@|$(if $(LIBDIR_RPATH), -Wl$(comma)-rpath$(comma)$${libdir})|' \
	    mlfabric.pc.in > $(DESTDIR)$(PKGCONFIGDIR)/mlfabric.pc
	chmod 644 $(DESTDIR)$(PKGCONFIGDIR)/mlfabric.pc
	$(INSTALL) -m 755 $(INSTALL_PROGRAMS) $(DESTDIR)$(BINDIR)/
	$(INSTALL) -d $(addprefix $(DESTDIR)$(MLF_DATADIR)/tools/,$(INSTALL_TOOL_PKGS)) \
		$(DESTDIR)$(MLF_DATADIR)/conf $(DESTDIR)$(MLF_DATADIR)/examples
	$(INSTALL) -m 755 $(addprefix tools/,$(INSTALL_TOOLS) mlf-mpirun) $(DESTDIR)$(MLF_DATADIR)/tools/
	for p in $(INSTALL_TOOL_PKGS); do $(INSTALL) -m 644 tools/$$p/*.py $(DESTDIR)$(MLF_DATADIR)/tools/$$p/ || exit 1; done
	$(INSTALL) -m 644 $(INSTALL_CONF) $(DESTDIR)$(MLF_DATADIR)/conf/
	$(INSTALL) -m 644 $(INSTALL_EXAMPLES) $(DESTDIR)$(MLF_DATADIR)/examples/
	for t in $(INSTALL_TOOLS); do \
	  printf '#!/bin/sh\n# %s as installed by make install (docs/api.md "Installed tools"): the programs are in %s\nMLF_BUILD="$${MLF_BUILD:-%s}"\nexport MLF_BUILD\nexec "%s" "$$@"\n' \
	    "$$t" '$(BINDIR)' '$(BINDIR)' '$(MLF_DATADIR)/tools/'"$$t" >$(DESTDIR)$(BINDIR)/$$t && \
	  chmod 755 $(DESTDIR)$(BINDIR)/$$t || exit 1; done
	@if [ -z "$(DESTDIR)$(LIBDIR_RPATH)" ] && [ "$$(id -u)" = 0 ]; then echo ldconfig; ldconfig; fi

# tests/cli/test_install.sh: make install into a temporary DESTDIR and a temporary PREFIX, the
# C and C++ examples built with pkg-config, make uninstall
UNIT_TESTS += $(BUILD)/tests/test_install
$(BUILD)/tests/test_install: tests/cli/test_install.sh $(INSTALL_PROGRAMS) $(SO_REAL) $(LIBMLFABRIC_SO) \
		$(wildcard examples/c/*.c examples/c/*.cpp) examples/c/Makefile mlfabric.pc.in
	@mkdir -p $(@D)
	install -m 755 $< $@

uninstall: $(UNINSTALL_HOOKS)
	rm -f $(addprefix $(DESTDIR)$(INCLUDEDIR)/mlfabric/,$(notdir $(INSTALL_HEADERS)))
	rm -f $(addprefix $(DESTDIR)$(LIBDIR)/,$(notdir $(SO_REAL)) $(SO_LINKS))
	rm -f $(DESTDIR)$(PKGCONFIGDIR)/mlfabric.pc
	rm -f $(addprefix $(DESTDIR)$(BINDIR)/,$(notdir $(INSTALL_PROGRAMS)) $(INSTALL_TOOLS))
	rm -rf $(DESTDIR)$(MLF_DATADIR)
	-rmdir $(DESTDIR)$(INCLUDEDIR)/mlfabric $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(PKGCONFIGDIR) \
		$(DESTDIR)$(LIBDIR) $(DESTDIR)$(BINDIR) $(DESTDIR)$(DATADIR) $(DESTDIR)$(PREFIX) 2>/dev/null
	@if [ -z "$(DESTDIR)$(LIBDIR_RPATH)" ] && [ "$$(id -u)" = 0 ]; then echo ldconfig; ldconfig; fi

# The unit tests UNIT_JOBS (4) at a time (tests/run_parallel.sh: they mostly wait, on little CPU;
# each one's output printed in order at the end; UNIT_JOBS=1: one after the other), UNIT_FIRST,
# the longest (10-29 s each), first; then UNIT_ALONE with nothing beside it: test_sched_arrival
# reads a command's lead from the time the test received it (35 ms of a 50 ms cap), which a
# neighbour's CPU delays (it failed once in 7 runs in the batch). test_sched_shard's bounds come
# from the daemon's planned times or leave 0.4 s (it passed in the batch every time).
# docs/testing.md "Runtime".
UNIT_JOBS  ?= 4
UNIT_ALONE := $(BUILD)/tests/test_sched_arrival
UNIT_FIRST := $(addprefix $(BUILD)/tests/,test_python test_sched_shard test_pip_install test_sched_bounds test_fabric_lib)
UNIT_PAR    = $(filter $(UNIT_FIRST),$(UNIT_TESTS)) $(filter-out $(UNIT_ALONE) $(UNIT_FIRST),$(UNIT_TESTS))
unit-test: $(UNIT_TESTS)
	@tests/run_parallel.sh $(UNIT_JOBS) $(UNIT_PAR) -- $(filter $(UNIT_ALONE),$(UNIT_TESTS)) || \
	{ echo "UNIT TESTS FAILED"; exit 1; }; echo "unit tests passed"

integration-test: $(PROGRAMS)
	@fail=0; for t in $(INTEG_TESTS); do echo "== $$t"; \
	  if [ "$$(id -u)" != 0 ]; then echo "SKIP $$t (needs root for network namespaces)"; continue; fi; \
	  timeout 600 $$t || { echo "FAILED: $$t"; fail=1; }; done; \
	if [ $$fail -ne 0 ]; then echo "INTEGRATION TESTS FAILED"; exit 1; fi; echo "integration tests passed"

# The README's test command: install what is missing, then build, check the layers and test.
test: deps
	@$(MAKE) --no-print-directory check-layers
	@$(MAKE) --no-print-directory unit-test integration-test

# `make sanitize`: the C unit tests built with AddressSanitizer (leaks included) and
# UndefinedBehaviorSanitizer into build-san/ and run; any report fails the target. The
# mlf-scheduler subprocess of test_sched_bounds stays the plain build: that test measures its
# memory, which ASan inflates (the daemon's code runs sanitized in test_sched*). Left out: the tests
# that load the library into Debian's python3 (test_python, test_pip_install: the ASan runtime must
# come first) and test_install, test_mlf_plan. CI runs it after `make test` (docs/fuzzing.md).
SAN_CFLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	      -std=gnu11 -Wall -Wextra -Wno-unused-parameter -MMD -MP
SAN_TESTS = $(filter-out %/test_python %/test_install %/test_pip_install %/test_mlf_plan,$(UNIT_TESTS))
.PHONY: sanitize sanitize-run
sanitize: $(BUILD)/mlf-scheduler
	@$(MAKE) --no-print-directory BUILD=build-san CFLAGS="$(SAN_CFLAGS)" \
	  SAN_SCHEDULER=$(CURDIR)/$(BUILD)/mlf-scheduler sanitize-run
sanitize-run: $(SAN_TESTS)
	@fail=0; for t in $(SAN_TESTS); do echo "== $$t"; \
	  MLF_SCHEDULER=$(SAN_SCHEDULER) ASAN_OPTIONS=detect_leaks=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 $$t || { echo "SANITIZER/TEST FAILURE: $$t"; fail=1; }; done; \
	if [ $$fail -ne 0 ]; then echo "SANITIZE FAILED"; exit 1; fi; echo "sanitize: every unit test clean under ASan+UBSan"

# The README's main job: install what is missing, build, train on the emulated cluster.
run: deps
	@$(MAKE) --no-print-directory programs
	tools/mlf-cluster run conf/exp-default.json

# Debian packages (apt; needs root or sudo). A no-op when everything is installed.
deps:
	@tools/install-deps

# No file-level circle of calls in dataplane/ or scheduler/ (tools/check-layers reads the
# objects' symbol tables; it also re-checks the include rule on the sources).
check-layers: programs
	python3 tools/check-layers --build $(BUILD)

# `make test-under-load`: `make test` UNDER_LOAD_RUNS (3) times in a row with `stress-ng --cpu 2`
# beside it (two busy cores: every test must hold on a loaded machine, README.md). stress-ng
# is stopped on every exit, a failed run or Ctrl-C included; each run's result and time is printed,
# and the target fails when any run failed. A failed integration test's work directory (logs,
# records, run folders) is kept in build/failed-tests (MLF_KEEP_FAILED, tests/integration/workdir.sh).
UNDER_LOAD_RUNS ?= 3
test-under-load:
	@command -v stress-ng >/dev/null || { echo "test-under-load needs stress-ng (Debian package stress-ng)"; exit 1; }
	@stress-ng --cpu 2 --quiet & sp=$$!; \
	trap 'kill $$sp 2>/dev/null; wait $$sp 2>/dev/null' EXIT; trap 'exit 130' INT TERM; \
	fail=0; times=""; for i in $$(seq 1 $(UNDER_LOAD_RUNS)); do s=$$(date +%s); \
	  if MLF_KEEP_FAILED=$${MLF_KEEP_FAILED:-$(CURDIR)/$(BUILD)/failed-tests} $(MAKE) --no-print-directory test; then r=passed; else r=FAILED; fail=1; fi; \
	  t="run $$i: $$r in $$(( $$(date +%s) - s )) s"; times="$$times$$t\n"; echo "test-under-load: $$t"; \
	done; printf "test-under-load (stress-ng --cpu 2 beside):\n$$times"; exit $$fail

help:
	@echo "make            build every program under $(BUILD)/ (never installs anything)"
	@echo "make deps       install the Debian packages (apt; root or sudo)"
	@echo "make test       deps, then unit tests (Check) and integration tests (root, namespaces)"
	@echo "make test-under-load  make test 3 times with stress-ng --cpu 2 beside it"
	@echo "make run        deps, then the main job (see README)"
	@echo "make check-layers  include and call-graph layer checks"
	@echo "make install    headers, libmlfabric.so, mlfabric.pc, programs to PREFIX (/usr/local); DESTDIR honoured"
	@echo "make uninstall  removes what make install installed"
	@echo "benchmarks:     $(BENCHES)"

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
