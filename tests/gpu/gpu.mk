# GPU test (tests/gpu/test_gpu): memory and ConnBuffers on every CUDA,
# ROCm, Ascend, Cambricon and MUSA device present; without one it exits 77 and `make test` reports it
# as SKIPPED, never as passed. gpu-mock-test runs the same program against
# mock runtimes (fake devices in host memory, tests/gpu/mock_*.c) that
# check how libhmc drives the CUDA driver API, HIP, AscendCL, CNRT and
# MUSA, on any machine.

GPU_TEST	:= $(O)/tests/gpu/test_gpu
GPU_MOCK_DIR	:= $(O)/tests/gpu/mock
GPU_MOCKS	:= $(GPU_MOCK_DIR)/libcuda.so.1 $(GPU_MOCK_DIR)/libamdhip64.so \
		   $(GPU_MOCK_DIR)/libascendcl.so $(GPU_MOCK_DIR)/libcnrt.so \
		   $(GPU_MOCK_DIR)/libmusart.so
GPU_MOCK_DEPS	:= tests/gpu/mock_dev.c tests/gpu/mock_dev.h
# The mocks define the runtimes' entry points, which have no header here.
GPU_MOCK_CFLAGS	:= $(HMC_CFLAGS) -Wno-missing-prototypes $(CFLAGS)

all: $(GPU_TEST) $(GPU_MOCKS)

$(GPU_TEST): tests/gpu/test_gpu.c tests/unit/pattern.h $(LIBHMC_A) $(LIB_HDRS)
	@mkdir -p $(@D)
	$(CC) $(HMC_CPPFLAGS) -Ilib -Itests/unit $(HMC_CFLAGS) $(CFLAGS) \
		$< -o $@ $(LIBHMC_A) $(LIB_LIBS)

$(GPU_MOCK_DIR)/libcuda.so.1: tests/gpu/mock_cuda.c $(GPU_MOCK_DEPS)
	@mkdir -p $(@D)
	$(CC) $(GPU_MOCK_CFLAGS) -fPIC -shared -Wl,-soname,libcuda.so.1 \
		-o $@ $< tests/gpu/mock_dev.c -lpthread

# The others: mock_<runtime>.c makes lib<soname>.so.
$(GPU_MOCK_DIR)/libamdhip64.so: tests/gpu/mock_hip.c
$(GPU_MOCK_DIR)/libascendcl.so: tests/gpu/mock_ascend.c
$(GPU_MOCK_DIR)/libcnrt.so: tests/gpu/mock_cnrt.c
$(GPU_MOCK_DIR)/libmusart.so: tests/gpu/mock_musa.c
$(GPU_MOCK_DIR)/libamdhip64.so $(GPU_MOCK_DIR)/libascendcl.so \
$(GPU_MOCK_DIR)/libcnrt.so $(GPU_MOCK_DIR)/libmusart.so: $(GPU_MOCK_DEPS)
	@mkdir -p $(@D)
	$(CC) $(GPU_MOCK_CFLAGS) -fPIC -shared -Wl,-soname,$(@F) -o $@ \
		$(filter-out $(GPU_MOCK_DEPS),$^) tests/gpu/mock_dev.c -lpthread

.PHONY: gpu-test gpu-mock-test
_test: gpu-test gpu-mock-test

gpu-test: $(GPU_TEST)
	@echo "== $(GPU_TEST)"; rc=0; $(GPU_TEST) || rc=$$?; \
	case $$rc in \
	0) echo "PASS: gpu-test" ;; \
	77) echo "SKIPPED: gpu-test (no GPU)" ;; \
	*) echo "FAIL: gpu-test (status $$rc)"; exit 1 ;; \
	esac

gpu-mock-test: $(GPU_TEST) $(GPU_MOCKS)
	@echo "== $(GPU_TEST) (mock runtimes)"
	@HMC_GPU_MOCK=1 LD_LIBRARY_PATH=$(GPU_MOCK_DIR) $(GPU_TEST)
