# libhmc: shared (versioned soname, exported symbols listed in libhmc.map)
# and static. Every .c under lib/ is part of it; lib/'s folders are its
# layers (README.md, "Layout") and sources name headers by folder
# ("sys/log.h"), with lib/ itself on the include path.
#
# Both show users hmc_* only. The static libhmc.a is one relocatable object
# whose every other symbol is made local (objcopy --keep-global-symbols),
# so that libhmc's internals cannot clash with an application's names.
# The tree's own programs link $(LIBHMC_A), libhmc-internal.a, which keeps
# every symbol: the unit and integration tests call internal interfaces.
# scripts/check-exports checks both (make test).

LIB_SO_MAJOR	:= 0
LIB_SRCS	:= $(sort $(wildcard lib/*/*.c lib/*/*/*.c))
LIB_OBJS	:= $(LIB_SRCS:%.c=$(O)/%.o)
LIB_HDRS	:= $(wildcard lib/*/*.h lib/*/*/*.h) include/hmc/hmc.h \
		   include/hmc/world.h include/hmc/pool.h uapi/linux/hmc.h
LIB_PKGS	:= ucx libkmod libcrypto libssl libibverbs
# PMIx, libcurl, json-c: headers only; lib/world opens them at run time.
LIB_PKG_CFLAGS	:= $(shell pkg-config --cflags $(LIB_PKGS) pmix libcurl \
		     json-c 2>/dev/null)
LIB_PKG_LIBS	:= $(shell pkg-config --libs $(LIB_PKGS) 2>/dev/null)
LIB_LIBS	:= $(LIB_PKG_LIBS) -ldl -lpthread
LIBHMC_A	:= $(O)/lib/libhmc-internal.a
LIBHMC_STATIC	:= $(O)/lib/libhmc.a
OBJCOPY		?= objcopy
LIBHMC_SO	:= $(O)/lib/libhmc.so.$(VERSION)
LIBHMC_SONAME	:= libhmc.so.$(LIB_SO_MAJOR)

all: lib
.PHONY: lib
lib: $(LIBHMC_A) $(LIBHMC_STATIC) $(LIBHMC_SO) $(O)/lib/libhmc.so

$(O)/lib/%.o: lib/%.c $(LIB_HDRS)
	@mkdir -p $(@D)
	$(CC) $(HMC_CPPFLAGS) -Ilib $(HMC_CFLAGS) $(CFLAGS) $(LIB_PKG_CFLAGS) \
		-fPIC -c $< -o $@

$(LIBHMC_A): $(LIB_OBJS)
	@rm -f $@
	$(AR) rcs $@ $^

# The exported names, one a line, from the version script.
$(O)/lib/exports.txt: lib/libhmc.map
	@mkdir -p $(@D)
	sed -n 's/^[[:space:]]*\(hmc_[a-z0-9_]*\);.*/\1/p' $< > $@

$(O)/lib/libhmc.o: $(LIB_OBJS) $(O)/lib/exports.txt
	$(CC) -r -nostdlib -o $@.all $(LIB_OBJS)
	$(OBJCOPY) --keep-global-symbols=$(O)/lib/exports.txt $@.all $@
	@rm -f $@.all

$(LIBHMC_STATIC): $(O)/lib/libhmc.o
	@rm -f $@
	$(AR) rcs $@ $^

$(LIBHMC_SO): $(LIB_OBJS) lib/libhmc.map
	$(CC) -shared -Wl,-soname,$(LIBHMC_SONAME) \
		-Wl,--version-script=lib/libhmc.map -Wl,--no-undefined \
		$(CFLAGS) -o $@ $(LIB_OBJS) $(LIB_LIBS)

$(O)/lib/libhmc.so: $(LIBHMC_SO)
	ln -sf libhmc.so.$(VERSION) $(O)/lib/$(LIBHMC_SONAME)
	ln -sf $(LIBHMC_SONAME) $@

.PHONY: install-lib
install: install-lib
install-lib: lib
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/hmc \
		$(DESTDIR)$(PREFIX)/include/linux $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 644 include/hmc/hmc.h include/hmc/world.h include/hmc/pool.h \
		$(DESTDIR)$(PREFIX)/include/hmc/
	install -m 644 uapi/linux/hmc.h $(DESTDIR)$(PREFIX)/include/linux/
	install -m 755 $(LIBHMC_SO) $(DESTDIR)$(PREFIX)/lib/
	ln -sf libhmc.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/$(LIBHMC_SONAME)
	ln -sf $(LIBHMC_SONAME) $(DESTDIR)$(PREFIX)/lib/libhmc.so
	install -m 644 $(LIBHMC_STATIC) $(DESTDIR)$(PREFIX)/lib/
	@# Written here, from this install's PREFIX: a file made at build time
	@# would keep the PREFIX of the build.
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' \
		-e 's|@LIBS_PRIVATE@|$(LIB_LIBS)|' lib/hmc.pc.in \
		> $(DESTDIR)$(PREFIX)/lib/pkgconfig/hmc.pc
	chmod 644 $(DESTDIR)$(PREFIX)/lib/pkgconfig/hmc.pc

# lib/'s folders are layers: no include goes up, none goes round.
.PHONY: check-layers check-exports
_test: check-layers check-exports
check-layers:
	@scripts/check-layers

# Users see hmc_* only, exactly what hmc.h declares.
check-exports: $(LIBHMC_SO) $(LIBHMC_STATIC)
	@scripts/check-exports $(LIBHMC_SO) $(LIBHMC_STATIC) $(wildcard include/hmc/*.h)
