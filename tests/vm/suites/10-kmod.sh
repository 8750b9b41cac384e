#!/bin/bash
# The hmc.ko tests in the guest: load $HMC_KO, run tests/kmod/test_kmod
# (one TAP line per test), check that the global live counters are back to
# zero, unload. Leaves hmc unloaded, as it must find it.
set -u
prog=$HMC_BUILD/tests/kmod/test_kmod

if [ ! -x "$prog" ]; then
	echo "not ok - kmod: $prog is missing (make kmod-tests)"
	exit 1
fi
if [ -d /sys/module/hmc ]; then
	echo "not ok - kmod: hmc is already loaded, not from $HMC_KO"
	exit 1
fi
if ! insmod "$HMC_KO"; then
	echo "not ok - insmod $HMC_KO"
	exit 1
fi
echo "ok - insmod hmc"

"$prog"
rc=$?

if [ ! -d /sys/module/hmc ]; then
	echo "not ok - rmmod hmc # the tests left it unloaded"
	exit 1
fi
if "$prog" --global-stats; then
	echo "ok - kmod: global live counters zero before rmmod"
else
	echo "not ok - kmod: global live counters zero before rmmod"
fi
if rmmod hmc; then
	echo "ok - rmmod hmc"
else
	echo "not ok - rmmod hmc"
fi
exit $rc
