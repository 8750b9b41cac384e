# Sourced by the guest suites that run a Check program of tests/kmod
# against $HMC_KO (not a suite itself: guest.sh runs NN-*.sh only).
#
# kmod_suite PREFIX PROGRAM [KO...]: loads hmc and then the modules KO...,
# runs PROGRAM (its TAP lines), checks that the global live counters are
# back to zero, unloads what it loaded, in reverse order, and returns the
# program's status. hmc must not be loaded before, and is not after.
kmod_suite() {
	local prefix=$1 prog=$2 rc=0 ko loaded=()
	shift 2

	if [ ! -x "$prog" ]; then
		echo "not ok - $prefix: $prog is missing (make kmod-tests)"
		return 1
	fi
	if [ -d /sys/module/hmc ]; then
		echo "not ok - $prefix: hmc is already loaded, not from $HMC_KO"
		return 1
	fi
	for ko in "$HMC_KO" "$@"; do
		if ! insmod "$ko"; then
			echo "not ok - $prefix: insmod $ko"
			rc=1
			break
		fi
		echo "ok - $prefix: insmod $(basename "$ko")"
		loaded=("$(basename "$ko" .ko)" "${loaded[@]}")
	done
	if [ $rc = 0 ]; then
		"$prog"
		rc=$?
	fi
	if [ ! -d /sys/module/hmc ]; then
		echo "not ok - $prefix: the tests left hmc unloaded"
		return 1
	fi
	if "$prog" --global-stats; then
		echo "ok - $prefix: global live counters zero before rmmod"
	else
		echo "not ok - $prefix: global live counters zero before rmmod"
		rc=1
	fi
	for ko in "${loaded[@]}"; do
		if rmmod "$ko"; then
			echo "ok - $prefix: rmmod $ko"
		else
			echo "not ok - $prefix: rmmod $ko"
			rc=1
		fi
	done
	return $rc
}
