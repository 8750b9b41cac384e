# Quick-start programs, linked against the shared library as users would.

EXAMPLE_PROGS	:= $(O)/examples/hmc_server $(O)/examples/hmc_client

all: $(EXAMPLE_PROGS)

$(O)/examples/hmc_%: examples/%.c include/hmc/hmc.h $(O)/lib/libhmc.so
	@mkdir -p $(@D)
	$(CC) $(HMC_CPPFLAGS) $(HMC_CFLAGS) $(CFLAGS) $< -o $@ \
		-L$(O)/lib -Wl,-rpath,'$$ORIGIN/../lib' -lhmc

.PHONY: examples-test
_test: examples-test
examples-test: $(EXAMPLE_PROGS)
	@examples/smoke.sh $(O)/examples
