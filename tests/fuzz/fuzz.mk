# libFuzzer harnesses (Debian's clang): one program per tests/fuzz/fuzz_*.c,
# linked with a libhmc built by clang with coverage, ASan and UBSan in its
# own directory (lib.mk's rules, re-entered with O=$(FUZZ_O)).
#
#   fuzz_frame      the frame decoder (headers and payloads round-trip) and
#                   a connection's stream parser, fed through a socketpair
#   fuzz_handshake  the listener's handshake state machine, fed the bytes of
#                   a hostile dialer over loopback TCP
#   fuzz_auth       the dialer's side of the HMAC exchange, facing a hostile
#                   listener
#
# `make test` runs each for FUZZ_TEST_SECONDS; `make fuzz FUZZ_SECONDS=N`
# for N seconds each. The seed corpus of each is tests/fuzz/corpus/NAME/
# (kept in the tree, read only); what a run finds goes to
# $(FUZZ_O)/corpus/NAME/, a crash to $(FUZZ_O)/crash/NAME-*. A crash fixed
# in lib/ leaves its input in the seed corpus, which every run replays
# first.

override FUZZ_O	:= $(O)-fuzz
FUZZ_CC		?= clang
FUZZ_SECONDS	?= 300
FUZZ_TEST_SECONDS ?= 20
FUZZ_SAN	:= -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_LIB_CFLAGS	:= -O1 -g -fno-omit-frame-pointer $(FUZZ_SAN) \
		   -fsanitize=fuzzer-no-link
FUZZ_NAMES	:= $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_PROGS	:= $(FUZZ_NAMES:%=$(FUZZ_O)/tests/fuzz/fuzz_%)
FUZZ_LIB	:= $(FUZZ_O)/lib/libhmc-internal.a
FUZZ_ENV	:= ASAN_OPTIONS=halt_on_error=1:detect_leaks=1 \
		   UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
# -timeout: one input that takes this long is a hang, and a crash
FUZZ_FLAGS	:= -timeout=10 -rss_limit_mb=2048 -print_final_stats=1

.PHONY: fuzz fuzz-build fuzz-test $(FUZZ_LIB)
fuzz-build: $(FUZZ_PROGS)

# Always re-entered: lib.mk's rules know when its objects are stale.
$(FUZZ_LIB):
	@$(MAKE) --no-print-directory O=$(FUZZ_O) CC=$(FUZZ_CC) \
		CFLAGS='$(FUZZ_LIB_CFLAGS)' $@

$(FUZZ_O)/tests/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(wildcard tests/fuzz/*.h) \
		$(FUZZ_LIB) $(LIB_HDRS)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(HMC_CPPFLAGS) -Ilib $(HMC_CFLAGS) -O1 -g \
		-fno-omit-frame-pointer $(FUZZ_SAN) -fsanitize=fuzzer $< \
		-o $@ $(FUZZ_LIB) $(LIB_LIBS)

# fuzz_run SECONDS: build, then each harness in turn, its output in a log
# that is shown in full only if it fails; then the wall time of it all.
define fuzz_run
	@start=$$(date +%s); rc=0; \
	$(MAKE) --no-print-directory fuzz-build || exit 1; \
	for n in $(FUZZ_NAMES); do \
		mkdir -p $(FUZZ_O)/corpus/$$n $(FUZZ_O)/crash; \
		log=$(FUZZ_O)/fuzz_$$n.log; \
		if $(FUZZ_ENV) $(SAN_NORAND) $(FUZZ_O)/tests/fuzz/fuzz_$$n $(FUZZ_FLAGS) \
			-max_total_time=$(1) \
			-artifact_prefix=$(FUZZ_O)/crash/$$n- \
			$(FUZZ_O)/corpus/$$n tests/fuzz/corpus/$$n >$$log 2>&1; then \
			echo "fuzz $$n: $$(sed -n 's/^stat::number_of_executed_units: *//p' $$log) inputs in $(1) s, no crash"; \
		else \
			cat $$log; echo "FAIL: fuzz $$n (log: $$log)"; rc=1; \
		fi; \
	done; \
	echo "tier fuzz: $$(( $$(date +%s) - start )) s$$([ $$rc = 0 ] || echo ', FAILED')"; \
	exit $$rc
endef

_test: fuzz-test
fuzz-test:
	$(call fuzz_run,$(FUZZ_TEST_SECONDS))

fuzz: deps
	$(call fuzz_run,$(FUZZ_SECONDS))

.PHONY: fuzz-clean
clean: fuzz-clean
fuzz-clean:
	rm -rf $(FUZZ_O)
