# Host benchmarks of `make bench` (tests/bench/bench.sh): hmcperf against
# ucx_perftest and against sockpp, a raw socket ping-pong, printing RATIO
# lines. Needs HMCPERF from tools/tools.mk, included before this fragment.

SOCKPP		:= $(O)/tests/bench/sockpp
MEMCPY_BW	:= $(O)/tests/bench/memcpy_bw
MSG_BENCH	:= $(O)/tests/bench/msg_bench
# Open MPI's reference for the messages section, where mpicc is installed
MPI_BENCH	:= $(if $(shell command -v mpicc 2>/dev/null),$(O)/tests/bench/mpi_bench)
BENCH_REPS	?= 11
VM_TEST_PROGS	+= $(MEMCPY_BW)	# the shm benchmark's reference, in the guest

all: $(SOCKPP) $(MEMCPY_BW) $(MSG_BENCH) $(MPI_BENCH)

$(MSG_BENCH): tests/bench/msg_bench.c $(LIBHMC_SO) include/hmc/hmc.h
	@mkdir -p $(@D)
	$(CC) $(HMC_CPPFLAGS) $(HMC_CFLAGS) $(CFLAGS) $< -o $@ \
		-L$(O)/lib -Wl,-rpath,'$$ORIGIN/../../lib' -lhmc

$(O)/tests/bench/mpi_bench: tests/bench/mpi_bench.c
	@mkdir -p $(@D)
	mpicc $(HMC_CFLAGS) $(CFLAGS) $< -o $@

$(O)/tests/bench/%: tests/bench/%.c
	@mkdir -p $(@D)
	$(CC) $(HMC_CPPFLAGS) $(HMC_CFLAGS) $(CFLAGS) $< -o $@

.PHONY: bench-host bench-msg
_bench: bench-host bench-msg
bench-host: $(HMCPERF) $(SOCKPP)
	@HMCPERF=$(HMCPERF) SOCKPP=$(SOCKPP) BENCH_REPS=$(BENCH_REPS) \
		tests/bench/bench.sh

bench-msg: $(MSG_BENCH) $(MPI_BENCH) lib
	@MSG_BENCH=$(MSG_BENCH) MPI_BENCH=$(O)/tests/bench/mpi_bench \
		BENCH_REPS=$(BENCH_REPS) tests/bench/msg.sh
