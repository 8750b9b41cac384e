# Tools: hmcperf. Linked with the static libhmc, so that they run from the
# build tree as they do once installed.

HMCPERF_SRCS	:= $(sort $(wildcard tools/hmcperf*.c))
HMCPERF		:= $(O)/tools/hmcperf
TOOLS_PROGS	+= $(HMCPERF)

all: $(TOOLS_PROGS)

$(HMCPERF): $(HMCPERF_SRCS) tools/hmcperf.h $(LIBHMC_STATIC) include/hmc/hmc.h
	@mkdir -p $(@D)
	$(CC) $(HMC_CPPFLAGS) $(HMC_CFLAGS) $(CFLAGS) $(HMCPERF_SRCS) \
		-o $@ $(LIBHMC_STATIC) $(LIB_LIBS)

.PHONY: install-tools
install: install-tools
install-tools: $(TOOLS_PROGS)
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 $(TOOLS_PROGS) $(DESTDIR)$(PREFIX)/bin/

# make run: the loopback demo. Two processes (hmcperf forks the server)
# exchange buffers with put, get and put_signal across sizes; every byte is
# checked by its receiver; each row says its transport and ConnBuffer
# backing. First with the defaults (AUTO: shm on one host, with memfd
# ConnBuffers when hmc.ko is not loaded: a put is a memcpy into the peer's
# mapping), then over libhmc's tcp transport (what AUTO takes between hosts
# without RDMA), then over UCX for comparison, UCX_TLS=posix,cma,self: measured
# here it is UCX's faster correct choice for user memory on one host
# (put_bw 1 MiB ~6 GB/s, put_lat 8 B ~1.3 us, against ~1 GB/s and ~13 us
# with tcp,self), UCX emulating RMA with active messages over shared
# memory (hmcperf progresses both sides).
RUN_UCX_TLS	?= posix,cma,self
RUN_FLAGS	?= -s 8,512,4K,64K,1M,4M -O 8

.PHONY: run-demo
_run: run-demo
run-demo: $(HMCPERF)
	$(HMCPERF) --loopback --validate $(RUN_FLAGS)
	$(HMCPERF) --loopback --validate -x tcp $(RUN_FLAGS)
	UCX_TLS=$(RUN_UCX_TLS) $(HMCPERF) --loopback --validate -x ucx $(RUN_FLAGS)

# hmcstat: the netlink family of hmc.ko (events, counters, dumps), with
# libnl-3; it needs neither libhmc nor /dev/hmc. The guest suites run it.
HMCSTAT		:= $(O)/tools/hmcstat
HMCSTAT_CFLAGS	:= $(shell pkg-config --cflags libnl-genl-3.0 2>/dev/null)
HMCSTAT_LIBS	:= $(shell pkg-config --libs libnl-genl-3.0 2>/dev/null)
TOOLS_PROGS	+= $(HMCSTAT)
VM_TEST_PROGS	+= $(HMCSTAT)

all: $(HMCSTAT)
install-tools: $(HMCSTAT)

$(HMCSTAT): tools/hmcstat.c uapi/linux/hmc.h
	@mkdir -p $(@D)
	$(CC) $(HMC_CPPFLAGS) $(HMC_CFLAGS) $(CFLAGS) $(HMCSTAT_CFLAGS) $< \
		-o $@ $(HMCSTAT_LIBS)

# hmcrun: the one-host launcher of hmc_world (it hosts the world store, an
# internal part of libhmc, hence the static library).
HMCRUN		:= $(O)/tools/hmcrun
TOOLS_PROGS	+= $(HMCRUN)

all: $(HMCRUN)
install-tools: $(HMCRUN)

$(HMCRUN): tools/hmcrun.c $(LIBHMC_A) $(LIB_HDRS)
	@mkdir -p $(@D)
	$(CC) $(HMC_CPPFLAGS) $(HMC_CFLAGS) $(CFLAGS) $< -o $@ $(LIBHMC_A) \
		$(LIB_LIBS)
