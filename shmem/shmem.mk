# libhmc_shmem: OpenSHMEM 1.5 (shared, versioned soname, only the standard's
# symbols exported; and static), oshrun, oshcc and hmc-shmem.pc. Public
# headers in include/hmc-shmem/, installed in their own directory so they
# do not clash with another implementation's shmem.h.

SHMEM_SO_MAJOR	:= 0
SHMEM_LIB_SRCS	:= $(filter-out shmem/oshrun.c,$(sort $(wildcard shmem/*.c)))
SHMEM_LIB_OBJS	:= $(SHMEM_LIB_SRCS:%.c=$(O)/%.o)
SHMEM_HDRS	:= $(wildcard shmem/*.h) $(wildcard include/hmc-shmem/*.h)
SHMEM_CPPFLAGS	:= -D_GNU_SOURCE -Iinclude/hmc-shmem -Ishmem
SHMEM_A		:= $(O)/shmem/libhmc_shmem.a
SHMEM_SO	:= $(O)/shmem/libhmc_shmem.so.$(VERSION)
SHMEM_SONAME	:= libhmc_shmem.so.$(SHMEM_SO_MAJOR)
SHMEM_PC	:= $(O)/shmem/hmc-shmem.pc
OSHRUN		:= $(O)/shmem/oshrun
OSHCC		:= $(O)/shmem/oshcc

all: shmem
.PHONY: shmem
shmem: $(SHMEM_A) $(SHMEM_SO) $(O)/shmem/libhmc_shmem.so $(SHMEM_PC) \
	$(OSHRUN) $(OSHCC)

$(O)/shmem/%.o: shmem/%.c $(SHMEM_HDRS)
	@mkdir -p $(@D)
	$(CC) $(SHMEM_CPPFLAGS) $(HMC_CFLAGS) $(CFLAGS) -fPIC -c $< -o $@

$(SHMEM_A): $(SHMEM_LIB_OBJS)
	@rm -f $@
	$(AR) rcs $@ $^

$(SHMEM_SO): $(SHMEM_LIB_OBJS) shmem/libhmc_shmem.map
	$(CC) -shared -Wl,-soname,$(SHMEM_SONAME) \
		-Wl,--version-script=shmem/libhmc_shmem.map -Wl,--no-undefined \
		$(CFLAGS) -o $@ $(SHMEM_LIB_OBJS) -lpthread

$(O)/shmem/libhmc_shmem.so: $(SHMEM_SO)
	ln -sf libhmc_shmem.so.$(VERSION) $(O)/shmem/$(SHMEM_SONAME)
	ln -sf $(SHMEM_SONAME) $@

$(OSHRUN): $(O)/shmem/oshrun.o
	$(CC) $(CFLAGS) -o $@ $<

# The build tree's oshcc uses the build tree; install writes one for PREFIX.
$(OSHCC): shmem/oshcc.in shmem/shmem.mk
	@mkdir -p $(@D)
	sed -e 's|@INCDIR@|$(CURDIR)/include/hmc-shmem|' \
		-e "s|@LIBDIR@|$(CURDIR)/$(O)/shmem|g" $< > $@
	chmod +x $@

$(SHMEM_PC): shmem/hmc-shmem.pc.in shmem/shmem.mk
	@mkdir -p $(@D)
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' $< > $@

.PHONY: install-shmem
install: install-shmem
install-shmem: shmem
	install -d $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/bin \
		$(DESTDIR)$(PREFIX)/include/hmc-shmem
	install -m 644 include/hmc-shmem/*.h $(DESTDIR)$(PREFIX)/include/hmc-shmem/
	install -m 755 $(SHMEM_SO) $(DESTDIR)$(PREFIX)/lib/
	ln -sf libhmc_shmem.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/$(SHMEM_SONAME)
	ln -sf $(SHMEM_SONAME) $(DESTDIR)$(PREFIX)/lib/libhmc_shmem.so
	install -m 644 $(SHMEM_A) $(DESTDIR)$(PREFIX)/lib/
	install -m 644 $(SHMEM_PC) $(DESTDIR)$(PREFIX)/lib/pkgconfig/
	install -m 755 $(OSHRUN) $(DESTDIR)$(PREFIX)/bin/
	sed -e 's|@INCDIR@|$(PREFIX)/include/hmc-shmem|' \
		-e "s|@LIBDIR@|$(PREFIX)/lib|g" shmem/oshcc.in \
		> $(DESTDIR)$(PREFIX)/bin/oshcc
	chmod 755 $(DESTDIR)$(PREFIX)/bin/oshcc
