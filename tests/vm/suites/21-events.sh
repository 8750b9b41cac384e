#!/bin/bash
# What hmc.ko reports (tests/kmod/test_events): PEER_STATE, the netlink
# family "hmc", hmcstat, and RDMA device and port events from hmc_ib.ko
# (and invalidations, with the test exporter tests/kmod/mover).
# Also: hmcstat says so when hmc is not loaded. Leaves hmc unloaded, as it
# must find it.
set -u
# shellcheck source=tests/vm/suites/hmc-kmod.sh
. "$(dirname "$0")/hmc-kmod.sh"
export HMC_HMCSTAT=$HMC_BUILD/tools/hmcstat

# hmcstat without the module: a clear message on stderr, status 1.
not_loaded() {
	local err out status
	err=$(mktemp)
	out=$("$HMC_HMCSTAT" -s 2>"$err")
	status=$?
	echo "# hmcstat -s: status $status, stderr: $(cat "$err")"
	grep -q 'hmc is not loaded' "$err" && [ $status = 1 ] && [ -z "$out" ]
	status=$?
	rm -f "$err"
	return $status
}

if [ ! -x "$HMC_HMCSTAT" ]; then
	echo "not ok - events: $HMC_HMCSTAT is missing (make)"
	exit 1
fi
if not_loaded; then
	echo "ok - events: hmcstat without hmc loaded"
else
	echo "not ok - events: hmcstat without hmc loaded"
fi

kmod_suite events "$HMC_BUILD/tests/kmod/test_events" \
	"$(dirname "$HMC_KO")/hmc_ib.ko" \
	"$HMC_SRC/tests/kmod/mover/hmc_test_mover.ko"
rc=$?

if not_loaded; then
	echo "ok - events: hmcstat after rmmod hmc"
else
	echo "not ok - events: hmcstat after rmmod hmc"
	rc=1
fi
exit $rc
