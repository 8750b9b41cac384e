# libhmc_shmem: OpenSHMEM 1.5 (shared, versioned soname, only the standard's
# symbols and shmemx_* exported; and static), oshrun (an alias of hmcrun),
# oshcc and hmc-shmem.pc. Public headers in include/hmc-shmem/, installed
# in their own directory so they do not clash with another
# implementation's shmem.h. It starts through hmc_world, so it links
# libhmc (shared: a world the program made must be the library's own).
# Included before tools/tools.mk: hmcrun is named by its path here.

SHMEM_SO_MAJOR	:= 0
OBJCOPY		?= objcopy
SHMEM_LIB_SRCS	:= $(sort $(wildcard shmem/*.c))
SHMEM_LIB_OBJS	:= $(SHMEM_LIB_SRCS:%.c=$(O)/%.o)
SHMEM_HDRS	:= $(wildcard shmem/*.h) $(wildcard include/hmc-shmem/*.h) \
		   $(wildcard include/hmc-shmem/mpp/*.h) \
		   include/hmc/world.h include/hmc/hmc.h
SHMEM_CPPFLAGS	:= -D_GNU_SOURCE -Iinclude/hmc-shmem -Iinclude -Ishmem
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

# Each object gets its pshmem_ entry points (profiling interface) here.
$(O)/shmem/%.o: shmem/%.c $(SHMEM_HDRS) shmem/pshmem.sh
	@mkdir -p $(@D)
	$(CC) $(SHMEM_CPPFLAGS) $(HMC_CFLAGS) $(CFLAGS) -fPIC -c $< -o $@.raw
	shmem/pshmem.sh $(OBJCOPY) $@.raw $@
	@rm -f $@.raw

$(SHMEM_A): $(SHMEM_LIB_OBJS)
	@rm -f $@
	$(AR) rcs $@ $^

# libhmc next to us: $(O)/lib in the tree, PREFIX/lib once installed.
$(SHMEM_SO): $(SHMEM_LIB_OBJS) shmem/libhmc_shmem.map $(O)/lib/libhmc.so
	$(CC) -shared -Wl,-soname,$(SHMEM_SONAME) \
		-Wl,--version-script=shmem/libhmc_shmem.map -Wl,--no-undefined \
		-Wl,-rpath,'$$ORIGIN/../lib' \
		$(CFLAGS) -o $@ $(SHMEM_LIB_OBJS) -L$(O)/lib -lhmc -lpthread

$(O)/shmem/libhmc_shmem.so: $(SHMEM_SO)
	ln -sf libhmc_shmem.so.$(VERSION) $(O)/shmem/$(SHMEM_SONAME)
	ln -sf $(SHMEM_SONAME) $@

$(OSHRUN): shmem/oshrun.in shmem/shmem.mk $(O)/tools/hmcrun
	@mkdir -p $(@D)
	sed -e 's|@HMCRUN@|$(abspath $(O))/tools/hmcrun|' $< > $@
	chmod +x $@

# The build tree's oshcc uses the build tree; install writes one for PREFIX.
$(OSHCC): shmem/oshcc.in shmem/shmem.mk
	@mkdir -p $(@D)
	sed -e 's|@INCDIR@|$(CURDIR)/include/hmc-shmem|' \
		-e "s|@LIBDIR@|$(abspath $(O))/shmem|g" $< > $@
	chmod +x $@

$(SHMEM_PC): shmem/hmc-shmem.pc.in shmem/shmem.mk
	@mkdir -p $(@D)
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' $< > $@

.PHONY: install-shmem
install: install-shmem
install-shmem: shmem
	install -d $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/bin \
		$(DESTDIR)$(PREFIX)/include/hmc-shmem/mpp
	install -m 644 include/hmc-shmem/*.h $(DESTDIR)$(PREFIX)/include/hmc-shmem/
	install -m 644 include/hmc-shmem/mpp/*.h $(DESTDIR)$(PREFIX)/include/hmc-shmem/mpp/
	install -m 755 $(SHMEM_SO) $(DESTDIR)$(PREFIX)/lib/
	ln -sf libhmc_shmem.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/$(SHMEM_SONAME)
	ln -sf $(SHMEM_SONAME) $(DESTDIR)$(PREFIX)/lib/libhmc_shmem.so
	install -m 644 $(SHMEM_A) $(DESTDIR)$(PREFIX)/lib/
	@# Written from this install's PREFIX, not the one of the build.
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' \
		shmem/hmc-shmem.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/hmc-shmem.pc
	sed -e 's|@HMCRUN@|$(PREFIX)/bin/hmcrun|' shmem/oshrun.in \
		> $(DESTDIR)$(PREFIX)/bin/oshrun
	chmod 755 $(DESTDIR)$(PREFIX)/bin/oshrun
	sed -e 's|@INCDIR@|$(PREFIX)/include/hmc-shmem|' \
		-e "s|@LIBDIR@|$(PREFIX)/lib|g" shmem/oshcc.in \
		> $(DESTDIR)$(PREFIX)/bin/oshcc
	chmod 755 $(DESTDIR)$(PREFIX)/bin/oshcc
