# Verbs transport tests (tests/verbs/test_verbs.c), built on the integration
# launcher. They need an RDMA device, so they run in the guest on soft-RoCE
# (tests/vm/suites/70-verbs-*.sh), not on the host; the staged case takes
# the mock CUDA driver of tests/gpu.

VERBS_TEST	:= $(O)/tests/verbs/test_verbs
VM_TEST_PROGS	+= $(VERBS_TEST) $(ITEST_DIR)/test_comm $(HMCPERF) $(GPU_MOCKS)

all: $(VERBS_TEST)

$(VERBS_TEST): tests/verbs/test_verbs.c tests/integration/itest.h \
		$(ITEST_OBJS) $(LIBHMC_A) $(LIB_HDRS)
	@mkdir -p $(@D)
	$(CC) $(ITEST_CFLAGS) -Itests/integration $< -o $@ $(ITEST_OBJS) \
		$(LIBHMC_A) $(LIB_LIBS)
