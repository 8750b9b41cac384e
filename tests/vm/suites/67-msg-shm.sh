#!/bin/bash
# Messages (hmc_comm_send/recv) over the shm transport: sizes around every
# boundary and 64 MiB through 4 MiB ConnBuffers, 4 ranks with interleaved
# tags and wildcards, a sender and a receiver killed mid-message (128 MiB
# messages), every byte checked. Inserts $HMC_KO and removes it.
set -u
bin=$HMC_BUILD/tests/integration
rc=0

loaded() { [ -d /sys/module/hmc ]; }

if [ ! -x "$bin/test_msg" ]; then
	echo "not ok - msg shm: $bin/test_msg is missing (make)"
	exit 1
fi
if loaded; then
	echo "not ok - msg shm: hmc is already loaded, not from $HMC_KO"
	exit 1
fi
trap 'loaded && rmmod hmc' EXIT
if ! insmod "$HMC_KO"; then
	echo "not ok - msg shm: insmod $HMC_KO"
	exit 1
fi
echo "ok - msg shm: insmod hmc"

export HMC_REQUIRE_KMOD=1 HMC_TEST_TRANSPORT=shm UCX_TLS=tcp,self \
	UCX_NET_DEVICES=lo
"$bin/test_msg" -c sizes -G 0.0625 -t 200 -N "shm msg sizes" || rc=1
"$bin/test_msg" -c mesh -t 200 -N "shm msg mesh" || rc=1
"$bin/test_msg" -c kill -G 0.125 -t 200 -N "shm msg kill" || rc=1

if rmmod hmc && ! loaded; then
	echo "ok - msg shm: rmmod hmc"
else
	echo "not ok - msg shm: rmmod hmc"
	rc=1
fi
exit $rc
