# Host benchmarks of `make bench` (tests/bench/bench.sh): hmcperf against
# ucx_perftest and against sockpp, a raw socket ping-pong, and the shm
# section (tests/bench/shm.sh: memcpy, a store ping-pong, UCX, Python),
# printing RATIO lines. Needs HMCPERF from tools/tools.mk, included before
# this fragment.

SOCKPP		:= $(O)/tests/bench/sockpp
MEMCPY_BW	:= $(O)/tests/bench/memcpy_bw
STORE_PINGPONG	:= $(O)/tests/bench/store_pingpong
BENCH_REPS	?= 11
VM_TEST_PROGS	+= $(MEMCPY_BW)	# the shm benchmark's reference, in the guest

all: $(SOCKPP) $(MEMCPY_BW) $(STORE_PINGPONG)

# The shm put_lat reference times its round trips with hmcperf's clock.
$(STORE_PINGPONG): tests/bench/store_pingpong.c tools/hmcperf_clock.c tools/hmcperf.h
	@mkdir -p $(@D)
	$(CC) $(HMC_CPPFLAGS) -Itools $(HMC_CFLAGS) $(CFLAGS) $< \
		tools/hmcperf_clock.c -o $@

$(O)/tests/bench/%: tests/bench/%.c
	@mkdir -p $(@D)
	$(CC) $(HMC_CPPFLAGS) $(HMC_CFLAGS) $(CFLAGS) $< -o $@

.PHONY: bench-host
_bench: bench-host
bench-host: $(HMCPERF) $(SOCKPP) $(MEMCPY_BW) $(STORE_PINGPONG) $(O)/lib/libhmc.so
	@HMCPERF=$(HMCPERF) SOCKPP=$(SOCKPP) BENCH_REPS=$(BENCH_REPS) \
		BENCH_BIN=$(O)/tests/bench tests/bench/bench.sh
