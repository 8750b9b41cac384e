# OpenSHMEM conformance tests: tests/shmem/test_*.c built with oshcc's
# flags against the static and shared library, run by run.sh under oshrun
# with 1 to 4 PEs and under mpirun; shmemx_init.c, which makes its own
# hmc_world, also links libhmc.

SHMEM_TEST_SRCS	:= $(sort $(wildcard tests/shmem/test_*.c))
SHMEM_TESTS	:= $(SHMEM_TEST_SRCS:tests/shmem/%.c=$(O)/tests/shmem/%)
SHMEMX_TEST	:= $(O)/tests/shmem/shmemx_init
PSHMEM_STATIC	:= $(O)/tests/shmem/pshmem_static

all: $(SHMEM_TESTS) $(SHMEMX_TEST) $(PSHMEM_STATIC)

# The profiler of test_pshmem.c linked statically: its shmem_long_put must
# not clash with the one in libhmc_shmem.a.
$(PSHMEM_STATIC): tests/shmem/test_pshmem.c tests/shmem/check.h $(SHMEM_A) \
		$(O)/lib/libhmc.a $(SHMEM_HDRS)
	@mkdir -p $(@D)
	$(CC) -Iinclude/hmc-shmem $(HMC_CFLAGS) $(CFLAGS) $< -o $@ \
		$(SHMEM_A) $(O)/lib/libhmc.a $(LIB_LIBS)

$(SHMEMX_TEST): tests/shmem/shmemx_init.c tests/shmem/check.h $(SHMEM_SO) \
		$(O)/shmem/libhmc_shmem.so $(SHMEM_HDRS) $(O)/lib/libhmc.so
	@mkdir -p $(@D)
	$(CC) -Iinclude/hmc-shmem -Iinclude $(HMC_CFLAGS) $(CFLAGS) $< -o $@ \
		-L$(O)/shmem -L$(O)/lib \
		-Wl,-rpath,$(abspath $(O))/shmem:$(abspath $(O))/lib \
		-lhmc_shmem -lhmc

$(O)/tests/shmem/%: tests/shmem/%.c tests/shmem/check.h $(SHMEM_SO) \
		$(O)/shmem/libhmc_shmem.so $(SHMEM_HDRS)
	@mkdir -p $(@D)
	$(CC) -Iinclude/hmc-shmem $(HMC_CFLAGS) $(CFLAGS) $< -o $@ \
		-L$(O)/shmem -Wl,-rpath,$(abspath $(O))/shmem -lhmc_shmem

.PHONY: shmem-test
_test: shmem-test
shmem-test: $(SHMEM_TESTS) $(SHMEMX_TEST) $(PSHMEM_STATIC) $(OSHRUN) $(OSHCC)
	@tests/shmem/run.sh $(O)

# make bench: tests/bench/shmem.sh, a section of tests/bench/bench.sh, runs
# the same benchmark source built with libhmc_shmem and with Open MPI's
# oshcc, and Open MPI's MPI collectives, on this host. The Open MPI
# programs are built only for the benchmark, so that a plain `make` needs
# no Open MPI. `make bench-shmem` runs this section alone.
SHMEM_BENCH	:= $(O)/tests/bench/shmem_bench_hmc
SHMEM_BENCH_OMPI := $(O)/tests/bench/shmem_bench_ompi
MPI_COLL	:= $(O)/tests/bench/mpi_coll
# Open MPI's by path: an installed libhmc_shmem's oshcc may come first in PATH.
OMPI_OSHCC	?= /usr/bin/oshcc

all: $(SHMEM_BENCH)

$(SHMEM_BENCH): tests/bench/shmem_bench.c $(SHMEM_SO) $(O)/shmem/libhmc_shmem.so \
		$(SHMEM_HDRS)
	@mkdir -p $(@D)
	$(CC) -Iinclude/hmc-shmem $(HMC_CFLAGS) $(CFLAGS) $< -o $@ \
		-L$(O)/shmem -Wl,-rpath,$(abspath $(O))/shmem -lhmc_shmem

$(SHMEM_BENCH_OMPI): tests/bench/shmem_bench.c
	@mkdir -p $(@D)
	$(OMPI_OSHCC) $(HMC_CFLAGS) $(CFLAGS) $< -o $@

$(MPI_COLL): tests/bench/mpi_coll.c
	@mkdir -p $(@D)
	mpicc $(HMC_CFLAGS) $(CFLAGS) $< -o $@

.PHONY: bench-shmem
bench-host: $(SHMEM_BENCH) $(SHMEM_BENCH_OMPI) $(MPI_COLL) $(OSHRUN)
bench-shmem: $(SHMEM_BENCH) $(SHMEM_BENCH_OMPI) $(MPI_COLL) $(OSHRUN)
	@O=$(O) tests/bench/shmem.sh
