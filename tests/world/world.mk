# hmc_world tests (tests/world/run.sh): ranks started by hmcrun, mpirun
# (PMIx), by hand with torchrun's and HMC's variables, a unique id,
# membership churn, refused secrets and certificates, missing ranks.

WTEST_DIR	:= $(O)/tests/world
WORLD_TEST	:= $(WTEST_DIR)/world_test

all: $(WORLD_TEST)

$(WORLD_TEST): tests/world/world_test.c tests/unit/pattern.h \
		include/hmc/world.h $(LIBHMC_A)
	@mkdir -p $(@D)
	$(CC) $(HMC_CPPFLAGS) -Itests/unit $(HMC_CFLAGS) $(CFLAGS) $< -o $@ \
		$(LIBHMC_A) $(LIB_LIBS)

.PHONY: world-test
_test: world-test
world-test: $(WORLD_TEST) $(HMCRUN)
	@O=$(O) tests/world/run.sh
