# tests/tests.mk - test support and test programs that are not one component's: the planner's
# independent checker and batch generator (libplantest.a, also used by bench-plan), the fabric's
# Check tests and the programs of tests/integration/*.sh. Tests may include any layer.
INC_TESTS := -Itests -Itests/unit -Itools -Idataplane -Ilib/mlfabric -Ischeduler/daemon \
	     $(INC_PLANIO) $(INC_MLFABRIC) $(INC_LEARN) $(CHECK_CFLAGS)
INC_tests             := $(INC_TESTS)
INC_tests/unit        := $(INC_TESTS)
INC_tests/integration := $(INC_TESTS)

$(LIBPLANTEST): $(BUILD)/tests/plan_check.o $(BUILD)/tests/gen_batch.o

# test programs of tests/integration/fabric_*.sh
PROGRAMS += $(BUILD)/tests/fabric_app $(BUILD)/tests/fabric_fakesched
$(BUILD)/tests/fabric_%: $(BUILD)/tests/integration/fabric_%.o $(MLFABRIC_LIBS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) $(LDLIBS) -lpthread

# a hostile or careless app of the dataplane's socket (tests/integration/test_dp_appsock.sh)
# frames forged from a third namespace (tests/integration/test_dp_forge.sh)
PROGRAMS += $(BUILD)/tests/dp_forge
$(BUILD)/tests/dp_forge: $(BUILD)/tests/integration/dp_forge.o $(LIB_PROTO) $(LIB_BASE)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) $(LDLIBS)

PROGRAMS += $(BUILD)/tests/dp_hostile
$(BUILD)/tests/dp_hostile: $(BUILD)/tests/integration/dp_hostile.o $(LIB_PROTO) $(LIB_BASE)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) $(LDLIBS)

UNIT_TESTS += $(BUILD)/tests/test_fabric $(BUILD)/tests/test_fabric_lib $(BUILD)/tests/test_fabric_wait \
	      $(BUILD)/tests/test_dp_timeout
$(BUILD)/tests/test_fabric $(BUILD)/tests/test_fabric_lib $(BUILD)/tests/test_fabric_wait \
$(BUILD)/tests/test_dp_timeout: $(BUILD)/tests/%: $(BUILD)/tests/unit/%.o $(MLFABRIC_LIBS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(CHECK_LIBS) $(JANSSON_LIBS) $(LDLIBS) -lpthread

UNIT_TESTS += $(BUILD)/tests/test_fabric_verify
$(BUILD)/tests/test_fabric_verify: $(BUILD)/tests/unit/test_fabric_verify.o $(MLFABRIC_LIBS) | $(BUILD)/mlf-verify
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $(filter-out $(BUILD)/mlf-verify,$^) $(CHECK_LIBS) $(JANSSON_LIBS) $(LDLIBS)

INTEG_TESTS += tests/integration/fabric_direct.sh tests/integration/fabric_getpar.sh tests/integration/fabric_relay.sh tests/integration/fabric_auth.sh \
	       tests/integration/fabric_announce.sh \
	       tests/integration/fabric_aggregate.sh tests/integration/fabric_aggregate_skip.sh \
	       tests/integration/fabric_e2e.sh tests/integration/fabric_sync.sh tests/integration/fabric_restart.sh \
	       tests/integration/fabric_clock.sh tests/integration/test_dp_arp.sh
# the runner launching over ssh into emulated hosts (docs/deploy.md "Trying it on one machine")
INTEG_TESTS += tests/integration/cluster_ssh.sh
# the kill-server fault scenario the same way: the kill delivered over the server's ssh connection
# (make test's only kill-server run: every check of the local fault_kill_server.sh, which make
# fault-tests runs, plus the ssh ones; tools/cluster.mk)
INTEG_TESTS += tests/integration/fault_kill_server_ssh.sh
# the runner launching every process as an srun step of a local Slurm (one slurmd per namespace,
# docs/deploy.md "Slurm")
INTEG_TESTS += tests/integration/cluster_slurm.sh

# every synchronization system by name alone on a short experiment: its accuracy rises
INTEG_TESTS += tests/integration/systems_by_name.sh
# a new user's own script: venv, pip install ., mlf-cluster run EXP -- python3 train.py (docs/python.md)
INTEG_TESTS += tests/integration/python_newuser.sh
# two dataplanes over a net_memif pair (no namespaces, no lock): byte-exact in both loops, the
# counters, zero-copy send (issue 35)
INTEG_TESTS += tests/integration/test_dp_memif.sh

# the measured capacity estimate alone (sched_capest.h, docs/scheduler.md "Measured capacities"): pure
UNIT_TESTS += $(BUILD)/tests/test_sched_capest
$(BUILD)/tests/test_sched_capest: $(BUILD)/tests/unit/test_sched_capest.o $(BUILD)/scheduler/daemon/sched_capest.o
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(CHECK_LIBS) $(LDLIBS) -lm
# the network monitor measures: links shaped below their declared capacity, nobody told; the
# scheduler's estimate falls to the shaped rate (docs/scheduler.md "Measured capacities")
INTEG_TESTS += tests/integration/netmon_measured.sh
