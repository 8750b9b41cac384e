# Host benchmarks of `make bench` (tests/bench/bench.sh): hmcperf against
# ucx_perftest and against sockpp, a raw socket ping-pong, printing RATIO
# lines. Needs HMCPERF from tools/tools.mk, included before this fragment.

SOCKPP		:= $(O)/tests/bench/sockpp
MEMCPY_BW	:= $(O)/tests/bench/memcpy_bw
BENCH_REPS	?= 11
VM_TEST_PROGS	+= $(MEMCPY_BW)	# the shm benchmark's reference, in the guest

all: $(SOCKPP) $(MEMCPY_BW)

$(O)/tests/bench/%: tests/bench/%.c
	@mkdir -p $(@D)
	$(CC) $(HMC_CPPFLAGS) $(HMC_CFLAGS) $(CFLAGS) $< -o $@

.PHONY: bench-host
_bench: bench-host
bench-host: $(HMCPERF) $(SOCKPP)
	@HMCPERF=$(HMCPERF) SOCKPP=$(SOCKPP) BENCH_REPS=$(BENCH_REPS) \
		tests/bench/bench.sh
