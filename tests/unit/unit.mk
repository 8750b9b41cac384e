# Unit tests (Check): one program per tests/unit/test_*.c, linked with the
# static library so that internal interfaces can be tested directly.

UNIT_SRCS	:= $(sort $(wildcard tests/unit/test_*.c))
UNIT_PROGS	:= $(UNIT_SRCS:tests/unit/%.c=$(O)/tests/unit/%)

all: $(UNIT_PROGS)

$(O)/tests/unit/%: tests/unit/%.c $(wildcard tests/unit/*.h) $(LIBHMC_A) $(LIB_HDRS)
	@mkdir -p $(@D)
	$(CC) $(HMC_CPPFLAGS) -Ilib $(HMC_CFLAGS) $(CFLAGS) $(CHECK_CFLAGS) \
		$< -o $@ $(LIBHMC_A) $(LIB_LIBS) $(CHECK_LIBS)

.PHONY: unit-test
_test: unit-test
unit-test: $(UNIT_PROGS)
	@set -e; for t in $(UNIT_PROGS); do echo "== $$t"; $$t; done
