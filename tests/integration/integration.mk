# Integration tests: several processes (ranks) over loopback, threads on
# one communicator, three network namespaces, and faults (killed peers,
# wrong secrets, hostile control traffic). `make integration-test` runs
# them all through tests/integration/run.sh (test_kills: a listener with
# the defaults survives 120 dialers killed at random moments while it
# serves a good client); test_comm also runs in the
# guest with ConnBuffers backed by /dev/hmc (tests/vm/suites/60-comm-kmod.sh),
# and with the shm transport (65-shm.sh); peer_events is the scripted run of
# the guest's event test (66-peer-events.sh).

ITEST_DIR	:= $(O)/tests/integration
ITEST_PROGS	:= $(ITEST_DIR)/test_comm $(ITEST_DIR)/test_threads \
		   $(ITEST_DIR)/test_faults $(ITEST_DIR)/peer_events \
		   $(ITEST_DIR)/test_lifetime $(ITEST_DIR)/test_kills \
		   $(ITEST_DIR)/test_tcp $(ITEST_DIR)/test_msg \
		   $(ITEST_DIR)/test_mr
ITEST_OBJS	:= $(ITEST_DIR)/itest.o
ITEST_CFLAGS	:= $(HMC_CPPFLAGS) -Ilib -Itests/unit $(HMC_CFLAGS) $(CFLAGS)
VM_TEST_PROGS	+= $(ITEST_PROGS)

all: $(ITEST_PROGS)

$(ITEST_DIR)/itest.o: tests/integration/itest.c tests/integration/itest.h \
		tests/unit/pattern.h include/hmc/hmc.h
	@mkdir -p $(@D)
	$(CC) $(ITEST_CFLAGS) -c $< -o $@

$(ITEST_DIR)/%: tests/integration/%.c tests/integration/itest.h \
		$(ITEST_OBJS) $(LIBHMC_A) $(LIB_HDRS)
	@mkdir -p $(@D)
	$(CC) $(ITEST_CFLAGS) $< -o $@ $(ITEST_OBJS) $(LIBHMC_A) $(LIB_LIBS)

.PHONY: integration-test
_test: integration-test
integration-test: $(ITEST_PROGS) $(HMCPERF)	# hmcperf-shm runs hmcperf
	@O=$(O) tests/integration/run.sh
