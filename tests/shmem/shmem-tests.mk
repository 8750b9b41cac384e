# OpenSHMEM conformance tests: tests/shmem/test_*.c built with oshcc's
# flags against the static and shared library, run by run.sh under oshrun
# with 1 to 4 PEs.

SHMEM_TEST_SRCS	:= $(sort $(wildcard tests/shmem/test_*.c))
SHMEM_TESTS	:= $(SHMEM_TEST_SRCS:tests/shmem/%.c=$(O)/tests/shmem/%)

all: $(SHMEM_TESTS)

$(O)/tests/shmem/%: tests/shmem/%.c tests/shmem/check.h $(SHMEM_SO) \
		$(O)/shmem/libhmc_shmem.so $(SHMEM_HDRS)
	@mkdir -p $(@D)
	$(CC) -Iinclude/hmc-shmem $(HMC_CFLAGS) $(CFLAGS) $< -o $@ \
		-L$(O)/shmem -Wl,-rpath,$(CURDIR)/$(O)/shmem -lhmc_shmem

.PHONY: shmem-test
_test: shmem-test
shmem-test: $(SHMEM_TESTS) $(OSHRUN) $(OSHCC)
	@tests/shmem/run.sh $(O)
