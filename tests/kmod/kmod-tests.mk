# hmc.ko tests (included by the top Makefile).
#
# test_kmod (Check) and kmod_bench run in the QEMU guest through
# tests/vm/suites/10-kmod.sh and tests/vm/bench/10-kmod.sh; they are built
# here on the host. `make test` also checks the ABI on the host: the uapi
# layout as user space compiles it (abi_check.c) and, with pahole, that no
# struct hmc_* in the built hmc.ko has a hole.

KMOD_TESTS_OUT	:= $(O)/tests/kmod
KMOD_TEST	:= $(KMOD_TESTS_OUT)/test_kmod
KMOD_BENCH	:= $(KMOD_TESTS_OUT)/kmod_bench
KMOD_ABI_CHECK	:= $(KMOD_TESTS_OUT)/abi_check
KMOD_TESTS_HDRS	:= tests/kmod/kmod_util.h tests/kmod/kmod_test.h uapi/linux/hmc.h
KMOD_TEST_OBJS	:= $(patsubst tests/kmod/%.c,$(KMOD_TESTS_OUT)/%.o, \
		     $(wildcard tests/kmod/test_*.c) tests/kmod/kmod_util.c)
VERBS_LIBS	:= $(shell pkg-config --libs libibverbs 2>/dev/null || echo -libverbs)
# The uapi structs, which pahole must find in hmc.ko's debug info.
KMOD_UAPI_STRUCTS := hmc_version hmc_buf_alloc hmc_buf_pin hmc_buf_free \
		     hmc_buf_info hmc_stats

# Programs the guest suites and benchmarks run (see tests/vm/vm.mk).
VM_TEST_PROGS	+= $(KMOD_TEST) $(KMOD_BENCH)

.PHONY: kmod-tests kmod-abi-check
all: kmod-tests
kmod-tests: $(KMOD_TEST) $(KMOD_BENCH)
_test: kmod-abi-check

$(KMOD_TESTS_OUT)/%.o: tests/kmod/%.c $(KMOD_TESTS_HDRS)
	@mkdir -p $(@D)
	$(CC) $(HMC_CPPFLAGS) $(HMC_CFLAGS) $(CFLAGS) $(CHECK_CFLAGS) -c -o $@ $<

$(KMOD_TEST): $(KMOD_TEST_OBJS)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(VERBS_LIBS)

$(KMOD_BENCH): $(KMOD_TESTS_OUT)/kmod_bench.o $(KMOD_TESTS_OUT)/kmod_util.o
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(VERBS_LIBS)

$(KMOD_ABI_CHECK): tests/kmod/abi_check.c uapi/linux/hmc.h
	@mkdir -p $(@D)
	$(CC) -std=c11 -Wall -Wextra -Wpedantic -Werror -Iuapi -o $@ $<

kmod-abi-check: $(KMOD_ABI_CHECK) kmod
	$(KMOD_ABI_CHECK)
	@for s in $(KMOD_UAPI_STRUCTS); do \
		pahole -C $$s hmc.ko | grep -q 'size:' || \
			{ echo "kmod-abi-check: pahole finds no struct $$s in hmc.ko" >&2; exit 1; }; \
	done
	@holes=$$(pahole hmc.ko | awk '/^struct /{ s = $$2 } /XXX/ && s ~ /^hmc_/ { print s }' | sort -u); \
	if [ -n "$$holes" ]; then \
		echo "kmod-abi-check: holes in struct $$holes (pahole hmc.ko)" >&2; exit 1; \
	fi
	@echo "ok - no holes in struct hmc_* (pahole hmc.ko)"
