#!/bin/bash
# Usage: tests/install/run.sh MAKE O
#
# After a plain build, `make install PREFIX=<a temporary dir>` must give a
# tree that a user builds against with pkg-config alone: hmc.pc names that
# prefix (not the /usr/local of the build), the examples compile from a
# copy outside the source tree with nothing but `pkg-config --cflags --libs
# hmc`, link to the installed libhmc and deliver their message. A second
# install into another prefix must name that one.
set -euo pipefail
make=${1:?MAKE} out=${2:?O}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "not ok - install: $*"; exit 1; }

for n in 1 2; do
	prefix=$tmp/prefix$n
	$make --no-print-directory -s O="$out" install PREFIX="$prefix" >/dev/null
	# Only this prefix's pkg-config directory: nothing of the system's.
	export PKG_CONFIG_LIBDIR=$prefix/lib/pkgconfig
	got=$(pkg-config --variable=prefix hmc) ||
		fail "pkg-config finds no hmc in $PKG_CONFIG_LIBDIR"
	[ "$got" = "$prefix" ] || fail "hmc.pc says prefix=$got, installed in $prefix"
	read -r cflags < <(pkg-config --cflags hmc)
	[ "$cflags" = "-I$prefix/include" ] || fail "cflags: $cflags"
done

# Build the examples from copies, with pkg-config's flags only.
mkdir "$tmp/src" "$tmp/bin"
cp examples/server.c examples/client.c "$tmp/src/"
for p in server client; do
	# shellcheck disable=SC2046 # pkg-config's output is a word list
	(cd "$tmp/src" && cc -std=gnu11 -D_GNU_SOURCE -Wall -Werror \
		$(pkg-config --cflags hmc) "$p.c" -o "$tmp/bin/hmc_$p" \
		$(pkg-config --libs hmc) -Wl,-rpath,"$prefix/lib") ||
		fail "examples/$p.c does not build against $prefix"
done
lib=$(ldd "$tmp/bin/hmc_client" | awk '$1 ~ /^libhmc\.so/ { print $3 }')
[ "$lib" = "$prefix/lib/libhmc.so.0" ] ||
	fail "hmc_client loads libhmc from '$lib', not $prefix/lib"
echo "ok - install: hmc.pc names the install's prefix, the examples build with pkg-config alone"

# OpenSHMEM: a program built with hmc-shmem.pc alone runs under the
# installed oshrun (an alias of the installed hmcrun).
cp tests/shmem/example_shift.c "$tmp/src/"
# shellcheck disable=SC2046 # pkg-config's output is a word list
(cd "$tmp/src" && cc -std=gnu11 -Wall -Werror $(pkg-config --cflags hmc-shmem) \
	example_shift.c -o "$tmp/bin/shift" $(pkg-config --libs hmc-shmem) \
	-Wl,-rpath,"$prefix/lib") || fail "example_shift.c does not build against $prefix"
out=$("$prefix/bin/oshrun" -np 3 --timeout 60 "$tmp/bin/shift") &&
	[ "$out" = "shift correct on 3 PEs" ] || fail "installed oshrun: $out"
# The header directory of OpenSHMEM 1.0, deprecated but kept by 1.5.
printf '#include <mpp/shmem.h>\nint main(void) { return SHMEM_MAJOR_VERSION != 1; }\n' \
	> "$tmp/src/mpp.c"
# shellcheck disable=SC2046 # pkg-config's output is a word list
(cd "$tmp/src" && cc -std=gnu11 -Wall -Werror $(pkg-config --cflags hmc-shmem) \
	mpp.c -o "$tmp/bin/mpp") && "$tmp/bin/mpp" ||
	fail "<mpp/shmem.h> is not installed with hmc-shmem"
echo "ok - install: hmc-shmem.pc and oshrun of the install's prefix, <mpp/shmem.h>"
examples/smoke.sh "$tmp/bin"
