#!/bin/bash
# The communicator over ConnBuffers backed by /dev/hmc: the 2-rank loopback
# test (tests/integration/test_comm --kmod) with HMC_REQUIRE_KMOD=1, over UCX
# tcp on lo and over shared memory (posix + cma), every byte checked; after
# each run the module's global live counters are back to zero. Inserts
# $HMC_KO and removes it: leaves hmc unloaded, as it must find it.
set -u
prog=$HMC_BUILD/tests/integration/test_comm
rc=0

loaded() { [ -d /sys/module/hmc ]; }

if [ ! -x "$prog" ]; then
	echo "not ok - comm-kmod: $prog is missing (make)"
	exit 1
fi
if loaded; then
	echo "not ok - comm-kmod: hmc is already loaded, not from $HMC_KO"
	exit 1
fi
trap 'loaded && rmmod hmc' EXIT
if ! insmod "$HMC_KO"; then
	echo "not ok - comm-kmod: insmod $HMC_KO"
	exit 1
fi
echo "ok - comm-kmod: insmod hmc"

# Smaller than on the host: the guest is emulated (TCG).
for tls in tcp,self posix,cma,self; do
	HMC_REQUIRE_KMOD=1 UCX_TLS=$tls UCX_NET_DEVICES=lo \
		"$prog" -n 2 -b $((3 << 20)) -m 1000 -t 200 --kmod \
		-N "comm-kmod ${tls%%,*}" || rc=1
done

if rmmod hmc && ! loaded; then
	echo "ok - comm-kmod: rmmod hmc"
else
	echo "not ok - comm-kmod: rmmod hmc"
	rc=1
fi
exit $rc
