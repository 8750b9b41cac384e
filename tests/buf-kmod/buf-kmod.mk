# buf_kmod: ConnBuffers against the real hmc.ko, run in the test guest by
# tests/vm/suites/50-libhmc-kmod.sh (built before the guest boots through
# VM_TEST_PROGS, which tests/vm/vm.mk makes vm-test depend on).

BUF_KMOD	:= $(O)/tests/buf-kmod/buf_kmod
VM_TEST_PROGS	+= $(BUF_KMOD)

all: $(BUF_KMOD)

$(BUF_KMOD): tests/buf-kmod/buf_kmod.c tests/unit/pattern.h $(LIBHMC_A) \
		$(LIB_HDRS)
	@mkdir -p $(@D)
	$(CC) $(HMC_CPPFLAGS) -Ilib -Itests/unit $(HMC_CFLAGS) $(CFLAGS) \
		$< -o $@ $(LIBHMC_A) $(LIB_LIBS)
