# `make install` as a user of another prefix runs it: see run.sh.

.PHONY: install-test
_test: install-test
install-test: lib $(TOOLS_PROGS)
	@tests/install/run.sh "$(MAKE)" "$(O)"
