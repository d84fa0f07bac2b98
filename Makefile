# MLfabric-C top-level Makefile: builds every program and library under build/.
#
# Each component directory owns one or more `*.mk` fragments (e.g. scheduler/module.mk) that
# add to the variables below; this file only holds the shared rules. Conventions:
#   PROGRAMS      += build/<name>            programs built by `make`
#   UNIT_TESTS    += build/tests/<name>      Check test binaries run by `make test`
#   INTEG_TESTS   += tests/integration/x.sh  scripts run by `make test` (need root)
#   BENCHES       += bench-<name>            phony targets listed by `make help`
# Packages come from pkg-config; a missing one is a clear error that names tools/install-deps.

BUILD   := build
CC      ?= gcc
OPT     ?= -O2
CFLAGS  ?= $(OPT) -g
CFLAGS  += -std=gnu11 -Wall -Wextra -Wno-unused-parameter -MMD -MP -Iinclude -Ilib -Ischeduler -Itests/unit
LDLIBS  += -lm

define need_pkg
$(if $(shell pkg-config --exists $(1) && echo ok),,$(error pkg-config cannot find '$(1)': run 'sudo tools/install-deps' (Debian package $(2))))
endef

# Packages every build needs; DPDK is checked by the dataplane fragment. On a fresh machine the
# first make installs what is missing (tools/install-deps, apt; needs root or sudo).
ifeq ($(filter clean help,$(MAKECMDGOALS)),)
ifeq ($(shell tools/install-deps --check >/dev/null 2>&1 || echo missing),missing)
$(info make: Debian packages missing, running tools/install-deps)
$(shell tools/install-deps >&2)
endif
$(call need_pkg,jansson,libjansson-dev)
$(call need_pkg,check,check)
$(call need_pkg,zlib,zlib1g-dev)
endif

JANSSON_CFLAGS := $(shell pkg-config --cflags jansson 2>/dev/null)
JANSSON_LIBS   := $(shell pkg-config --libs jansson 2>/dev/null)
CHECK_CFLAGS   := $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS     := $(shell pkg-config --libs check 2>/dev/null)
CFLAGS         += $(JANSSON_CFLAGS)

PROGRAMS    :=
UNIT_TESTS  :=
INTEG_TESTS :=
BENCHES     :=

.PHONY: all test unit-test integration-test clean help run
all: programs

# libmlf: DPDK-free shared code (logging, config, vector kernels, wire and control formats).
LIBMLF_SRCS := $(wildcard lib/*.c)
LIBMLF      := $(BUILD)/libmlf.a
$(LIBMLF): $(LIBMLF_SRCS:%.c=$(BUILD)/%.o)
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^

$(BUILD)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(EXTRA_CFLAGS_$(<D)) -c $< -o $@

include $(sort $(wildcard */*.mk))

.PHONY: programs
programs: $(PROGRAMS)

unit-test: $(UNIT_TESTS)
	@fail=0; for t in $(UNIT_TESTS); do echo "== $$t"; $$t || fail=1; done; \
	if [ $$fail -ne 0 ]; then echo "UNIT TESTS FAILED"; exit 1; fi; echo "unit tests passed"

integration-test: $(PROGRAMS)
	@fail=0; for t in $(INTEG_TESTS); do echo "== $$t"; \
	  if [ "$$(id -u)" != 0 ]; then echo "SKIP $$t (needs root for network namespaces)"; continue; fi; \
	  timeout 600 $$t || { echo "FAILED: $$t"; fail=1; }; done; \
	if [ $$fail -ne 0 ]; then echo "INTEGRATION TESTS FAILED"; exit 1; fi; echo "integration tests passed"

test: unit-test integration-test

help:
	@echo "make            build every program under $(BUILD)/"
	@echo "make test       unit tests (Check) and integration tests (root, namespaces)"
	@echo "make run        the main job (see README)"
	@echo "benchmarks:     $(BENCHES)"

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
