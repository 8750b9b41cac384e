# The QEMU test guest (tests/vm/run) and DKMS registration of hmc.ko.
#
# vm-test boots Debian's $(KVER) under TCG and runs tests/vm/suites; vm-bench
# runs tests/vm/bench. Fragments included before this one add the programs
# their guest suites need to VM_TEST_PROGS; VM_RUN_FLAGS passes options to
# tests/vm/run (e.g. VM_RUN_FLAGS="--suites '90-*'").

VM_TEST_PROGS	+= $(O)/tests/vm/hmc_version
VM_RUN_FLAGS	?=
VM_RUN		:= KVER=$(KVER) HMC_BUILD=$(abspath $(O)) tests/vm/run

$(O)/tests/vm/hmc_version: tests/vm/hmc_version.c uapi/linux/hmc.h
	@mkdir -p $(@D)
	$(CC) $(HMC_CPPFLAGS) $(HMC_CFLAGS) $(CFLAGS) $< -o $@

.PHONY: vm-bench
vm-test: kmod dkms-install $(VM_TEST_PROGS)
	$(VM_RUN) $(VM_RUN_FLAGS)

# The verbs benchmark alone runs about 27 minutes under TCG (1602 s measured
# for its 31 rounds).
vm-bench: kmod $(VM_TEST_PROGS)
	$(VM_RUN) --bench --timeout 3900 --suite-timeout 2700 $(VM_RUN_FLAGS)

# The guest stage comes last, after every host test: this recipe runs
# only once all other prerequisites of _test are done. The guest
# benchmarks are not part of `make bench` (it must fit in minutes on a
# 2-CPU host): `make bench-vm` runs them.
_test:
	@$(MAKE) --no-print-directory vm-test

# DKMS: /usr/src/hmc-$(VERSION) holds the module sources only (Kbuild reads
# VERSION from the top Makefile). Installing into /lib/modules/$(KVER) of
# this host is how the guest, which shares the host's root, sees it.
DKMS_SRC	:= /usr/src/hmc-$(VERSION)
DKMS_FILES	:= Kbuild Makefile dkms.conf $(wildcard kmod/*.[ch]) \
		   uapi/linux/hmc.h
SUDO		:= $(if $(filter 0,$(shell id -u)),,sudo)

# `dkms remove` reads the registration's dkms.conf from DKMS_SRC, so the
# sources of this tree (same version) go there first, in case the old
# ones were deleted. Any output of `dkms status`, an error included,
# means that this version is registered. A registration made by an older
# tree of the same version (another dkms.conf: other modules) may survive
# `dkms remove`, which judges it by the new dkms.conf: its state is then
# dropped by hand, so that `dkms add` starts clean.
DKMS_STATE	:= /var/lib/dkms/hmc/$(VERSION)
define dkms_copy_sources
	$(SUDO) rm -rf $(DKMS_SRC)
	$(SUDO) install -d $(DKMS_SRC)
	$(SUDO) cp --parents $(DKMS_FILES) $(DKMS_SRC)/
endef
define dkms_remove
	@if [ -n "$$(dkms status hmc/$(VERSION) 2>&1)" ]; then \
		echo "$(SUDO) dkms remove hmc/$(VERSION) --all"; \
		$(SUDO) dkms remove hmc/$(VERSION) --all; \
	fi; \
	if [ -e $(DKMS_STATE) ]; then \
		echo "dkms: dropping a stale registration, $(DKMS_STATE)"; \
		$(SUDO) rm -rf $(DKMS_STATE); \
	fi
endef

dkms-install:
	@grep -qx 'PACKAGE_VERSION="$(VERSION)"' dkms.conf || \
		{ echo "dkms.conf: PACKAGE_VERSION is not $(VERSION)" >&2; exit 1; }
	$(dkms_copy_sources)
	$(dkms_remove)
	$(SUDO) dkms add hmc/$(VERSION)
	$(SUDO) dkms build -k $(KVER) hmc/$(VERSION)
	$(SUDO) dkms install -k $(KVER) hmc/$(VERSION)

dkms-uninstall:
	$(dkms_copy_sources)
	$(dkms_remove)
	$(SUDO) rm -rf $(DKMS_SRC)
