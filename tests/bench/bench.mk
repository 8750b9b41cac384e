# Host benchmarks of `make bench`: tests/bench/bench.sh runs each section
# script (ucx.sh: hmcperf over UCX against ucx_perftest and a socket
# ping-pong; tcp.sh: the tcp transport against raw TCP and UCX tcp between
# two network namespaces; shm.sh: memfd shm against memcpy, a store
# ping-pong, UCX and Python; ...), printing RATIO lines and the total time.
# Needs HMCPERF from tools/tools.mk, included before this fragment.

SOCKPP		:= $(O)/tests/bench/sockpp
MEMCPY_BW	:= $(O)/tests/bench/memcpy_bw
STORE_PINGPONG	:= $(O)/tests/bench/store_pingpong
# The messages section (tests/bench/msg.sh) and its Open MPI reference
MSG_BENCH	:= $(O)/tests/bench/msg_bench
MPI_BENCH	:= $(O)/tests/bench/mpi_bench
BENCH_REPS	?= 3
VM_TEST_PROGS	+= $(MEMCPY_BW)	# the shm benchmark's reference, in the guest

all: $(SOCKPP) $(MEMCPY_BW) $(STORE_PINGPONG) $(MSG_BENCH) $(MPI_BENCH)

# The shm put_lat reference times its round trips with hmcperf's clock.
$(STORE_PINGPONG): tests/bench/store_pingpong.c tools/hmcperf_clock.c tools/hmcperf.h
	@mkdir -p $(@D)
	$(CC) $(HMC_CPPFLAGS) -Itools $(HMC_CFLAGS) $(CFLAGS) $< \
		tools/hmcperf_clock.c -o $@

# Explicit rules: the pattern rule below builds without libhmc.
$(MSG_BENCH): tests/bench/msg_bench.c $(O)/lib/libhmc.so include/hmc/hmc.h
	@mkdir -p $(@D)
	$(CC) $(HMC_CPPFLAGS) $(HMC_CFLAGS) $(CFLAGS) $< -o $@ \
		-L$(O)/lib -Wl,-rpath,'$$ORIGIN/../../lib' -lhmc

$(MPI_BENCH): tests/bench/mpi_bench.c
	@mkdir -p $(@D)
	mpicc $(HMC_CFLAGS) $(CFLAGS) $< -o $@

$(O)/tests/bench/%: tests/bench/%.c
	@mkdir -p $(@D)
	$(CC) $(HMC_CPPFLAGS) $(HMC_CFLAGS) $(CFLAGS) $< -o $@

.PHONY: bench-host
_bench: bench-host
bench-host: $(HMCPERF) $(SOCKPP) $(MEMCPY_BW) $(STORE_PINGPONG) $(MSG_BENCH) \
		$(MPI_BENCH) $(O)/lib/libhmc.so
	@HMCPERF=$(HMCPERF) SOCKPP=$(SOCKPP) MEMCPY_BW=$(MEMCPY_BW) \
		MSG_BENCH=$(MSG_BENCH) MPI_BENCH=$(MPI_BENCH) \
		BENCH_REPS=$(BENCH_REPS) BENCH_BIN=$(O)/tests/bench \
		tests/bench/bench.sh
