#!/bin/bash
# The hmc.ko tests in the guest: load $HMC_KO, run tests/kmod/test_kmod
# (one TAP line per test), check that the global live counters are back to
# zero, unload. Leaves hmc unloaded, as it must find it.
set -u
# shellcheck source=tests/vm/suites/hmc-kmod.sh
. "$(dirname "$0")/hmc-kmod.sh"

kmod_suite kmod "$HMC_BUILD/tests/kmod/test_kmod"
