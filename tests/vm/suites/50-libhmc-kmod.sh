#!/bin/bash
# libhmc ConnBuffers against hmc.ko (tests/buf-kmod/buf_kmod):
#  a) with $HMC_KO inserted: CPU buffers are backed by /dev/hmc, every byte
#     goes through the mapping, the global counters return to zero;
#  b) hmc not loaded but DKMS-installed (make dkms-install): libhmc loads it
#     with libkmod;
#  c) hmc not loaded and the process may not load it (no CAP_SYS_MODULE):
#     HMC_REQUIRE_KMOD=1 fails, the fallback works without it.
# Leaves hmc unloaded, as it must find it.
set -u
prog=$HMC_BUILD/tests/buf-kmod/buf_kmod
rc=0

tap() {			# tap ok|fail NAME
	if [ "$1" = ok ]; then
		echo "ok - libhmc-kmod: $2"
	else
		echo "not ok - libhmc-kmod: $2"
		rc=1
	fi
}
loaded() { [ -d /sys/module/hmc ]; }
unload() {		# unload NAME: rmmod and say so
	if rmmod hmc && ! loaded; then
		tap ok "$1"
	else
		tap fail "$1"
	fi
}
run() {			# run MODE: the program's own TAP lines
	"$prog" "$1" || rc=1
}

if [ ! -x "$prog" ]; then
	tap fail "$prog is missing (make)"
	exit 1
fi
if loaded; then
	tap fail "hmc is already loaded; this suite needs it unloaded"
	exit 1
fi
trap 'loaded && rmmod hmc' EXIT

# a) the module under test
if insmod "$HMC_KO"; then
	tap ok "insmod $HMC_KO"
	run kmod
	unload "rmmod after the kmod checks"
else
	tap fail "insmod $HMC_KO"
fi

# b) the DKMS-installed module, loaded by libhmc
if path=$(modinfo -k "$KVER" -n hmc 2>/dev/null); then
	echo "# hmc for $KVER: $path"
	run autoload
	loaded && unload "rmmod the module libhmc loaded"
else
	tap fail "hmc.ko installed for $KVER (make dkms-install)"
fi

# c) not loaded, not loadable by this process
run noload
loaded && tap fail "noload left hmc loaded"
exit $rc
