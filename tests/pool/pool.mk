# hmc_pool tests (tests/pool/run.sh): 2 and 4 ranks on one host under
# hmcrun, host and (mock) device segments, a rank leaving and one killed
# during copies, three network namespaces as three hosts.

POOL_TEST	:= $(O)/tests/pool/pool_test

all: $(POOL_TEST)

$(POOL_TEST): tests/pool/pool_test.c tests/unit/pattern.h include/hmc/pool.h \
		include/hmc/world.h $(LIBHMC_A)
	@mkdir -p $(@D)
	$(CC) $(HMC_CPPFLAGS) -Itests/unit $(HMC_CFLAGS) $(CFLAGS) $< -o $@ \
		$(LIBHMC_A) $(LIB_LIBS)

.PHONY: pool-test
_test: pool-test
SAN_SUITES += pool-test	# the ASan+UBSan tier runs it too (tests/san/san.mk)
pool-test: $(POOL_TEST) $(HMCRUN) $(GPU_MOCKS)
	@O=$(O) tests/pool/run.sh
# The TSan tier runs a part of the suite from its own tree (tests/san/san.mk).
san-build: $(POOL_TEST) $(HMCRUN) $(GPU_MOCKS)

# make bench: tests/bench/pool.sh, a section that tests/bench/bench.sh runs.
POOL_BENCH	:= $(O)/tests/bench/pool_bench

all: $(POOL_BENCH)

$(POOL_BENCH): tests/bench/pool_bench.c include/hmc/pool.h \
		include/hmc/world.h $(LIBHMC_A)
	@mkdir -p $(@D)
	$(CC) $(HMC_CPPFLAGS) $(HMC_CFLAGS) $(CFLAGS) $< -o $@ $(LIBHMC_A) \
		$(LIB_LIBS)

bench-host: $(POOL_BENCH) $(HMCRUN)
VM_TEST_PROGS	+= $(POOL_TEST) $(HMCRUN)	# the pool over verbs in the guest
