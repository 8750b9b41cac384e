# HMC top-level Makefile.
#
#   make              build libhmc, the tools, examples and test programs
#   make kmod         build hmc.ko against KDIR (Debian's 6.1, never the host's)
#   make run          install dependencies, build, run the loopback demo
#   make test         install dependencies, build, run every test (guest too)
#   make check        build, run the host's unit and integration suites and
#                     the layout and export checks: no installs, no DKMS, no
#                     guest (the fast inner loop; prints each tier's time)
#   make bench        install dependencies, build, print the RATIO lines (host)
#   make bench-vm     the guest benchmarks (soft-RoCE verbs, /dev/hmc), ~30 min
#   make fuzz         install dependencies, run each fuzzer FUZZ_SECONDS (300)
#   make vm-test      the kernel tests in the QEMU guest
#   make dkms-install register, build and install hmc.ko with DKMS for KVER
#   make install      libhmc, its header, pkg-config file and tools
#
# The kernel side is built by ./Kbuild; each user-space directory adds its
# targets through its own fragment, included below in dependency order. The
# public targets install missing packages first and then re-enter make, so
# that pkg-config sees what was just installed.

VERSION		:= 0.1.0
KVER		?= 6.1.0-56-amd64
KDIR		?= /lib/modules/$(KVER)/build
O		?= build
PREFIX		?= /usr/local
DESTDIR		?=

CC		?= cc
CFLAGS		?= -O2 -g
WARNINGS	:= -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
		   -Wno-unused-parameter -Werror=implicit-function-declaration
HMC_CPPFLAGS	:= -D_GNU_SOURCE -Iinclude -Iuapi
HMC_CFLAGS	:= -std=gnu11 $(WARNINGS)
CHECK_CFLAGS	:= $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS	:= $(shell pkg-config --libs check 2>/dev/null)

.PHONY: all deps kmod kmod-clean run test bench bench-vm vm-test dkms-install \
	dkms-uninstall install clean _run _test _bench
.DEFAULT_GOAL := all

all:

deps:
	@scripts/install-deps.sh

run: deps
	@$(MAKE) --no-print-directory _run
test: deps
	@$(MAKE) --no-print-directory _test
bench: deps
	@$(MAKE) --no-print-directory _bench
bench-vm: deps
	@$(MAKE) --no-print-directory vm-bench

kmod:
	$(MAKE) -C $(KDIR) M=$(CURDIR) W=1 modules

kmod-clean:
	$(MAKE) -C $(KDIR) M=$(CURDIR) clean

include lib/lib.mk
-include shmem/shmem.mk
-include tools/tools.mk
-include examples/examples.mk
-include python/python.mk
include tests/unit/unit.mk
-include tests/gpu/gpu.mk
-include tests/integration/integration.mk
-include tests/install/install.mk
-include tests/shmem/shmem-tests.mk
-include tests/world/world.mk
-include tests/pool/pool.mk
-include tests/verbs/verbs.mk
-include tests/bench/bench.mk
-include tests/kmod/kmod-tests.mk
-include tests/san/san.mk
-include tests/fuzz/fuzz.mk
-include tests/buf-kmod/buf-kmod.mk
-include tests/vm/vm.mk

CHECK_TIERS	:= check-layers check-exports unit-test integration-test
.PHONY: check
check: all
	@total=$$(date +%s); for t in $(CHECK_TIERS); do \
		start=$$(date +%s); \
		$(MAKE) --no-print-directory $$t; rc=$$?; \
		echo "== check: $$t: $$(( $$(date +%s) - start )) s$$( [ $$rc = 0 ] || echo ', FAILED')"; \
		[ $$rc = 0 ] || exit $$rc; \
	done; echo "== check: all tiers passed in $$(( $$(date +%s) - total )) s"

clean: kmod-clean
	rm -rf $(O)
