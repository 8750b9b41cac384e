# hmc.ko tests (included by the top Makefile).
#
# test_kmod (Check) and kmod_bench run in the QEMU guest through
# tests/vm/suites/10-kmod.sh and tests/vm/bench/10-kmod.sh, test_dmabuf
# (dma-buf export, import, vgem) through 20-dmabuf.sh and test_events
# (peer reports, netlink, hmcstat, RDMA events) through 21-events.sh; they
# are built here on the host and share kmod_test.c (runner) and kmod_util.c. `make test` also checks the ABI on the host: the uapi
# layout as user space compiles it (abi_check.c) and, with pahole, that no
# struct hmc_* in the built hmc.ko has a hole.

KMOD_TESTS_OUT	:= $(O)/tests/kmod
KMOD_TEST	:= $(KMOD_TESTS_OUT)/test_kmod
KMOD_DMABUF	:= $(KMOD_TESTS_OUT)/test_dmabuf
KMOD_EVENTS	:= $(KMOD_TESTS_OUT)/test_events
KMOD_BENCH	:= $(KMOD_TESTS_OUT)/kmod_bench
KMOD_ABI_CHECK	:= $(KMOD_TESTS_OUT)/abi_check
KMOD_TESTS_HDRS	:= tests/kmod/kmod_util.h tests/kmod/kmod_test.h tests/kmod/events.h \
		   tests/kmod/mover/hmc_test_mover.h \
		   uapi/linux/hmc.h
kmod_objs	= $(patsubst tests/kmod/%.c,$(KMOD_TESTS_OUT)/%.o,$(1))
KMOD_TEST_COMMON := $(call kmod_objs,tests/kmod/kmod_test.c tests/kmod/kmod_util.c)
KMOD_TEST_OBJS	:= $(call kmod_objs,$(wildcard tests/kmod/test_*.c))
KMOD_DMABUF_OBJS := $(call kmod_objs,$(wildcard tests/kmod/dmabuf_*.c))
KMOD_EVENTS_OBJS := $(call kmod_objs,$(wildcard tests/kmod/events_*.c))
VERBS_LIBS	:= $(shell pkg-config --libs libibverbs 2>/dev/null || echo -libverbs)
# DRM uapi headers (vgem) and libnl for the netlink tests.
KMOD_TEST_CFLAGS := $(shell pkg-config --cflags libdrm libnl-genl-3.0 2>/dev/null)
NL_LIBS		:= $(shell pkg-config --libs libnl-genl-3.0 2>/dev/null)
# The uapi structs, which pahole must find in hmc.ko's debug info.
KMOD_UAPI_STRUCTS := hmc_version hmc_buf_alloc hmc_buf_pin hmc_buf_free \
		     hmc_buf_info hmc_stats hmc_buf_export hmc_peer_import \
		     hmc_peer_release hmc_peer_info hmc_sg_entry hmc_peer_state

# Programs the guest suites and benchmarks run (see tests/vm/vm.mk), and
# the test exporter module (tests/kmod/mover) that 20-dmabuf.sh and
# 21-events.sh load; it is built like hmc.ko and never installed.
VM_TEST_PROGS	+= $(KMOD_TEST) $(KMOD_DMABUF) $(KMOD_EVENTS) $(KMOD_BENCH) \
		   kmod-test-mover

.PHONY: kmod-tests kmod-abi-check kmod-test-mover kmod-test-mover-clean
all: kmod-tests
kmod-tests: $(KMOD_TEST) $(KMOD_DMABUF) $(KMOD_EVENTS) $(KMOD_BENCH)
_test: kmod-abi-check

kmod-test-mover:
	$(MAKE) -C $(KDIR) M=$(CURDIR)/tests/kmod/mover W=1 modules

clean: kmod-test-mover-clean
kmod-test-mover-clean:
	$(MAKE) -C $(KDIR) M=$(CURDIR)/tests/kmod/mover clean

$(KMOD_TESTS_OUT)/%.o: tests/kmod/%.c $(KMOD_TESTS_HDRS)
	@mkdir -p $(@D)
	$(CC) $(HMC_CPPFLAGS) $(HMC_CFLAGS) $(CFLAGS) $(CHECK_CFLAGS) \
		$(KMOD_TEST_CFLAGS) -c -o $@ $<

$(KMOD_TEST): $(KMOD_TEST_OBJS) $(KMOD_TEST_COMMON)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(VERBS_LIBS)

$(KMOD_DMABUF): $(KMOD_DMABUF_OBJS) $(KMOD_TEST_COMMON)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(VERBS_LIBS)

$(KMOD_EVENTS): $(KMOD_EVENTS_OBJS) $(KMOD_TEST_COMMON)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(VERBS_LIBS) \
		$(NL_LIBS)

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
