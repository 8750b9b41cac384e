# Sanitizer tiers of `make test`. Each re-enters make with its own build
# directory and flags, so that libhmc (lib/lib.mk's sources, whatever they
# are), the tools and the test programs are built from the same rules as
# the plain build, and the suites run through their own runners: a test
# added to a suite is sanitized with no edit here.
#
#   make san-asan   AddressSanitizer + UndefinedBehaviorSanitizer: every
#                   suite in SAN_SUITES and the loopback demo (hmcperf)
#   make san-tsan   ThreadSanitizer: the integration cases TSAN_CASES names
#                   and the pool cases TSAN_POOL_CASES names
#
# A fragment that adds a host suite can add its target to SAN_SUITES (any
# fragment, included before or after this one). Every sanitizer stops the
# process at its first report, so a finding fails its suite.

ASAN_O		?= $(O)-asan
TSAN_O		?= $(O)-tsan
SAN_SUITES	+= unit-test integration-test
# run.sh's case names (one bash pattern): the thread tests, the regions'
# over tcp and UCX (a thread posts while another deregisters), and the race
# stress, but for the race over the tcp transport: its two ranks share one
# process, and what orders the transport's sendmsg() of a get's reply
# before the next write to that range is the socket between them, a
# happens-before TSan does not model (UCX's copies are the same, inside
# UCX). It runs in the ASan tier and the plain build.
TSAN_CASES	?= @(threads-*|*-race-!(xtcp)|mr-@(xtcp|ucx-*))
# tests/pool/run.sh's cases: copies from several threads, asynchronous and
# batched, the owner's service thread of device segments with runtimes
# that copy on streams (the mock CUDA and HIP) and synchronously
# (AscendCL), a rank leaving, joining again and killed. Not the netns
# cases, which run over the tcp transport: its progress thread sends our
# segment's bytes for a peer's get and lands a peer's puts, and what
# orders those with our own copies on either side of a barrier runs
# through the other processes only (the world's barrier, the peer's
# frames), which TSan cannot see, even with io_sync=2; the communicator
# offers the pool no fence with its progress thread to take in the
# barrier, as the device service's lock is (lib/pool/owner.c).
TSAN_POOL_CASES	?= @(host-*|cuda-mock-2|rocm-mock-2|ascend-mock-4|churn-*)

ASAN_CFLAGS	:= -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer \
		   -fno-sanitize-recover=all
# the loopback demo, at fewer sizes
ASAN_RUN_FLAGS	:= -s 8,64K -n 100 -O 8
TSAN_CFLAGS	:= -O1 -g -fsanitize=thread -fno-omit-frame-pointer
# No suppressions: LeakSanitizer and ASan find nothing to excuse in UCX.
ASAN_ENV	:= ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:strict_string_checks=1 \
		   UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
# UCX patches mmap and friends in place (its memory hooks) unless told not
# to, which breaks TSan's own interception of them.
TSAN_ENV	:= TSAN_OPTIONS='halt_on_error=1 second_deadlock_stack=1 suppressions=$(CURDIR)/tests/san/tsan.supp' \
		   UCX_MEM_MMAP_HOOK_MODE=none
# The sanitizer runtimes of gcc 12 and clang 14 cannot map their shadow
# where the kernel randomises mmap with more than 28 bits (TSan: "unexpected
# memory mapping", ASan: endless DEADLYSIGNAL), as newer kernels may: the
# tiers (fuzz.mk's too) run without address randomisation where the
# sandbox lets them turn it off, as before where it does not.
SAN_NORAND	:= $(shell setarch $$(uname -m) -R true 2>/dev/null && \
		     echo setarch $$(uname -m) -R)
SAN_MAKE	= $(MAKE) --no-print-directory

# What a sanitized tree builds; run by the re-entered make, where O is
# the tier's own directory.
.PHONY: san-asan san-tsan san-build san-asan-suites
san-build: lib $(TOOLS_PROGS) $(UNIT_PROGS) $(ITEST_PROGS)
san-asan-suites: $(SAN_SUITES) run-demo

_test: san-asan san-tsan

# tier NAME COMMANDS: runs them, prints the tier's wall time, keeps the status
san_tier = start=$$(date +%s); rc=0; ( $(2) ) || rc=$$?; \
	echo "tier $(1): $$(( $$(date +%s) - start )) s$$([ $$rc = 0 ] || echo ', FAILED')"; \
	exit $$rc

san-asan:
	@$(call san_tier,asan,\
		$(SAN_MAKE) O=$(ASAN_O) CFLAGS='$(ASAN_CFLAGS)' san-build && \
		$(ASAN_ENV) $(SAN_NORAND) $(SAN_MAKE) O=$(ASAN_O) CFLAGS='$(ASAN_CFLAGS)' \
			RUN_FLAGS='$(ASAN_RUN_FLAGS)' san-asan-suites)

san-tsan:
	@$(call san_tier,tsan,\
		$(SAN_MAKE) O=$(TSAN_O) CFLAGS='$(TSAN_CFLAGS)' san-build && \
		$(TSAN_ENV) O=$(TSAN_O) $(SAN_NORAND) \
			tests/integration/run.sh '$(TSAN_CASES)' && \
		$(TSAN_ENV) O=$(TSAN_O) $(SAN_NORAND) \
			tests/pool/run.sh '$(TSAN_POOL_CASES)')

.PHONY: san-clean
clean: san-clean
san-clean:
	rm -rf $(ASAN_O) $(TSAN_O)
