# Host benchmarks of `make bench` (tests/bench/bench.sh): hmcperf against
# ucx_perftest and against sockpp, a raw socket ping-pong, printing RATIO
# lines. Needs HMCPERF from tools/tools.mk, included before this fragment.

SOCKPP		:= $(O)/tests/bench/sockpp
BENCH_REPS	?= 7

all: $(SOCKPP)

$(SOCKPP): tests/bench/sockpp.c
	@mkdir -p $(@D)
	$(CC) $(HMC_CPPFLAGS) $(HMC_CFLAGS) $(CFLAGS) $< -o $@

.PHONY: bench-host
_bench: bench-host
bench-host: $(HMCPERF) $(SOCKPP)
	@HMCPERF=$(HMCPERF) SOCKPP=$(SOCKPP) BENCH_REPS=$(BENCH_REPS) \
		tests/bench/bench.sh
