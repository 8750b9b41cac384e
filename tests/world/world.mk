# hmc_world tests (tests/world/run.sh): ranks started by hmcrun, mpirun
# (PMIx), by hand with torchrun's and HMC's variables, a unique id,
# membership churn, refused secrets and certificates, missing ranks.

WTEST_DIR	:= $(O)/tests/world
WORLD_TEST	:= $(WTEST_DIR)/world_test
TLS_COMM	:= $(WTEST_DIR)/tls_comm

VM_TEST_PROGS	+= $(WORLD_TEST)	# tests/vm/suites/67-world-events.sh

all: $(WORLD_TEST) $(TLS_COMM)

$(TLS_COMM): tests/world/tls_comm.c tests/unit/pattern.h include/hmc/hmc.h \
		$(LIBHMC_A)
	@mkdir -p $(@D)
	$(CC) $(HMC_CPPFLAGS) -Itests/unit $(HMC_CFLAGS) $(CFLAGS) $< -o $@ \
		$(LIBHMC_A) $(LIB_LIBS)

$(WORLD_TEST): tests/world/world_test.c tests/unit/pattern.h \
		include/hmc/world.h $(LIBHMC_A)
	@mkdir -p $(@D)
	$(CC) $(HMC_CPPFLAGS) -Itests/unit $(HMC_CFLAGS) $(CFLAGS) $< -o $@ \
		$(LIBHMC_A) $(LIB_LIBS)

.PHONY: world-test
_test: world-test
world-test: $(WORLD_TEST) $(TLS_COMM) $(HMCRUN)
	@O=$(O) tests/world/run.sh

# make bench: world start-up and a 64 B allgather against Open MPI
# (tests/bench/world_bench.sh). Explicit rules: bench.mk's pattern rule
# builds its programs without libhmc.
WORLD_BENCH	:= $(O)/tests/bench/world_bench
MPI_WORLD	:= $(O)/tests/bench/mpi_world

all: $(WORLD_BENCH) $(MPI_WORLD)

$(WORLD_BENCH): tests/bench/world_bench.c include/hmc/world.h $(LIBHMC_A)
	@mkdir -p $(@D)
	$(CC) $(HMC_CPPFLAGS) $(HMC_CFLAGS) $(CFLAGS) $< -o $@ $(LIBHMC_A) \
		$(LIB_LIBS)

$(MPI_WORLD): tests/bench/mpi_world.c
	@mkdir -p $(@D)
	mpicc $(CFLAGS) $< -o $@

# tests/bench/bench.sh runs world_bench.sh as one of its sections;
# bench-world runs it alone.
bench-host: $(WORLD_BENCH) $(MPI_WORLD) $(HMCRUN)
.PHONY: bench-world
bench-world: $(WORLD_BENCH) $(MPI_WORLD) $(HMCRUN)
	@O=$(O) tests/bench/world_bench.sh
